// apsp-fw --sources: distance rows of a set of source vertices by Dijkstra
// (core/sssp) instead of the dense n x n Floyd-Warshall.
//
// The sources are split into contiguous blocks over the MPI ranks (rank r
// writes rows [first, first + count) of the output), and each rank's OpenMP
// threads take its sources one at a time. Every rank holds the whole graph.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/size_math.hpp"

namespace litpath::apsp {

// The vertex ids of a sources file, sorted ascending: one id per line, '#'
// starts a comment, blank lines are skipped. Throws std::runtime_error naming
// path:line for a line that is not one integer, an id outside 0..n-1, an id
// listed twice (with the line of its first listing), or a file with no ids.
std::vector<std::int64_t> read_sources_file(const std::string& path, std::int64_t n);

// The rows of `rows` that rank `rank` of `ranks` computes: a contiguous block,
// the first rows % ranks ranks taking one more.
struct RowBlock {
    std::int64_t first = 0;
    std::int64_t count = 0;
};
RowBlock row_block_of_rank(std::int64_t rows, int ranks, int rank);

// Bytes one rank needs in --sources mode: the whole CSR, its block of float32
// rows, its Dijkstra search spaces, and on the reading rank the edges of a .mtx
// file collected before they are placed in the CSR (freed before the rows and
// search spaces are allocated, so only the larger of the two phases counts).
struct RowsMemory {
    std::int64_t graph = 0, rows = 0, workspace = 0, reading = 0;
    std::int64_t total() const { return saturating_add(graph, std::max(reading, saturating_add(rows, workspace))); }
};
RowsMemory rows_memory_per_rank(std::int64_t n, std::int64_t edges, std::int64_t rows_on_rank, int threads,
                                std::int64_t reading_bytes);

}  // namespace litpath::apsp
