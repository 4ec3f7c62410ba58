// Alternative paths between two vertices of a symmetric CSR graph:
//
//   k_shortest_paths       the k shortest loopless paths, cheapest first (Yen)
//   count_shortest_paths   how many distinct paths share the shortest distance
//
// Both take an optional filter on the intermediate vertices (`allowed`: n
// bytes, 0 = the vertex may not lie inside a path; the two endpoints are never
// filtered) and a Deadline, as the single-path search does (core/sssp.hpp).
//
// Costs. Every path's cost is the sum, in double and in path order, of its
// edges' costs (the cheapest of parallel edges): the same number
// shortest_path returns for a path, and the one a caller gets by summing the
// path's float32 costs in order.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/sssp.hpp"

namespace litpath::sssp {

// The k shortest loopless source -> target paths of a symmetric graph,
// cheapest first; fewer when fewer exist. The first is shortest_path's; the
// others of one cost come in lexicographic order of their vertex ids.
// source == target: the one path [source] of cost 0.
//
// Method: Yen's algorithm (Management Science 17(11), 1971), with Lawler's
// observation (Management Science 18(7), 1972) that a path's spur searches
// need start only at the vertex where it left the path it was derived from
// (the earlier ones would repeat its parent's searches exactly). Each spur
// search is shortest_path itself -- the bidirectional Dijkstra with the path
// index -- on a SearchMask that removes the root path's vertices and the edges
// out of the spur vertex that accepted paths with the same root already take.
// At most (k - 1) x (path length) spur searches.
//
// Throws DeadlineExceeded past `deadline` (nothing is returned; `spaces` stays
// usable), std::invalid_argument for a bad vertex or a negative k.
std::vector<PathResult> k_shortest_paths(const CsrGraph& graph, std::int64_t source, std::int64_t target,
                                         std::int64_t k, const std::uint8_t* allowed, PathSpaces& spaces,
                                         const Deadline& deadline = {}, const HubRows* hubs = nullptr);

// The count of shortest-path ties; see count_shortest_paths.
struct TieCount {
    double distance = kUnreachable;  // the shortest distance (+inf: unreachable, paths = 0)
    std::int64_t paths = 0;          // distinct loopless paths of that distance
    bool saturated = false;          // true: `paths` is a lower bound (see below)
};

// Work allowed for enumerating the loopless walks inside zero-cost plateaus
// (see count_shortest_paths) before the count is reported as a lower bound.
inline constexpr std::int64_t kPlateauWork = std::int64_t{1} << 20;

// How many distinct loopless source -> target paths have the shortest
// distance. The searches of settle_shortest_path_region give the distance
// from the source of every vertex of a shortest path; an edge u -> v is *tight* when
// dist(u) + cost == dist(v) in double, exactly as the search sums, and the
// paths counted are those made of tight edges (every prefix of such a path is
// a shortest path to its end; this is the count networkx's
// all_shortest_paths enumerates when every cost is positive). Counting runs
// over the vertices that reach the target by tight edges, in order of
// distance. Zero-cost edges (and costs below the rounding of the distance)
// join vertices of equal distance into plateaus a path may cross in either
// direction: inside a plateau the loopless walks between each entry and exit
// vertex are enumerated, at most kPlateauWork steps in all per query.
// Saturation: counts add with a ceiling at INT64_MAX, and a plateau whose
// walks exceed the work bound stops being enumerated; either sets `saturated`
// and `paths` is then a lower bound. Throws DeadlineExceeded past `deadline`.
TieCount count_shortest_paths(const CsrGraph& graph, std::int64_t source, std::int64_t target,
                              const std::uint8_t* allowed, PathSpaces& spaces, const Deadline& deadline = {},
                              const HubRows* hubs = nullptr);

}  // namespace litpath::sssp
