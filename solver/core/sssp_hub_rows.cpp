// Building and checking the path index (sssp_hub_rows.hpp). The search that
// uses it is in sssp.cpp, beside the plain one.
#include "core/sssp_hub_rows.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace litpath::sssp {
namespace {

std::int64_t degree(const CsrGraph& graph, std::int64_t u) { return graph.row_ptr[u + 1] - graph.row_ptr[u]; }

// Costs are finite and >= 0, so their bit patterns order like the floats, and
// (cost bits, column) packed into 64 bits sorts by (cost, column) -- once -0.0,
// which is >= 0 but whose sign bit would sort it after every other cost, is
// made +0.0 (adding +0.0 does that and changes nothing else; d + 0.0 and
// d + -0.0 are the same distance for every d >= +0.0, so the index may hold
// +0.0 where the graph holds -0.0).
std::uint64_t sort_key(float cost, std::int64_t column) {
    cost += 0.0f;
    std::uint32_t bits;
    std::memcpy(&bits, &cost, sizeof bits);
    return (static_cast<std::uint64_t>(bits) << 32) | static_cast<std::uint64_t>(column);
}

// splitmix64's finaliser: a well-mixed hash of one (column, cost) pair. The sum
// over a row is independent of the row's order.
std::uint64_t arc_hash(std::int64_t column, float cost) {
    std::uint64_t x = sort_key(cost, column) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void check_vertices(const CsrGraph& graph, const std::int64_t* vertex, std::int64_t rows) {
    if (rows < 0) throw std::invalid_argument("path index: " + std::to_string(rows) + " hub rows");
    if (rows > 0 && !vertex) throw std::invalid_argument("path index: the hub ids are null");
    for (std::int64_t r = 0; r < rows; ++r) {
        if (vertex[r] < 0 || vertex[r] >= graph.n)
            throw std::invalid_argument("path index: hub " + std::to_string(r) + " is vertex " +
                                        std::to_string(vertex[r]) + ", outside 0.." + std::to_string(graph.n - 1));
        if (r > 0 && vertex[r] <= vertex[r - 1])
            throw std::invalid_argument("path index: hub ids must be strictly ascending (hub " + std::to_string(r) +
                                        " is " + std::to_string(vertex[r]) + " after " +
                                        std::to_string(vertex[r - 1]) + ")");
    }
    if (graph.n > (std::int64_t{1} << 32))
        throw std::invalid_argument("path index: columns are 32-bit, the graph has " + std::to_string(graph.n) +
                                    " vertices");
}

}  // namespace

std::int64_t HubRows::row_of(std::int64_t v) const {
    const std::int64_t* end = vertex + rows;
    const std::int64_t* found = std::lower_bound(vertex, end, v);
    return found != end && *found == v ? found - vertex : -1;
}

std::vector<std::int64_t> choose_hubs(const CsrGraph& graph, std::int64_t min_degree, std::int64_t max_arcs) {
    std::vector<std::int64_t> order;
    for (std::int64_t u = 0; u < graph.n; ++u)
        if (degree(graph, u) >= std::max<std::int64_t>(min_degree, 1)) order.push_back(u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t a, std::int64_t b) { return degree(graph, a) > degree(graph, b); });
    std::vector<std::int64_t> hubs;
    std::int64_t arcs = 0;
    for (const std::int64_t u : order) {
        if (arcs + degree(graph, u) > max_arcs) break;
        arcs += degree(graph, u);
        hubs.push_back(u);
    }
    std::sort(hubs.begin(), hubs.end());
    return hubs;
}

void build_hub_rows(const CsrGraph& graph, const std::int64_t* vertex, std::int64_t rows, std::int64_t* start,
                    std::uint32_t* col, float* cost, int threads) {
    check_vertices(graph, vertex, rows);
    start[0] = 0;
    for (std::int64_t r = 0; r < rows; ++r) start[r + 1] = start[r] + degree(graph, vertex[r]);
    if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel num_threads(threads)
    {
        std::vector<std::uint64_t> keys;
        // Rows differ in size by three orders of magnitude: hand them out one at a time.
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t u = vertex[r], first = graph.row_ptr[u], count = degree(graph, u);
            keys.resize(static_cast<std::size_t>(count));
            for (std::int64_t i = 0; i < count; ++i) keys[i] = sort_key(graph.cost[first + i], graph.col_idx[first + i]);
            std::sort(keys.begin(), keys.end());
            for (std::int64_t i = 0; i < count; ++i) {
                const std::uint32_t bits = static_cast<std::uint32_t>(keys[i] >> 32);
                col[start[r] + i] = static_cast<std::uint32_t>(keys[i] & 0xffffffffULL);
                std::memcpy(&cost[start[r] + i], &bits, sizeof bits);
            }
        }
    }
}

void check_hub_rows(const CsrGraph& graph, const HubRows& hubs, float* min_hub_cost_out, int threads) {
    check_vertices(graph, hubs.vertex, hubs.rows);
    const std::int64_t rows = hubs.rows;
    if (!hubs.start) throw std::invalid_argument("path index: start is null");
    if (hubs.start[0] != 0) throw std::invalid_argument("path index: start[0] must be 0");
    for (std::int64_t r = 0; r < rows; ++r)
        if (hubs.start[r + 1] - hubs.start[r] != degree(graph, hubs.vertex[r]))
            throw std::invalid_argument("path index: hub " + std::to_string(r) + " (vertex " +
                                        std::to_string(hubs.vertex[r]) + ") has " +
                                        std::to_string(hubs.start[r + 1] - hubs.start[r]) +
                                        " arcs, the graph's row " + std::to_string(degree(graph, hubs.vertex[r])));
    if (hubs.arc_count() > 0 && (!hubs.col || !hubs.cost))
        throw std::invalid_argument("path index: col or cost is null");
    // Which vertices are hubs, for the cheapest hub-to-hub arc of each row.
    std::vector<std::uint8_t> is_hub(static_cast<std::size_t>(graph.n), 0);
    for (std::int64_t r = 0; r < rows; ++r) is_hub[static_cast<std::size_t>(hubs.vertex[r])] = 1;
    if (threads <= 0) threads = omp_get_max_threads();

    // The first bad row (smallest r) wins, so the message does not depend on the threads.
    std::int64_t bad_row = rows;
    std::string bad_reason;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t u = hubs.vertex[r], first = graph.row_ptr[u], count = degree(graph, u);
        std::string reason;  // the first problem of this row
        const auto fail = [&](std::string why) {
            if (reason.empty()) reason = std::move(why);
        };
        std::uint64_t csr_hash = 0, index_hash = 0;
        float cheapest_to_hub = std::numeric_limits<float>::infinity();
        for (std::int64_t i = 0; i < count && reason.empty(); ++i) {
            const std::int64_t v = graph.col_idx[first + i];
            if (i > 0 && v < graph.col_idx[first + i - 1])
                fail("the graph's row is not sorted by column at arc " + std::to_string(i));
            csr_hash += arc_hash(v, graph.cost[first + i]);
            if (v >= 0 && v < graph.n && is_hub[static_cast<std::size_t>(v)])
                cheapest_to_hub = std::min(cheapest_to_hub, graph.cost[first + i]);
            const std::int64_t e = hubs.start[r] + i;
            if (hubs.col[e] >= graph.n)
                fail("column " + std::to_string(hubs.col[e]) + " at arc " + std::to_string(i) +
                     " is outside the graph");
            if (i > 0 && sort_key(hubs.cost[e], hubs.col[e]) < sort_key(hubs.cost[e - 1], hubs.col[e - 1]))
                fail("the index row is not sorted by (cost, column) at arc " + std::to_string(i));
            index_hash += arc_hash(hubs.col[e], hubs.cost[e]);
        }
        if (csr_hash != index_hash) fail("its arcs differ from the graph's row");
        if (min_hub_cost_out) min_hub_cost_out[r] = cheapest_to_hub;
        if (!reason.empty()) {
#pragma omp critical(litpath_hub_rows_check)
            if (r < bad_row) {
                bad_row = r;
                bad_reason = std::move(reason);
            }
        }
    }
    if (bad_row < rows)
        throw std::invalid_argument("path index: hub " + std::to_string(bad_row) + " (vertex " +
                                    std::to_string(hubs.vertex[bad_row]) + "): " + bad_reason);
}

}  // namespace litpath::sssp
