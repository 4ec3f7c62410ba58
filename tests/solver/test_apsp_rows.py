"""apsp-fw --sources: distance rows of a source set by Dijkstra, checked against scipy.

Real MPI ranks (1 and 4) and OpenMP threads (1 and 2), real ADIOS2 files, fresh random
graphs from conftest (zero costs, self-loops, parallel edges, several components and
isolated vertices); directed .mtx and undirected graph.bp inputs.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from support.random_graphs import RandomGraph, random_graph

from pipeline.solve.apsp_fw import run_solver, solver_arguments
from pipeline.store.adios import DistanceMatrix
from pipeline.store.bpfiles import bp_reader

pytestmark = pytest.mark.mpi

RTOL = 1e-6  # float32 rounding of the same double sums; scipy may add in another order
ATOL = 1e-6


def undirected(graph: RandomGraph) -> RandomGraph:
    """The same edges in both directions (self-loops once)."""
    back = graph.src != graph.dst
    return RandomGraph(
        n=graph.n,
        src=np.concatenate([graph.src, graph.dst[back]]),
        dst=np.concatenate([graph.dst, graph.src[back]]),
        cost=np.concatenate([graph.cost, graph.cost[back]]),
    )


def write_sources(path: Path, ids) -> Path:
    """The ids in the given order, with the comments and blank lines the format allows."""
    lines = ["# sources for apsp-fw --sources", ""]
    lines += [f"{v}   # vertex {v}" if i % 3 == 0 else str(v) for i, v in enumerate(ids)]
    path.write_text("\n".join(lines) + "\n\n")
    return path


def read_rows(path: Path) -> tuple[np.ndarray, np.ndarray, dict]:
    """(distance m x n read into a NaN-poisoned buffer, sources, attributes)."""
    with bp_reader(path) as reader:
        attrs = {name: reader.read_attribute(name) for name in reader.available_attributes()}
        var = reader.inquire_variable("distance")
        assert var.type() == "float"
        m, n = (int(s) for s in var.shape())
        rows = np.full((m, n), np.nan, dtype=np.float32)
        reader.read_in_buffer(var, rows, start=[0, 0], count=[m, n])
        sources = np.asarray(reader.read("sources"))
        blocks = reader.all_blocks_info("distance")[0]
        area = sum(int(np.prod([int(c) for c in str(b["Count"]).split(",")])) for b in blocks)
    assert area == m * n, "the ranks' blocks must cover the rows exactly"
    return rows, sources, attrs


def assert_rows_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    unreachable = np.isinf(want)
    assert np.array_equal(np.isinf(got), unreachable), "unreachable pairs differ"
    assert np.all(got[unreachable] == np.inf)
    np.testing.assert_allclose(got[~unreachable], want[~unreachable].astype(np.float32), rtol=RTOL, atol=ATOL)


CONFIGS = [
    # ranks, threads, input format (mtx: directed, bp: undirected), n, sources
    (1, 1, "mtx", 61, 9),
    (1, 2, "bp", 90, 13),
    (4, 1, "bp", 101, 11),
    (4, 2, "mtx", 77, 6),
    (4, 1, "mtx", 40, 3),  # fewer sources than ranks: one rank computes nothing
]


@pytest.mark.parametrize("ranks,threads,fmt,n,m", CONFIGS)
def test_rows_match_scipy(tmp_path, run_apsp, ranks, threads, fmt, n, m):
    graph = random_graph(n, seed=zlib.crc32(f"rows{ranks}{threads}{fmt}{n}".encode()))
    if fmt == "bp":
        graph = undirected(graph)
        source = graph.write_bp(tmp_path / "graph.bp", digest="rows-digest")
    else:
        source = graph.write_mtx(tmp_path / "g.mtx")
    rng = np.random.default_rng(n)
    ids = rng.choice(n - 1, m - 1, replace=False).tolist() + [n - 1]  # n - 1 is isolated
    rng.shuffle(ids)  # the file's order does not matter: rows are stored by vertex id
    out = tmp_path / "distances.bp"
    run = run_apsp(
        ranks,
        "--input",
        source,
        "--output",
        out,
        "--sources",
        write_sources(tmp_path / "sources.txt", ids),
        "--threads",
        threads,
        "--progress",
    )
    assert run.returncode == 0, run.stderr
    rows, sources, attrs = read_rows(out)
    assert sources.dtype == np.int64 and sources.tolist() == sorted(ids)
    assert_rows_equal(rows, graph.reference()[sources])
    assert attrs["layout"] == "rows" and attrs["algorithm"] == "dijkstra-rows"
    assert int(attrs["n"]) == n and int(attrs["rows"]) == m and attrs["semiring"] == "min-plus"
    assert attrs["solver_version"] and attrs["graph_digest"]
    if fmt == "bp":
        assert attrs["graph_digest"] == "rows-digest"
    assert not Path(f"{out}.partial").exists()
    assert "apsp-fw: rows" in run.stderr  # --progress

    summary = json.loads(run.stdout)
    assert summary["method"] == "rows" and summary["rows"] == m and summary["n"] == n
    assert summary["ranks"] == ranks and summary["threads"] == threads
    assert set(summary["seconds"]) == {"read", "solve", "write"}
    assert summary["rows_per_second"] > 0 and summary["edges"] == len(graph.src)

    with DistanceMatrix(out) as matrix:  # the reader's checks accept what the solver wrote
        assert matrix.layout == "rows" and matrix.sources.tolist() == sorted(ids)
        np.testing.assert_array_equal(matrix.row(ids[0]), rows[sorted(ids).index(ids[0])])


def test_dense_summary_names_its_method(tmp_path, run_apsp):
    run = run_apsp(1, "--input", random_graph(20, seed=1).write_mtx(tmp_path / "g.mtx"), "--tile", "8")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["method"] == "floyd-warshall"


def test_run_solver_with_sources(tmp_path):
    graph = undirected(random_graph(50, seed=3))
    source = graph.write_bp(tmp_path / "graph.bp")
    lines: list[str] = []
    summary = run_solver(
        source, tmp_path / "d.bp", ranks=2, threads=1, sources=[7, 3, 40], on_progress=lines.append
    )
    assert summary["method"] == "rows" and summary["rows"] == 3
    assert any(line.startswith("apsp-fw: rows") for line in lines)
    assert not (tmp_path / "d.bp.checkpoints").exists()
    rows, sources, _ = read_rows(tmp_path / "d.bp")
    assert sources.tolist() == [3, 7, 40]
    assert_rows_equal(rows, graph.reference()[[3, 7, 40]])


def test_solver_arguments_leave_out_dense_options_with_sources(tmp_path):
    args = solver_arguments(
        "g.bp", "d.bp", grid="2x2", tile=64, checkpoint_dir=tmp_path, sources_file="s.txt"
    )
    assert "--sources" in args and args[args.index("--sources") + 1] == "s.txt"
    for flag in ("--grid", "--tile", "--broadcast", "--lookahead", "--checkpoint-dir"):
        assert flag not in args
    with pytest.raises(ValueError, match="validate_rows"):
        solver_arguments("g.bp", "d.bp", validate_rows=5, sources_file="s.txt")
    # A GPU backend configured for the dense solve does not reach the rows mode (which apsp-fw
    # would refuse: Dijkstra runs on the CPU).
    for backend in ("cuda", "hip", "gpu-host", "cpu"):
        assert "--backend" not in solver_arguments("g.bp", "d.bp", backend=backend, sources_file="s.txt")


# ---------------------------------------------------------------------------- errors --
@pytest.mark.parametrize(
    "body,message",
    [
        ("0\n# fine\n\n1x\n", ":4: '1x' is not a vertex id"),
        ("0\n12\n30\n", ":3: vertex 30 is outside 0..29 (the graph has n = 30)"),
        ("-1\n", ":1: vertex -1 is outside 0..29"),
        ("5\n# again:\n2\n5 # twice\n", ":4: vertex 5 is listed twice (first on line 1)"),
        ("# nothing here\n\n", ": no vertex ids in the sources file"),
    ],
)
def test_bad_sources_file_names_file_and_line(tmp_path, run_apsp, body, message):
    source = random_graph(30, seed=2).write_mtx(tmp_path / "g.mtx")
    sources = tmp_path / "sources.txt"
    sources.write_text(body)
    run = run_apsp(2, "--input", source, "--sources", sources)
    assert run.returncode == 2
    assert f"{sources}{message}" in run.stderr


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--tile", "64"], "--tile does not apply with --sources"),
        (["--grid", "1x2"], "--grid 1x2 does not apply with --sources"),
        (["--backend", "cuda"], "--backend cuda does not apply with --sources"),
        (["--checkpoint-dir", "ckpt"], "--checkpoint-dir does not apply with --sources"),
        (["--lookahead", "off"], "--lookahead does not apply with --sources"),
        (["--validate", "3"], "--validate does not apply with --sources"),
    ],
)
def test_dense_only_options_are_refused(tmp_path, run_apsp, extra, message):
    source = random_graph(30, seed=2).write_mtx(tmp_path / "g.mtx")
    sources = write_sources(tmp_path / "s.txt", [1, 2])
    run = run_apsp(2, "--input", source, "--sources", sources, *extra)
    assert run.returncode == 2
    assert message in run.stderr


def test_rows_too_large_for_memory_are_refused_before_allocating(tmp_path, run_apsp):
    mtx = tmp_path / "huge.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n2000000 2000000 1\n1 2 1.0\n")
    sources = write_sources(tmp_path / "s.txt", range(0, 64))
    run = run_apsp(2, "--input", mtx, "--sources", sources, "--memory-limit", "100M")
    assert run.returncode == 2
    assert "--sources: 64 rows of n = 2000000 do not fit" in run.stderr and "(--memory-limit)" in run.stderr


def test_help_documents_sources(run_apsp):
    run = run_apsp(1, "--help")
    assert run.returncode == 0 and "--sources FILE" in run.stdout
