"""Figure 8-style heat map (SC22 COAST): predicted rate of the best configuration over
(nodes or ranks) x n. Zero (blank) cells: out of memory. A hatched cell is one whose
best configuration uses the library broadcast (the papers' "naive" component) rather
than a ring variant."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.solve.plan.machine import Machine
from pipeline.solve.plan.search import candidates


def heatmap_data(ns: Sequence[int], ranks: Sequence[int], machine: Machine, backend: str = "cpu"):
    import numpy as np

    rate = np.zeros((len(ranks), len(ns)))
    naive = np.zeros_like(rate, dtype=bool)
    for i, p in enumerate(ranks):
        for j, n in enumerate(ns):
            ranked = [c for c in candidates(n, p, machine, backend=backend) if c.fits_memory]
            if ranked:
                rate[i, j] = ranked[0].rate
                naive[i, j] = p > 1 and ranked[0].config.broadcast == "bcast"
    return rate, naive


def render_heatmap(
    out: str | Path, ns: Sequence[int], ranks: Sequence[int], machine: Machine, backend: str = "cpu"
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rate, naive = heatmap_data(ns, ranks, machine, backend)
    per_node = machine.ranks_per_node
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * len(ns), 1.2 + 0.6 * len(ranks)))
    image = ax.imshow(rate / 1e9, origin="lower", cmap="viridis", aspect="auto")
    for i in range(len(ranks)):
        for j in range(len(ns)):
            value = rate[i, j] / 1e9
            label = f"{value:.0f}" if value >= 10 else (f"{value:.1f}" if value > 0 else "OOM")
            ax.text(
                j,
                i,
                label,
                ha="center",
                va="center",
                fontsize=8,
                color="w" if value < rate.max() / 2e9 else "k",
            )
            if naive[i, j]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", lw=0))
    ax.set_xticks(range(len(ns)), [_short(n) for n in ns])
    ylabels = [f"{p // per_node} nodes" if per_node and p % per_node == 0 else f"{p} ranks" for p in ranks]
    ax.set_yticks(range(len(ranks)), ylabels)
    ax.set_xlabel("vertices n")
    ax.set_title(f"predicted APSP rate, GF/s (best configuration) - {machine.name}")
    fig.colorbar(image, ax=ax, label="semiring GF/s")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _short(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)
