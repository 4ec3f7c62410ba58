"""A build's two graphs, where their files are, and the one way to open one for path queries.

Every build has two *graph scopes* (docs/design.md §5):

``full``
    the concept--abstract graph with the edge kinds of ``graph.edge_kinds``, for general path
    queries: ``<build>/graph/`` (vertices, edges, graph.bp, graph_counts.json, plan.json),
    ``<build>/distances.bp`` and ``<build>/solve_summary.json``;
``cooccurrence``
    concepts and concept--concept edges only, the graph the paper compares with SPOKE
    (section VIII): everything under ``<build>/cooccurrence/``.

Each graph's distances are *stored* (a dense ``distances.bp``, or one holding the rows of a
source set) or *computed on demand* (no ``distances.bp``; exact paths by bidirectional
Dijkstra in compiled code, :mod:`pipeline.query.sssp`), as the graph's plan chose
(:mod:`pipeline.solve.plan.methods`). :class:`Graph` answers distance, path and nearest-neighbour
queries the same way whichever it is, and says which it used. On-demand searches use the graph's
path index (:mod:`pipeline.query.path_index`) when it belongs to the graph; when it is missing,
stale or damaged, ``path_index_reason`` says why and the searches run without it (slower, the
same answers).

:func:`open_graph` is the only way the comparison and the path service open a graph: one
behaviour when the distances do not belong to the graph (the graph opens, ``stale_reason``
says why, and every distance query raises :class:`GraphStale`).
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pipeline.builds.layout import BuildLayout, GraphFiles
from pipeline.query.path_index import load_path_index
from pipeline.query.paths import (
    DEFAULT_TOLERANCE,
    Adjacency,
    PathResult,
    Tolerance,
    adjacency_from_graph_bp,
    reconstruct_path,
)

ROW_CACHE = 256  # stored rows kept in memory per graph (see Graph.stored_row)
ROW_CACHE_BYTES = 256 << 20  # and at most these bytes of them: a row is 4 bytes a vertex
STORED, ON_DEMAND = "stored", "on-demand"


class UnknownVertex(KeyError):
    """A key that is not a vertex of the graph."""

    def __init__(self, key: str, scope: str):
        super().__init__(key)
        self.key, self.scope = key, scope

    def __str__(self) -> str:
        return f"{self.key!r} is not a vertex of the {self.scope} graph"


class GraphStale(RuntimeError):
    """The stored distances were computed for another graph; the message says how they differ."""


@dataclass
class Graph:
    """One opened graph: its vertices, adjacency and (when stored) distances.

    The same fields as the comparison's and the service's earlier build handles (``keys``,
    ``names``, ``is_concept``, ``vid_of``, ``adjacency``, ``distances``), so both use it.
    """

    scope: str
    build_id: str
    build_dir: Path
    paths: GraphFiles
    adjacency: Adjacency
    keys: list[str]
    names: list[str | None]
    is_concept: np.ndarray  # bool[n]
    vid_of: dict[str, int]
    graph_digest: str | None
    edge_kinds: list[str]
    distances: Any = None  # pipeline.store.adios.DistanceMatrix, or None: on demand
    stale_reason: str | None = None
    tolerance: Tolerance = DEFAULT_TOLERANCE
    method: str = ON_DEMAND  # dense | rows | on-demand (what the solve stored)
    config: dict[str, Any] = field(default_factory=dict)
    path_index: Any = None  # pipeline.query.sssp.HubRows of this graph, or None: plain searches
    path_index_reason: str | None = None  # why there is no usable path index
    _row_cache: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _row_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def n(self) -> int:
        return self.adjacency.n

    @property
    def distances_digest(self) -> str | None:
        return None if self.distances is None else self.distances.attributes.get("graph_digest")

    def vid(self, key: str) -> int:
        vid = self.vid_of.get(key)
        if vid is None:
            raise UnknownVertex(key, self.scope)
        return vid

    def name_of(self, key: str) -> str | None:
        vid = self.vid_of.get(key)
        return None if vid is None else self.names[vid]

    def require_fresh(self) -> None:
        if self.stale_reason:
            raise GraphStale(f"the {self.scope} graph of build {self.build_id} cannot answer: {self.stale_reason}")

    def stored_row(self, vid: int) -> np.ndarray | None:
        """Row ``vid`` of the stored distances (distances from ``vid``), or None when not stored.

        The last rows read are kept, at most ``ROW_CACHE`` of them and ``ROW_CACHE_BYTES`` in all
        (the row just read always): the comparison walks every pair of its query set, reading
        each query concept's row many times. A count alone let a service hold 1 KiB a vertex
        for each graph: 6 GiB for the full graph of a 30M-predication build (6M vertices), in
        each worker.
        """
        if self.distances is None or not self.distances.has_row(vid):
            return None
        with self._row_lock:
            row = self._row_cache.get(vid)
            if row is not None:
                self._row_cache.move_to_end(vid)
                return row
        row = self.distances.row(vid)
        with self._row_lock:
            self._row_cache[vid] = row
            held = sum(kept.nbytes for kept in self._row_cache.values())
            while len(self._row_cache) > 1 and (len(self._row_cache) > ROW_CACHE or held > ROW_CACHE_BYTES):
                _, dropped = self._row_cache.popitem(last=False)
                held -= dropped.nbytes
        return row

    def covers(self, source: int, target: int) -> bool:
        """True when the stored distances answer (source, target) without a search."""
        return self.distances is not None and (self.distances.has_row(source) or self.distances.has_row(target))

    # ------------------------------------------------------------------ queries

    def distance(self, source: int, target: int) -> tuple[float, str]:
        """``(D[source, target], "stored" | "on-demand")``; inf when unreachable."""
        self.require_fresh()
        if self.covers(source, target):  # one value read (from row t, or row s: undirected)
            return self.distances.value(target, source), STORED
        from pipeline.query import sssp

        value, _ = sssp.shortest_path(self.adjacency, source, target, hubs=self.path_index)
        return value, ON_DEMAND

    def path(self, source: int, target: int) -> tuple[PathResult, str]:
        """A shortest path and where its distances came from.

        Stored: walked over tight edges from row ``target`` (or from row ``source`` and then
        reversed, the graph being undirected); a walk whose summed cost drifts from the stored
        distance beyond the tolerance is replaced by the exact search's path when that agrees
        with the stored distance. On demand: bidirectional Dijkstra; the path's summed cost is
        checked against the distance the search found, with the same tolerance.
        """
        self.require_fresh()
        row, reverse = self.stored_row(target), False
        if row is None:
            row, reverse = self.stored_row(source), True
        if row is not None:
            start, end = (target, source) if reverse else (source, target)
            result = reconstruct_path(self.adjacency, row, start, end, self.tolerance)
            if result.reachable and not result.consistent:
                exact = self._searched_path(start, end)
                if exact.reachable and abs(exact.total_cost - result.stored_distance) <= self.tolerance.bound(
                    result.stored_distance
                ):
                    exact.stored_distance = result.stored_distance
                    exact.method = "dijkstra"
                    result = exact
            return (_reversed(result) if reverse else result), STORED
        return self._searched_path(source, target), ON_DEMAND

    def _searched_path(self, source: int, target: int) -> PathResult:
        from pipeline.query import sssp

        distance, vertices = sssp.shortest_path(self.adjacency, source, target, hubs=self.path_index)
        if not vertices:
            return PathResult(source, target, False, math.inf, method="none")
        hop_costs = [self.adjacency.edge_cost(u, v) for u, v in zip(vertices, vertices[1:], strict=False)]
        total = float(np.sum(np.asarray(hop_costs, dtype=np.float64)))
        consistent = abs(total - distance) <= self.tolerance.bound(max(total, distance))
        return PathResult(
            source, target, True, float(distance), list(vertices), hop_costs, total, consistent,
            "bidirectional-dijkstra",
        )  # fmt: skip

    def nearest_concepts(self, source: int, k: int) -> tuple[list[tuple[int, float]], str]:
        """The ``k`` concepts nearest to ``source`` (itself excluded, unreachable ones never),
        as ``(vid, distance)`` by distance then vid, and where the distances came from."""
        self.require_fresh()
        row = self.stored_row(source)
        if row is not None:
            candidates = np.flatnonzero(self.is_concept & np.isfinite(row))
            candidates = candidates[candidates != source]
            if len(candidates) > k:
                # every candidate at or below the k-th distance, then cut after ordering by vid
                # too: argpartition alone keeps an arbitrary few of those tied at the cut-off
                cut_off = np.partition(row[candidates], k - 1)[k - 1] if k else -np.inf
                candidates = candidates[row[candidates] <= cut_off]
            chosen = candidates[np.lexsort((candidates, row[candidates]))][:k]
            return [(int(v), float(row[v])) for v in chosen], STORED
        from pipeline.query import sssp

        vertices, dist = sssp.nearest(self.adjacency, source, self.is_concept, k, hubs=self.path_index)
        return [(int(v), float(d)) for v, d in zip(vertices, dist, strict=True)], ON_DEMAND

    def close(self) -> None:
        if self.distances is not None:
            self.distances.close()


def _reversed(result: PathResult) -> PathResult:
    """The same path read from the other end (undirected graph)."""
    return PathResult(
        result.target, result.source, result.reachable, result.stored_distance,
        list(reversed(result.vertices)), list(reversed(result.hop_costs)), result.total_cost,
        result.consistent, result.method, result.backtracks,
    )  # fmt: skip


def read_build_record(build_dir: Path) -> dict[str, Any]:
    """build.json when the build is finished, else {} (the comparison runs before it is written)."""
    path = BuildLayout(build_dir).record
    return json.loads(path.read_text()) if path.exists() else {}


def build_config(build_dir: Path) -> dict[str, Any]:
    """The build's resolved configuration (build.json's, else config.yaml's)."""
    record = read_build_record(build_dir)
    config = record.get("config") or {}
    if not config and BuildLayout(build_dir).config.exists():
        from pipeline.config import read_yaml

        config = read_yaml(BuildLayout(build_dir).config.read_text()) or {}
        config.pop("resolved_inputs", None)
    return config


def open_graph(
    build_dir: str | Path,
    scope: str = "full",
    tolerance: Tolerance = DEFAULT_TOLERANCE,
    *,
    build_id: str | None = None,
) -> Graph:
    """Open graph ``scope`` of a build folder for path queries.

    Raises FileNotFoundError when the graph itself is missing, and lets the ADIOS2 readers'
    corrupt-file errors through. Distances that do not belong to the graph (other digest or
    size) leave ``stale_reason`` set rather than failing: callers decide whether a graph that
    cannot answer distance queries is an error (the comparison) or a 503 (the service).
    """
    from pipeline.store.adios import DistanceMatrix

    build_dir = Path(build_dir).resolve()
    paths = BuildLayout(build_dir).graph(scope)
    for needed in (paths.vertices, paths.graph_bp):
        if not needed.exists():
            raise FileNotFoundError(
                f"build {build_dir.name} has no {scope} graph: {needed.name} missing ({needed})"
            )
    vertices = pq.read_table(paths.vertices, columns=["vid", "kind", "key", "name"])
    keys = vertices.column("key").to_pylist()
    if not np.array_equal(vertices.column("vid").to_numpy(), np.arange(len(keys))):
        raise ValueError(f"{paths.vertices}: vid must be 0..n-1 in order")
    adjacency, attributes = adjacency_from_graph_bp(paths.graph_bp, paths.edges)
    if adjacency.n != len(keys):
        raise ValueError(f"{paths.graph_bp} has {adjacency.n} vertices but {paths.vertices} has {len(keys)}")
    digest = attributes.get("graph_digest")
    distances, stale_reason, method = None, None, ON_DEMAND
    if paths.distances.exists():
        distances = DistanceMatrix(paths.distances)
        method = distances.layout
        if distances.n != len(keys):
            stale_reason = f"{paths.distances.name} is for {distances.n} vertices but the graph has {len(keys)}"
        elif not digest or distances.attributes.get("graph_digest") != digest:
            stale_reason = (
                f"{paths.distances.name} was computed for another graph (digest "
                f"{str(distances.attributes.get('graph_digest'))[:12]}... != {str(digest)[:12]}...); "
                "re-run the solve stage"
            )
    index = load_path_index(paths.path_index, adjacency, digest)
    record = read_build_record(build_dir)
    return Graph(
        scope=scope,
        build_id=str(build_id or record.get("build_id") or build_dir.name),
        build_dir=build_dir,
        paths=paths,
        adjacency=adjacency,
        keys=keys,
        names=vertices.column("name").to_pylist(),
        is_concept=(np.asarray(vertices.column("kind").to_pylist(), dtype=object) == "concept").astype(bool),
        vid_of={key: i for i, key in enumerate(keys)},
        graph_digest=digest,
        edge_kinds=list(attributes.get("edge_kinds") or []),
        distances=distances,
        stale_reason=stale_reason,
        tolerance=tolerance,
        method=method,
        config=build_config(build_dir),
        path_index=index.hubs,
        path_index_reason=index.reason,
    )


__all__ = [
    "ON_DEMAND", "STORED", "Graph", "GraphStale", "UnknownVertex", "build_config", "open_graph",
    "read_build_record",
]  # fmt: skip
