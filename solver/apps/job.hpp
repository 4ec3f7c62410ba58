// One run of apsp-fw: what its phases share (Job), the helpers both modes
// use, and the two modes, each in its own file as SLATE's tester keeps one
// routine per file:
//   run_floyd_warshall.cpp  the dense solve (COAST's blocked Floyd-Warshall)
//   run_source_rows.cpp     --sources: distance rows by Dijkstra
// apsp-fw.cpp parses the command line, places the threads and picks the mode.
//
// Every phase is collective: one that fails on any rank fails on all of them
// (collective_try, core/collective.hpp) after the lowest failing rank printed
// why, so the ranks leave together; the mode then returns exit status 2.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "apps/options.hpp"
#include "core/broadcast.hpp"
#include "core/tiling.hpp"
#include "kernels/backend.hpp"

#ifndef LITPATH_SOLVER_VERSION
#define LITPATH_SOLVER_VERSION "0.0.0"
#endif

namespace litpath::apsp {

constexpr const char* kSolverVersion = LITPATH_SOLVER_VERSION;

// What every phase of a run shares.
struct Job {
    Options opt;
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_Comm node = MPI_COMM_NULL;  // the ranks on this node (shared memory)
    int rank = 0, ranks = 1, ranks_on_node = 1;
    std::string thread_placement;  // place_threads()
    double t_start = 0;            // MPI_Wtime() at the start
    bool root() const { return rank == 0; }
};

// ---- the modes; each returns the exit status (0, 2, or 3: --validate failed)

// The dense solve's choices, parsed with the options (identical on every rank).
struct DenseSetup {
    GridShape shape;
    BroadcastOptions broadcast;
    std::unique_ptr<Backend> backend;
};
DenseSetup parse_dense_setup(const Options& opt, int ranks);  // throws on a bad choice

int run_floyd_warshall(const Job& job, const DenseSetup& setup);
int run_source_rows(const Job& job);

// ---- helpers of both modes

// Memory of this node for the run: --memory-limit, else MemAvailable.
struct MemoryBudget {
    std::int64_t bytes = 0;
    const char* source = "";  // how the error message names it
};
MemoryBudget memory_budget(const Options& opt);

// This rank's byte need summed over its node, and the largest over all ranks.
// Collective. The node sum is taken in double, then saturated: an int64 sum of
// saturated estimates (core/size_math.hpp) would wrap to a small number and "fit".
struct MemoryNeed {
    std::int64_t on_node = 0;
    std::int64_t most = 0;
};
MemoryNeed memory_need(std::int64_t mine, MPI_Comm node, MPI_Comm world);

std::string describe_bytes(std::int64_t bytes);  // "1048576 bytes (1.0 MiB)"
std::string format_seconds(double s);           // "12.3 s", "4.5 min", "6.7 h"

// Writes `output` as `output`.partial through write(partial_path), collectively,
// and renames it only when complete, so a killed run never leaves a
// distances.bp that looks finished. False (the error printed) when any rank failed.
bool write_complete_output(const std::string& output, MPI_Comm world,
                           const std::function<void(const std::string&)>& write);

}  // namespace litpath::apsp
