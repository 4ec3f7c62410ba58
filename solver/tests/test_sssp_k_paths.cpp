// core/sssp_k_paths: Yen's k shortest loopless paths and the count of
// shortest-path ties, against a brute-force enumeration of every loopless path
// on small random symmetric graphs (zero costs, ties, parallel edges,
// disconnected parts, filters), with and without a path index.
#include "core/sssp_k_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/sssp_hub_rows.hpp"
#include "sssp_test_graphs.hpp"

using namespace litpath::sssp;

namespace {

using namespace litpath::sssp::testing;

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
        build_hub_rows(graph, vertex.data(), rows, start.data(), col.data(), cost.data(), 1);
        check_hub_rows(graph, view(), min_hub_cost.data(), 1);
    }
    HubRows view() const {
        return HubRows{static_cast<std::int64_t>(vertex.size()), vertex.data(), start.data(), col.data(),
                       cost.data(), min_hub_cost.data()};
    }
};

// Every loopless s -> t path whose intermediate vertices `allowed` keeps (all
// when empty), with its cost summed in path order over the cheapest parallel edges.
std::vector<std::pair<double, std::vector<std::int64_t>>> all_loopless_paths(
    const std::vector<Arc>& arcs, std::int64_t n, std::int64_t s, std::int64_t t,
    const std::vector<std::uint8_t>& allowed) {
    std::vector<std::map<std::int64_t, double>> cheapest(static_cast<std::size_t>(n));
    for (const Arc& a : arcs) {
        if (a.from == a.to) continue;
        auto [it, added] = cheapest[a.from].emplace(a.to, a.cost);
        if (!added) it->second = std::min(it->second, static_cast<double>(a.cost));
    }
    std::vector<std::pair<double, std::vector<std::int64_t>>> found;
    std::vector<std::int64_t> path{s};
    std::vector<bool> on(static_cast<std::size_t>(n), false);
    on[s] = true;
    std::function<void(double)> walk = [&](double cost) {
        const std::int64_t u = path.back();
        if (u == t) {
            found.emplace_back(cost, path);
            return;
        }
        for (const auto& [v, c] : cheapest[u]) {
            if (on[v] || (v != t && !allowed.empty() && !allowed[v])) continue;
            on[v] = true;
            path.push_back(v);
            walk(cost + c);
            path.pop_back();
            on[v] = false;
        }
    };
    if (s == t) return {{0.0, {s}}};
    walk(0.0);
    std::sort(found.begin(), found.end());
    return found;
}

// Small symmetric random graphs: integer costs 0..4 (so that ties are exact and
// common), a few parallel edges, isolated vertices, two components.
std::vector<Arc> integer_graph(std::int64_t n, int edges, std::uint64_t seed, bool zero_costs) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> vertex(0, n - 3);  // the last two vertices are isolated
    std::uniform_int_distribution<int> cost(zero_costs ? 0 : 1, 4);
    std::vector<Arc> arcs;
    for (int i = 0; i < edges; ++i) {
        const std::int64_t u = vertex(rng), v = vertex(rng);
        const auto c = static_cast<float>(cost(rng));
        arcs.push_back(Arc{u, v, c});
        if (i % 9 == 0) arcs.push_back(Arc{u, v, c + 2.0f});  // a dearer parallel edge
    }
    return sorted_by_column(symmetrised(arcs));
}

void expect_paths_match(const std::vector<Arc>& arcs, std::int64_t n, const CsrGraph& graph, std::int64_t s,
                        std::int64_t t, std::int64_t k, const std::vector<std::uint8_t>& allowed,
                        const HubRows* hubs, PathSpaces& spaces) {
    const auto reference = all_loopless_paths(arcs, n, s, t, allowed);
    const auto got = k_shortest_paths(graph, s, t, k, allowed.empty() ? nullptr : allowed.data(), spaces, {}, hubs);
    ASSERT_EQ(got.size(), std::min<std::size_t>(static_cast<std::size_t>(k), reference.size()))
        << "s=" << s << " t=" << t << " k=" << k;
    std::set<std::vector<std::int64_t>> distinct;
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].distance, reference[i].first) << "path " << i << " s=" << s << " t=" << t << " k=" << k
                                                        << (hubs ? " with the index" : "")
                                                        << (allowed.empty() ? "" : " filtered");
        expect_valid_path(arcs, got[i], s, t);
        for (std::size_t j = 1; j + 1 < got[i].vertices.size(); ++j)
            if (!allowed.empty()) EXPECT_TRUE(allowed[got[i].vertices[j]]);
        distinct.insert(got[i].vertices);
        // Each path is one of the reference's of its cost.
        const bool listed = std::any_of(reference.begin(), reference.end(),
                                        [&](const auto& r) { return r.second == got[i].vertices; });
        EXPECT_TRUE(listed);
    }
    EXPECT_EQ(distinct.size(), got.size()) << "a path came twice";
}

std::int64_t reference_ties(const std::vector<Arc>& arcs, std::int64_t n, std::int64_t s, std::int64_t t,
                            const std::vector<std::uint8_t>& allowed) {
    const auto all = all_loopless_paths(arcs, n, s, t, allowed);
    if (all.empty()) return 0;
    return std::count_if(all.begin(), all.end(), [&](const auto& p) { return p.first == all.front().first; });
}

TEST(KPaths, HandCheckedDiamondWithATieAndAZeroCostRung) {
    // 0 - 1 - 3 and 0 - 2 - 3 cost 2 each; 1 - 2 costs 0, so 0 1 2 3 and 0 2 1 3
    // also cost 2; 0 - 3 directly costs 5.
    const std::vector<Arc> arcs = sorted_by_column(
        symmetrised({{0, 1, 1}, {1, 3, 1}, {0, 2, 1}, {2, 3, 1}, {1, 2, 0}, {0, 3, 5}}));
    const OwnedCsr csr(4, arcs);
    PathSpaces spaces(4);
    const auto paths = k_shortest_paths(csr.view(), 0, 3, 10, nullptr, spaces);
    ASSERT_EQ(paths.size(), 5u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(paths[i].distance, 2.0);
    EXPECT_EQ(paths[4].distance, 5.0);
    EXPECT_EQ(paths[4].vertices, (std::vector<std::int64_t>{0, 3}));
    const TieCount tie = count_shortest_paths(csr.view(), 0, 3, nullptr, spaces);
    EXPECT_EQ(tie.distance, 2.0);
    EXPECT_EQ(tie.paths, 4);  // networkx's all_shortest_paths lists 3 here: one direction of the rung
    EXPECT_FALSE(tie.saturated);

    // Filtering vertex 1 out leaves 0 2 3 and 0 3.
    const std::vector<std::uint8_t> allowed{1, 0, 1, 1};
    const auto filtered = k_shortest_paths(csr.view(), 0, 3, 10, allowed.data(), spaces);
    ASSERT_EQ(filtered.size(), 2u);
    EXPECT_EQ(filtered[0].vertices, (std::vector<std::int64_t>{0, 2, 3}));
    EXPECT_EQ(filtered[1].vertices, (std::vector<std::int64_t>{0, 3}));
    EXPECT_EQ(count_shortest_paths(csr.view(), 0, 3, allowed.data(), spaces).paths, 1);
    // The endpoints are never filtered.
    const std::vector<std::uint8_t> no_ends{0, 1, 1, 0};
    EXPECT_EQ(k_shortest_paths(csr.view(), 0, 3, 10, no_ends.data(), spaces).size(), 5u);
}

TEST(KPaths, SameVertexDisconnectedAndZeroK) {
    const std::vector<Arc> arcs = sorted_by_column(symmetrised({{0, 1, 1}, {2, 3, 1}}));
    const OwnedCsr csr(4, arcs);
    PathSpaces spaces(4);
    EXPECT_TRUE(k_shortest_paths(csr.view(), 0, 3, 5, nullptr, spaces).empty());
    EXPECT_TRUE(k_shortest_paths(csr.view(), 0, 1, 0, nullptr, spaces).empty());
    const auto self = k_shortest_paths(csr.view(), 2, 2, 5, nullptr, spaces);
    ASSERT_EQ(self.size(), 1u);
    EXPECT_EQ(self[0].vertices, (std::vector<std::int64_t>{2}));
    const TieCount none = count_shortest_paths(csr.view(), 0, 3, nullptr, spaces);
    EXPECT_EQ(none.paths, 0);
    EXPECT_FALSE(none.distance < kUnreachable);
    EXPECT_EQ(count_shortest_paths(csr.view(), 1, 1, nullptr, spaces).paths, 1);
    EXPECT_THROW(k_shortest_paths(csr.view(), 0, 4, 1, nullptr, spaces), std::invalid_argument);
    EXPECT_THROW(k_shortest_paths(csr.view(), 0, 1, -1, nullptr, spaces), std::invalid_argument);
}

TEST(KPaths, ManyTiesSaturateNothingAndCountExactly) {
    // A chain of 20 diamonds: 2^20 shortest paths, counted without enumerating them.
    std::vector<Arc> arcs;
    const std::int64_t diamonds = 20;
    for (std::int64_t i = 0; i < diamonds; ++i) {
        const std::int64_t a = 3 * i, top = a + 1, bottom = a + 2, b = a + 3;
        arcs.insert(arcs.end(), {{a, top, 1}, {top, b, 1}, {a, bottom, 1}, {bottom, b, 1}});
    }
    const std::int64_t n = 3 * diamonds + 1;
    const OwnedCsr csr(n, sorted_by_column(symmetrised(arcs)));
    PathSpaces spaces(n);
    const TieCount tie = count_shortest_paths(csr.view(), 0, n - 1, nullptr, spaces);
    EXPECT_EQ(tie.paths, std::int64_t{1} << diamonds);
    EXPECT_FALSE(tie.saturated);
    const auto paths = k_shortest_paths(csr.view(), 0, n - 1, 7, nullptr, spaces);
    ASSERT_EQ(paths.size(), 7u);
    for (const auto& p : paths) EXPECT_EQ(p.distance, 2.0 * diamonds);
}

TEST(KPaths, AZeroCostCliqueReportsALowerBoundPastTheWorkBound) {
    // s - (a clique of 12 vertices joined by zero-cost edges) - t: the loopless
    // walks across the clique number in the billions, past kPlateauWork.
    std::vector<Arc> arcs;
    const std::int64_t clique = 12, s = clique, t = clique + 1;
    for (std::int64_t i = 0; i < clique; ++i) {
        for (std::int64_t j = i + 1; j < clique; ++j) arcs.push_back({i, j, 0});
        arcs.push_back({s, i, 1});
        arcs.push_back({i, t, 1});
    }
    const OwnedCsr csr(clique + 2, sorted_by_column(symmetrised(arcs)));
    PathSpaces spaces(clique + 2);
    const TieCount tie = count_shortest_paths(csr.view(), s, t, nullptr, spaces);
    EXPECT_TRUE(tie.saturated);
    EXPECT_GE(tie.paths, clique);
    EXPECT_EQ(tie.distance, 2.0);
    const auto paths = k_shortest_paths(csr.view(), s, t, 3, nullptr, spaces);
    ASSERT_EQ(paths.size(), 3u);
    for (const auto& p : paths) EXPECT_EQ(p.distance, 2.0);
}

TEST(KPaths, DeadlineStopsTheSpurSearchesAndLeavesTheWorkspaceClean) {
    const std::vector<Arc> arcs = integer_graph(12, 24, 7, true);
    const OwnedCsr csr(12, arcs);
    PathSpaces spaces(12);
    const Deadline past{Deadline::Clock::now() - std::chrono::seconds(1)};
    EXPECT_THROW(k_shortest_paths(csr.view(), 0, 5, 5, nullptr, spaces, past), DeadlineExceeded);
    EXPECT_THROW(count_shortest_paths(csr.view(), 0, 5, nullptr, spaces, past), DeadlineExceeded);
    for (const std::uint8_t mark : spaces.root_marks) EXPECT_EQ(mark, 0);
    expect_paths_match(arcs, 12, csr.view(), 0, 5, 5, {}, nullptr, spaces);
}

class RandomKPaths : public ::testing::TestWithParam<int> {};

TEST_P(RandomKPaths, CostsPathsAndTiesMatchTheEnumeration) {
    const int seed = GetParam();
    const std::int64_t n = 14;
    const bool zero_costs = seed % 2 == 0;
    const std::vector<Arc> arcs = integer_graph(n, 26, 1000 + static_cast<std::uint64_t>(seed), zero_costs);
    const OwnedCsr csr(n, arcs);
    const CsrGraph graph = csr.view();
    // An index over the three largest rows, so that spur searches cross hubs.
    const OwnedHubRows index(graph, choose_hubs(graph, 1, 3 * 2 * 26 / n + 8));
    const HubRows hubs = index.view();
    PathSpaces spaces(n);
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    std::uniform_int_distribution<std::int64_t> vertex(0, n - 1);
    for (int query = 0; query < 12; ++query) {
        const std::int64_t s = vertex(rng), t = vertex(rng);
        std::vector<std::uint8_t> allowed;
        if (query % 3 == 2) {
            allowed.resize(static_cast<std::size_t>(n));
            for (auto& a : allowed) a = rng() % 4 != 0;
        }
        for (const std::int64_t k : {1, 3, 8, 40}) {
            expect_paths_match(arcs, n, graph, s, t, k, allowed, nullptr, spaces);
            expect_paths_match(arcs, n, graph, s, t, k, allowed, &hubs, spaces);
        }
        const std::uint8_t* filter = allowed.empty() ? nullptr : allowed.data();
        const std::int64_t expected = s == t ? 1 : reference_ties(arcs, n, s, t, allowed);
        for (const HubRows* h : {static_cast<const HubRows*>(nullptr), &hubs}) {
            const TieCount tie = count_shortest_paths(graph, s, t, filter, spaces, {}, h);
            EXPECT_EQ(tie.paths, expected) << "s=" << s << " t=" << t;
            EXPECT_FALSE(tie.saturated);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomKPaths, ::testing::Range(0, 16));

}  // namespace
