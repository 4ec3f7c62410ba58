"""Predicted vs measured: run apsp-fw at several (n, P, config) here and compare (``plan-check``).

The measured time is apsp-fw's ``seconds.solve`` (the blocked Floyd-Warshall itself:
diagonal, panel, broadcast and outer-product phases; reading the input and launching MPI
are excluded, as in the model). The input is a random sparse graph in Matrix Market
format (the dense algorithm's time does not depend on the edges). The 1-minute load
average is recorded before every run: on a shared machine it explains outliers.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.solve.plan.machine import Machine
from pipeline.solve.plan.model import SolverConfig, predict


@dataclass(frozen=True)
class CheckCase:
    n: int
    config: SolverConfig


def random_graph_mtx(n: int, path: Path, edges_per_vertex: int = 4, seed: int = 1) -> Path:
    """A reproducible random directed graph with positive costs (Matrix Market)."""
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    m = edges_per_vertex * n
    src = rng.integers(1, n + 1, m)
    dst = rng.integers(1, n + 1, m)
    cost = rng.random(m) * 9.0 + 0.1
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as out:
        out.write("%%MatrixMarket matrix coordinate real general\n")
        out.write(f"{n} {n} {m}\n")
        np.savetxt(out, np.column_stack([src, dst, cost]), fmt=["%d", "%d", "%.4f"])
    tmp.rename(path)
    return path


def busy_cores(seconds: float = 1.0) -> float:
    """Cores kept busy by other processes right now (from /proc/stat over ``seconds``)."""
    import time

    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields[:8]), idle

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return 0.0
    cores = os.cpu_count() or 1
    if total1 <= total0:
        return 0.0
    return round(cores * (1.0 - (idle1 - idle0) / (total1 - total0)), 2)


def load_average() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def run_case(case: CheckCase, machine: Machine, workdir: Path, repeats: int = 1) -> dict[str, Any]:
    """Run one case (best of ``repeats``) and return predicted and measured seconds."""
    from pipeline.solve.apsp_fw import run_solver

    graph = random_graph_mtx(case.n, workdir / f"random_{case.n}.mtx")
    prediction = predict(case.n, case.config, machine)
    cfg = case.config
    measured: list[float] = []
    loads: list[float] = []
    busy: list[float] = []
    summary: dict[str, Any] = {}
    for _ in range(repeats):
        loads.append(load_average())
        busy.append(busy_cores())
        summary = run_solver(
            graph,
            None,
            ranks=cfg.ranks,
            grid=cfg.grid,
            tile=cfg.tile,
            broadcast=cfg.broadcast,
            lookahead=cfg.lookahead,
            threads=prediction.threads,
            backend=cfg.backend,
            chunk_bytes=cfg.chunk_bytes,
            on_progress=lambda line: None,
            checkpoint_every=None,
        )
        measured.append(float(summary["seconds"]["solve"]))
    best = int(np.argmin(measured))
    seconds = measured[best]
    adjusted = predict(case.n, case.config, machine, background_cores=busy[best])
    return {
        "n": case.n,
        "ranks": cfg.ranks,
        "grid": cfg.grid,
        "tile": cfg.tile,
        "broadcast": cfg.broadcast,
        "lookahead": cfg.lookahead,
        "threads": prediction.threads,
        "predicted_s": prediction.seconds,
        "measured_s": seconds,
        "measured_all_s": measured,
        "error": (prediction.seconds - seconds) / seconds,
        "predicted_busy_adjusted_s": adjusted.seconds,
        "error_busy_adjusted": (adjusted.seconds - seconds) / seconds,
        "loadavg": loads,
        "busy_cores_before": busy,
        "measured_phases": summary.get("seconds", {}),
        "predicted_phases": prediction.phases,
        "predicted_memory_per_rank_bytes": prediction.memory_per_rank_bytes,
    }


def run_check(
    cases: Sequence[CheckCase],
    machine: Machine,
    workdir: Path,
    repeats: int = 1,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in cases:
        row = run_case(case, machine, workdir, repeats)
        log(
            f"n={row['n']:5d} P={row['ranks']} grid={row['grid']:4s} b={row['tile']:4d} {row['broadcast']:12s} "
            f"la={'on' if row['lookahead'] else 'off'}  predicted {row['predicted_s']:8.3f} s  "
            f"measured {row['measured_s']:8.3f} s  error {100 * row['error']:+6.1f} % "
            f"(busy-adjusted {100 * row['error_busy_adjusted']:+6.1f} %)  load {row['loadavg']} busy {row['busy_cores_before']}"
        )
        rows.append(row)
    return rows


def summarize(rows: Sequence[dict[str, Any]], key: str = "error") -> dict[str, float]:
    errors = [abs(r[key]) for r in rows]
    return {
        "cases": len(rows),
        "median_abs_error": statistics.median(errors) if errors else float("nan"),
        "max_abs_error": max(errors) if errors else float("nan"),
    }


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| n | P | grid | tile | broadcast | look-ahead | threads/rank | predicted s | measured s | error "
        "| busy-adjusted predicted s | error | load avg (1 min) | cores busy before |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        loads = ", ".join(f"{x:.2f}" for x in r["loadavg"])
        busy = ", ".join(f"{x:.2f}" for x in r["busy_cores_before"])
        lines.append(
            f"| {r['n']} | {r['ranks']} | {r['grid']} | {r['tile']} | {r['broadcast']} | "
            f"{'on' if r['lookahead'] else 'off'} | {r['threads']} | {r['predicted_s']:.3f} | "
            f"{r['measured_s']:.3f} | {100 * r['error']:+.1f} % | {r['predicted_busy_adjusted_s']:.3f} | "
            f"{100 * r['error_busy_adjusted']:+.1f} % | {loads} | {busy} |"
        )
    return "\n".join(lines)
