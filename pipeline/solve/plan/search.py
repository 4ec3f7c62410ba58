"""The planner: every valid (grid, tile, broadcast, look-ahead) for n and P, ranked by the model."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pipeline.solve.plan.machine import BROADCAST_VARIANTS, Machine
from pipeline.solve.plan.model import Prediction, SolverConfig, predict

# Multiples of the CPU kernel's 32-column register block (and GPU-friendly sizes).
DEFAULT_TILES = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def grids(ranks: int) -> list[tuple[int, int]]:
    """Every Pr x Pc with Pr * Pc = ranks, most square first (ties: fewer rows first)."""
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, got {ranks}")
    shapes = [(r, ranks // r) for r in range(1, ranks + 1) if ranks % r == 0]
    return sorted(shapes, key=lambda s: (abs(s[0] - s[1]), s[0]))


def candidate_tiles(n: int, tiles: Sequence[int] = DEFAULT_TILES) -> list[int]:
    """Tile edges worth trying for n: those up to n (at least the smallest)."""
    usable = sorted({t for t in tiles if t <= max(n, 1)})
    return usable or [min(tiles)]


def candidates(
    n: int,
    ranks: int,
    machine: Machine,
    *,
    backend: str = "cpu",
    grid: Iterable[tuple[int, int]] | None = None,
    tiles: Sequence[int] | None = None,
    broadcasts: Sequence[str] | None = None,
    lookaheads: Sequence[bool] = (True, False),
    threads: int | None = None,
) -> list[Prediction]:
    """Predictions for every combination, fastest first; configurations that do not fit
    in memory come last. Ties are broken deterministically by the configuration."""
    shapes = list(grid) if grid is not None else grids(ranks)
    tile_list = list(tiles) if tiles else candidate_tiles(n)
    variants = [v for v in (broadcasts or BROADCAST_VARIANTS)]
    if ranks == 1:
        variants = variants[:1]  # nothing is broadcast on one rank
    out: list[Prediction] = []
    for pr, pc in shapes:
        for tile in tile_list:
            for variant in variants:
                for lookahead in lookaheads:
                    cfg = SolverConfig(
                        pr, pc, int(tile), variant, bool(lookahead), machine.chunk_bytes, backend, threads
                    )
                    out.append(predict(n, cfg, machine))
    out.sort(key=_rank_key)
    return out


def _rank_key(p: Prediction) -> tuple:
    c = p.config
    return (not p.fits_memory, round(p.seconds, 12), c.grid_rows, -c.tile, c.broadcast, not c.lookahead)


def best(n: int, ranks: int, machine: Machine, **kwargs) -> Prediction:
    return candidates(n, ranks, machine, **kwargs)[0]
