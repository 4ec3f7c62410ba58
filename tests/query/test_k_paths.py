"""pipeline.query.sssp.k_shortest_paths and count_shortest_paths against networkx.

Each test draws fresh random weighted graphs (the seed is in every failure message) besides a
few fixed ones: zero costs, exact ties (integer costs), several components, k larger than the
number of paths, filters on the intermediate vertices (networkx then runs on the filtered
graph), with and without the path index. Costs are compared as path-order sums in double,
which is how both sides sum them: exactly for integer costs, within 1e-9 for real ones.
"""

from __future__ import annotations

import itertools
import math
import time

import networkx as nx
import numpy as np
import pytest
from support.literature_graph import literature_like

from pipeline.query import sssp
from pipeline.query.paths import Adjacency, adjacency_from_edges

FRESH = int(np.random.SeedSequence().entropy % (2**32))  # a new graph every run
SEEDS = [1, 2, 3, FRESH]


def random_graph(n: int, edges: int, seed: int, *, integer: bool, zero: float = 0.15) -> Adjacency:
    """Undirected, simple, two components plus two isolated vertices."""
    rng = np.random.default_rng(seed)
    half = (n - 2) // 2
    pairs: set[tuple[int, int]] = set()
    for lo, hi in ((0, half), (half, n - 2)):
        for _ in range(edges // 2):
            u, v = (int(x) for x in rng.integers(lo, hi, 2))
            if u != v:
                pairs.add((min(u, v), max(u, v)))
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*sorted(pairs), strict=True))
    if integer:
        cost = rng.integers(1, 5, len(src)).astype(np.float32)
    else:
        cost = rng.uniform(0.05, 5.0, len(src)).astype(np.float32)
    cost[rng.random(len(src)) < zero] = 0.0
    return adjacency_from_edges(n, src, dst, cost)


def as_networkx(adjacency: Adjacency) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from(range(adjacency.n))
    for u in range(adjacency.n):
        for e in range(int(adjacency.row_ptr[u]), int(adjacency.row_ptr[u + 1])):
            graph.add_edge(u, int(adjacency.col_idx[e]), weight=float(adjacency.cost[e]))
    return graph


def path_cost(graph: nx.Graph, path: list[int]) -> float:
    total = 0.0
    for u, v in itertools.pairwise(path):
        total += graph[u][v]["weight"]
    return total


def filtered(graph: nx.Graph, allowed: np.ndarray, s: int, t: int) -> nx.Graph:
    return graph.subgraph([v for v in graph if allowed[v] or v in (s, t)])


def reference_costs(graph: nx.Graph, s: int, t: int, k: int) -> list[float]:
    if s == t:
        return [0.0]
    try:
        paths = list(itertools.islice(nx.shortest_simple_paths(graph, s, t, weight="weight"), k))
    except nx.NetworkXNoPath:
        return []
    return sorted(path_cost(graph, p) for p in paths)


def check_paths(graph: nx.Graph, got: list[tuple[float, list[int]]], s: int, t: int, allowed, note: str) -> None:
    seen = set()
    for cost, path in got:
        assert path[0] == s and path[-1] == t, note
        assert len(set(path)) == len(path), f"{note}: a loop in {path}"
        assert all(graph.has_edge(u, v) for u, v in itertools.pairwise(path)), note
        assert cost == path_cost(graph, path), f"{note}: cost {cost} is not the path-order sum"
        if allowed is not None:
            assert all(allowed[v] for v in path[1:-1]), f"{note}: a filtered vertex inside {path}"
        seen.add(tuple(path))
    assert len(seen) == len(got), f"{note}: a path came twice"
    costs = [c for c, _ in got]
    assert costs == sorted(costs), f"{note}: not cheapest first"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("integer", [True, False], ids=["integer-costs", "real-costs"])
def test_k_shortest_paths_costs_equal_networkx(seed: int, integer: bool) -> None:
    adjacency = random_graph(40, 100, seed, integer=integer)
    graph = as_networkx(adjacency)
    rng = np.random.default_rng(seed + 7)
    hubs = sssp.build_hub_rows(adjacency, sssp.choose_hubs(adjacency.row_ptr, 4, 10**6))
    for query in range(25):
        s, t = (int(x) for x in rng.integers(0, adjacency.n, 2))
        allowed = rng.random(adjacency.n) > 0.25 if query % 3 == 2 else None
        reference_graph = graph if allowed is None else filtered(graph, allowed, s, t)
        k = int(rng.choice([1, 2, 5, 12]))
        expected = reference_costs(reference_graph, s, t, k)
        for index in (None, hubs):
            note = f"seed {seed}, {s} -> {t}, k={k}, filter={allowed is not None}, index={index is not None}"
            got = sssp.k_shortest_paths(adjacency, s, t, k, allowed=allowed, hubs=index)
            check_paths(graph, got, s, t, allowed, note)
            costs = [c for c, _ in got]
            assert len(costs) == len(expected), note
            if integer:
                assert costs == expected, note
            else:
                np.testing.assert_allclose(costs, expected, rtol=1e-9, err_msg=note)


@pytest.mark.parametrize("seed", SEEDS)
def test_k_larger_than_the_number_of_paths_returns_them_all(seed: int) -> None:
    adjacency = random_graph(12, 14, seed, integer=True)
    graph = as_networkx(adjacency)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        s, t = (int(x) for x in rng.integers(0, adjacency.n, 2))
        every = [] if s != t and not nx.has_path(graph, s, t) else list(nx.all_simple_paths(graph, s, t))
        if s == t:
            every = [[s]]
        got = sssp.k_shortest_paths(adjacency, s, t, len(every) + 5)
        assert sorted(tuple(p) for _, p in got) == sorted(tuple(p) for p in every), f"seed {seed}, {s} -> {t}"


def brute_force_ties(graph: nx.Graph, s: int, t: int) -> int:
    costs = [path_cost(graph, p) for p in nx.all_simple_paths(graph, s, t)]
    return costs.count(min(costs)) if costs else 0


@pytest.mark.parametrize("seed", SEEDS)
def test_tie_count_equals_networkx_all_shortest_paths_with_positive_costs(seed: int) -> None:
    adjacency = random_graph(60, 200, seed, integer=True, zero=0.0)  # integer costs: many ties
    graph = as_networkx(adjacency)
    rng = np.random.default_rng(seed + 1)
    hubs = sssp.build_hub_rows(adjacency, sssp.choose_hubs(adjacency.row_ptr, 6, 10**6))
    for query in range(40):
        s, t = (int(x) for x in rng.integers(0, adjacency.n, 2))
        allowed = rng.random(adjacency.n) > 0.3 if query % 4 == 3 else None
        reference_graph = graph if allowed is None else filtered(graph, allowed, s, t)
        try:
            expected = sum(1 for _ in nx.all_shortest_paths(reference_graph, s, t, weight="weight"))
            distance = nx.shortest_path_length(reference_graph, s, t, weight="weight")
        except nx.NetworkXNoPath:
            expected, distance = 0, math.inf
        for index in (None, hubs):
            got = sssp.count_shortest_paths(adjacency, s, t, allowed=allowed, hubs=index)
            assert got == (distance, expected, False), f"seed {seed}, {s} -> {t}, filter={allowed is not None}"


@pytest.mark.parametrize("seed", SEEDS)
def test_tie_count_with_zero_costs_equals_the_enumeration_of_loopless_paths(seed: int) -> None:
    # networkx's all_shortest_paths follows a zero-cost edge one way only (the order its
    # search settles the two ends), so the reference here enumerates every loopless path.
    adjacency = random_graph(16, 30, seed, integer=True, zero=0.3)
    graph = as_networkx(adjacency)
    rng = np.random.default_rng(seed + 2)
    for _ in range(30):
        s, t = (int(x) for x in rng.integers(0, adjacency.n, 2))
        distance, paths, saturated = sssp.count_shortest_paths(adjacency, s, t)
        expected = 1 if s == t else brute_force_ties(graph, s, t)
        assert (paths, saturated) == (expected, False), f"seed {seed}, {s} -> {t}"


def test_a_literature_like_graph_with_its_index_matches_networkx() -> None:
    adjacency, is_concept = literature_like(30, 300, FRESH)
    graph = as_networkx(adjacency)
    hubs = sssp.build_hub_rows(adjacency, sssp.choose_hubs(adjacency.row_ptr, 16, 10**6))
    rng = np.random.default_rng(FRESH)
    for _ in range(15):
        s, t = (int(x) for x in rng.integers(0, adjacency.n, 2))
        expected = reference_costs(graph, s, t, 5)
        got = sssp.k_shortest_paths(adjacency, s, t, 5, hubs=hubs, allowed=is_concept | (rng.random(adjacency.n) < 0.9))
        assert len(got) <= len(expected) or not expected
        unfiltered = sssp.k_shortest_paths(adjacency, s, t, 5, hubs=hubs)
        np.testing.assert_allclose([c for c, _ in unfiltered], expected, rtol=1e-9, err_msg=f"seed {FRESH}")
        check_paths(graph, unfiltered, s, t, None, f"seed {FRESH}")


def test_bad_arguments_and_a_past_deadline() -> None:
    adjacency = random_graph(20, 40, 5, integer=True)
    with pytest.raises(ValueError, match="k must be"):
        sssp.k_shortest_paths(adjacency, 0, 1, -1)
    with pytest.raises(IndexError):
        sssp.k_shortest_paths(adjacency, 0, 20, 3)
    with pytest.raises(ValueError, match="allowed has shape"):
        sssp.count_shortest_paths(adjacency, 0, 1, allowed=np.ones(3, dtype=bool))
    assert sssp.k_shortest_paths(adjacency, 0, 1, 0) == []
    with pytest.raises(sssp.DeadlineExceeded):
        sssp.k_shortest_paths(adjacency, 0, 5, 3, deadline=time.monotonic() - 1)
    with pytest.raises(sssp.DeadlineExceeded):
        sssp.count_shortest_paths(adjacency, 0, 5, deadline=time.monotonic() - 1)
    # The workspace is usable after a deadline.
    assert sssp.k_shortest_paths(adjacency, 3, 3, 4) == [(0.0, [3])]


def test_tie_counts_on_a_literature_like_graph_with_its_index_equal_networkx() -> None:
    # Real-valued costs (no zero): networkx's all_shortest_paths is then the exact reference.
    adjacency, _ = literature_like(30, 400, FRESH, ties=False)
    graph = as_networkx(adjacency)
    hubs = sssp.build_hub_rows(adjacency, sssp.choose_hubs(adjacency.row_ptr, 16, 10**6))
    rng = np.random.default_rng(FRESH + 3)
    for _ in range(30):
        s, t = (int(x) for x in rng.integers(0, adjacency.n, 2))
        try:
            expected = sum(1 for _ in nx.all_shortest_paths(graph, s, t, weight="weight"))
        except nx.NetworkXNoPath:
            expected = 0
        for index in (None, hubs):
            assert sssp.count_shortest_paths(adjacency, s, t, hubs=index)[1] == expected, f"seed {FRESH}, {s} -> {t}"
