// Writing distances.bp (docs/design.md §6.3): one global float32 variable
// `distance` of shape n x n, unreachable = +inf. Every rank SetSelection+Puts
// each tile it owns inside one step; the file is written collectively by the
// MPI build of ADIOS2. Padding beyond n is never written.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/driver.hpp"

namespace litpath::apsp {

struct DistanceAttributes {
    std::string graph_digest;
    std::int64_t n = 0;
    std::int64_t block_size = 0;
    std::string process_grid;  // "RxC"
    std::string algorithm = "blocked-floyd-warshall-2d-block-cyclic";
    std::string solver_version;
    std::string semiring = "min-plus";
    std::string broadcast;
};

// Collective over comm. adios2_config: optional ADIOS2 XML file overriding the
// engine settings of the IO named "distances" (empty: BP5 defaults).
void write_distances_bp(const std::string& path, const DistributedMatrix& matrix, MPI_Comm comm,
                        const DistanceAttributes& attributes, const std::string& adios2_config);

// apsp-fw --sources: distances.bp in the "rows" layout. Global float32
// `distance` of shape rows x n (row i = distances from sources[i]; +inf when
// unreachable), int64 `sources` [rows] ascending, and attributes graph_digest,
// n, rows, layout = "rows", algorithm, solver_version, semiring.
struct DistanceRowsAttributes {
    std::string graph_digest;
    std::int64_t n = 0;
    std::string algorithm = "dijkstra-rows";
    std::string solver_version;
    std::string semiring = "min-plus";
};

// Collective over comm: each rank Puts its block of rows [first, first + count)
// (row-major count x n, contiguous); rank 0 also Puts `sources`.
void write_distance_rows_bp(const std::string& path, const float* block, std::int64_t first, std::int64_t count,
                            const std::vector<std::int64_t>& sources, MPI_Comm comm,
                            const DistanceRowsAttributes& attributes, const std::string& adios2_config);

}  // namespace litpath::apsp
