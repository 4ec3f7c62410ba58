"""graph.bp round trip and the DistanceMatrix reader on a distances.bp in the solver's layout."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import adios2
import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from pipeline.graph.csr import symmetric_csr
from pipeline.store import adios
from pipeline.store.adios import (
    DistanceMatrix,
    DistancesCorrupt,
    GraphCorrupt,
    RowNotStored,
    read_graph_bp,
    write_distance_rows_bp,
    write_distances_bp,
    write_graph_bp,
)
from pipeline.store.bpfiles import bp_reader, reader_profile_path


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


# ------------------------------------------------------------------ rows layout --
@pytest.fixture
def distance_rows(tmp_path):
    """Rows of 5 sources of a 37-vertex undirected APSP, written like apsp-fw --sources does."""
    csr = _random_graph(37, 50, seed=7)
    matrix = scipy.sparse.csr_matrix((csr.cost, csr.col_idx, csr.row_ptr), shape=(csr.n, csr.n))
    dense = scipy.sparse.csgraph.floyd_warshall(matrix, directed=False).astype(np.float32)
    sources = [30, 2, 17, 9, 10]  # unsorted on purpose: the writer stores them by vertex id
    path = tmp_path / "rows.bp"
    write_distance_rows_bp(
        path, dense[sources], sources, {"graph_digest": "cafe", "solver_version": "test"}, blocks=3
    )
    return path, dense, sorted(sources)


def test_distance_rows_read_back(distance_rows):
    path, dense, sources = distance_rows
    assert np.isinf(dense[sources]).any()
    with DistanceMatrix(path) as matrix:
        assert matrix.layout == "rows" and matrix.n == 37 and matrix.stored_rows == 5
        assert matrix.sources.dtype == np.int64 and matrix.sources.tolist() == sources
        assert matrix.attributes["algorithm"] == "dijkstra-rows" and matrix.attributes["rows"] == 5
        for v in sources:
            assert matrix.has_row(v)
            np.testing.assert_array_equal(matrix.row(v), dense[v])
        assert not matrix.has_row(0) and not matrix.has_row(37) and not matrix.has_row(-1)
        np.testing.assert_array_equal(matrix.tile(9, 3, 2, 20), dense[9:11, 3:23])  # rows 9 and 10 are stored
        assert matrix.value(17, 4) == dense[17, 4]
        assert matrix.value(4, 17) == dense[17, 4]  # undirected: D[4, 17] = D[17, 4]


def test_distance_rows_not_stored(distance_rows, tmp_path):
    path, _, _ = distance_rows
    with DistanceMatrix(path) as matrix:
        with pytest.raises(RowNotStored, match="holds the rows of 5 sources only, not of vertex 3"):
            matrix.row(3)
        with pytest.raises(KeyError):  # RowNotStored is a KeyError
            matrix.value(3, 4)
        with pytest.raises(RowNotStored):
            matrix.tile(16, 0, 3, 3)  # 16 and 18 are not stored
        with pytest.raises(IndexError):
            matrix.row(37)
    with DistanceMatrix(path, symmetric=False) as directed:
        with pytest.raises(RowNotStored, match="symmetric=False"):
            directed.value(4, 17)
    # a dense file has every row
    dense_path = tmp_path / "dense.bp"
    write_distances_bp(dense_path, np.zeros((3, 3), np.float32), {"graph_digest": "x"})
    with DistanceMatrix(dense_path) as matrix:
        assert (
            matrix.layout == "dense"
            and matrix.sources is None
            and matrix.has_row(2)
            and not matrix.has_row(3)
        )


def test_distance_rows_truncated_or_damaged(distance_rows, tmp_path):
    path, dense, sources = distance_rows
    data = path / "data.0"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    with pytest.raises(DistancesCorrupt, match="truncated"):
        DistanceMatrix(path)

    def write_raw(name, rows, ids):
        with adios2.Stream(str(tmp_path / name), "w") as stream:
            stream.begin_step()
            stream.write("distance", rows, list(rows.shape), [0, 0], list(rows.shape))
            stream.write("sources", np.asarray(ids, np.int64), [len(ids)], [0], [len(ids)])
            for key, value in {"graph_digest": "x", "layout": "rows", "solver_version": "t"}.items():
                stream.write_attribute(key, value)
            stream.write_attribute("n", np.asarray([37], np.int64))
            stream.write_attribute("rows", np.asarray([len(ids)], np.int64))
            stream.end_step()
        return tmp_path / name

    unsorted = write_raw("unsorted.bp", np.ascontiguousarray(dense[[9, 2]]), [9, 2])
    with pytest.raises(DistancesCorrupt, match="not strictly ascending"):
        DistanceMatrix(unsorted)
    wrong = np.ascontiguousarray(dense[[2, 9, 17]])
    wrong[1, 9] = 1.5  # D[9, 9] must be 0
    with pytest.raises(DistancesCorrupt, match=r"source 9\) has D\[9,9\] != 0"):
        DistanceMatrix(write_raw("diagonal.bp", wrong, [2, 9, 17]))
    with pytest.raises(DistancesCorrupt, match="outside 0..36"):
        DistanceMatrix(write_raw("range.bp", np.ascontiguousarray(dense[[2, 9]]), [2, 40]))


@pytest.mark.mpi
def test_distance_rows_written_by_apsp_fw(tmp_path):
    from pipeline.solve.apsp_fw import run_solver

    csr = _random_graph(60, 90, seed=3)
    attrs = {"graph_digest": "d" * 64, "weight_scheme": "test", "edge_kinds": ["concept_concept"]}
    write_graph_bp(tmp_path / "graph.bp", csr.n, csr.row_ptr, csr.col_idx, csr.cost, attrs)
    matrix = scipy.sparse.csr_matrix((csr.cost, csr.col_idx, csr.row_ptr), shape=(csr.n, csr.n))
    dense = scipy.sparse.csgraph.dijkstra(matrix, directed=True)
    run_solver(
        tmp_path / "graph.bp",
        tmp_path / "d.bp",
        ranks=2,
        threads=1,
        sources=[5, 44, 0],
        on_progress=lambda line: None,
    )
    with DistanceMatrix(tmp_path / "d.bp") as stored:
        assert stored.layout == "rows" and stored.sources.tolist() == [0, 5, 44]
        assert stored.attributes["graph_digest"] == "d" * 64
        for v in (0, 5, 44):
            np.testing.assert_allclose(stored.row(v), dense[v].astype(np.float32), rtol=1e-6)
        assert stored.value(12, 44) == pytest.approx(dense[44, 12], rel=1e-6)
        with pytest.raises(RowNotStored):
            stored.row(1)


def _graph_file_named_once(folder: Path, n: int, m: int, seed: int) -> str:
    """A graph.bp under a name no other test uses (the profile ADIOS2 leaves is named after it)."""
    name = f"leftover-{uuid.uuid4().hex[:12]}.bp"
    csr = _random_graph(n, m, seed=seed)
    attrs = {"graph_digest": "e" * 64, "weight_scheme": "test", "edge_kinds": ["concept_concept"]}
    write_graph_bp(folder / name, csr.n, csr.row_ptr, csr.col_idx, csr.cost, attrs)
    return name


def _profiles_of(name: str) -> list[Path]:
    return sorted(Path("/tmp").glob(f"{name}_*_profiling.json"))


def test_readers_leave_no_profile_in_tmp(tmp_path):
    """ADIOS2's BP5 reader drops /tmp/<name>_<pid>_profiling.json on every close; litpath's
    readers (graph, distances, the crash probe in its child process) remove it."""
    name = _graph_file_named_once(tmp_path, n=30, m=60, seed=4)

    with adios2.FileReader(str(tmp_path / name)) as raw:  # what this guards against
        raw.read("n")
    assert _profiles_of(name) == [reader_profile_path(tmp_path / name)]
    reader_profile_path(tmp_path / name).unlink()

    adios._WRITTEN_HERE.clear()  # as a reader in another process: the probe opens it in a child
    read_graph_bp(tmp_path / name)  # probe_opens in a child, then bp_reader here
    with bp_reader(tmp_path / name) as reader:
        assert int(reader.read("n")) == 30
    assert _profiles_of(name) == []

    dense_name = f"leftover-{uuid.uuid4().hex[:12]}.bp"
    write_distances_bp(
        tmp_path / dense_name, np.zeros((4, 4), np.float32), {"graph_digest": "f" * 64, "n": 4}
    )
    adios._WRITTEN_HERE.clear()
    with DistanceMatrix(tmp_path / dense_name) as matrix:
        assert matrix.value(1, 2) == 0.0
    assert _profiles_of(dense_name) == []


@pytest.mark.mpi
def test_apsp_fw_leaves_no_profile_in_tmp(tmp_path):
    from pipeline.solve.apsp_fw import run_solver

    name = _graph_file_named_once(tmp_path, n=20, m=40, seed=5)
    run_solver(tmp_path / name, tmp_path / "out.bp", ranks=2, threads=1, on_progress=lambda line: None)
    assert _profiles_of(name) == []


def test_a_file_written_here_is_not_probed_again_while_unchanged(tmp_path, monkeypatch):
    """The crash probe (a child process that opens the file first) is skipped for a BP file this
    process wrote and closed, as long as its files are as written; once one changes, it runs, and
    a damaged file is refused as before."""
    children = []
    probe_in_a_child = adios.run_command
    monkeypatch.setattr(adios, "run_command", lambda *a, **k: children.append(a) or probe_in_a_child(*a, **k))
    name = _graph_file_named_once(tmp_path, n=30, m=60, seed=5)
    (n, row_ptr, _, _), _ = read_graph_bp(tmp_path / name)
    assert n == 30 and len(row_ptr) == 31 and children == []
    data = tmp_path / name / "data.0"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    # ADIOS2 opens it (its metadata is whole) and would wait forever reading past the data's end
    with pytest.raises(GraphCorrupt, match="truncated"):
        read_graph_bp(tmp_path / name)
    assert len(children) == 1
    # a file another process wrote (nothing noted here) is probed
    other = _graph_file_named_once(tmp_path, n=10, m=12, seed=6)
    adios._WRITTEN_HERE.pop(str((tmp_path / other).resolve()))
    read_graph_bp(tmp_path / other)
    assert len(children) == 2


def test_truncated_data_files_are_refused_not_waited_on(tmp_path):
    """A graph.bp or path_index.bp whose data file lost its end opens (the metadata is whole), and
    ADIOS2 would wait forever on the read past the end: each reader refuses it, naming the file."""
    from pipeline.store.adios import (
        PathIndexCorrupt,
        read_graph_rows_bp,
        read_path_index_bp,
        write_path_index_bp,
    )

    rng = np.random.default_rng(7)
    arrays = {"vertex": np.array([1, 4], np.int64), "start": np.array([0, 50, 120], np.int64),
              "col": rng.integers(0, 200, 120).astype(np.uint32), "cost": rng.random(120).astype(np.float32)}  # fmt: skip
    write_path_index_bp(tmp_path / "path_index.bp", arrays, {"graph_digest": "d" * 64})
    read, _ = read_path_index_bp(tmp_path / "path_index.bp")
    assert np.array_equal(read["col"], arrays["col"])
    name = _graph_file_named_once(tmp_path, n=40, m=90, seed=8)
    for bp in (tmp_path / "path_index.bp", tmp_path / name):
        data = bp / "data.0"
        os.truncate(data, data.stat().st_size - 16)
    with pytest.raises(PathIndexCorrupt, match=r"path_index.bp: data files hold .* truncated"):
        read_path_index_bp(tmp_path / "path_index.bp")
    with pytest.raises(GraphCorrupt, match="truncated"):
        read_graph_rows_bp(tmp_path / name, lambda row_ptr: [(0, 40)])
