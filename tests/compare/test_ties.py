"""Ties between equal-cost literature paths: the count against networkx's own enumeration."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import pytest

from pipeline.compare.literature import PathFinder, ShortestPathCounter
from pipeline.query.paths import DEFAULT_TOLERANCE, Adjacency, Tolerance, adjacency_from_edges


@dataclass
class TinyGraph:
    """What the counter and the path finder use of :class:`pipeline.query.graph.Graph`."""

    adjacency: Adjacency
    rows: dict[int, np.ndarray] = field(default_factory=dict)  # "stored" rows, when given
    tolerance: Tolerance = DEFAULT_TOLERANCE

    @property
    def n(self) -> int:
        return self.adjacency.n

    def stored_row(self, vertex: int):
        return self.rows.get(vertex)


def undirected(n: int, edges: list[tuple[int, int, float]]) -> Adjacency:
    edges = [(min(u, v), max(u, v), c) for u, v, c in edges]
    return adjacency_from_edges(
        n,
        [u for u, _, _ in edges],
        [v for _, v, _ in edges],
        np.asarray([c for *_, c in edges], dtype=np.float32),
    )


def test_a_hand_counted_diamond_and_ladder():
    # 0 -1- 1 -1- 3, 0 -1- 2 -1- 3 (two ways), then 3 -2- 4 and 3 -1- 5 -1- 4 (two more): 2 x 2 = 4
    edges = [
        (0, 1, 1.0),
        (1, 3, 1.0),
        (0, 2, 1.0),
        (2, 3, 1.0),
        (3, 4, 2.0),
        (3, 5, 1.0),
        (5, 4, 1.0),
        (0, 4, 5.0),
    ]
    counter = ShortestPathCounter(TinyGraph(undirected(6, edges)))
    assert counter.count(0, 3) == 2 and counter.count(0, 4) == 4 and counter.count(1, 2) == 2
    assert counter.count(0, 0) == 1


def test_unreachable_pairs_count_zero():
    counter = ShortestPathCounter(TinyGraph(undirected(4, [(0, 1, 1.0), (2, 3, 1.0)])))
    assert counter.count(0, 3) == 0


@pytest.mark.parametrize("seed", range(8))
def test_counts_equal_networkx_on_random_graphs_with_ties(seed):
    """Costs from a few small values (the logs of small-integer ratios, as co-occurrence weights
    give) make equal-cost paths common; every pair's count is networkx's enumeration."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 30))
    values = [-math.log(w) for w in (0.5, 0.25, 0.125)]  # sums of these tie exactly, and often
    edges = {}
    for _ in range(int(n * 2.2)):
        u, v = (int(x) for x in rng.choice(n, 2, replace=False))
        edges[tuple(sorted((u, v)))] = float(np.float32(values[int(rng.integers(0, 3))]))
    edge_list = [(u, v, c) for (u, v), c in edges.items()]
    adjacency = undirected(n, edge_list)
    reference = nx.Graph()
    reference.add_nodes_from(range(n))
    reference.add_weighted_edges_from(edge_list)
    stored = {v: row.astype(np.float32) for v, row in enumerate(_all_rows(adjacency))} if seed % 2 else {}
    counter = ShortestPathCounter(TinyGraph(adjacency, stored))
    tied = 0
    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            if not nx.has_path(reference, s, t):
                assert counter.count(s, t) == 0
                continue
            expected = sum(1 for _ in nx.all_shortest_paths(reference, s, t, weight="weight"))
            assert counter.count(s, t) == expected, (s, t)
            tied += expected > 1
    assert tied > 0  # the test would not tell a tie counter from a constant 1 otherwise


def _all_rows(adjacency: Adjacency) -> np.ndarray:
    from scipy.sparse.csgraph import dijkstra

    return dijkstra(adjacency.to_scipy(), directed=True)


def test_zero_cost_edges_give_a_lower_bound_and_are_counted():
    # 0 -1- 1 -0- 2 -1- 3 and 0 -2- 3: the zero-cost edge 1-2 lies on the shortest paths
    graph = TinyGraph(undirected(4, [(0, 1, 1.0), (1, 2, 0.0), (2, 3, 1.0), (0, 3, 2.0)]))
    counter = ShortestPathCounter(graph)
    assert counter.count(0, 3) >= 1 and counter.zero_cost_ties == 1


def test_the_path_finder_records_each_pairs_count(tmp_path):
    """PathFinder over a real build's graph: the count rides on the path it returns."""
    from support.comparison_world import C1, C4, write_build

    from pipeline.query.build import open_build

    write_build(tmp_path)
    build = open_build(tmp_path / "latest", scopes=["cooccurrence"], on_mismatch="raise")
    try:
        graph = build.graph("cooccurrence")
        path = PathFinder(graph, count_ties=True).path(C1, C4)
        assert path.reachable and path.shortest_paths == 1  # the fixture is a forest
        assert PathFinder(graph).path(C1, C4).shortest_paths is None  # not counted unless asked
    finally:
        build.close()
