"""Compose the fitted components into apsp-fw's time and memory (SC22 COAST eqs 1-4).

One outer iteration k of the blocked Floyd-Warshall on a Pr x Pc grid, tile b, nb =
ceil(n/b) iterations, seen from the busiest rank (grid position (0,0): R = ceil(nb/Pr)
tile rows, C = ceil(nb/Pc) tile columns; tiles of average extent e = n/nb):

    t_diag   = 2 e^3 / diagonal_rate(b)                     diagonal_update (1 thread)
    t_dbcast = bcast(e^2*4 B over Pc) + bcast(e^2*4 B over Pr)   diagonal_broadcast
    t_panel  = (R + C - 2) * 2 e^3 * tau(b, R C b^2 4 B) * w     panel_update
    t_pbcast = bcast(C e^2*4 B over Pr) + bcast(R e^2*4 B over Pc)  panel_broadcast
    t_outer  = ((nb-2) R C + D)/nb * 2 e^3 * tau(b, R C b^2 4 B)  minplus_outer_product

(D: diagonal tiles the rank owns; tau: seconds per op of the rank, the compute model's
1/tile_rate(b) + memory_penalty(local bytes), scaled by threads and by oversubscription
when the node's ranks x threads exceed its cores; w: the panel's thread imbalance.)

Per iteration, without overlap (SC22 eq. 4, "worst"): the sum of the five. With
look-ahead the panel broadcast of k+1 runs while the rest of k's outer product computes
(eq. 3, "ideal", applied to the part that overlaps):

    T_it = t_diag + t_dbcast + t_panel + max(t_outer, t_pbcast)

Total solve time = nb * T_it * c, where c is the machine's ``solver_correction``: the median
ratio of measured to composed solve time over a few real apsp-fw runs made at calibration
(configurations unlike ``plan-check``'s). It carries what measuring components one at a time
cannot see -- ranks waiting on the panel owner and on late broadcasts, ranks sharing cores
and caches -- which made every composed prediction an underestimate (by 5-23 % on an Intel
Xeon, more on an AMD EPYC). Memory per rank reproduces core/driver.cpp
``bytes_needed_per_rank`` for the busiest rank.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.config import default_of
from pipeline.solve.plan.machine import DEFAULT_CHUNK_BYTES, Machine

FLOAT_BYTES = 4


@dataclass(frozen=True)
class SolverConfig:
    """The solver parameters the model predicts for (apsp-fw's --grid/--tile/...)."""

    grid_rows: int
    grid_cols: int
    tile: int
    broadcast: str = default_of("solver.broadcast")
    lookahead: bool = default_of("solver.lookahead")
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    backend: str = "cpu"
    threads: int | None = None  # per rank; None: the solver's default (cores / ranks on node)

    @property
    def ranks(self) -> int:
        return self.grid_rows * self.grid_cols

    @property
    def grid(self) -> str:
        return f"{self.grid_rows}x{self.grid_cols}"

    def label(self) -> str:
        la = "on" if self.lookahead else "off"
        return f"grid {self.grid}, tile {self.tile}, {self.broadcast}, look-ahead {la}"


@dataclass
class Prediction:
    n: int
    config: SolverConfig
    threads: int
    iterations: int
    seconds: float  # predicted solve time (apsp-fw summary "seconds.solve")
    seconds_overlap: float  # eq. 3 applied to the panel broadcast (look-ahead)
    seconds_no_overlap: float  # eq. 4
    per_iteration: dict[str, float]
    memory_per_rank_bytes: int
    memory_limit_bytes: int
    fits_memory: bool
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Predicted semiring rate, 2 n^3 / s (as apsp-fw reports it)."""
        return 2.0 * self.n**3 / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["config"] = asdict(self.config)
        out["config"]["grid"] = self.config.grid
        out["rate"] = self.rate
        return out


def cyclic_count(count: int, parts: int, part: int) -> int:
    """How many of ``count`` tiles dealt cyclically to ``parts`` owners owner ``part`` gets."""
    if part >= count:
        return 0
    return (count - part + parts - 1) // parts


def memory_per_rank(n: int, grid_rows: int, grid_cols: int, tile: int, lookahead: bool = True) -> int:
    """Bytes apsp-fw allocates on its busiest rank (core/driver.cpp bytes_needed_per_rank)."""
    nb = math.ceil(n / tile)
    rows = cyclic_count(nb, grid_rows, 0)
    cols = cyclic_count(nb, grid_cols, 0)
    tile_bytes = tile * tile * FLOAT_BYTES
    store = rows * cols * tile_bytes
    panels = (2 if lookahead else 1) * (rows + cols) * tile_bytes
    diagonal = tile_bytes
    output_edges = (rows + cols) * tile_bytes
    return store + panels + diagonal + output_edges


def predict(n: int, config: SolverConfig, machine: Machine, background_cores: float = 0.0) -> Prediction:
    """Predicted solve time and memory of apsp-fw for ``n`` vertices and ``config``.

    ``background_cores``: cores of each node kept busy by other work (a shared machine);
    the solver's ranks x threads then share what is left (at least half a core).
    """
    if n < 1 or config.tile < 1 or config.grid_rows < 1 or config.grid_cols < 1:
        raise ValueError("n, tile and grid dimensions must be positive")
    pr, pc, b = config.grid_rows, config.grid_cols, config.tile
    ranks = config.ranks
    nb = math.ceil(n / b)
    extent = n / nb  # average tile edge (the last tile is ragged)
    rows = cyclic_count(nb, pr, 0)
    cols = cyclic_count(nb, pc, 0)
    diagonal_owned = cyclic_count(nb, math.lcm(pr, pc), 0)

    threads = config.threads or machine.threads_per_rank(ranks)
    model, thread_scale = machine.compute_model(config.backend, threads)
    on_node = machine.ranks_on_node(ranks)
    free_cores = max(0.5, machine.cores_per_node - max(0.0, background_cores))
    oversubscription = max(1.0, on_node * threads / free_cores)
    local_bytes = rows * cols * b * b * FLOAT_BYTES
    tau = model.seconds_per_op(b, local_bytes) * thread_scale * oversubscription
    tile_ops = 2.0 * extent**3

    # Diagonal update: one thread; it shares a core only when the node is oversubscribed.
    t_diag = tile_ops / float(model.diagonal_rate(b)) * oversubscription
    diag_bytes = extent * extent * FLOAT_BYTES
    groups_row, groups_col = pr, pc  # concurrent broadcasts along rows / columns
    t_dbcast = machine.broadcast_seconds(config.broadcast, diag_bytes, pc, groups_row, config.chunk_bytes)
    t_dbcast += machine.broadcast_seconds(config.broadcast, diag_bytes, pr, groups_col, config.chunk_bytes)
    panel_tiles = max(0, rows + cols - 2)
    # panel_update: tiles shared among threads one tile each (schedule(dynamic, 1)).
    per_side = [max(0, rows - 1), max(0, cols - 1)]
    rounds = sum(math.ceil(t / threads) for t in per_side if t)
    imbalance = (rounds * threads / panel_tiles) if panel_tiles else 1.0
    t_panel = panel_tiles * tile_ops * tau * imbalance
    row_panel_bytes = cols * extent * extent * FLOAT_BYTES
    col_panel_bytes = rows * extent * extent * FLOAT_BYTES
    t_pbcast = machine.broadcast_seconds(
        config.broadcast, row_panel_bytes, pr, groups_col, config.chunk_bytes
    )
    t_pbcast += machine.broadcast_seconds(
        config.broadcast, col_panel_bytes, pc, groups_row, config.chunk_bytes
    )
    outer_tiles = max(0.0, ((nb - 2) * rows * cols + diagonal_owned) / nb)
    t_outer = outer_tiles * tile_ops * tau

    serial = t_diag + t_dbcast + t_panel
    per_iter_overlap = serial + max(t_outer, t_pbcast)
    per_iter_no_overlap = serial + t_outer + t_pbcast
    # The components are measured one at a time; a whole solve also waits (the panel owner's
    # extra work, broadcasts that start late, ranks sharing cores). The machine's correction,
    # fitted on real solver runs at calibration, scales the composed time (1 when absent).
    correction = machine.solve_time_factor
    per_iter_overlap *= correction
    per_iter_no_overlap *= correction
    seconds_overlap = nb * per_iter_overlap
    seconds_no_overlap = nb * per_iter_no_overlap
    seconds = seconds_overlap if config.lookahead else seconds_no_overlap

    memory = memory_per_rank(n, pr, pc, b, config.lookahead)
    limit = machine.memory_per_node_bytes // max(1, on_node)
    per_iteration = {
        "diagonal": t_diag,
        "diagonal_broadcast": t_dbcast,
        "panel": t_panel,
        "panel_broadcast": t_pbcast,
        "outer": t_outer,
    }
    return Prediction(
        n=n,
        config=config,
        threads=threads,
        iterations=nb,
        seconds=seconds,
        seconds_overlap=seconds_overlap,
        seconds_no_overlap=seconds_no_overlap,
        per_iteration=per_iteration,
        memory_per_rank_bytes=memory,
        memory_limit_bytes=limit,
        fits_memory=memory <= 0.9 * limit,
        phases={k: v * nb for k, v in per_iteration.items()},
    )
