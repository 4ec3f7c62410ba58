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
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.plan.hypermod import Hyperbola, fit_hyperbola
from pipeline.plan.machine import (
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


class CalibrationError(RuntimeError):
    pass


def bench_binary(name: str, build_dir: Path | None = None) -> Path:
    from pipeline.solve import BUILD_DIR

    path = Path(build_dir or BUILD_DIR) / "bench" / name
    if not path.exists():
        raise CalibrationError(
            f"{path} not found: build the solver (`python -c 'from pipeline.solve import build_solver; build_solver()'`)"
        )
    return path


def _json_lines(
    cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600
) -> list[dict[str, Any]]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise CalibrationError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
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
    from pipeline.solve import mpirun_command

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
    description["benchmarks"] = {
        "compute": "solver/bench/fw_phase_bench.cpp (apsp-fw kernels, driver work split)",
        "broadcast": "solver/bench/bcast_bench.cpp (apsp-fw core/broadcast.cpp, mpirun on this node)",
        "loadavg_range": [
            min(r["loadavg_before"] for r in observations["phase"] + bcast_rows),
            max(r["loadavg_before"] for r in observations["phase"] + bcast_rows),
        ],
    }
    return Machine(
        name=name,
        description=description,
        cores_per_node=cores,
        memory_per_node_bytes=physical_memory_bytes(),
        ranks_per_node=None,
        compute={"cpu": compute},
        broadcasts=fit_broadcasts(bcast_rows) if bcast_rows else {},
        chunk_bytes=DEFAULT_CHUNK_BYTES,
        observations=_compact(observations),
    )


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
