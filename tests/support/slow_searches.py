"""Graphs on which one search takes seconds, for the tests of deadlines and of waiting for a
search workspace: an unreachable pair across two components makes a bidirectional search explore
a whole component before it can say so."""

from __future__ import annotations

import numpy as np

from pipeline.query.paths import Adjacency

OFFSETS = (1, 17, 3001, 250_007, 999_331)  # each vertex joins v +- offset, within its component


def two_components(m: int, offsets=OFFSETS, seed: int = 3) -> Adjacency:
    """Two circulant graphs on 0..m-1 and m..2m-1: vertex i of a component joins i + o and i - o
    (mod m) for each offset o, each undirected edge with one random cost both ways."""
    rng = np.random.default_rng(seed)
    ids = np.arange(m, dtype=np.int64)
    columns, costs = [], []
    for first in (0, m):
        col = np.empty((m, 2 * len(offsets)), dtype=np.int64)
        cost = np.empty((m, 2 * len(offsets)), dtype=np.float32)
        for j, offset in enumerate(offsets):
            edge_cost = rng.uniform(0.1, 1.0, m).astype(np.float32)  # edge {i, i + offset}
            col[:, 2 * j] = (ids + offset) % m + first
            cost[:, 2 * j] = edge_cost
            col[:, 2 * j + 1] = (ids - offset) % m + first
            cost[:, 2 * j + 1] = np.roll(edge_cost, offset)  # edge {i - offset, i}
        columns.append(col.ravel())
        costs.append(cost.ravel())
    degree = 2 * len(offsets)
    row_ptr = np.arange(0, degree * 2 * m + 1, degree, dtype=np.int64)
    return Adjacency(n=2 * m, row_ptr=row_ptr, col_idx=np.concatenate(columns), cost=np.concatenate(costs))
