"""The literature side: shortest paths of one of a build's graphs, as concept sequences with per-hop evidence.

Paths come from :meth:`pipeline.query.graph.Graph.path` -- the same queries the path service
answers: walked over the stored distances when they cover the pair, else by an exact
bidirectional Dijkstra. The comparison runs on the *co-occurrence graph* by default
(concepts and concept--concept edges only, as in the paper); on the full graph, abstracts on
a path are not SPOKE concepts, so a literature hop is the stretch between two consecutive
concepts, and the abstracts on it are that hop's documents. The documents of a direct
concept--concept edge come from the build's evidence bucket file (the workflow's comparison) or
the MongoDB evidence store when one is configured (:func:`attach_evidence`); without either, the
hop says so instead of failing.

Ties. Several literature paths may share the shortest cost (co-occurrence weights are ratios of
small integers, so exact ties are common among rare concepts); one is classified. Which one is
the rule of :meth:`pipeline.query.graph.Graph.path` (:data:`TIE_RULE`). The comparison counts
the alternatives (:class:`ShortestPathCounter`): every pair's ``shortest_paths`` is the number
of distinct shortest paths between its ends, so a reader sees how many pairs a different tie
rule could move.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

NO_STORE = "no evidence store configured"
STORE_FAILED = "evidence store unavailable"
NO_BUILD = "no build loaded"  # a caller-given path classified with no build to look evidence up in
# Which of several equal-cost paths is classified (pipeline/query/paths.py, pipeline/query/graph.py).
TIE_RULE = (
    "from stored distances, the walk over tight edges takes the target first, then neighbours that "
    "get closer, the smallest slack, then the smallest vertex id (the lexically smallest key); on "
    "demand, the bidirectional Dijkstra's first-settled parents"
)
ROW_CACHE_BYTES = 256 << 20  # distance rows the tie counter keeps (float64)


@dataclass
class LiteratureHop:
    """Consecutive concepts of a literature path; ``via`` are the abstracts between them."""

    source: str
    target: str
    cost: float
    via: list[str] = field(default_factory=list)
    documents: list[str] | None = None  # None: unknown (no store, or the store failed)
    n_predications: int | None = None
    # the readable evidence of a direct hop (pipeline.store.evidence_rows): [{predicate, count}] and
    # [{sentence_id, pmid, year, predicate, subject, text}]; None: unknown
    predicates: list[dict] | None = None
    sentences: list[dict] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "cost": self.cost,
            "via": self.via,
            "documents": self.documents,
            "n_predications": self.n_predications,
            "predicates": self.predicates,
            "sentences": self.sentences,
        }


@dataclass
class LiteraturePath:
    source: str
    target: str
    reachable: bool
    vertices: list[str] = field(default_factory=list)  # every vertex key, abstracts included
    concepts: list[str] = field(default_factory=list)  # the concept keys, in path order
    hops: list[LiteratureHop] = field(default_factory=list)  # one per consecutive concept pair
    total_cost: float | None = None
    consistent: bool = True
    in_graph: bool = True  # both ends are vertices of the graph
    evidence_status: str = NO_STORE
    absent: list[str] = field(default_factory=list)  # ends that are not vertices of the graph
    distances: str | None = None  # "stored" or "on-demand": where the path's distances came from
    shortest_paths: int | None = (
        None  # distinct shortest paths between the ends (> 1: ties); None: not counted
    )


class ShortestPathCounter:
    """The number of distinct shortest paths between two vertices of a graph.

    A path is shortest when its cost equals the distance within the tolerance the path walk uses
    (:class:`pipeline.query.paths.Tolerance`, relative 1e-5): those are the paths the walk could
    have taken. With ``ds`` and ``dt`` the distances from s and from t (rows of the stored matrix,
    else a Dijkstra on the sparse graph), an edge u -> v lies on one when
    ``ds[u] + cost(u, v) + dt[v] <= D + tolerance``; the paths of that edge set are counted in
    order of ``ds`` (count[v] = the sum of count[u] over its tight in-edges). A zero-cost edge
    joins two vertices at the same ``ds``; it is left out, so the count is then a lower bound
    (``zero_cost_ties`` counts such pairs).
    """

    def __init__(self, graph: Any):
        self.graph = graph
        self.zero_cost_ties = 0
        self._rows: OrderedDict[int, np.ndarray] = OrderedDict()
        self._keep = max(2, ROW_CACHE_BYTES // max(1, 8 * graph.n))

    def row(self, vertex: int) -> np.ndarray:
        """Distances from ``vertex`` (float64): the stored row, else a Dijkstra; the last few kept."""
        row = self._rows.get(vertex)
        if row is not None:
            self._rows.move_to_end(vertex)
            return row
        stored = self.graph.stored_row(vertex)
        if stored is not None:
            row = np.asarray(stored, dtype=np.float64)
        else:
            from scipy.sparse.csgraph import dijkstra

            row = dijkstra(self.graph.adjacency.to_scipy(), directed=True, indices=vertex)
        self._rows[vertex] = row
        while len(self._rows) > self._keep:
            self._rows.popitem(last=False)
        return row

    def count(self, source: int, target: int) -> int:
        """Distinct shortest paths from ``source`` to ``target`` (0 when unreachable, 1 for s = t)."""
        if source == target:
            return 1
        ds, dt = self.row(source), self.row(target)
        distance = float(ds[target])
        if not np.isfinite(distance):
            return 0
        bound = distance + self.graph.tolerance.bound(distance)
        on_path = np.flatnonzero(ds + dt <= bound)
        counts: dict[int, int] = {source: 1}
        zero_cost = False
        adjacency = self.graph.adjacency
        for v in on_path[np.argsort(ds[on_path], kind="stable")]:
            v = int(v)
            if v == source:
                continue
            cols, costs = adjacency.neighbours(v)
            tight = ds[cols] + costs.astype(np.float64) + dt[v] <= bound
            zero_cost = zero_cost or bool(np.any(tight & (ds[cols] == ds[v])))
            total = 0
            for u in cols[tight & (ds[cols] < ds[v])]:
                total += counts.get(int(u), 0)
            counts[v] = total
        self.zero_cost_ties += zero_cost
        return counts.get(target, 0)


class PathFinder:
    """Literature paths between concepts of one graph (:class:`pipeline.query.graph.Graph`);
    with ``count_ties``, each path also carries the number of shortest paths of its pair."""

    def __init__(self, graph: Any, count_ties: bool = False):
        self.graph = graph
        self.distances_used: dict[str, int] = {"stored": 0, "on-demand": 0}
        self.ties = ShortestPathCounter(graph) if count_ties else None

    def path(self, source: str, target: str) -> LiteraturePath:
        graph = self.graph
        s, t = graph.vid_of.get(source), graph.vid_of.get(target)
        if s is None or t is None:
            absent = [key for key, vid in ((source, s), (target, t)) if vid is None]
            return LiteraturePath(source, target, reachable=False, in_graph=False, absent=absent)
        result, where = graph.path(s, t)
        self.distances_used[where] = self.distances_used.get(where, 0) + 1
        if not result.reachable or not result.vertices:
            return LiteraturePath(source, target, reachable=False, distances=where)
        keys = [graph.keys[v] for v in result.vertices]
        concept_at = [i for i, v in enumerate(result.vertices) if graph.is_concept[v]]
        hops = []
        for i, j in zip(concept_at, concept_at[1:], strict=False):
            hops.append(
                LiteratureHop(
                    keys[i],
                    keys[j],
                    float(sum(result.hop_costs[i:j])),
                    via=keys[i + 1 : j],
                    documents=list(keys[i + 1 : j]) if j > i + 1 else None,
                )  # fmt: skip
            )
        return LiteraturePath(
            source, target, True, keys, [keys[i] for i in concept_at], hops,
            result.total_cost, result.consistent, distances=where,
            shortest_paths=None if self.ties is None else self.ties.count(s, t),
        )  # fmt: skip


def attach_evidence(paths: list[LiteraturePath], mongo_db, build_id: str, evidence_file: Path | None = None) -> str:
    """Fill the documents, predicates and sentences of direct concept--concept hops of all paths in
    one store query, or from the build's own evidence bucket file (``evidence_file``, the same
    records as the store's, :func:`pipeline.store.evidence.evidence_from_bucket_file`).

    Returns the evidence status written on every path: ``"ok"``, :data:`NO_STORE` or
    :data:`STORE_FAILED` (hops then keep ``documents=None``: unknown, not none).
    """
    from pipeline.store.evidence import evidence_for_pairs, evidence_from_bucket_file

    direct = [hop for path in paths for hop in path.hops if not hop.via]
    pairs = sorted({(h.source, h.target) for h in direct})
    if mongo_db is None and evidence_file is None:
        status = NO_STORE
    else:
        found = evidence_from_bucket_file(evidence_file, pairs) if evidence_file is not None \
            else evidence_for_pairs(mongo_db, build_id, pairs)  # fmt: skip
        if found is None:
            status = STORE_FAILED
        else:
            status = "ok"
            for hop in direct:
                record = found.get(tuple(sorted((hop.source, hop.target)))) or {}
                hop.documents = list(record.get("documents") or [])
                hop.n_predications = int(record.get("n_predications") or 0)
                hop.predicates, hop.sentences = record.get("predicates"), record.get("sentences")
    for path in paths:
        path.evidence_status = status
    return status


__all__ = [
    "NO_BUILD", "NO_STORE", "STORE_FAILED", "TIE_RULE", "LiteratureHop", "LiteraturePath", "PathFinder",
    "ShortestPathCounter", "attach_evidence",
]  # fmt: skip
