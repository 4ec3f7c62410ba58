"""Measure this machine and fit its HyPerMod components (``litpath plan-calibrate``).

Micro-benchmarks (CPU backend; both built from solver/bench/ with the solver):

* ``fw-phase-bench``: apsp-fw's own min-plus kernel in the driver's outer-product work
  split, rate vs tile edge b and vs local matrix size, and the diagonal tile's
  Floyd-Warshall rate -- for 1 thread and for all cores;
* ``bcast-bench`` (MPI): apsp-fw's own broadcast class (core/broadcast.*), time vs
  message size for bcast (MPI_Ibcast), ring, two-ring and chunked-ring, at every rank
  count from 2 to ``max_ranks`` (one group), and with two concurrent groups of P/2 where
  P is even (the rows of a 2 x P/2 grid).

Each benchmark line and the load average around it is kept under ``observations`` in the
machine file, next to the fitted (a, d) of every component.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.runtime.errors import LitpathError
from pipeline.runtime.process import CommandFailed, run_command
from pipeline.solve.plan.hypermod import Hyperbola, fit_hyperbola
from pipeline.solve.plan.machine import (
    BROADCAST_VARIANTS,
    DEFAULT_CHUNK_BYTES,
    BroadcastFit,
    ComputeModel,
    Machine,
    describe_this_machine,
    physical_memory_bytes,
)

DEFAULT_TILES = (32, 64, 128, 256, 512)
DEFAULT_LOCALS = (256, 512, 1024, 2048, 3072, 4096)
DEFAULT_MESSAGE_BYTES = ("4K", "16K", "64K", "256K", "1M", "4M", "16M")


class CalibrationError(LitpathError, RuntimeError):
    pass


def bench_binary(name: str, build_dir: Path | None = None) -> Path:
    from pipeline.solve.apsp_fw import BUILD_DIR

    path = Path(build_dir or BUILD_DIR) / "bench" / name
    if not path.exists():
        raise CalibrationError(
            f"{path} not found: build the solver (`python -c 'from pipeline.solve.apsp_fw import build_solver; build_solver()'`)"
        )
    return path


def _json_lines(
    cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600
) -> list[dict[str, Any]]:
    try:
        proc = run_command(cmd, what="calibration benchmark", env=env, timeout=timeout)
    except CommandFailed as exc:
        raise CalibrationError(str(exc)) from exc
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def load_average() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def run_phase_bench(
    threads: int, tiles=DEFAULT_TILES, locals_=DEFAULT_LOCALS, seconds: float = 6.0, backend: str = "cpu"
) -> list[dict[str, Any]]:
    exe = bench_binary("fw-phase-bench")
    before = load_average()
    rows = _json_lines(
        [
            str(exe),
            "--tiles", ",".join(map(str, tiles)),
            "--local", ",".join(map(str, locals_)),
            "--threads", str(threads),
            "--seconds", str(seconds),
            "--backend", backend,
        ]
    )  # fmt: skip
    for row in rows:
        row["loadavg_before"] = before
    return rows


def run_bcast_bench(
    ranks: int,
    groups: int = 1,
    message_bytes=DEFAULT_MESSAGE_BYTES,
    seconds: float = 2.0,
    chunk: int = DEFAULT_CHUNK_BYTES,
) -> list[dict[str, Any]]:
    from pipeline.solve.apsp_fw import mpirun_command

    exe = bench_binary("bcast-bench")
    before = load_average()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    rows = _json_lines(
        mpirun_command(ranks)
        + [str(exe), "--bytes", ",".join(message_bytes), "--groups", str(groups), "--chunk", str(chunk),
           "--seconds", str(seconds), "--variants", ",".join(BROADCAST_VARIANTS)],
        env=env,
    )  # fmt: skip
    for row in rows:
        row["loadavg_before"] = before
    return rows


def fit_compute(rows: list[dict[str, Any]]) -> ComputeModel:
    """Fit one thread count's tile rate, memory penalty and diagonal rate."""
    outer = [r for r in rows if r["phase"] == "outer"]
    diagonal = [r for r in rows if r["phase"] == "diagonal"]
    if not outer or not diagonal:
        raise CalibrationError("fw-phase-bench returned no outer/diagonal rows")
    threads = int(outer[0]["threads"])
    # Tile rate: for each b, its best (in-cache) local size.
    best_by_tile: dict[int, float] = defaultdict(float)
    for r in outer:
        best_by_tile[int(r["tile"])] = max(best_by_tile[int(r["tile"])], float(r["rate"]))
    tiles = sorted(best_by_tile)
    tile_rate = fit_hyperbola(tiles, [best_by_tile[b] for b in tiles])
    # Memory penalty, per tile edge: time per op above the in-cache model vs local bytes.
    memory_penalty: dict[int, Hyperbola] = {}
    for b in tiles:
        points = sorted(
            (float(r["local_bytes"]), 1.0 / float(r["rate"]) - 1.0 / float(tile_rate(b)))
            for r in outer
            if int(r["tile"]) == b
        )
        positive = [(m, e) for m, e in points if e > 0]
        if len(positive) >= 2:
            memory_penalty[b] = fit_hyperbola([m for m, _ in positive], [e for _, e in positive])
    diag_tiles = sorted({int(r["tile"]) for r in diagonal})
    diag_rate = {int(r["tile"]): float(r["rate"]) for r in diagonal}
    diagonal_rate = fit_hyperbola(diag_tiles, [diag_rate[b] for b in diag_tiles])
    return ComputeModel(
        threads=threads, tile_rate=tile_rate, memory_penalty=memory_penalty, diagonal_rate=diagonal_rate
    )


def fit_broadcasts(rows: list[dict[str, Any]]) -> dict[str, list[BroadcastFit]]:
    """Effective bandwidth y = bytes / median seconds, fitted per (variant, comm size, groups)."""
    cells: dict[tuple[str, int, int], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        cells[(r["variant"], int(r["comm_size"]), int(r["groups"]))].append(
            (float(r["bytes"]), float(r["bytes"]) / float(r["median_seconds"]))
        )
    fits: dict[str, list[BroadcastFit]] = defaultdict(list)
    for (variant, comm_size, groups), points in sorted(cells.items()):
        points.sort()
        fit = fit_hyperbola([p[0] for p in points], [p[1] for p in points])
        fits[variant].append(BroadcastFit(comm_size, groups, fit))
    return dict(fits)


def calibrate(
    name: str,
    *,
    max_ranks: int = 4,
    cores: int | None = None,
    phase_seconds: float = 6.0,
    bcast_seconds: float = 2.0,
    tiles=DEFAULT_TILES,
    locals_=DEFAULT_LOCALS,
    message_bytes=DEFAULT_MESSAGE_BYTES,
    log: Callable[[str], None] = print,
) -> Machine:
    """Run the micro-benchmarks on this machine and return its fitted description."""
    description = describe_this_machine()
    cores = cores or int(description["cores"])
    thread_counts = sorted({1, cores})
    compute: dict[int, ComputeModel] = {}
    observations: dict[str, Any] = {"phase": [], "broadcast": []}
    for threads in thread_counts:
        log(f"fw-phase-bench, {threads} thread(s) (load {load_average()})")
        rows = run_phase_bench(threads, tiles, locals_, phase_seconds)
        observations["phase"].extend(rows)
        compute[threads] = fit_compute(rows)
    bcast_rows: list[dict[str, Any]] = []
    for ranks in range(2, max_ranks + 1):
        layouts = [1] + ([2] if ranks % 2 == 0 and ranks >= 4 else [])
        for groups in layouts:
            log(f"bcast-bench, {ranks} ranks in {groups} group(s) (load {load_average()})")
            bcast_rows.extend(run_bcast_bench(ranks, groups, message_bytes, bcast_seconds))
    observations["broadcast"] = bcast_rows
    log(f"dijkstra (rows and on-demand methods) (load {load_average()})")
    sssp = calibrate_sssp(cores, log=log)
    description["benchmarks"] = {
        "compute": "solver/bench/fw_phase_bench.cpp (apsp-fw kernels, driver work split)",
        "broadcast": "solver/bench/bcast_bench.cpp (apsp-fw core/broadcast.cpp, mpirun on this node)",
        "loadavg_range": [
            min(r["loadavg_before"] for r in observations["phase"] + bcast_rows),
            max(r["loadavg_before"] for r in observations["phase"] + bcast_rows),
        ],
    }
    machine = Machine(
        name=name,
        description=description,
        cores_per_node=cores,
        memory_per_node_bytes=physical_memory_bytes(),
        ranks_per_node=None,
        compute={"cpu": compute},
        broadcasts=fit_broadcasts(bcast_rows) if bcast_rows else {},
        chunk_bytes=DEFAULT_CHUNK_BYTES,
        observations=_compact(observations),
        sssp=sssp,
    )
    log(f"whole-solve correction from real apsp-fw runs (load {load_average()})")
    machine.solver_correction = calibrate_solver_correction(machine, log)
    return machine


SSSP_SIZES = (1 << 12, 1 << 15, 1 << 18, 1 << 20)
SSSP_ARCS_PER_VERTEX = 10


def random_csr(n: int, arcs_per_vertex: int, seed: int):
    """A random symmetric graph with ``n * arcs_per_vertex`` arcs and float32 costs (Adjacency)."""
    import numpy as np

    from pipeline.query.paths import adjacency_from_edges
    from pipeline.runtime.columnar import distinct_sorted

    rng = np.random.default_rng(seed)
    m = n * arcs_per_vertex // 2
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    keep = src != dst
    src, dst = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    key = distinct_sorted(src * n + dst)
    cost = rng.exponential(1.0, len(key)).astype(np.float32)
    return adjacency_from_edges(n, key // n, key % n, cost)


def calibrate_sssp(
    cores: int, sizes=SSSP_SIZES, sources_per_size: int = 4, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Measure Dijkstra (the rows and on-demand methods' kernel, solver/core/sssp.cpp through
    pipeline.query.sssp) on random graphs of growing size; fit seconds per (arc + vertex) of one
    search vs the graph's working-set bytes (see pipeline.solve.plan.methods.SsspModel)."""
    import time

    import numpy as np

    from pipeline.query import sssp
    from pipeline.solve.plan.methods import graph_bytes

    observations = []
    largest = None
    for i, n in enumerate(sizes):
        graph = random_csr(n, SSSP_ARCS_PER_VERTEX, seed=i)
        sources = np.random.default_rng(100 + i).choice(n, size=min(n, sources_per_size), replace=False)
        sssp.rows(graph, sources[:1], threads=1)  # warm caches and pages
        start = time.perf_counter()
        sssp.rows(graph, sources, threads=1)
        per_search = (time.perf_counter() - start) / len(sources)
        units = graph.nnz + n
        observations.append([int(n), int(graph.nnz), float(f"{per_search:.4g}"), graph_bytes(n, graph.nnz)])
        log(f"dijkstra, n = {n:,}, {graph.nnz:,} arcs: {per_search * 1e3:.2f} ms per search "
            f"({per_search / units * 1e9:.1f} ns per arc+vertex)")  # fmt: skip
        largest = (graph, sources, per_search)
    per_unit = [(o[3], o[2] / (o[1] + o[0])) for o in observations]
    base = min(t for _, t in per_unit)
    rising = [(m, t - base) for m, t in per_unit if t - base > 0]
    penalty = fit_hyperbola([m for m, _ in rising], [e for _, e in rising]) if len(rising) >= 2 else None
    speedup = 1.0
    if cores > 1 and largest is not None:
        graph, sources, one = largest
        many = np.resize(sources, cores * len(sources))
        start = time.perf_counter()
        sssp.rows(graph, many, threads=cores)
        speedup = one * len(many) / (time.perf_counter() - start)
        log(f"dijkstra, {cores} threads on different sources: {speedup:.2f}x one thread")
    return {
        "base": base,
        "penalty_a": penalty.a if penalty else 0.0,
        "penalty_d": penalty.d if penalty else 0.0,
        "threads": 1,
        "threads_speedup": round(speedup, 3),
        "source": "calibrated (random graphs, pipeline/solve/plan/calibrate.py calibrate_sssp)",
        "observations_columns": ["n", "arcs", "seconds_per_search", "working_set_bytes"],
        "observations": observations,
    }


# Real solves for the whole-solve correction: unlike plan-check's cases (other n and tiles),
# one rank with every core's threads, a 1 x cores grid and a cores x 1 grid without look-ahead.
def correction_cases(cores: int) -> list:
    from pipeline.solve.plan.check import CheckCase
    from pipeline.solve.plan.model import SolverConfig

    ranks = max(2, cores)
    return [
        CheckCase(2560, SolverConfig(1, 1, 128, "ring")),
        CheckCase(3584, SolverConfig(1, ranks, 256, "ring")),
        CheckCase(3584, SolverConfig(ranks, 1, 192, "bcast", lookahead=False)),
    ]


def calibrate_solver_correction(machine: Machine, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run apsp-fw on :func:`correction_cases` and fit the factor measured / composed (median)."""
    import statistics
    import tempfile

    from pipeline.solve.plan.check import run_case

    runs = []
    with tempfile.TemporaryDirectory(prefix="plan-correction-") as tmp:
        for case in correction_cases(machine.cores_per_node):
            row = run_case(case, machine, Path(tmp), repeats=2)
            ratio = row["measured_s"] / row["predicted_s"]
            log(f"apsp-fw n = {case.n}, {case.config.label()}: composed {row['predicted_s']:.3f} s, "
                f"measured {row['measured_s']:.3f} s (x{ratio:.3f})")  # fmt: skip
            runs.append([case.n, case.config.grid, case.config.tile, case.config.broadcast,
                         case.config.lookahead, round(row["predicted_s"], 5), round(row["measured_s"], 5)])  # fmt: skip
    factor = statistics.median(r[6] / r[5] for r in runs)
    return {
        "factor": round(factor, 4),
        "runs_columns": ["n", "grid", "tile", "broadcast", "lookahead", "composed_s", "measured_s"],
        "runs": runs,
    }


def calibrate_quickly(name: str, log: Callable[[str], None] = print) -> Machine:
    """The calibration the planner runs by itself on a machine without a machine file:
    the full measurement with shorter compute runs (about a minute on 2 cores)."""
    return calibrate(name, phase_seconds=3.0, bcast_seconds=1.0, log=log)


def _compact(observations: dict[str, Any]) -> dict[str, Any]:
    """Observations as short flow-style rows (kept in the machine file for re-fitting)."""
    phase = [
        [
            r["phase"],
            int(r["threads"]),
            int(r["tile"]),
            int(r.get("local", 0)),
            float(f"{r['rate']:.4g}"),
            r["loadavg_before"],
        ]
        for r in observations["phase"]
    ]
    bcast = [
        [r["variant"], int(r["comm_size"]), int(r["groups"]), int(r["bytes"]), float(f"{r['median_seconds']:.4g}"),
         float(f"{r['min_seconds']:.4g}"), r["loadavg_before"]]
        for r in observations["broadcast"]
    ]  # fmt: skip
    return {
        "phase_columns": ["phase", "threads", "tile", "local_edge", "rate_ops_per_s", "loadavg"],
        "phase": phase,
        "broadcast_columns": ["variant", "comm_size", "groups", "bytes", "median_s", "min_s", "loadavg"],
        "broadcast": bcast,
    }
