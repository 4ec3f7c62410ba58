// apsp-fw's command line: the usage text, the options it sets, and their
// parsing and range checks (before anything is narrowed to int).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "io/checkpoint.hpp"

namespace litpath::apsp {

// The text of --help.
extern const char* const kUsage;

constexpr std::int64_t kMaxTile = 16384;    // a b x b tile of floats stays within 1 GiB
constexpr std::int64_t kMaxThreads = 4096;  // per rank

struct Options {
    std::string input, output, grid = "auto", broadcast = "ring", backend = "cpu", summary_json, adios2_config;
    int tile = 256;
    std::size_t chunk_bytes = 2u << 20;
    bool lookahead = true;
    std::string gpu_aware_mpi = "auto";
    int threads = 0;  // 0: not given (apsp-fw chooses, see --help)
    std::int64_t validate = 0;
    double validate_tol = 1e-4;
    std::uint64_t seed = 12345;
    bool progress = false;
    bool checksum = false;  // --checksum: distances_checksum in the summary
    std::int64_t memory_limit = 0;
    bool help = false, version = false;
    std::string checkpoint_dir;
    CheckpointInterval checkpoint_every;
    bool resume = false;
    std::string sources;          // --sources FILE: rows mode
    std::set<std::string> given;  // flags present on the command line
};

// A command line apsp-fw refuses; the message names the option.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The options of argv. Throws UsageError for an unknown option, a missing or
// malformed value, a value out of range, or options that do not go together
// (--sources with the dense solve's options, --resume without --checkpoint-dir).
Options parse_options(int argc, char** argv);

// A positive byte count with an optional suffix K, M, G (KiB, MiB, GiB) or B,
// at most 2^62 bytes.
std::int64_t parse_bytes(const std::string& flag, const std::string& text);

// An integer option within [min_value, max_value], checked before any caller narrows it.
std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t min_value,
                       std::int64_t max_value = std::numeric_limits<std::int64_t>::max());

}  // namespace litpath::apsp
