// Reading the input graph: graph.bp (ADIOS2 CSR, docs/design.md §6.2) or Matrix
// Market (.mtx). Edge (src, dst, cost) means a path step src -> dst; the
// distance matrix row src holds the distances from src.
//
// Each rank keeps only the edges inside its own tiles. From graph.bp a rank
// reads only the CSR rows of the tile rows it owns (ADIOS2 selections); a .mtx
// file is text and has no index, so every rank scans it and filters.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tiling.hpp"

namespace litpath::apsp {

struct Edge {
    std::int64_t src;
    std::int64_t dst;
    float cost;
};

enum class GraphFormat { adios_bp, matrix_market };

struct GraphInfo {
    GraphFormat format = GraphFormat::matrix_market;
    std::string path;
    std::int64_t n = 0;
    std::int64_t stored_entries = 0;  // entries in the file (before symmetrisation)
    std::string digest;               // graph_digest attribute, or sha256 of the .mtx file
    bool symmetric = false;           // .mtx "symmetric": each off-diagonal entry is two edges
};

// The whole graph as a CSR owning its arrays: the edges of u are u -> col_idx[e]
// with cost cost[e] for e in [row_ptr[u], row_ptr[u+1]).
struct GraphCsr {
    std::int64_t n = 0;
    std::vector<std::int64_t> row_ptr;  // n + 1
    std::vector<std::int64_t> col_idx;
    std::vector<float> cost;

    std::int64_t edge_count() const { return row_ptr.empty() ? 0 : row_ptr.back(); }
    std::int64_t bytes() const {
        return static_cast<std::int64_t>(row_ptr.size() * sizeof(std::int64_t) +
                                         col_idx.size() * (sizeof(std::int64_t) + sizeof(float)));
    }
};

GraphFormat detect_format(const std::string& path);  // throws when neither

// n and the digest only (cheap: the .mtx header, or graph.bp's `n` scalar).
// Throws std::runtime_error naming the file (and line) on any problem.
GraphInfo read_graph_info(const std::string& path, MPI_Comm comm);

// Calls visit(edge) for every edge of the graph that `keep` accepts. Edges come
// as stored (duplicates included; the caller keeps the minimum). Throws with
// file and line (or array and index) on malformed input or a negative cost.
// read_all=true reads every row of graph.bp (for --validate on one rank).
void read_graph_edges(const GraphInfo& info, const LocalTiles& layout, bool read_all,
                      const std::function<bool(std::int64_t, std::int64_t)>& keep,
                      const std::function<void(const Edge&)>& visit);

// Every edge of the graph as a CSR (apsp-fw --sources, which needs all of it):
// graph.bp's arrays as they are, or a .mtx file's entries (symmetric ones in
// both directions) in file order within each row; duplicates are kept. Checked
// like read_graph_edges, with the same messages.
GraphCsr read_graph_csr(const GraphInfo& info);

// Upper bound of the edges read_graph_csr returns (for memory checks before reading).
std::int64_t edge_count_bound(const GraphInfo& info);

}  // namespace litpath::apsp
