"""apsp-fw end to end: real MPI ranks, real ADIOS2 files, scipy as the reference."""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from support.random_graphs import (
    RandomGraph,
    assert_distances_equal,
    random_graph,
    read_distances,
    sha256_file,
)

from pipeline.solve.apsp_fw import SolverError, run_solver
from pipeline.store.bpfiles import bp_reader

pytestmark = pytest.mark.mpi

CONFIGS = [
    # ranks, grid, tile, broadcast, lookahead, input format, n
    (1, "1x1", 16, "ring", "on", "mtx", 61),
    (2, "1x2", 13, "bcast", "on", "bp", 90),
    (2, "2x1", 10, "two-ring", "on", "mtx", 77),
    (4, "2x2", 8, "chunked-ring", "on", "bp", 101),
    (4, "2x2", 9, "bcast", "off", "mtx", 64),
    (4, "2x2", 12, "ring", "off", "bp", 95),
    (4, "2x2", 7, "two-ring", "on", "mtx", 83),
    (6, "2x3", 7, "two-ring", "off", "bp", 97),
    (6, "2x3", 11, "chunked-ring", "on", "mtx", 120),
    (6, "2x3", 16, "ring", "on", "bp", 150),
]


@pytest.mark.parametrize("ranks,grid,tile,broadcast,lookahead,fmt,n", CONFIGS)
def test_distances_match_scipy(tmp_path, run_apsp, ranks, grid, tile, broadcast, lookahead, fmt, n):
    assert n % tile != 0  # the ragged last tile is part of every case
    graph = random_graph(n, seed=zlib.crc32(f"{ranks}{grid}{tile}{broadcast}{lookahead}".encode()))
    source = graph.write_mtx(tmp_path / "g.mtx") if fmt == "mtx" else graph.write_bp(tmp_path / "graph.bp")
    out = tmp_path / "distances.bp"
    run = run_apsp(
        ranks,
        "--input",
        source,
        "--output",
        out,
        "--grid",
        grid,
        "--tile",
        tile,
        "--broadcast",
        broadcast,
        "--chunk",
        "256",
        "--lookahead",
        lookahead,
        "--threads",
        "1",
    )
    assert run.returncode == 0, run.stderr
    got, attrs = read_distances(out)
    assert_distances_equal(got, graph.reference())
    assert attrs["process_grid"] == grid
    assert attrs["broadcast"] == broadcast


def test_output_attributes_and_selections(tmp_path, run_apsp):
    graph = random_graph(70, seed=11)
    source = graph.write_bp(tmp_path / "graph.bp", digest="abc123")
    out = tmp_path / "distances.bp"
    run = run_apsp(4, "--input", source, "--output", out, "--grid", "2x2", "--tile", "16")
    assert run.returncode == 0, run.stderr
    want = graph.reference()
    with bp_reader(out) as reader:
        attr = reader.read_attribute
        assert attr("graph_digest") == "abc123"
        assert int(attr("n")) == 70
        assert int(attr("block_size")) == 16
        assert attr("process_grid") == "2x2"
        assert attr("algorithm") == "blocked-floyd-warshall-2d-block-cyclic"
        assert attr("semiring") == "min-plus"
        assert attr("broadcast") == "ring"
        assert attr("solver_version")
        # a row selection, and a tile selection that straddles four tiles
        row = reader.read("distance", start=[33, 0], count=[1, 70])
        assert_distances_equal(np.asarray(row).reshape(1, 70), want[33:34])
        tile = reader.read("distance", start=[10, 50], count=[20, 20])
        assert_distances_equal(np.asarray(tile), want[10:30, 50:70])


def test_mtx_digest_is_sha256_and_symmetric_pattern(tmp_path, run_apsp):
    mtx = tmp_path / "sym.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n5 5 3\n2 1\n3 2\n5 4\n")
    out = tmp_path / "d.bp"
    run = run_apsp(2, "--input", mtx, "--output", out, "--tile", "2", "--grid", "2x1")
    assert run.returncode == 0, run.stderr
    got, attrs = read_distances(out)
    inf = np.inf
    want = np.array(
        [
            [0, 1, 2, inf, inf],
            [1, 0, 1, inf, inf],
            [2, 1, 0, inf, inf],
            [inf, inf, inf, 0, 1],
            [inf, inf, inf, 1, 0],
        ],
        dtype=np.float32,
    )
    assert np.array_equal(got, want)
    assert attrs["graph_digest"] == sha256_file(mtx)


def test_summary_json_and_validate(tmp_path, run_apsp):
    graph = random_graph(80, seed=5)
    source = graph.write_mtx(tmp_path / "g.mtx")
    summary_path = tmp_path / "summary.json"
    run = run_apsp(
        4,
        "--input",
        source,
        "--grid",
        "2x2",
        "--tile",
        "12",
        "--broadcast",
        "chunked-ring",
        "--validate",
        "25",
        "--summary-json",
        summary_path,
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(summary_path.read_text())
    assert summary == json.loads(run.stdout)
    assert summary["n"] == 80 and summary["grid"] == "2x2" and summary["tile"] == 12
    assert summary["broadcast"] == "chunked-ring" and summary["lookahead"] is True
    assert summary["backend"] == "cpu" and summary["threads"] == 1
    for phase in ("read", "diagonal", "panel", "broadcast", "outer", "write"):
        assert summary["seconds"][phase] >= 0
    assert summary["total_seconds"] > 0 and summary["semiring_rate"] > 0
    assert summary["validate"]["rows"] == 25 and summary["validate"]["ok"] is True
    assert summary["validate"]["max_rel_error"] < 1e-5


def test_reference_backend_agrees(tmp_path, run_apsp):
    graph = random_graph(45, seed=9)
    out = tmp_path / "d.bp"
    run = run_apsp(
        2,
        "--input",
        graph.write_mtx(tmp_path / "g.mtx"),
        "--output",
        out,
        "--backend",
        "reference",
        "--tile",
        "8",
    )
    assert run.returncode == 0, run.stderr
    assert_distances_equal(read_distances(out)[0], graph.reference())


def test_run_solver_wrapper(tmp_path):
    graph = random_graph(50, seed=3)
    source = graph.write_bp(tmp_path / "graph.bp")
    lines: list[str] = []
    summary = run_solver(
        source,
        tmp_path / "d.bp",
        ranks=2,
        grid="1x2",
        tile=8,
        broadcast="two-ring",
        lookahead=False,
        threads=1,
        on_progress=lines.append,
        validate_rows=10,
    )
    assert summary["grid"] == "1x2" and summary["lookahead"] is False and summary["validate"]["ok"]
    assert lines and lines[-1].startswith("apsp-fw: iteration 7/7")
    assert_distances_equal(read_distances(tmp_path / "d.bp")[0], graph.reference())


# ---------------------------------------------------------------------------- errors --
def test_negative_weight_is_refused_naming_the_edge(tmp_path, run_apsp):
    mtx = tmp_path / "neg.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n4 4 3\n1 2 1.0\n3 4 -2.5\n2 3 1\n")
    run = run_apsp(2, "--input", mtx)
    assert run.returncode == 2
    assert f"{mtx}:4: negative weight -2.5 on edge 3 -> 4" in run.stderr


def test_negative_weight_in_graph_bp(tmp_path, run_apsp):
    graph = random_graph(30, seed=1)
    graph.cost[4] = -1.0
    source = graph.write_bp(tmp_path / "graph.bp")
    run = run_apsp(2, "--input", source)
    assert run.returncode == 2
    assert "negative weight -1 on edge" in run.stderr and "graph.bp" in run.stderr


@pytest.mark.parametrize(
    "body,message",
    [
        (
            "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 x 1.0\n",
            ":4: malformed entry '2 x 1.0'",
        ),
        ("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1.0\n", ":3: file ends after 1 entries"),
        ("%%MatrixMarket matrix coordinate real general\n3 4 0\n", ":2: matrix is 3 x 4"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 9 1.0\n", ":3: entry (1, 9) is outside"),
        (
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
            ":1: format 'array' is not supported",
        ),
        ("hello\n", ":1: not a Matrix Market file"),
    ],
)
def test_malformed_mtx_names_file_and_line(tmp_path, run_apsp, body, message):
    mtx = tmp_path / "bad.mtx"
    mtx.write_text(body)
    run = run_apsp(1, "--input", mtx)
    assert run.returncode == 2
    assert f"{mtx}{message}" in run.stderr


def test_grid_must_match_ranks(tmp_path, run_apsp):
    source = random_graph(20, seed=2).write_mtx(tmp_path / "g.mtx")
    run = run_apsp(4, "--input", source, "--grid", "2x3")
    assert run.returncode == 2
    assert "--grid 2x3 needs 6 MPI ranks but the job has 4" in run.stderr


def test_too_large_for_memory_is_refused_before_allocating(tmp_path, run_apsp):
    mtx = tmp_path / "huge.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n2000000 2000000 1\n1 2 1.0\n")
    run = run_apsp(2, "--input", mtx)
    assert run.returncode == 2
    assert "n = 2000000 does not fit" in run.stderr and "bytes are available" in run.stderr


def test_backend_not_compiled_in(tmp_path, run_apsp):
    source = random_graph(20, seed=2).write_mtx(tmp_path / "g.mtx")
    run = run_apsp(1, "--input", source, "--backend", "cuda")
    assert run.returncode == 2
    assert "backend 'cuda' not compiled in" in run.stderr


def test_missing_input(tmp_path, run_apsp):
    run = run_apsp(1, "--input", tmp_path / "nope.mtx")
    assert run.returncode == 2
    assert "nope.mtx: no such file or directory" in run.stderr


MASK64 = (1 << 64) - 1


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic, as in C)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def reference_checksum(distances: np.ndarray) -> str:
    """apsp-fw --checksum from its definition: the sum mod 2^64 of mix(mix(i*n + j) ^ bits(d_ij))."""
    n = distances.shape[0]
    position = np.arange(n * n, dtype=np.uint64)
    bits = np.ascontiguousarray(distances, dtype=np.float32).view(np.uint32).ravel().astype(np.uint64)
    with np.errstate(over="ignore"):
        terms = mix64(mix64(position) ^ bits)
    return f"{sum(int(t) for t in terms) & MASK64:016x}"


def test_checksum_is_one_number_for_any_grid_tile_and_backend(tmp_path, run_apsp):
    """--checksum follows its definition (recomputed here from the written distances) and does
    not depend on how the solve was cut (with integer costs, whose sums are exact, not even on
    the tile); a graph with one edge changed gets another checksum."""
    graph = random_graph(53, seed=31, components=2)
    # Integer costs: every path sum is exact in float32, so every order of the additions gives
    # the same bits and the checksum of scipy's distances must match too.
    graph.cost = np.floor(graph.cost * 4).astype(np.float32)
    source = graph.write_mtx(tmp_path / "g.mtx")
    want = reference_checksum(graph.reference().astype(np.float32))
    for ranks, grid, tile, backend in [
        (1, "1x1", 53, "cpu"),
        (2, "1x2", 7, "cpu"),
        (4, "2x2", 12, "reference"),
    ]:
        out, summary = tmp_path / f"d{ranks}.bp", tmp_path / f"s{ranks}.json"
        args = ["--input", source, "--grid", grid, "--tile", tile, "--backend", backend, "--checksum"]
        run = run_apsp(ranks, *args, "--output", out, "--summary-json", summary)
        assert run.returncode == 0, run.stderr
        got = json.loads(summary.read_text())["distances_checksum"]
        assert got == reference_checksum(read_distances(out)[0]) == want, (grid, tile, backend)

    plain = json.loads(run_apsp(1, "--input", source).stdout)
    assert plain["distances_checksum"] is None  # only when asked: it reads the whole matrix
    # One edge u -> v made free where u is still some way from v: distance (u, v) becomes 0.
    far = np.flatnonzero((graph.src != graph.dst) & (graph.reference()[graph.src, graph.dst] > 0))[0]
    changed = RandomGraph(graph.n, graph.src, graph.dst, graph.cost.copy())
    changed.cost[far] = 0
    other = json.loads(run_apsp(1, "--input", changed.write_mtx(tmp_path / "h.mtx"), "--checksum").stdout)
    assert other["distances_checksum"] == reference_checksum(changed.reference().astype(np.float32)) != want


def test_checksum_with_real_costs_is_one_number_per_tile(tmp_path, run_apsp):
    """Costs with fractions: at one tile every grid, rank count and backend gives the same bits
    (so the same checksum); the checksum is still that of the distances written."""
    graph = random_graph(61, seed=47, components=1)
    source = graph.write_mtx(tmp_path / "g.mtx")
    seen = set()
    for ranks, grid, backend in [
        (1, "1x1", "cpu"),
        (2, "2x1", "reference"),
        (4, "2x2", "cpu"),
        (3, "1x3", "cpu"),
    ]:
        out = tmp_path / f"d{ranks}{backend}.bp"
        args = ["--input", source, "--grid", grid, "--tile", "9", "--backend", backend, "--checksum"]
        run = run_apsp(ranks, *args, "--output", out)
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout)["distances_checksum"]
        assert got == reference_checksum(read_distances(out)[0])
        seen.add(got)
    assert len(seen) == 1, seen


def test_help_documents_every_option(run_apsp):
    run = run_apsp(1, "--help")
    assert run.returncode == 0
    for flag in (
        "--input",
        "--output",
        "--grid",
        "--tile",
        "--broadcast",
        "--chunk",
        "--lookahead",
        "--threads",
        "--backend",
        "--validate",
        "--progress",
        "--summary-json",
        "--checksum",
    ):
        assert flag in run.stdout


def test_run_solver_raises_with_log_tail(tmp_path):
    mtx = tmp_path / "neg.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 -1\n")
    with pytest.raises(SolverError, match="negative weight -1 on edge 1 -> 2"):
        run_solver(mtx, tmp_path / "d.bp", ranks=1)


def test_validation_beyond_tolerance_fails_with_exit_3(tmp_path, run_apsp):
    """A result that fails --validate is never renamed into place: no distances.bp, no .partial."""
    source = random_graph(40, seed=4).write_mtx(tmp_path / "g.mtx")
    out = tmp_path / "distances.bp"
    run = run_apsp(2, "--input", source, "--output", out, "--validate", "5", "--validate-tol", "-1")
    assert run.returncode == 3
    assert "validation failed on 5 rows" in run.stderr and f"{out} was not written" in run.stderr
    assert json.loads(run.stdout)["validate"]["ok"] is False
    assert not out.exists() and not Path(f"{out}.partial").exists()
    # The same run within tolerance writes it.
    run = run_apsp(2, "--input", source, "--output", out, "--validate", "5")
    assert run.returncode == 0, run.stderr
    assert_distances_equal(read_distances(out)[0], random_graph(40, seed=4).reference())


# ------------------------------------------------------------------- size limits --
@pytest.mark.parametrize("ranks", [1, 2])
def test_vertex_count_beyond_what_can_be_addressed_is_refused(tmp_path, run_apsp, ranks):
    """The review's case: n = 2^32 with --tile 1 wrapped the store size to 0 floats, then wrote
    through it. Refused at the size line, in both modes."""
    mtx = tmp_path / "huge.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n4294967296 4294967296 1\n3 5 1\n")
    for mode in (["--tile", "1"], ["--sources", tmp_path / "sources.txt"]):
        (tmp_path / "sources.txt").write_text("0\n")
        run = run_apsp(ranks, "--input", mtx, *mode)
        assert run.returncode == 2
        assert (
            f"{mtx}:2: n = 4294967296 vertices is more than apsp-fw can address (at most 2147483647)"
            in run.stderr
        )


def test_largest_vertex_count_does_not_fit_without_overflow(tmp_path, run_apsp):
    mtx = tmp_path / "big.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1\n3 5 1\n")
    run = run_apsp(1, "--input", mtx, "--tile", "1", "--memory-limit", "4e18")
    assert run.returncode == 2
    assert (
        "n = 2147483647 does not fit: tile 1 on grid 1x1 needs more than 9223372036854775807 bytes"
        in run.stderr
    )


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--tile", "4294967297", "--tile 4294967297 is too large (at most 16384)"),  # was narrowed to 1
        ("--tile", "99999999999999999999", "--tile 99999999999999999999 is too large (at most 16384)"),
        ("--threads", "4294967297", "--threads 4294967297 is too large (at most 4096)"),
        ("--memory-limit", "1e30", "--memory-limit '1e30' is too large (at most 2^62 bytes)"),
        ("--memory-limit", "nan", "--memory-limit must be positive"),
        ("--chunk", "inf", "--chunk 'inf' is too large (at most 2^62 bytes)"),
    ],
)
def test_numeric_options_are_range_checked_before_narrowing(tmp_path, run_apsp, option, value, message):
    source = random_graph(20, seed=2).write_mtx(tmp_path / "g.mtx")
    run = run_apsp(1, "--input", source, option, value)
    assert run.returncode == 2
    assert f"apsp-fw: error: {message}" in run.stderr


def test_costs_beyond_float_range_round(tmp_path, run_apsp):
    """1e999 used to throw std::out_of_range from std::stof (no file, no line); it is +inf (no
    edge), and 1e-999 rounds to 0."""
    mtx = tmp_path / "range.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1e999\n2 3 1e-999\n1 3 4\n")
    out = tmp_path / "d.bp"
    run = run_apsp(1, "--input", mtx, "--output", out, "--validate", "3")
    assert run.returncode == 0, run.stderr
    distances = read_distances(out)[0]
    assert distances[0, 1] == np.inf and distances[1, 2] == 0 and distances[0, 2] == 4


@pytest.mark.parametrize("mode", ["dense", "rows"])
def test_unwritable_output_fails_on_every_rank_instead_of_hanging(tmp_path, run_apsp, mode):
    """Rank 0 could not remove a stale `<output>.partial` (here: the output's folder is a file)
    and left the collective write alone, while the other ranks waited in it forever."""
    source = random_graph(30, seed=3).write_mtx(tmp_path / "g.mtx")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the output's folder should be\n")
    extra = []
    if mode == "rows":
        (tmp_path / "sources.txt").write_text("0\n1\n")
        extra = ["--sources", tmp_path / "sources.txt"]
    run = run_apsp(2, "--input", source, "--output", blocker / "d.bp", *extra)
    assert run.returncode == 2
    assert "d.bp.partial" in run.stderr


def test_run_solver_without_threads_gets_apsp_fws_own_default(tmp_path):
    """run_solver(threads=None) once told the launcher one thread per rank: Open MPI bound the
    rank to one core, and apsp-fw, following the binding, ran one thread on a 2-core machine."""
    source = random_graph(64, seed=6).write_mtx(tmp_path / "g.mtx")
    summary = run_solver(source, None, ranks=1, grid="1x1", tile=16, on_progress=lambda _: None)
    assert summary["threads"] == len(os.sched_getaffinity(0))
