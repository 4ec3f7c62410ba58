// The path index of liblitpath_sssp: the rows of the highest-degree vertices
// (the hubs) copied and sorted by cost, so that a search relaxes a hub's arcs
// in cost order and only as far as it needs to.
//
// Why. On the literature graph a few thousand concepts are mentioned by most
// abstracts: at 10M predications the largest row has 1.2M arcs and the
// 3,000 rows of 1,024 arcs or more hold a third of all arcs. Dijkstra scans a
// vertex's whole row when it settles it, so a pair query that settles four or
// five hubs scans a million arcs (the median between two random abstracts)
// although its answer is a few hops away.
//
// What. For each hub the index holds its row sorted by (cost, column). When a
// search settles a hub it scans nothing; it queues a *cursor* keyed by the
// hub's distance plus the cost of its cheapest arc not yet relaxed. When the
// cursor reaches the top of the queue the search relaxes that arc (and the
// arcs of equal cost) and queues the cursor again with the next arc's key.
// So a hub's arcs are relaxed in order of the distance they lead to, exactly
// when plain Dijkstra would need them -- the sorted adjacency lists of Spira
// (SIAM J. Comput. 2(1), 1973) and Moffat and Takaoka (SIAM J. Comput. 16(6),
// 1987), kept here only for the rows where they pay. A bidirectional search
// stops once the two frontiers' keys add up to the best path found, which at
// these distances is long before the dear end of a hub's row: median arcs
// relaxed per query 1.2M -> 4k on the 10M graph.
//
// Exactness. Deferring an arc never changes a settled distance (a deferred
// arc's cursor sits in the queue with a key no larger than the distance the
// arc leads to, so Dijkstra's invariant holds). What deferral can hide is the
// meeting of the two searches over an arc (x, y) with x settled forward and y
// backward: plain bidirectional Dijkstra finds it when the second of the two
// is settled and scans the arc, and checks every improved distance against
// the other side's distance of the same vertex. Here:
//  - if one end is not a hub its row is scanned in full when it is settled, so
//    the arc is relaxed into the hub and that check sees the meeting;
//  - if both ends are hubs, settling one checks it against every hub the other
//    side has settled (a binary search in the CSR row, skipped when the two
//    distances plus the row's cheapest arc to a hub cannot beat the best).
// Costs are summed in double in the same order as without the index, so the
// distance is the same to the last bit; when several paths tie, the one
// returned may differ from the plain search's.
//
// The index holds the same arcs as the graph: check_hub_rows compares every
// hub row with the CSR's (same arcs, sorted by cost) and derives the one
// per-row number the search needs besides, so an index built for another
// graph or damaged on disk is refused, never searched.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sssp.hpp"

namespace litpath::sssp {

// A borrowed view of a path index over a graph of n vertices (nothing is copied).
struct HubRows {
    std::int64_t rows = 0;                  // R, the number of hubs
    const std::int64_t* vertex = nullptr;   // R hub vertex ids, strictly ascending
    const std::int64_t* start = nullptr;    // R + 1: hub r's arcs are [start[r], start[r + 1])
    const std::uint32_t* col = nullptr;     // start[R] columns, each row sorted by (cost, column)
    const float* cost = nullptr;            // start[R] costs, aligned with col
    const float* min_hub_cost = nullptr;    // R: hub r's cheapest arc to another hub (+inf: none)

    std::int64_t arc_count() const { return rows > 0 ? start[rows] : 0; }

    // The hub row of vertex v, or -1 when v is not a hub (binary search over
    // the R hub ids: a few thousand, so it stays in cache).
    std::int64_t row_of(std::int64_t v) const;
};

// The hubs of a graph: the rows of at least min_degree arcs, largest first
// (ties: smaller vertex id first), as many as fit in max_arcs arcs in all.
// Returned ascending. A row that does not fit ends the choice (the rows after
// it are smaller, or equal and of a larger id), so the choice is a prefix of
// the degree order.
std::vector<std::int64_t> choose_hubs(const CsrGraph& graph, std::int64_t min_degree, std::int64_t max_arcs);

// Fills start (R + 1), col and cost (start[R] each) with the rows of the R
// hubs vertex[0..R) sorted by (cost, column). threads <= 0: OpenMP's default.
// vertex must be strictly ascending and in range (std::invalid_argument
// otherwise); col needs n < 2^32.
void build_hub_rows(const CsrGraph& graph, const std::int64_t* vertex, std::int64_t rows, std::int64_t* start,
                    std::uint32_t* col, float* cost, int threads);

// Checks an index against its graph and fills min_hub_cost (R entries):
// vertex strictly ascending in range; start from 0 with hub r's count equal to
// its degree; every row sorted by (cost, column); every row the same arcs as
// the CSR's (the multiset of (column, cost) pairs, compared by count and by an
// order-independent 64-bit hash: a damaged or foreign index is refused with
// odds of a miss around 2^-64); each hub's CSR row sorted by column (the
// search looks hub-to-hub arcs up there). Throws std::invalid_argument naming
// the first problem. O(n + indexed arcs); once per index, not per query.
void check_hub_rows(const CsrGraph& graph, const HubRows& hubs, float* min_hub_cost_out, int threads);

}  // namespace litpath::sssp
