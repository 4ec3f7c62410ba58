// core/sssp: Dijkstra rows, bidirectional pair queries and nearest candidates
// against a plain Bellman-Ford reference, on hand-checked graphs and random
// ones with zero costs, parallel edges, self-loops and disconnected parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "core/sssp.hpp"
#include "sssp_test_graphs.hpp"

using namespace litpath::sssp;

namespace {

using namespace litpath::sssp::testing;

// Two undirected paths of m vertices each, 0 .. m-1 and m .. 2m-1 (unit costs,
// no edge between them): an unreachable pair explores a whole path.
std::vector<Arc> two_long_paths(std::int64_t m) {
    std::vector<Arc> arcs;
    arcs.reserve(static_cast<std::size_t>(4 * m));
    for (const std::int64_t start : {std::int64_t{0}, m})
        for (std::int64_t v = start; v + 1 < start + m; ++v) {
            arcs.push_back(Arc{v, v + 1, 1.0f});
            arcs.push_back(Arc{v + 1, v, 1.0f});
        }
    return arcs;
}

// 0 -1-> 1 -2-> 2, 0 -4-> 2, 2 -0-> 3 (zero cost), 4 -1-> 0 (directed: 4 is
// unreachable from 0), 5 isolated.
const std::vector<Arc> kSmall = {{0, 1, 1}, {1, 2, 2}, {0, 2, 4}, {2, 3, 0}, {4, 0, 1}};

}  // namespace

TEST(RadixHeap, PopsInDistanceOrderWithMonotonePushes) {
    RadixHeap heap;
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> step(0, 5);
    std::vector<double> popped;
    double last = 0;
    heap.push(0, 0);
    for (int i = 1; i < 2000; ++i) {
        if (i % 3 == 0) {
            const auto e = heap.pop();
            EXPECT_GE(e.distance, last);
            last = e.distance;
            popped.push_back(e.distance);
        }
        heap.push(last + (i % 7 == 0 ? 0.0 : step(rng)), i);  // ties with the last pop included
    }
    while (!heap.empty()) {
        const double top = heap.top().distance;
        EXPECT_EQ(heap.pop().distance, top);
        popped.push_back(top);
    }
    EXPECT_TRUE(std::is_sorted(popped.begin(), popped.end()));
    heap.clear();
    EXPECT_TRUE(heap.empty());
    heap.push(0.5, 1);
    EXPECT_EQ(heap.pop().vertex, 1);
}

TEST(Sssp, HandCheckedRow) {
    const OwnedCsr csr(6, kSmall);
    SearchSpace space(6);
    std::vector<float> row(6);
    distances_from(csr.view(), 0, space, row.data());
    const float finf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(row, (std::vector<float>{0, 1, 3, 3, finf, finf}));
    distances_from(csr.view(), 4, space, row.data());  // the space is reused
    EXPECT_EQ(row, (std::vector<float>{1, 2, 4, 4, 0, finf}));
    distances_from(csr.view(), 5, space, row.data());
    EXPECT_EQ(row, (std::vector<float>{finf, finf, finf, finf, finf, 0}));
}

TEST(Sssp, HandCheckedPathsDirectedAndSameVertex) {
    const OwnedCsr forward(6, kSmall), reverse(6, reversed(kSmall));
    PathSpaces spaces(6);
    const CsrGraph rev = reverse.view();
    auto p = shortest_path(forward.view(), &rev, 0, 3, spaces);
    EXPECT_EQ(p.distance, 3.0);
    EXPECT_EQ(p.vertices, (std::vector<std::int64_t>{0, 1, 2, 3}));
    p = shortest_path(forward.view(), &rev, 3, 0, spaces);  // against the arcs
    EXPECT_EQ(p.distance, inf);
    EXPECT_TRUE(p.vertices.empty());
    p = shortest_path(forward.view(), &rev, 4, 4, spaces);
    EXPECT_EQ(p.distance, 0.0);
    EXPECT_EQ(p.vertices, (std::vector<std::int64_t>{4}));
    p = shortest_path(forward.view(), &rev, 0, 5, spaces);  // isolated
    EXPECT_EQ(p.distance, inf);
    EXPECT_THROW(shortest_path(forward.view(), &rev, 0, 6, spaces), std::invalid_argument);
    EXPECT_THROW(shortest_path(forward.view(), &rev, -1, 2, spaces), std::invalid_argument);
}

TEST(Sssp, ZeroCostCyclesGiveSimplePaths) {
    // 0 -> 1 -> 2 -> 3 with a zero-cost cycle 1 <-> 2 <-> 4 around the middle.
    const std::vector<Arc> arcs = symmetrised({{0, 1, 1}, {1, 2, 0}, {2, 4, 0}, {4, 1, 0}, {2, 3, 1}});
    const OwnedCsr csr(5, arcs);
    PathSpaces spaces(5);
    for (std::int64_t s = 0; s < 5; ++s)
        for (std::int64_t t = 0; t < 5; ++t) {
            const auto p = shortest_path(csr.view(), nullptr, s, t, spaces);
            EXPECT_EQ(p.distance, reference_distances(5, arcs, s)[t]) << s << " -> " << t;
            expect_valid_path(arcs, p, s, t);
        }
}

TEST(Sssp, NearestBreaksTiesByVertexIdEvenWhenReachedLate) {
    // From 0: 7 at 1, then 2 at 1 as well, reached only through 7 (zero cost);
    // 5 at 2. Candidates 2, 5, 7: with k = 1 the tie at 1 goes to vertex 2.
    const std::vector<Arc> arcs = {{0, 7, 1}, {7, 2, 0}, {0, 5, 2}, {0, 3, 0.5f}};
    const OwnedCsr csr(8, arcs);
    std::vector<std::uint8_t> mask(8, 0);
    mask[2] = mask[5] = mask[7] = mask[0] = 1;  // the source itself never counts
    SearchSpace space(8);
    auto near = nearest(csr.view(), 0, mask.data(), 1, space);
    ASSERT_EQ(near.size(), 1u);
    EXPECT_EQ(near[0].vertex, 2);
    EXPECT_EQ(near[0].distance, 1.0);
    near = nearest(csr.view(), 0, mask.data(), 10, space);
    ASSERT_EQ(near.size(), 3u);
    EXPECT_EQ(near[1].vertex, 7);
    EXPECT_EQ(near[2].vertex, 5);
    EXPECT_EQ(near[2].distance, 2.0);
    EXPECT_TRUE(nearest(csr.view(), 0, mask.data(), 0, space).empty());
    EXPECT_TRUE(nearest(csr.view(), 5, mask.data(), 3, space).empty());  // 5 has no arcs out
}

class RandomGraphs : public ::testing::TestWithParam<std::tuple<std::int64_t, bool, std::uint64_t>> {};

TEST_P(RandomGraphs, RowsPathsAndNearestMatchTheReference) {
    const auto [n, directed, seed] = GetParam();
    std::vector<Arc> arcs = random_arcs(n, 3, 2.5, seed);
    arcs.push_back(Arc{1, 1, 2.5f});  // a self-loop
    if (!directed) arcs = symmetrised(arcs);
    const OwnedCsr forward(n, arcs), reverse(n, reversed(arcs));
    const CsrGraph graph = forward.view(), rev = reverse.view();
    check_csr(graph);
    check_csr(rev);

    std::vector<std::int64_t> sources;
    for (std::int64_t s = 0; s < n; s += 7) sources.push_back(s);
    sources.push_back(n - 1);  // an isolated vertex
    const auto m = static_cast<std::int64_t>(sources.size());
    std::vector<std::vector<double>> want;
    for (const std::int64_t s : sources) want.push_back(reference_distances(n, arcs, s));

    for (const int threads : {1, 2, 3}) {
        std::vector<float> rows(static_cast<std::size_t>(m * n), -1.0f);
        std::int64_t calls = 0;
        distance_rows(graph, sources.data(), m, rows.data(), threads, [&](std::int64_t done) {
            ++calls;
            EXPECT_LE(done, m);
        });
        EXPECT_EQ(calls, m);
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t v = 0; v < n; ++v)
                ASSERT_EQ(rows[i * n + v], static_cast<float>(want[i][v]))
                    << "threads " << threads << " source " << sources[i] << " vertex " << v;
        // The 8-byte vertex id path (used past 2^32 - 1 vertices) gives the same rows.
        std::vector<float> wide(rows.size(), -1.0f);
        detail::distance_rows_wide_ids(graph, sources.data(), m, wide.data(), threads);
        EXPECT_EQ(wide, rows) << "threads " << threads;
    }

    PathSpaces spaces(n);
    SearchSpace space(n);
    std::mt19937_64 rng(seed + 1);
    std::uniform_int_distribution<std::int64_t> vertex(0, n - 1);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
    for (auto& bit : mask) bit = rng() % 3 == 0;
    for (std::int64_t i = 0; i < m; ++i) {
        const std::int64_t s = sources[i];
        for (int q = 0; q < 6; ++q) {
            const std::int64_t t = q == 0 ? s : vertex(rng);
            const auto p = shortest_path(graph, directed ? &rev : nullptr, s, t, spaces);
            const double d = want[i][t];
            if (std::isinf(d)) {
                EXPECT_EQ(p.distance, inf);
                EXPECT_TRUE(p.vertices.empty());
                continue;
            }
            EXPECT_NEAR(p.distance, d, 1e-12 * std::max(1.0, d)) << s << " -> " << t;
            expect_valid_path(arcs, p, s, t);
            // A deadline that does not come changes nothing.
            const Deadline later{Deadline::Clock::now() + std::chrono::hours(1)};
            const auto timed = shortest_path(graph, directed ? &rev : nullptr, s, t, spaces, later);
            EXPECT_EQ(timed.distance, p.distance);
            EXPECT_EQ(timed.vertices, p.vertices);
        }
        for (const std::int64_t k : {1, 5, 1000}) {
            const auto got = nearest(graph, s, mask.data(), k, space);
            const auto expected = reference_nearest(want[i], s, mask, k);
            ASSERT_EQ(got.size(), expected.size());
            for (std::size_t j = 0; j < got.size(); ++j) {
                EXPECT_EQ(got[j].vertex, expected[j].vertex);
                EXPECT_EQ(got[j].distance, expected[j].distance);
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Sssp, RandomGraphs,
                         ::testing::Values(std::make_tuple(std::int64_t{60}, true, 1u),
                                           std::make_tuple(std::int64_t{97}, false, 2u),
                                           std::make_tuple(std::int64_t{150}, true, 3u),
                                           std::make_tuple(std::int64_t{211}, false, 4u)));

TEST(Sssp, DeadlineStopsAWholeComponentSearchAndLeavesTheSpacesUsable) {
    using Clock = Deadline::Clock;
    const std::int64_t m = 1'000'000;  // each side settles a million vertices: tens of ms at least
    const std::vector<Arc> arcs = two_long_paths(m);
    const OwnedCsr csr(2 * m, arcs);
    const CsrGraph graph = csr.view();
    PathSpaces spaces(2 * m);
    SearchSpace space(2 * m);
    const std::vector<std::uint8_t> none(static_cast<std::size_t>(2 * m), 0);  // nearest finds nothing: explores all

    const auto budget = std::chrono::milliseconds(2);
    // Generous: the clock is read about every millisecond of work; the rest is a loaded machine.
    const auto margin = std::chrono::milliseconds(500);
    auto started = Clock::now();
    EXPECT_THROW(shortest_path(graph, nullptr, 0, m, spaces, Deadline{started + budget}), DeadlineExceeded);
    EXPECT_LT(Clock::now() - started, budget + margin);
    started = Clock::now();
    EXPECT_THROW(nearest(graph, 0, none.data(), 1, space, Deadline{started + budget}), DeadlineExceeded);
    EXPECT_LT(Clock::now() - started, budget + margin);

    // The stopped searches leave the spaces ready for the next query.
    auto p = shortest_path(graph, nullptr, 3, 7, spaces);
    EXPECT_EQ(p.distance, 4.0);
    EXPECT_EQ(p.vertices, (std::vector<std::int64_t>{3, 4, 5, 6, 7}));
    std::vector<std::uint8_t> mask(none);
    mask[10] = mask[m + 1] = 1;
    const auto near = nearest(graph, 12, mask.data(), 5, space);
    ASSERT_EQ(near.size(), 1u);
    EXPECT_EQ(near[0].vertex, 10);
    EXPECT_EQ(near[0].distance, 2.0);
}

TEST(Sssp, DeadlineAlreadyPastStopsBeforeTheSearch) {
    const OwnedCsr csr(6, kSmall), reverse(6, reversed(kSmall));
    const CsrGraph rev = reverse.view();
    PathSpaces spaces(6);
    SearchSpace space(6);
    const Deadline past{Deadline::Clock::now() - std::chrono::seconds(1)};
    EXPECT_THROW(shortest_path(csr.view(), &rev, 0, 1, spaces, past), DeadlineExceeded);
    std::vector<std::uint8_t> mask(6, 1);
    EXPECT_THROW(nearest(csr.view(), 0, mask.data(), 2, space, past), DeadlineExceeded);
    // No search, no deadline: a vertex with itself still answers.
    EXPECT_EQ(shortest_path(csr.view(), &rev, 2, 2, spaces, past).distance, 0.0);
    EXPECT_EQ(shortest_path(csr.view(), &rev, 0, 3, spaces).distance, 3.0);
}

TEST(Sssp, ReverseThatIsNotTheTransposeIsReported) {
    // The forward search takes the first step and has the larger frontier, so
    // the backward one goes next and meets the source over the bogus arc.
    const std::vector<Arc> arcs = {{0, 1, 1}, {1, 2, 1}, {0, 3, 1}, {0, 4, 1}};
    const OwnedCsr forward(5, arcs);
    const OwnedCsr wrong(5, {{2, 0, 0.5f}, {1, 0, 1}, {3, 0, 1}, {4, 0, 1}});  // claims 0 -> 2 exists
    const CsrGraph rev = wrong.view();
    PathSpaces spaces(5);
    try {
        shortest_path(forward.view(), &rev, 0, 2, spaces);
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("not the transpose"), std::string::npos) << e.what();
    }
}

TEST(Sssp, CheckCsrNamesTheBadEntry) {
    auto message = [](std::int64_t n, std::vector<std::int64_t> row_ptr, std::vector<std::int64_t> cols,
                      std::vector<float> costs) {
        try {
            check_csr(CsrGraph{n, row_ptr.data(), cols.data(), costs.data()}, "graph");
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("ok");
    };
    EXPECT_EQ(message(2, {0, 1, 2}, {1, 0}, {0, 1}), "ok");
    EXPECT_EQ(message(2, {0, 1, 2}, {1, 2}, {1, 1}), "graph: col_idx[1] = 2 is outside 0..1");
    EXPECT_NE(message(2, {0, 1, 2}, {1, 0}, {1, -1}).find("cost[1] = -1"), std::string::npos);
    EXPECT_NE(message(2, {0, 1, 2}, {1, 0}, {std::nanf(""), 1}).find("cost[0]"), std::string::npos);
    EXPECT_NE(message(2, {0, 2, 1}, {1, 0}, {1, 1}).find("row_ptr decreases at vertex 1"), std::string::npos);
    EXPECT_NE(message(1, {1, 1}, {}, {}).find("row_ptr[0] = 1"), std::string::npos);
}

TEST(Sssp, RowsRefuseOutOfRangeSources) {
    const OwnedCsr csr(6, kSmall);
    const std::vector<std::int64_t> sources = {0, 6};
    std::vector<float> rows(12);
    EXPECT_THROW(distance_rows(csr.view(), sources.data(), 2, rows.data(), 2), std::invalid_argument);
}

namespace {

// Rows of `sources` by distance_rows (narrow and wide vertex ids) against one
// heap-ordered Dijkstra per source (distances_from: the radix-heap search,
// itself checked against Bellman-Ford above) on a graph too large for the
// Bellman-Ford reference.
void expect_rows_match_heap_search(const OwnedCsr& csr, const std::vector<std::int64_t>& sources) {
    const CsrGraph graph = csr.view();
    const std::int64_t n = csr.n;
    const auto m = static_cast<std::int64_t>(sources.size());
    std::vector<float> want(static_cast<std::size_t>(m * n));
    SearchSpace space(n);
    for (std::int64_t i = 0; i < m; ++i) distances_from(graph, sources[i], space, want.data() + i * n);
    std::vector<float> rows(want.size(), -1.0f), wide(want.size(), -1.0f);
    distance_rows(graph, sources.data(), m, rows.data(), 2);
    detail::distance_rows_wide_ids(graph, sources.data(), m, wide.data(), 2);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t v = 0; v < n; ++v) {
            ASSERT_EQ(rows[i * n + v], want[i * n + v]) << "source " << sources[i] << " vertex " << v;
            ASSERT_EQ(wide[i * n + v], want[i * n + v]) << "wide ids, source " << sources[i] << " vertex " << v;
        }
}

}  // namespace

TEST(Sssp, RowsOverSeveralVertexBlocksWithFullBinsMatchTheHeapSearch) {
    // 150,000 vertices: three blocks of 65,536, so candidates cross blocks. Costs
    // of 0 and 1 put most vertices in a few buckets, whose candidates (16 arcs a
    // vertex) overflow the bins (4 candidates a vertex) and are applied
    // mid-bucket; a hub of 60,000 arcs, and a part unreachable from the sources.
    const std::int64_t n = 150000;
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<std::int64_t> vertex(0, 139999);
    std::uniform_int_distribution<int> cost(0, 3);  // a quarter zero costs
    std::vector<Arc> arcs;
    for (std::int64_t i = 0; i < 8 * n; ++i) arcs.push_back(Arc{vertex(rng), vertex(rng), cost(rng) == 0 ? 0.0f : 1.0f});
    for (std::int64_t i = 0; i < 60000; ++i) arcs.push_back(Arc{5, vertex(rng), 1.0f});
    for (std::int64_t v = 140000; v + 1 < n; ++v) arcs.push_back(Arc{v, v + 1, 0.5f});  // a separate chain
    const OwnedCsr csr(n, symmetrised(arcs));
    expect_rows_match_heap_search(csr, {0, 5, 77777, 139999, 140000, n - 1});
}

TEST(Sssp, RowsWithAHugeCostRangeOrOnlyZeroCostsMatchTheReference) {
    // Costs from 1e-7 to 1e4: the bucket width is raised to 1e4 / 4096, so most
    // edges are cheaper than a bucket and vertices are expanded again within it.
    std::mt19937_64 rng(11);
    const std::vector<float> costs = {0.0f, 1e-7f, 3e-4f, 0.5f, 2.0f, 700.0f, 1e4f};
    std::uniform_int_distribution<std::int64_t> vertex(0, 199);
    std::uniform_int_distribution<std::size_t> pick(0, costs.size() - 1);
    std::vector<Arc> arcs, zero;
    for (int i = 0; i < 700; ++i) {
        arcs.push_back(Arc{vertex(rng), vertex(rng), costs[pick(rng)]});
        zero.push_back(Arc{vertex(rng), vertex(rng), 0.0f});
    }
    for (const auto& graph_arcs : {arcs, zero}) {
        const OwnedCsr csr(200, graph_arcs);
        const std::vector<std::int64_t> sources = {0, 13, 199};
        std::vector<float> rows(3 * 200, -1.0f);
        distance_rows(csr.view(), sources.data(), 3, rows.data(), 2);
        for (std::size_t i = 0; i < sources.size(); ++i) {
            const auto want = reference_distances(200, graph_arcs, sources[i]);
            for (std::int64_t v = 0; v < 200; ++v)
                ASSERT_EQ(rows[i * 200 + v], static_cast<float>(want[v])) << "source " << sources[i] << " vertex " << v;
        }
    }
}

TEST(Sssp, RowsWorkspaceCountsThePackedEdgesAndEachThreadsSearch) {
    const std::int64_t n = 2000000, edges = 56000000;
    const std::int64_t one = distance_rows_workspace_bytes(n, edges, 64, 1);
    const std::int64_t two = distance_rows_workspace_bytes(n, edges, 64, 2);
    // Shared: the packed edges (8 bytes), row_ptr and the renumbering (4-byte ids).
    const std::int64_t shared = 8 * edges + 8 * (n + 1) + 2 * 4 * n;
    EXPECT_GE(one - shared, 8 * n);           // a search holds a distance array at least
    EXPECT_EQ(two - one, one - shared);       // one more search for the second thread
    EXPECT_EQ(distance_rows_workspace_bytes(n, edges, 1, 2), one);  // one row: one thread works
    EXPECT_EQ(distance_rows_workspace_bytes(n, edges, 0, 2), 0);
}
