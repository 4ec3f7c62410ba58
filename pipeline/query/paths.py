"""Shortest-path reconstruction from the distance matrix and the sparse graph.

The solver stores distances only (no predecessor matrix). A path from ``s`` to ``t`` is
recovered by walking from ``s`` toward ``t`` over *tight* edges: from ``u`` step to a
neighbour ``v`` with ``cost(u, v) + D[v, t] == D[u, t]`` (within a tolerance). The graph
is undirected, so ``D[., t]`` is row ``t`` of the matrix: a query reads one row, never the
matrix. Each step is numpy over ``u``'s neighbour slice.

Tolerance (see :class:`Tolerance`). Distances are float32 sums computed by the solver in
an order we do not know; a sum of ``h`` float32 terms carries a relative rounding error of
about ``h * 2**-24``. A step ``u -> v`` is tight when

    ``cost(u, v) + D[v, t] - D[u, t] <= atol + rtol * D[u, t]``

with defaults ``rtol = 1e-5`` (about 170 float32 units of rounding, enough for paths of
well over a hundred hops) and ``atol = 1e-6`` (for distances near 0). The summed cost of
the returned path (float64 sum of the float32 edge costs) is checked against the stored
``D[s, t]`` with the same rule; :attr:`PathResult.consistent` reports the outcome.

Ties and zero-cost edges. Several neighbours may be tight, and a zero-cost edge keeps
``D[., t]`` unchanged, so a greedy walk could cycle on a zero-cost plateau. The walk is a
depth-first search over tight edges that never revisits a vertex; candidates are tried
in this order: the target itself, then neighbours that make strict progress
(``D[v, t] < D[u, t]``), then the rest; within each, the tightest slack first and the
smallest vertex id last (deterministic). A dead end (every tight neighbour visited)
backtracks. Because the search visits each vertex at most once it always terminates; if it
fails (distances that do not belong to this graph), a Dijkstra restricted to ``s`` gives
the path instead and the result is flagged ``method="dijkstra"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.builds.tables import EDGE_KINDS


@dataclass(frozen=True)
class Tolerance:
    """``|a - b| <= atol + rtol * scale``: how far float32 distances may disagree."""

    rtol: float = 1e-5
    atol: float = 1e-6

    def bound(self, scale: float) -> float:
        return self.atol + self.rtol * abs(scale)


DEFAULT_TOLERANCE = Tolerance()


@dataclass(frozen=True)
class EdgeWeights:
    """The float64 weights of an undirected graph's edges, one per edge (not per arc: half the
    bytes), in edges.parquet's order -- sorted by (src, dst), src < dst -- which is also the order
    of the CSR's forward arcs (row u's columns above u): edge k of row u is the arc at
    ``forward_start[u] + k - first_edge[u]``."""

    weight: np.ndarray  # float64[m]
    first_edge: np.ndarray  # int64[n + 1]: edges of src < u
    forward_start: np.ndarray  # int64[n]: position in col_idx of row u's first column above u

    def index(self, adjacency: Adjacency, u: int, v: int) -> int:
        a, b = (u, v) if u < v else (v, u)
        return int(self.first_edge[a]) + adjacency.edge_position(a, b) - int(self.forward_start[a])


@dataclass(frozen=True)
class Adjacency:
    """Symmetric CSR of the cost matrix: vertex ``u``'s neighbours are ``col_idx[row_ptr[u]:row_ptr[u+1]]``.

    ``edge_weights`` (float64, one per edge) is present when built from ``edges.parquet``;
    otherwise :meth:`edge_weight` derives the weight as ``exp(-cost)``.
    """

    n: int
    row_ptr: np.ndarray  # int64[n + 1]
    col_idx: np.ndarray  # int64[nnz], sorted within each row
    cost: np.ndarray  # float32[nnz], -log(weight) >= 0
    edge_weights: EdgeWeights | None = None

    @property
    def nnz(self) -> int:
        return int(self.row_ptr[-1])

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held (the CSR and, when attached, the edge weights)."""
        total = self.row_ptr.nbytes + self.col_idx.nbytes + self.cost.nbytes
        if self.edge_weights is not None:
            w = self.edge_weights
            total += w.weight.nbytes + w.first_edge.nbytes + w.forward_start.nbytes
        return total

    def neighbours(self, u: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.row_ptr[u], self.row_ptr[u + 1]
        return self.col_idx[lo:hi], self.cost[lo:hi]

    def edge_position(self, u: int, v: int) -> int:
        """Index of edge (u, v) in ``col_idx``/``cost``; KeyError when absent."""
        lo, hi = int(self.row_ptr[u]), int(self.row_ptr[u + 1])
        pos = lo + int(np.searchsorted(self.col_idx[lo:hi], v))
        if pos >= hi or self.col_idx[pos] != v:
            raise KeyError(f"no edge between vertices {u} and {v}")
        return pos

    def edge_cost(self, u: int, v: int) -> float:
        return float(self.cost[self.edge_position(u, v)])

    def edge_weight(self, u: int, v: int) -> float:
        if self.edge_weights is not None:
            return float(self.edge_weights.weight[self.edge_weights.index(self, u, v)])
        return math.exp(-float(self.cost[self.edge_position(u, v)]))

    def to_scipy(self):
        """The same graph as a ``scipy.sparse.csr_matrix``.

        Zero-cost edges would vanish as explicit zeros in scipy's graph routines, so they are
        stored as the smallest positive float64 instead (a difference far below any
        tolerance).
        """
        from scipy.sparse import csr_matrix

        data = self.cost.astype(np.float64)
        data[data == 0] = np.finfo(np.float64).tiny
        return csr_matrix((data, self.col_idx, self.row_ptr), shape=(self.n, self.n))


def _edge_weight_layout(n: int, src: np.ndarray, dst: np.ndarray, row_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first_edge, forward_start)`` of EdgeWeights for edges sorted by (src, dst), src < dst:
    row u holds its reverse entries (one per edge with dst u) before its forward ones."""
    first_edge = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=first_edge[1:])
    forward_start = row_ptr[:-1] + np.bincount(dst, minlength=n)
    return first_edge, forward_start


def adjacency_from_edges(n: int, src, dst, cost, weight=None) -> Adjacency:
    """Both directions of the undirected edges ``src < dst``, rows sorted by column."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if len(src) and (np.any(src >= dst) or src.min() < 0 or dst.max() >= n):
        raise ValueError("edges must satisfy 0 <= src < dst < n")
    rows = np.concatenate([src, dst])
    cols = np.concatenate([dst, src])
    order = np.lexsort((cols, rows))
    costs = np.concatenate([np.asarray(cost, dtype=np.float32)] * 2)[order]
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=row_ptr[1:])
    edge_weights = None
    if weight is not None:
        by_edge = np.lexsort((dst, src))  # edges.parquet's order: the CSR's forward arcs in turn
        first_edge, forward_start = _edge_weight_layout(n, src, dst, row_ptr)
        edge_weights = EdgeWeights(np.asarray(weight, dtype=np.float64)[by_edge], first_edge, forward_start)
    return Adjacency(n=int(n), row_ptr=row_ptr, col_idx=cols[order], cost=costs, edge_weights=edge_weights)


def edge_weights_from_parquet(path: Path | str, adjacency: Adjacency, batch_rows: int = 1 << 20) -> EdgeWeights | None:
    """The weights of a build's ``graph/edges.parquet`` for ``adjacency`` (its graph.bp), or None
    when the table's edges are not exactly the CSR's forward arcs in order (then weights are
    derived from the costs). Read in batches and checked edge by edge against the CSR, so no
    second copy of the graph is ever held (it was 5 GB at 6M vertices)."""
    import pyarrow.parquet as pq

    n, row_ptr, col_idx = adjacency.n, adjacency.row_ptr, adjacency.col_idx
    table = pq.ParquetFile(path)
    if table.metadata.num_rows * 2 != adjacency.nnz:
        return None
    counts_src = np.zeros(n, dtype=np.int64)
    counts_dst = np.zeros(n, dtype=np.int64)
    for batch in table.iter_batches(batch_size=batch_rows, columns=["src", "dst"]):
        src, dst = batch.column("src").to_numpy(), batch.column("dst").to_numpy()
        if len(src) and (src.min() < 0 or dst.max() >= n or np.any(src >= dst)):
            return None
        counts_src += np.bincount(src, minlength=n)
        counts_dst += np.bincount(dst, minlength=n)
    first_edge = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts_src, out=first_edge[1:])
    forward_start = row_ptr[:-1] + counts_dst
    if not np.array_equal(row_ptr[1:] - forward_start, counts_src):
        return None
    weight = np.empty(table.metadata.num_rows, dtype=np.float64)
    done = 0
    for batch in table.iter_batches(batch_size=batch_rows, columns=["src", "dst", "weight"]):
        src, dst = batch.column("src").to_numpy(), batch.column("dst").to_numpy()
        k = np.arange(done, done + len(src), dtype=np.int64)
        # Sorted by (src, dst): edge k is row src's (k - first_edge[src])-th forward arc.
        if np.any(k < first_edge[src]) or np.any(k >= first_edge[src + 1]):
            return None
        if not np.array_equal(col_idx[forward_start[src] + (k - first_edge[src])], dst):
            return None
        weight[done : done + len(src)] = batch.column("weight").to_numpy()
        done += len(src)
    return EdgeWeights(weight, first_edge, forward_start)


def adjacency_from_graph_bp(
    path: Path | str, edges_parquet: Path | str | None = None
) -> tuple[Adjacency, dict]:
    """``(adjacency, attributes)`` from ``graph.bp``; weights attached from ``edges.parquet`` if given.

    The CSR is the one the solver read (it carries the graph digest), so it is what paths
    are walked on. The Parquet weights are attached only when the edge set matches exactly.
    """
    from pipeline.store.adios import read_graph_bp

    (n, row_ptr, col_idx, cost), attributes = read_graph_bp(path)
    adjacency = Adjacency(n=int(n), row_ptr=row_ptr, col_idx=col_idx, cost=cost)
    if edges_parquet is not None and Path(edges_parquet).exists():
        weights = edge_weights_from_parquet(edges_parquet, adjacency)
        if weights is not None:
            adjacency = Adjacency(n=int(n), row_ptr=row_ptr, col_idx=col_idx, cost=cost, edge_weights=weights)
    return adjacency, attributes


def edge_kind(is_concept_u: bool, is_concept_v: bool) -> str:
    """The edge kind is fixed by its endpoints' vertex kinds (docs/design.md §5)."""
    if is_concept_u and is_concept_v:
        return EDGE_KINDS[0]
    if is_concept_u or is_concept_v:
        return EDGE_KINDS[1]
    return EDGE_KINDS[2]


@dataclass
class PathResult:
    """One reconstructed path. ``vertices`` is empty when the pair is unreachable."""

    source: int
    target: int
    reachable: bool
    stored_distance: float  # D[s, t] as stored (float32 value, inf when unreachable)
    vertices: list[int] = field(default_factory=list)
    hop_costs: list[float] = field(default_factory=list)  # float32 edge costs, one per hop
    total_cost: float | None = None  # float64 sum of hop_costs
    consistent: bool = True  # total_cost == stored_distance within the tolerance
    method: str = "walk"  # walk | dijkstra | none
    backtracks: int = 0


def reconstruct_path(
    adjacency: Adjacency,
    distance_row_of_target: np.ndarray,
    source: int,
    target: int,
    tolerance: Tolerance = DEFAULT_TOLERANCE,
) -> PathResult:
    """A shortest path from ``source`` to ``target`` using ``D[., target]`` (row ``target``).

    See the module docstring for the tie, zero-cost and tolerance rules.
    """
    n = adjacency.n
    if not (0 <= source < n and 0 <= target < n):
        raise IndexError(f"vertex out of range 0..{n - 1}: source={source}, target={target}")
    dist = np.asarray(distance_row_of_target)
    if dist.shape != (n,):
        raise ValueError(f"distance row has shape {dist.shape}, expected ({n},)")
    stored = float(dist[source])
    if not math.isfinite(stored):
        return PathResult(source, target, reachable=False, stored_distance=stored, method="none")
    if source == target:
        return PathResult(source, target, True, stored, [source], [], 0.0, stored <= tolerance.atol)

    vertices, hop_costs, backtracks = _tight_walk(adjacency, dist, source, target, tolerance)
    method = "walk"
    if vertices is None:
        vertices, hop_costs = _dijkstra_path(adjacency, source, target)
        method = "dijkstra"
        if vertices is None:  # distances say reachable, the graph says not: they do not match
            return PathResult(source, target, True, stored, [], [], None, False, "none", backtracks)
    total = float(np.sum(np.asarray(hop_costs, dtype=np.float64)))
    consistent = abs(total - stored) <= tolerance.bound(max(total, stored))
    return PathResult(
        source, target, True, stored, vertices, hop_costs, total, consistent, method, backtracks
    )


def _ordered_tight_neighbours(adjacency, dist, u, target, visited, tolerance) -> list[tuple[int, float]]:
    """Tight, unvisited neighbours of ``u`` as (vertex, edge cost), best candidate first."""
    cols, costs = adjacency.neighbours(u)
    if len(cols) == 0:
        return []
    d_u = float(dist[u])
    d_v = dist[cols].astype(np.float64)
    slack = costs.astype(np.float64) + d_v - d_u
    tight = np.flatnonzero(slack <= tolerance.bound(d_u))  # inf slack (unreachable v) is never tight
    if len(tight) == 0:
        return []
    cand, cand_slack, cand_d = cols[tight], slack[tight], d_v[tight]
    order = np.lexsort((cand, np.abs(cand_slack), cand_d >= d_u, cand != target))
    return [(int(cand[i]), float(costs[tight[i]])) for i in order if int(cand[i]) not in visited]


def _tight_walk(adjacency, dist, source, target, tolerance):
    """Depth-first search over tight edges; ``(None, None, backtracks)`` if it finds no path."""
    visited = {source}
    path = [source]
    hop_costs: list[float] = []
    stack = [iter(_ordered_tight_neighbours(adjacency, dist, source, target, visited, tolerance))]
    backtracks = 0
    while stack:
        step = next(stack[-1], None)
        if step is None:  # dead end: every tight neighbour already visited
            stack.pop()
            path.pop()
            if hop_costs:
                hop_costs.pop()
            backtracks += 1
            continue
        v, c = step
        if v in visited:  # visited later on another branch
            continue
        visited.add(v)
        path.append(v)
        hop_costs.append(c)
        if v == target:
            return path, hop_costs, backtracks
        stack.append(iter(_ordered_tight_neighbours(adjacency, dist, v, target, visited, tolerance)))
    return None, None, backtracks


def _dijkstra_path(adjacency, source, target):
    """Fallback: an exact path from a single-source Dijkstra on the sparse graph."""
    from scipy.sparse.csgraph import dijkstra

    _, predecessors = dijkstra(adjacency.to_scipy(), directed=True, indices=source, return_predecessors=True)
    if predecessors[target] < 0:
        return None, None
    vertices = [int(target)]
    while vertices[-1] != source:
        vertices.append(int(predecessors[vertices[-1]]))
    vertices.reverse()
    hop_costs = [adjacency.edge_cost(u, v) for u, v in zip(vertices, vertices[1:], strict=False)]
    return vertices, hop_costs


def validate_path(
    adjacency: Adjacency, result: PathResult, tolerance: Tolerance = DEFAULT_TOLERANCE
) -> list[str]:
    """Problems with a returned path (empty when valid): edges exist, costs add up, no repeats."""
    problems = []
    if not result.reachable:
        return [] if not result.vertices else ["unreachable pair with a path"]
    path = result.vertices
    if not path or path[0] != result.source or path[-1] != result.target:
        problems.append(f"path {path} does not run from {result.source} to {result.target}")
    if len(set(path)) != len(path):
        problems.append(f"path {path} repeats a vertex")
    total = 0.0
    for u, v in zip(path, path[1:], strict=False):
        try:
            total += adjacency.edge_cost(u, v)
        except KeyError as exc:
            problems.append(str(exc))
    if abs(total - result.stored_distance) > tolerance.bound(max(total, result.stored_distance)):
        problems.append(f"path cost {total} != stored distance {result.stored_distance}")
    return problems
