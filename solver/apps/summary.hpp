// apsp-fw's JSON summary (on stdout, and in --summary-json): what was solved,
// on what, how, and each phase's seconds on the slowest rank. One struct per
// mode, each with its writer. The keys and their order are a format that
// pipeline/solve.py and the tests read: add keys, never rename or reorder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "io/validate.hpp"

namespace litpath::apsp {

// Seconds of the dense solve's phases, each the slowest rank's; `solve` is the
// whole solve between barriers (diagonal to outer are parts of it).
struct SolvePhaseSeconds {
    double read = 0, diagonal = 0, panel = 0, broadcast = 0, outer = 0, write = 0, validate = 0, checkpoint = 0;
    double solve = 0;
};

struct CheckpointSummary {
    std::string dir;
    std::string every;  // CheckpointInterval::to_string()
    std::int64_t written = 0;
    std::int64_t resumed_from = -1;  // -1: started from iteration 0 (null in the JSON)
};

// The dense solve: "method": "floyd-warshall".
struct SolveSummary {
    std::string solver_version;
    std::string input;
    std::string output;  // empty: nothing written (null in the JSON)
    std::string graph_digest;
    std::int64_t n = 0;
    std::int64_t input_entries = 0;
    int ranks = 1;
    std::string grid;
    int tile = 0;
    std::string broadcast;
    std::size_t chunk_bytes = 0;
    bool lookahead = true;
    std::string backend, isa;
    int threads = 1;
    std::string thread_placement;
    std::string matrix_residency;  // "host" or "device"
    bool gpu_aware_mpi = false;
    SolvePhaseSeconds seconds;
    std::optional<CheckpointSummary> checkpoint;  // without --checkpoint-dir: null
    double total_seconds = 0;
    double semiring_ops = 0;  // 2 n^3 (min and plus each count once)
    std::optional<ValidationResult> validate;  // without --validate: null
    std::optional<std::uint64_t> distances_checksum;  // without --checksum: null

    bool ok() const { return !validate || validate->ok; }
    std::string to_json() const;
};

// The distance rows of a source set: "method": "rows".
struct RowsSummary {
    std::string solver_version;
    std::string input;
    std::string output;  // empty: nothing written (null in the JSON)
    std::string sources_file;
    std::string graph_digest;
    std::int64_t n = 0;
    std::int64_t input_entries = 0;
    std::int64_t edges = 0;
    std::int64_t rows = 0;
    int ranks = 1;
    int threads = 1;
    std::string thread_placement;
    double read_seconds = 0, solve_seconds = 0, write_seconds = 0;  // slowest rank; solve between barriers
    double total_seconds = 0;

    std::string to_json() const;
};

// Prints `json` on stdout and, unless `path` is empty, writes it to `path` too
// (a warning on stderr, not a failure, when that write fails).
void publish_summary(const std::string& json, const std::string& path);

}  // namespace litpath::apsp
