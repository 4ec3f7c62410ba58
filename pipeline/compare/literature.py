"""The literature side: shortest paths of one of a build's graphs, as concept sequences with per-hop evidence.

Paths come from :meth:`pipeline.query.graph.Graph.path` -- the same queries the path service
answers: walked over the stored distances when they cover the pair, else by an exact
bidirectional Dijkstra. The comparison runs on the *co-occurrence graph* by default
(concepts and concept--concept edges only, as in the paper); on the full graph, abstracts on
a path are not SPOKE concepts, so a literature hop is the stretch between two consecutive
concepts, and the abstracts on it are that hop's documents. The documents of a direct
concept--concept edge come from the MongoDB evidence store when one is configured
(:func:`attach_evidence`); without one, the hop says so instead of failing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

NO_STORE = "no evidence store configured"
STORE_FAILED = "evidence store unavailable"
NO_BUILD = "no build loaded"  # a caller-given path classified with no build to look evidence up in


@dataclass
class LiteratureHop:
    """Consecutive concepts of a literature path; ``via`` are the abstracts between them."""

    source: str
    target: str
    cost: float
    via: list[str] = field(default_factory=list)
    documents: list[str] | None = None  # None: unknown (no store, or the store failed)
    n_predications: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "cost": self.cost,
            "via": self.via,
            "documents": self.documents,
            "n_predications": self.n_predications,
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


class PathFinder:
    """Literature paths between concepts of one graph (:class:`pipeline.query.graph.Graph`)."""

    def __init__(self, graph: Any):
        self.graph = graph
        self.distances_used: dict[str, int] = {"stored": 0, "on-demand": 0}

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
        )  # fmt: skip


def attach_evidence(paths: list[LiteraturePath], mongo_db, build_id: str) -> str:
    """Fill the documents of direct concept--concept hops of all paths in one store query.

    Returns the evidence status written on every path: ``"ok"``, :data:`NO_STORE` or
    :data:`STORE_FAILED` (hops then keep ``documents=None``: unknown, not none).
    """
    from pipeline.store.evidence import evidence_for_pairs

    direct = [hop for path in paths for hop in path.hops if not hop.via]
    if mongo_db is None:
        status = NO_STORE
    else:
        found = evidence_for_pairs(mongo_db, build_id, sorted({(h.source, h.target) for h in direct}))
        if found is None:
            status = STORE_FAILED
        else:
            status = "ok"
            for hop in direct:
                record = found.get(tuple(sorted((hop.source, hop.target)))) or {}
                hop.documents = list(record.get("documents") or [])
                hop.n_predications = int(record.get("n_predications") or 0)
    for path in paths:
        path.evidence_status = status
    return status


__all__ = [
    "NO_BUILD", "NO_STORE", "STORE_FAILED", "LiteratureHop", "LiteraturePath", "PathFinder", "attach_evidence",
]  # fmt: skip
