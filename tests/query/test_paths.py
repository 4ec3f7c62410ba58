"""Path reconstruction (pipeline.query.paths) against scipy.sparse.csgraph and hand-checked graphs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

from pipeline.query.paths import (
    Tolerance,
    adjacency_from_edges,
    edge_kind,
    reconstruct_path,
    validate_path,
)


def _distances(adjacency) -> np.ndarray:
    """float32 all-pairs distances, as the solver stores them."""
    return dijkstra(adjacency.to_scipy(), directed=True).astype(np.float32)


def _random_adjacency(n: int, m: int, seed: int, zero_share: float = 0.05, integer_costs: bool = False):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], 1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    if integer_costs:  # many exact ties
        cost = rng.integers(0, 3, len(pairs)).astype(np.float32)
    else:
        cost = (-np.log(rng.uniform(0.01, 1.0, len(pairs)))).astype(np.float32)
        cost[rng.random(len(pairs)) < zero_share] = 0.0
    return adjacency_from_edges(n, pairs[:, 0], pairs[:, 1], cost)


def test_reconstruct_path_hand_checked_graph():
    # 0 -1.0- 1 -1.0- 3 ; 0 -0.5- 2 -2.0- 3 ; the shortest 0->3 is 0-1-3 (2.0 < 2.5)
    adjacency = adjacency_from_edges(4, [0, 1, 0, 2], [1, 3, 2, 3], [1.0, 1.0, 0.5, 2.0])
    distances = _distances(adjacency)
    result = reconstruct_path(adjacency, distances[3], 0, 3)
    assert result.reachable and result.consistent
    assert result.vertices == [0, 1, 3]
    assert result.hop_costs == [1.0, 1.0]
    assert result.total_cost == pytest.approx(2.0)


def test_reconstruct_path_source_equals_target():
    adjacency = adjacency_from_edges(2, [0], [1], [0.3])
    result = reconstruct_path(adjacency, _distances(adjacency)[1], 1, 1)
    assert result.reachable and result.vertices == [1] and result.total_cost == 0.0


def test_reconstruct_path_unreachable_gives_no_path():
    adjacency = adjacency_from_edges(4, [0, 2], [1, 3], [0.3, 0.2])
    result = reconstruct_path(adjacency, _distances(adjacency)[3], 0, 3)
    assert not result.reachable
    assert result.vertices == [] and result.total_cost is None and result.method == "none"


def test_reconstruct_path_zero_cost_cycle_terminates():
    # A zero-cost triangle 0-1-2 with the only way out from 2; a greedy walk that does not
    # remember where it has been could circle 0 -> 1 -> 0 forever.
    adjacency = adjacency_from_edges(
        5, [0, 0, 1, 1, 2, 3], [1, 2, 2, 3, 4, 4], [0.0, 0.0, 0.0, 5.0, 1.0, 9.0]
    )
    distances = _distances(adjacency)
    result = reconstruct_path(adjacency, distances[4], 0, 4)
    assert result.vertices[0] == 0 and result.vertices[-1] == 4
    assert validate_path(adjacency, result) == []
    assert result.total_cost == pytest.approx(1.0)


def test_reconstruct_path_zero_cost_plateau_backtracks():
    # Zero-cost chain 0-1-2-3 where only 1 leads on (via 5); preferring the smaller vid at
    # equal slack walks into the dead end 0->... and must come back.
    adjacency = adjacency_from_edges(6, [0, 1, 2, 0, 1], [1, 2, 3, 3, 5], [0.0, 0.0, 0.0, 0.0, 1.0])
    distances = _distances(adjacency)
    result = reconstruct_path(adjacency, distances[5], 3, 5)
    assert result.reachable and validate_path(adjacency, result) == []
    assert result.vertices[0] == 3 and result.vertices[-1] == 5
    assert result.total_cost == pytest.approx(1.0)


def test_reconstruct_path_all_zero_graph_terminates():
    n = 30
    adjacency = _random_adjacency(n, 120, seed=3, zero_share=1.0)
    distances = _distances(adjacency)
    for s in range(n):
        for t in range(0, n, 7):
            result = reconstruct_path(adjacency, distances[t], s, t)
            assert validate_path(adjacency, result) == []


@pytest.mark.parametrize("integer_costs", [False, True])
def test_reconstruct_path_random_pairs_match_scipy(integer_costs):
    """Hundreds of random pairs: every path valid and its cost equal to scipy's distance."""
    n = 300
    adjacency = _random_adjacency(n, 700, seed=11, integer_costs=integer_costs)
    distances = _distances(adjacency)
    reference = dijkstra(adjacency.to_scipy(), directed=True)  # float64, independent of the row read
    rng = np.random.default_rng(5)
    reachable = 0
    for s, t in rng.integers(0, n, size=(400, 2)):
        result = reconstruct_path(adjacency, distances[t], int(s), int(t))
        assert result.reachable == np.isfinite(reference[s, t])
        assert validate_path(adjacency, result) == []
        if result.reachable:
            reachable += 1
            assert result.consistent and result.method == "walk"
            assert result.total_cost == pytest.approx(reference[s, t], rel=1e-5, abs=1e-6)
    assert reachable > 200


def test_reconstruct_path_inconsistent_distances_fall_back_and_flag():
    adjacency = adjacency_from_edges(3, [0, 1], [1, 2], [1.0, 1.0])
    wrong_row = np.array([1.0, 0.5, 0.0], dtype=np.float32)  # not the graph's distances
    result = reconstruct_path(adjacency, wrong_row, 0, 2)
    assert result.method == "dijkstra"
    assert result.vertices == [0, 1, 2]
    assert not result.consistent


def test_reconstruct_path_tolerance_is_relative_and_absolute():
    tol = Tolerance(rtol=1e-5, atol=1e-6)
    assert tol.bound(0.0) == pytest.approx(1e-6)
    assert tol.bound(100.0) == pytest.approx(1e-6 + 1e-3)


def test_edge_kind_from_endpoint_kinds():
    assert edge_kind(True, True) == "concept_concept"
    assert edge_kind(True, False) == edge_kind(False, True) == "concept_abstract"
    assert edge_kind(False, False) == "abstract_abstract"


def test_adjacency_edge_lookup_and_weights():
    adjacency = adjacency_from_edges(3, [0, 1], [2, 2], [0.5, 0.0], [0.6065, 1.0])
    assert adjacency.edge_cost(2, 0) == pytest.approx(0.5)
    assert adjacency.edge_weight(1, 2) == 1.0
    with pytest.raises(KeyError):
        adjacency.edge_cost(0, 1)


def test_edge_weights_of_a_build_are_its_parquet_weights_in_both_directions(tmp_path):
    """adjacency_from_graph_bp keeps one float64 weight an edge (edges.parquet's, read in
    batches); every edge's weight comes back for (u, v) and (v, u), and a table that is not the
    CSR's edges is ignored (weights then derived from the costs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from support.build_fixture import make_build

    from pipeline.builds.layout import ResultsLayout
    from pipeline.query.paths import adjacency_from_graph_bp, edge_weights_from_parquet

    make_build(tmp_path, n_concepts=30, n_abstracts=40, distances=None, cooccurrence_distances=None)
    folder = ResultsLayout(tmp_path).build("fixture00001").graph("full").graph_dir
    edges = pq.read_table(folder / "edges.parquet").to_pandas()
    adjacency, _ = adjacency_from_graph_bp(folder / "graph.bp", folder / "edges.parquet")
    assert adjacency.edge_weights is not None
    for row in edges.itertuples():
        assert adjacency.edge_weight(row.src, row.dst) == row.weight
        assert adjacency.edge_weight(row.dst, row.src) == row.weight
    small = edge_weights_from_parquet(folder / "edges.parquet", adjacency, batch_rows=7)
    np.testing.assert_array_equal(small.weight, edges["weight"].to_numpy())
    shuffled = tmp_path / "shuffled.parquet"
    pq.write_table(pa.Table.from_pandas(edges.iloc[::-1], preserve_index=False), shuffled)
    assert edge_weights_from_parquet(shuffled, adjacency) is None
    pq.write_table(pa.Table.from_pandas(edges.iloc[1:], preserve_index=False), shuffled)
    assert edge_weights_from_parquet(shuffled, adjacency) is None
