// Graphs and references shared by the core/sssp tests (test_sssp.cpp and
// test_sssp_hub_rows.cpp): arc lists, CSRs built from them, random graphs
// with zero costs, parallel arcs, self-loops and disconnected parts, and a
// Bellman-Ford reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/sssp.hpp"

namespace litpath::sssp::testing {

inline constexpr double inf = kUnreachable;

struct Arc {
    std::int64_t from, to;
    float cost;
};

// A CSR that owns its arrays, built from arcs (kept in the order given per row).
struct OwnedCsr {
    std::vector<std::int64_t> row_ptr, col_idx;
    std::vector<float> cost;
    std::int64_t n = 0;

    OwnedCsr(std::int64_t vertices, const std::vector<Arc>& arcs) : row_ptr(vertices + 1, 0), n(vertices) {
        for (const Arc& a : arcs) ++row_ptr[a.from + 1];
        for (std::int64_t v = 0; v < n; ++v) row_ptr[v + 1] += row_ptr[v];
        col_idx.resize(arcs.size());
        cost.resize(arcs.size());
        std::vector<std::int64_t> next(row_ptr.begin(), row_ptr.end() - 1);
        for (const Arc& a : arcs) {
            col_idx[next[a.from]] = a.to;
            cost[next[a.from]++] = a.cost;
        }
    }
    CsrGraph view() const { return CsrGraph{n, row_ptr.data(), col_idx.data(), cost.data()}; }
};

inline std::vector<Arc> reversed(const std::vector<Arc>& arcs) {
    std::vector<Arc> out;
    for (const Arc& a : arcs) out.push_back(Arc{a.to, a.from, a.cost});
    return out;
}

// Bellman-Ford in double: the least fixed point of d[v] = min_u d[u] + c(u, v),
// the same rounding as Dijkstra's (each sum rounded once, left to right).
inline std::vector<double> reference_distances(std::int64_t n, const std::vector<Arc>& arcs, std::int64_t source) {
    std::vector<double> d(static_cast<std::size_t>(n), inf);
    d[static_cast<std::size_t>(source)] = 0;
    for (bool changed = true; changed;) {
        changed = false;
        for (const Arc& a : arcs) {
            const double through = d[a.from] + static_cast<double>(a.cost);
            if (through < d[a.to]) {
                d[a.to] = through;
                changed = true;
            }
        }
    }
    return d;
}

// Directed random graph in `parts` vertex blocks with no arcs between them, a
// few isolated vertices, 10% zero costs, self-loops and parallel arcs.
inline std::vector<Arc> random_arcs(std::int64_t n, int parts, double arcs_per_vertex, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Arc> arcs;
    const std::int64_t isolated = std::max<std::int64_t>(1, n / 20);
    std::uniform_real_distribution<float> cost(0.05f, 10.0f);
    std::uniform_real_distribution<double> unit(0, 1);
    for (int p = 0; p < parts; ++p) {
        const std::int64_t lo = (n - isolated) * p / parts, hi = (n - isolated) * (p + 1) / parts;
        if (hi <= lo) continue;
        std::uniform_int_distribution<std::int64_t> vertex(lo, hi - 1);
        const auto count = static_cast<std::int64_t>(arcs_per_vertex * static_cast<double>(hi - lo));
        for (std::int64_t i = 0; i < count; ++i) {
            const float c = unit(rng) < 0.1 ? 0.0f : cost(rng);
            arcs.push_back(Arc{vertex(rng), vertex(rng), c});
        }
    }
    // Parallel arcs: a dearer copy of some arcs (the cheaper one must win).
    for (std::size_t i = 0; i < arcs.size(); i += 17) arcs.push_back(Arc{arcs[i].from, arcs[i].to, arcs[i].cost + 3});
    return arcs;
}

inline std::vector<Arc> symmetrised(const std::vector<Arc>& arcs) {
    std::vector<Arc> out = arcs;
    for (const Arc& a : arcs) out.push_back(Arc{a.to, a.from, a.cost});
    return out;
}

inline double cheapest_arc(const std::vector<Arc>& arcs, std::int64_t u, std::int64_t v) {
    double best = inf;
    for (const Arc& a : arcs)
        if (a.from == u && a.to == v) best = std::min(best, static_cast<double>(a.cost));
    return best;
}

// The path runs from s to t over existing arcs, repeats no vertex, and its
// costs summed in order give exactly `distance`.
inline void expect_valid_path(const std::vector<Arc>& arcs, const PathResult& result, std::int64_t s, std::int64_t t) {
    ASSERT_FALSE(result.vertices.empty());
    EXPECT_EQ(result.vertices.front(), s);
    EXPECT_EQ(result.vertices.back(), t);
    EXPECT_EQ(std::set<std::int64_t>(result.vertices.begin(), result.vertices.end()).size(), result.vertices.size());
    double total = 0;
    for (std::size_t i = 1; i < result.vertices.size(); ++i) {
        const double c = cheapest_arc(arcs, result.vertices[i - 1], result.vertices[i]);
        ASSERT_TRUE(std::isfinite(c)) << "no arc " << result.vertices[i - 1] << " -> " << result.vertices[i];
        total += c;
    }
    EXPECT_EQ(total, result.distance);
}

inline std::vector<Neighbour> reference_nearest(const std::vector<double>& d, std::int64_t source,
                                         const std::vector<std::uint8_t>& mask, std::int64_t k) {
    std::vector<Neighbour> all;
    for (std::int64_t v = 0; v < static_cast<std::int64_t>(d.size()); ++v)
        if (v != source && mask[v] && std::isfinite(d[v])) all.push_back(Neighbour{v, d[v]});
    std::sort(all.begin(), all.end(), [](const Neighbour& a, const Neighbour& b) {
        return std::tie(a.distance, a.vertex) < std::tie(b.distance, b.vertex);
    });
    if (static_cast<std::int64_t>(all.size()) > k) all.resize(k);
    return all;
}

// The arcs sorted by (from, to, cost): a CSR built from them has its rows
// sorted by column, as the graph stage writes them (the path index needs it).
inline std::vector<Arc> sorted_by_column(std::vector<Arc> arcs) {
    std::sort(arcs.begin(), arcs.end(),
              [](const Arc& a, const Arc& b) { return std::tie(a.from, a.to, a.cost) < std::tie(b.from, b.to, b.cost); });
    return arcs;
}

}  // namespace litpath::sssp::testing
