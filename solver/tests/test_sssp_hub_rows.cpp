// core/sssp_hub_rows: the path index (hub rows sorted by cost). Its choice and
// its check on hand-made graphs; then searches with it against the plain
// search and a Bellman-Ford reference on random graphs with zero costs, ties,
// parallel edges, self-loops and disconnected parts, for hub sets from none to
// every vertex.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/sssp.hpp"
#include "core/sssp_hub_rows.hpp"
#include "sssp_test_graphs.hpp"

using namespace litpath::sssp;

namespace {

using namespace litpath::sssp::testing;

// A path index that owns its arrays, built and checked for one graph.
struct OwnedHubRows {
    std::vector<std::int64_t> vertex, start;
    std::vector<std::uint32_t> col;
    std::vector<float> cost, min_hub_cost;

    OwnedHubRows(const CsrGraph& graph, std::vector<std::int64_t> hubs) : vertex(std::move(hubs)) {
        const auto rows = static_cast<std::int64_t>(vertex.size());
        start.resize(static_cast<std::size_t>(rows + 1));
        std::int64_t arcs = 0;
        for (const std::int64_t u : vertex) arcs += graph.row_ptr[u + 1] - graph.row_ptr[u];
        col.resize(static_cast<std::size_t>(arcs));
        cost.resize(static_cast<std::size_t>(arcs));
        min_hub_cost.resize(static_cast<std::size_t>(rows));
        build_hub_rows(graph, vertex.data(), rows, start.data(), col.data(), cost.data(), 2);
        check_hub_rows(graph, view(), min_hub_cost.data(), 2);
    }

    HubRows view() const {
        return HubRows{static_cast<std::int64_t>(vertex.size()), vertex.data(), start.data(), col.data(),
                       cost.data(), min_hub_cost.data()};
    }
};

std::string check_message(const CsrGraph& graph, const HubRows& hubs) {
    std::vector<float> min_cost(static_cast<std::size_t>(std::max<std::int64_t>(hubs.rows, 1)));
    try {
        check_hub_rows(graph, hubs, min_cost.data(), 2);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "ok";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Vertex 0 with arcs to 1..4 (costs 3, 1, 2, 1), vertex 5 with arcs to 1..3
// (2, 2, 0.5), a 0 - 5 edge of cost 4; symmetric, rows sorted by column.
std::vector<Arc> two_hubs() {
    return sorted_by_column(symmetrised(
        {{0, 1, 3}, {0, 2, 1}, {0, 3, 2}, {0, 4, 1}, {5, 1, 2}, {5, 2, 2}, {5, 3, 0.5f}, {0, 5, 4}}));
}

}  // namespace

TEST(HubRows, ChooseHubsTakesTheLargestRowsWithinTheArcBudget) {
    const OwnedCsr csr(6, two_hubs());  // degrees: 0 -> 5, 5 -> 4, 1..3 -> 2, 4 -> 1
    const CsrGraph graph = csr.view();
    EXPECT_EQ(choose_hubs(graph, 1, 100), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(choose_hubs(graph, 3, 100), (std::vector<std::int64_t>{0, 5}));
    EXPECT_EQ(choose_hubs(graph, 1, 9), (std::vector<std::int64_t>{0, 5}));
    // 5 + 4 + 2 fit 11; ties at degree 2 go to the smaller id first.
    EXPECT_EQ(choose_hubs(graph, 1, 11), (std::vector<std::int64_t>{0, 1, 5}));
    // A row that does not fit ends the choice: 4 (degree 1) would fit, but comes after it.
    EXPECT_EQ(choose_hubs(graph, 1, 8), (std::vector<std::int64_t>{0}));
    EXPECT_TRUE(choose_hubs(graph, 6, 100).empty());
    EXPECT_TRUE(choose_hubs(graph, 1, 4).empty());
}

TEST(HubRows, BuildSortsEachRowByCostThenColumn) {
    const OwnedCsr csr(6, two_hubs());
    const OwnedHubRows index(csr.view(), {0, 5});
    EXPECT_EQ(index.start, (std::vector<std::int64_t>{0, 5, 9}));
    EXPECT_EQ(index.col, (std::vector<std::uint32_t>{2, 4, 3, 1, 5, 3, 1, 2, 0}));
    EXPECT_EQ(index.cost, (std::vector<float>{1, 1, 2, 3, 4, 0.5f, 2, 2, 4}));
    EXPECT_EQ(index.min_hub_cost, (std::vector<float>{4, 4}));  // each hub's arc to the other
    // A hub with no arc to another hub: +inf.
    const OwnedHubRows alone(csr.view(), {0, 1});
    EXPECT_EQ(alone.min_hub_cost[0], 3.0f);
    const OwnedHubRows single(csr.view(), {5});
    EXPECT_EQ(single.min_hub_cost[0], std::numeric_limits<float>::infinity());
}

TEST(HubRows, CheckRefusesAnIndexThatIsNotThisGraphs) {
    const OwnedCsr csr(6, two_hubs());
    const CsrGraph graph = csr.view();
    const OwnedHubRows good(graph, {0, 5});
    EXPECT_EQ(check_message(graph, good.view()), "ok");

    auto damaged = [&](auto&& change) {
        OwnedHubRows copy = good;
        change(copy);
        return check_message(graph, copy.view());
    };
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.cost[2] = 2.5f; }), "hub 0 (vertex 0)"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.cost[2] = 2.5f; }), "differ from the graph's row"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { std::swap(i.col[0], i.col[1]); }), "(cost, column)"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.col[6] = 4; }), "hub 1 (vertex 5)"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.col[8] = 7; }), "outside the graph"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.start[1] = 4; }), "has 4 arcs, the graph's row 5"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.vertex = {5, 0}; }), "strictly ascending"));
    EXPECT_TRUE(contains(damaged([](OwnedHubRows& i) { i.vertex[1] = 6; }), "outside 0..5"));

    // The same degrees, another graph: one cost differs.
    std::vector<Arc> other = two_hubs();
    for (Arc& a : other)
        if ((a.from == 5 && a.to == 2) || (a.from == 2 && a.to == 5)) a.cost = 2.25f;
    const OwnedCsr other_csr(6, other);
    EXPECT_TRUE(contains(check_message(other_csr.view(), good.view()), "hub 1 (vertex 5)"));

    // A hub row not sorted by column (the hub-to-hub look-up needs it).
    const OwnedCsr unsorted(3, {{0, 2, 1}, {0, 1, 1}, {1, 0, 1}, {2, 0, 1}});
    std::vector<std::int64_t> start = {0, 2}, vertex = {0};
    std::vector<std::uint32_t> col = {1, 2};
    std::vector<float> cost = {1, 1};
    EXPECT_TRUE(contains(check_message(unsorted.view(), HubRows{1, vertex.data(), start.data(), col.data(),
                                                                 cost.data(), nullptr}),
                         "not sorted by column"));
}

TEST(HubRows, AnEdgeBetweenTwoHubsIsFoundWhenBothEndsDeferIt) {
    // s = 0 - A = 1 (cost 1), A - B = 2 (cost 3), B - t = 3 (cost 1): 5 in all;
    // around it s - 4 - t (2.75 + 2.75 = 5.5), and 40 leaves on each hub at cost
    // 1.2, which the hubs' cursors relax first. A and B are settled at 1 from
    // each side; their cursors would reach the A - B arc only at key 4, after
    // both sides' tops add up to 5.5, the detour's length: only the hub-to-hub
    // check finds the shorter path.
    std::vector<Arc> arcs = {{0, 1, 1}, {1, 2, 3}, {2, 3, 1}, {0, 4, 2.75f}, {4, 3, 2.75f}};
    for (std::int64_t leaf = 5; leaf < 85; ++leaf) arcs.push_back(Arc{leaf < 45 ? 1 : 2, leaf, 1.2f});
    const auto symmetric = sorted_by_column(symmetrised(arcs));
    const OwnedCsr csr(85, symmetric);
    const OwnedHubRows index(csr.view(), {1, 2});
    const HubRows hubs = index.view();
    PathSpaces spaces(85);
    const auto plain = shortest_path(csr.view(), nullptr, 0, 3, spaces);
    const auto indexed = shortest_path(csr.view(), nullptr, 0, 3, spaces, {}, &hubs);
    EXPECT_EQ(plain.distance, 5.0);
    EXPECT_EQ(indexed.distance, 5.0);
    EXPECT_EQ(indexed.vertices, (std::vector<std::int64_t>{0, 1, 2, 3}));
    const auto back = shortest_path(csr.view(), nullptr, 3, 0, spaces, {}, &hubs);
    EXPECT_EQ(back.vertices, (std::vector<std::int64_t>{3, 2, 1, 0}));
}

TEST(HubRows, NegativeZeroCostsAreOrderedAsZero) {
    // -0.0 passes the graph's check (it is >= 0). Hub 0's row: -0.0 to 1, 1.0 to
    // 2, 2.0 to 3; the path 0 - 1 - 4 (0 + 0.5) beats 0 - 2 - 4 (1 + 1) only if
    // the -0.0 arc is relaxed first, as its cost says.
    const auto symmetric = sorted_by_column(
        symmetrised({{0, 1, -0.0f}, {0, 2, 1.0f}, {0, 3, 2.0f}, {1, 4, 0.5f}, {2, 4, 1.0f}, {3, 4, 0.25f}}));
    const OwnedCsr csr(5, symmetric);
    const OwnedHubRows index(csr.view(), {0, 4});
    EXPECT_EQ(index.col[0], 1u);  // first in the row: its cost is zero
    EXPECT_FALSE(std::signbit(index.cost[0]));
    const HubRows hubs = index.view();
    PathSpaces spaces(5);
    for (std::int64_t t = 1; t < 5; ++t) {
        const auto plain = shortest_path(csr.view(), nullptr, 0, t, spaces);
        const auto indexed = shortest_path(csr.view(), nullptr, 0, t, spaces, {}, &hubs);
        EXPECT_EQ(indexed.distance, plain.distance) << "0 -> " << t;
    }
    EXPECT_EQ(shortest_path(csr.view(), nullptr, 0, 4, spaces, {}, &hubs).distance, 0.5);
}

namespace {

// A literature-like graph: `concepts` hubs of power-law degree joined to
// abstracts by cheap arcs of few distinct costs (many ties), dear
// concept-concept arcs, sparse abstract-abstract arcs, some zero costs, and a
// separate component.
std::vector<Arc> literature_like(std::int64_t concepts, std::int64_t abstracts, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Arc> arcs;
    const std::int64_t main_part = concepts + abstracts * 9 / 10;
    std::uniform_int_distribution<std::int64_t> concept(0, concepts - 1), abstract(concepts, main_part - 1);
    std::uniform_int_distribution<int> mentions(1, 6), share(1, 8);
    for (std::int64_t a = concepts; a < main_part; ++a) {
        const int count = mentions(rng);
        for (int i = 0; i < count; ++i) {
            // Concept c is chosen with weight about 1 / (c + 1): a few hubs, a long tail.
            const std::int64_t c = std::min<std::int64_t>(
                concepts - 1, static_cast<std::int64_t>(std::exp(std::uniform_real_distribution<double>(
                                  0, std::log(static_cast<double>(concepts)))(rng))) - 1);
            arcs.push_back(Arc{c, a, share(rng) == 1 ? 0.0f : std::log(static_cast<float>(share(rng) + 1))});
        }
        if (rng() % 3 == 0) arcs.push_back(Arc{a, abstract(rng), 1.5f});
    }
    for (std::int64_t i = 0; i < concepts * 3; ++i) arcs.push_back(Arc{concept(rng), concept(rng), 3.0f + (rng() % 7)});
    // The last tenth of the abstracts: a chain of their own, unreachable from the rest.
    for (std::int64_t a = main_part; a + 1 < concepts + abstracts; ++a) arcs.push_back(Arc{a, a + 1, 0.5f});
    return sorted_by_column(symmetrised(arcs));
}

// The hub sets a search must be exact with: none, every vertex, the largest
// rows, and a random third of the vertices.
std::vector<std::vector<std::int64_t>> hub_sets(const CsrGraph& graph, std::uint64_t seed) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(graph.n)), random_third;
    std::mt19937_64 rng(seed);
    for (std::int64_t v = 0; v < graph.n; ++v) {
        all[static_cast<std::size_t>(v)] = v;
        if (rng() % 3 == 0) random_third.push_back(v);
    }
    return {{}, all, choose_hubs(graph, 8, graph.edge_count() / 2), random_third};
}

}  // namespace

class IndexedSearches : public ::testing::TestWithParam<std::tuple<int, std::uint64_t>> {};

TEST_P(IndexedSearches, GiveThePlainSearchsDistancesAndValidPaths) {
    const auto [shape, seed] = GetParam();
    std::vector<Arc> arcs;
    std::int64_t n = 0;
    if (shape == 0) {  // uniform random costs, 3 parts, isolated vertices, parallel arcs, self-loops
        n = 160;
        arcs = random_arcs(n, 3, 2.5, seed);
        arcs.push_back(Arc{1, 1, 2.5f});
        arcs = sorted_by_column(symmetrised(arcs));
    } else if (shape == 1) {  // integer costs 0..3: ties everywhere
        n = 120;
        std::mt19937_64 rng(seed);
        std::uniform_int_distribution<std::int64_t> vertex(0, n - 1);
        for (int i = 0; i < 400; ++i) arcs.push_back(Arc{vertex(rng), vertex(rng), static_cast<float>(rng() % 4)});
        arcs = sorted_by_column(symmetrised(arcs));
    } else {
        n = 30 + 400;
        arcs = literature_like(30, 400, seed);
    }
    const OwnedCsr csr(n, arcs);
    const CsrGraph graph = csr.view();
    check_csr(graph);
    PathSpaces plain_spaces(n), indexed_spaces(n);
    SearchSpace near_space(n);
    std::mt19937_64 rng(seed + 100);
    std::uniform_int_distribution<std::int64_t> vertex(0, n - 1);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
    for (auto& bit : mask) bit = rng() % 4 == 0;
    std::vector<std::int64_t> sources;
    for (int i = 0; i < 12; ++i) sources.push_back(vertex(rng));
    sources.push_back(n - 1);  // isolated, or on the separate chain
    std::vector<std::vector<double>> want;
    for (const std::int64_t s : sources) want.push_back(reference_distances(n, arcs, s));

    for (const auto& hub_ids : hub_sets(graph, seed)) {
        const OwnedHubRows index(graph, hub_ids);
        const HubRows hubs = index.view();
        SCOPED_TRACE(::testing::Message() << "shape " << shape << ", " << hub_ids.size() << " hubs");
        for (std::size_t i = 0; i < sources.size(); ++i) {
            const std::int64_t s = sources[i];
            for (int q = 0; q < 25; ++q) {
                const std::int64_t t = q == 0 ? s : vertex(rng);
                const auto plain = shortest_path(graph, nullptr, s, t, plain_spaces);
                const auto indexed = shortest_path(graph, nullptr, s, t, indexed_spaces, {}, &hubs);
                // The same distance to the last bit: both are path sums in double, exact here.
                ASSERT_EQ(indexed.distance, plain.distance) << s << " -> " << t;
                if (std::isinf(want[i][t])) {
                    EXPECT_EQ(indexed.distance, inf);
                    EXPECT_TRUE(indexed.vertices.empty());
                    continue;
                }
                ASSERT_NEAR(indexed.distance, want[i][t], 1e-9 * std::max(1.0, want[i][t])) << s << " -> " << t;
                expect_valid_path(arcs, indexed, s, t);
            }
            for (const std::int64_t k : {1, 4, 1000}) {
                const auto got = nearest(graph, s, mask.data(), k, near_space, {}, &hubs);
                const auto expected = reference_nearest(want[i], s, mask, k);
                ASSERT_EQ(got.size(), expected.size()) << "source " << s << ", k " << k;
                for (std::size_t j = 0; j < got.size(); ++j) {
                    EXPECT_EQ(got[j].vertex, expected[j].vertex);
                    EXPECT_NEAR(got[j].distance, expected[j].distance, 1e-9 * std::max(1.0, expected[j].distance));
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(HubRows, IndexedSearches,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(1u, 2u, 3u)));

TEST(HubRows, DeadlineStopsAnIndexedSearchAndLeavesTheSpacesUsable) {
    using Clock = Deadline::Clock;
    // Two cycles of a million vertices of unit costs, every vertex a hub
    // (degree 2): a pair across them walks both cycles whole.
    const std::int64_t m = 1'000'000;
    std::vector<Arc> arcs;
    for (std::int64_t v = 0; v < m; ++v) {
        arcs.push_back(Arc{v, (v + 1) % m, 1.0f});
        arcs.push_back(Arc{m + v, m + (v + 1) % m, 1.0f});
    }
    const OwnedCsr csr(2 * m, sorted_by_column(symmetrised(arcs)));
    const CsrGraph graph = csr.view();
    const OwnedHubRows index(graph, choose_hubs(graph, 2, graph.edge_count()));
    const HubRows hubs = index.view();
    ASSERT_EQ(hubs.rows, 2 * m);
    PathSpaces spaces(2 * m);
    const auto started = Clock::now();
    EXPECT_THROW(shortest_path(graph, nullptr, 0, m, spaces, Deadline{started + std::chrono::milliseconds(2)}, &hubs),
                 DeadlineExceeded);
    EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(502));
    const auto p = shortest_path(graph, nullptr, 3, m - 2, spaces, {}, &hubs);
    EXPECT_EQ(p.distance, 5.0);
    EXPECT_EQ(p.vertices, (std::vector<std::int64_t>{3, 2, 1, 0, m - 1, m - 2}));
}

TEST(HubRows, AnIndexWithAReverseCsrIsRefused) {
    const OwnedCsr csr(6, two_hubs());
    const OwnedHubRows index(csr.view(), {0, 5});
    const HubRows hubs = index.view();
    const CsrGraph reverse = csr.view();
    PathSpaces spaces(6);
    EXPECT_THROW(shortest_path(csr.view(), &reverse, 1, 4, spaces, {}, &hubs), std::invalid_argument);
}
