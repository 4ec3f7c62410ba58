"""Random graphs shaped like the literature graph, for the path index's tests.

A few concepts of power-law popularity (hubs) joined to many abstracts by cheap arcs of a few
distinct costs (ties everywhere), dear concept--concept arcs, sparse abstract--abstract arcs,
some zero costs, isolated vertices and a separate component: the structure that makes a plain
Dijkstra scan whole hub rows, and the awkward cases an exact search must still get right.
Concepts are vertices ``0..concepts-1``, as the graph stage numbers them.
"""

from __future__ import annotations

import numpy as np

from pipeline.query.paths import Adjacency, adjacency_from_edges


def literature_like(concepts: int, abstracts: int, seed: int, *, ties: bool = True) -> tuple[Adjacency, np.ndarray]:
    """``(adjacency, is_concept)``: the last tenth of the abstracts form a chain of their own
    (unreachable from the rest) and the last two are isolated. ``ties=False`` draws the
    concept--abstract costs from a continuum instead of ln(2)..ln(9)."""
    rng = np.random.default_rng(seed)
    n = concepts + abstracts
    main_end = concepts + abstracts * 9 // 10
    edges: dict[tuple[int, int], float] = {}

    def add(u: int, v: int, cost: float) -> None:
        if u != v:
            edges.setdefault((min(u, v), max(u, v)), cost)

    popularity = 1.0 / np.arange(1, concepts + 1)
    popularity /= popularity.sum()
    for a in range(concepts, main_end):
        for c in rng.choice(concepts, size=int(rng.integers(1, 7)), p=popularity):
            if ties:
                cost = 0.0 if rng.random() < 0.05 else float(np.log(rng.integers(2, 10)))
            else:
                cost = float(rng.uniform(0.0, 3.0))
            add(int(c), a, cost)
        if rng.random() < 0.3:
            add(a, int(rng.integers(concepts, main_end)), 1.5)
    for _ in range(concepts * 3):
        add(int(rng.integers(concepts)), int(rng.integers(concepts)), float(rng.integers(3, 10)))
    for a in range(main_end, n - 3):
        add(a, a + 1, 0.5)
    pairs = sorted(edges)
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    cost = np.array([edges[p] for p in pairs], dtype=np.float32)
    is_concept = np.zeros(n, dtype=bool)
    is_concept[:concepts] = True
    return adjacency_from_edges(n, src, dst, cost), is_concept
