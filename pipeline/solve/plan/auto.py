"""``auto`` solver parameters resolved by the performance model (used by the solver wrapper).

``resolve_auto(n, ranks, grid, tile, broadcast, machine)`` keeps every parameter given
explicitly and lets the planner choose the ones that are ``"auto"`` (or None), among the
configurations consistent with the fixed ones. The result always names a valid apsp-fw
configuration: Pr * Pc == ranks, tile >= 1, a known broadcast. It also reports the
prediction (seconds, memory per rank) and where the model came from, for the run summary.
Without a machine file the fallback is the solver's own default (most square grid, tile
256 capped at n, ring), and the result says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config import default_of
from pipeline.solve.plan.machine import BROADCAST_VARIANTS, Machine, MachineError, load_machine
from pipeline.solve.plan.search import candidates, grids

AUTO = "auto"


def _is_auto(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() == AUTO)


def _parse_grid(grid: str, ranks: int) -> tuple[int, int]:
    text = str(grid).lower()
    if "x" not in text:
        raise ValueError(f"grid {grid!r} is not of the form RxC or 'auto'")
    rows, cols = (int(x) for x in text.split("x", 1))
    if rows < 1 or cols < 1 or rows * cols != ranks:
        raise ValueError(f"grid {grid!r} needs {rows * cols} ranks, not {ranks}")
    return rows, cols


def resolve_auto(
    n: int,
    ranks: int,
    grid: str | None = AUTO,
    tile: int | str | None = default_of("solver.tile"),
    broadcast: str | None = default_of("solver.broadcast"),
    machine: Machine | str | Path | None = None,
    *,
    lookahead: bool | str | None = True,
    backend: str = "cpu",
    threads: int | None = None,
) -> dict[str, Any]:
    """Resolve the ``auto`` values among grid / tile / broadcast / lookahead for (n, ranks).

    Returns ``{"grid": "RxC", "tile": int, "broadcast": str, "lookahead": bool,
    "threads": int | None, "auto": [names resolved], "predicted_seconds": float | None,
    "predicted_memory_per_rank_bytes": int | None, "machine": str | None, "model": str}``.
    """
    n, ranks = int(n), int(ranks)
    if n < 1 or ranks < 1:
        raise ValueError(f"n and ranks must be at least 1 (got n={n}, ranks={ranks})")
    resolved_names = [
        name
        for name, value in (
            ("grid", grid),
            ("tile", tile),
            ("broadcast", broadcast),
            ("lookahead", lookahead),
        )
        if _is_auto(value)
    ]
    fixed_grid = None if _is_auto(grid) else _parse_grid(str(grid), ranks)
    fixed_tile = None if _is_auto(tile) else int(tile)  # type: ignore[arg-type]
    if fixed_tile is not None and fixed_tile < 1:
        raise ValueError(f"tile must be at least 1, got {fixed_tile}")
    fixed_broadcast = None if _is_auto(broadcast) else str(broadcast)
    if fixed_broadcast is not None and fixed_broadcast not in BROADCAST_VARIANTS:
        raise ValueError(f"broadcast {broadcast!r} is none of {', '.join(BROADCAST_VARIANTS)}")
    if _is_auto(lookahead):
        fixed_lookahead = None
    elif isinstance(lookahead, str):
        fixed_lookahead = lookahead.strip().lower() in ("on", "true", "1", "yes")
    else:
        fixed_lookahead = bool(lookahead)

    try:
        model = machine if isinstance(machine, Machine) else load_machine(machine)
    except MachineError as exc:
        return _fallback(n, ranks, fixed_grid, fixed_tile, fixed_broadcast, fixed_lookahead, threads,
                         resolved_names, str(exc))  # fmt: skip
    ranked = candidates(
        n,
        ranks,
        model,
        backend=backend,
        grid=[fixed_grid] if fixed_grid else None,
        tiles=[fixed_tile] if fixed_tile else None,
        broadcasts=[fixed_broadcast] if fixed_broadcast else None,
        lookaheads=[fixed_lookahead] if fixed_lookahead is not None else (True, False),
        threads=threads,
    )
    choice = ranked[0]
    cfg = choice.config
    return {
        "grid": cfg.grid,
        "tile": cfg.tile,
        "broadcast": fixed_broadcast or cfg.broadcast,
        "lookahead": cfg.lookahead,
        "threads": choice.threads,
        "auto": resolved_names,
        "predicted_seconds": choice.seconds,
        "predicted_memory_per_rank_bytes": choice.memory_per_rank_bytes,
        "fits_memory": choice.fits_memory,
        "machine": model.source or model.name,
        "model": "hypermod",
    }


def _fallback(
    n, ranks, fixed_grid, fixed_tile, fixed_broadcast, fixed_lookahead, threads, names, why
) -> dict[str, Any]:
    rows, cols = fixed_grid or grids(ranks)[0]
    return {
        "grid": f"{rows}x{cols}",
        "tile": fixed_tile or max(1, min(default_of("solver.tile"), n)),
        "broadcast": fixed_broadcast or default_of("solver.broadcast"),
        "lookahead": True if fixed_lookahead is None else fixed_lookahead,
        "threads": threads,
        "auto": names,
        "predicted_seconds": None,
        "predicted_memory_per_rank_bytes": None,
        "fits_memory": None,
        "machine": None,
        "model": f"solver defaults (no performance model: {why})",
    }
