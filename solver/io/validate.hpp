// --validate K: recompute K sampled rows with Dijkstra on the sparse input
// (rank 0, double precision) and compare with the distributed result.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/driver.hpp"
#include "io/graph_input.hpp"

namespace litpath::apsp {

struct ValidationResult {
    std::int64_t rows = 0;
    double max_abs_error = 0;
    double max_rel_error = 0;           // |d - ref| / max(1, |ref|)
    std::int64_t reachability_mismatches = 0;  // inf on one side only
    double tolerance = 0;
    bool ok = true;
};

// Dijkstra from `source` over adjacency lists (double precision).
std::vector<double> dijkstra_row(const std::vector<std::vector<std::pair<std::int64_t, float>>>& adjacency,
                                 std::int64_t source);

// Collective over world; every rank gets the same result.
ValidationResult validate_rows(const GraphInfo& info, const DistributedMatrix& matrix, MPI_Comm world,
                               std::int64_t rows, double tolerance, std::uint64_t seed);

}  // namespace litpath::apsp
