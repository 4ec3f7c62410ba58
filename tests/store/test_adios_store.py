"""graph.bp round trip and the DistanceMatrix reader on a distances.bp in the solver's layout."""

from __future__ import annotations

import adios2
import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from pipeline.graph.csr import symmetric_csr
from pipeline.store.adios import DistanceMatrix, read_graph_bp, write_distances_bp, write_graph_bp


def _random_graph(n: int, m: int, seed: int):
    rng = np.random.default_rng(seed)
    pairs = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(m)}
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*sorted(pairs), strict=True))
    cost = rng.uniform(0.0, 3.0, len(src)).astype(np.float32)
    return symmetric_csr(n, src, dst, cost)


def test_graph_bp_round_trip(tmp_path):
    csr = _random_graph(40, 90, seed=1)
    attrs = {"graph_digest": "ab" * 32, "weight_scheme": "test", "edge_kinds": ["concept_concept"]}
    write_graph_bp(tmp_path / "graph.bp", csr.n, csr.row_ptr, csr.col_idx, csr.cost, attrs)
    (n, row_ptr, col_idx, cost), read_attrs = read_graph_bp(tmp_path / "graph.bp")
    assert n == 40
    np.testing.assert_array_equal(row_ptr, csr.row_ptr)
    np.testing.assert_array_equal(col_idx, csr.col_idx)
    np.testing.assert_array_equal(cost, csr.cost)
    assert read_attrs["graph_digest"] == "ab" * 32
    assert read_attrs["edge_kinds"] == ["concept_concept"]
    assert read_attrs["n_vertices"] == 40 and read_attrs["n_edges"] == csr.nnz // 2
    assert read_attrs["created"].endswith("+00:00")


def test_graph_bp_without_edges(tmp_path):
    write_graph_bp(
        tmp_path / "g.bp",
        3,
        np.zeros(4, np.int64),
        np.zeros(0, np.int64),
        np.zeros(0, np.float32),
        {"graph_digest": "x", "weight_scheme": "w", "edge_kinds": ["concept_concept"]},
    )
    (n, row_ptr, col_idx, cost), attrs = read_graph_bp(tmp_path / "g.bp")
    assert n == 3 and list(row_ptr) == [0, 0, 0, 0] and len(col_idx) == 0 and attrs["n_edges"] == 0


def test_graph_bp_rejects_inconsistent_csr(tmp_path):
    with pytest.raises(ValueError, match="inconsistent CSR"):
        write_graph_bp(
            tmp_path / "g.bp",
            2,
            np.array([0, 1, 3]),
            np.array([1, 0]),
            np.zeros(2, np.float32),
            {"graph_digest": "x", "weight_scheme": "w", "edge_kinds": []},
        )


@pytest.fixture
def distances(tmp_path):
    """A 37-vertex APSP (scipy reference) written in 8x8 tiles like the solver's ranks do."""
    csr = _random_graph(37, 50, seed=7)  # sparse enough to leave unreachable pairs
    matrix = scipy.sparse.csr_matrix((csr.cost, csr.col_idx, csr.row_ptr), shape=(csr.n, csr.n))
    dense = scipy.sparse.csgraph.floyd_warshall(matrix, directed=False).astype(np.float32)
    path = tmp_path / "distances.bp"
    write_distances_bp(
        path,
        dense,
        {"graph_digest": "cafe", "process_grid": [2, 2], "algorithm": "blocked-fw", "solver_version": "test"},
        block_size=8,
    )
    return path, dense


def test_distance_matrix_rows_and_tiles(distances):
    path, dense = distances
    assert np.isinf(dense).any()
    with DistanceMatrix(path) as matrix:
        assert matrix.n == 37
        assert matrix.attributes["graph_digest"] == "cafe"
        assert matrix.attributes["process_grid"] == [2, 2]
        assert matrix.attributes["semiring"] == "min-plus"
        assert matrix.attributes["block_size"] == 8
        for i in (0, 7, 8, 36):
            row = matrix.row(i)
            assert row.dtype == np.float32 and row.shape == (37,)
            np.testing.assert_array_equal(row, dense[i])
        np.testing.assert_array_equal(matrix.tile(5, 6, 10, 13), dense[5:15, 6:19])  # crosses tile borders
        np.testing.assert_array_equal(matrix.tile(36, 0, 1, 37), dense[36:37])
        assert matrix.value(3, 4) == dense[3, 4]


def test_distance_matrix_selection_errors(distances, tmp_path):
    path, _ = distances
    with DistanceMatrix(path) as matrix:
        with pytest.raises(IndexError):
            matrix.row(37)
        with pytest.raises(IndexError):
            matrix.tile(30, 0, 8, 8)
    with pytest.raises(FileNotFoundError):
        DistanceMatrix(tmp_path / "missing.bp")
    with adios2.Stream(str(tmp_path / "other.bp"), "w") as stream:
        stream.begin_step()
        stream.write("something", np.zeros(3))
        stream.end_step()
    with pytest.raises(ValueError, match="no 'distance'"):
        DistanceMatrix(tmp_path / "other.bp")
