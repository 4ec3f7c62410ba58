"""The answers behind the routers: plain functions of one graph of the served build.

Each answer names the graph it used (``full`` or ``cooccurrence``) and where its distances
came from: ``stored`` (the build's distances.bp: dense, or rows covering the query) or
``on-demand`` (an exact bidirectional Dijkstra on the graph, when nothing stored covers it).
These run in a worker thread (the routers use ``run_bounded``): an on-demand search on a
graph of millions of vertices is not work for the event loop.
"""

from __future__ import annotations

import math
import time

import numpy as np

from pipeline.query import sssp
from pipeline.query.alternatives import alternative_paths, tie_count
from pipeline.query.graph import Graph, GraphStale, UnknownVertex
from pipeline.query.paths import PathResult, edge_kind
from pipeline.store.evidence import evidence_for_pairs, paper_evidence_for
from services.api.errors import BuildUnavailable, PathInconsistent, UnknownKey


def vertex_out(graph: Graph, vid: int) -> dict:
    return {
        "key": graph.keys[vid],
        "kind": "concept" if graph.is_concept[vid] else "abstract",
        "name": graph.names[vid],
        "vid": int(vid),
    }


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _vid(graph: Graph, key: str) -> int:
    try:
        return graph.vid(key)
    except UnknownVertex:
        raise UnknownKey(key, f"concept or document of the {graph.scope} graph") from None


def _fresh(graph: Graph) -> None:
    try:
        graph.require_fresh()
    except GraphStale as exc:
        raise BuildUnavailable(str(exc)) from None


def distance(graph: Graph, source: str, target: str) -> dict:
    _fresh(graph)
    s, t = _vid(graph, source), _vid(graph, target)
    value, where = graph.distance(s, t)
    return {
        "build_id": graph.build_id,
        "graph": graph.scope,
        "distances": where,
        "source": vertex_out(graph, s),
        "target": vertex_out(graph, t),
        "reachable": math.isfinite(value),
        "distance": _finite_or_none(value),
    }


def path(graph: Graph, source: str, target: str) -> dict:
    """Shortest path with per-hop cost, weight and kind; concept-concept documents left for :func:`attach_evidence`.

    Concept-abstract hops name the abstract; citation hops name both papers.
    """
    _fresh(graph)
    s, t = _vid(graph, source), _vid(graph, target)
    result, where = graph.path(s, t)
    if result.reachable and not result.consistent:
        raise PathInconsistent(
            f"the distances and the graph of build {graph.build_id} ({graph.scope} graph) disagree for "
            f"{source} -> {target}; no path is returned",
            {"stored_distance": result.stored_distance, "path_cost": result.total_cost},
        )
    return {
        "build_id": graph.build_id,
        "graph": graph.scope,
        "distances": where,
        "source": source,
        "target": target,
        "reachable": result.reachable,
        "vertices": [vertex_out(graph, v) for v in result.vertices],
        "hops": hops_of(graph, result),
        "total_cost": result.total_cost,
        "stored_distance": _finite_or_none(result.stored_distance),
        "method": result.method,
    }


def hops_of(graph: Graph, result: PathResult) -> list[dict]:
    """A path's hops: cost, weight, kind and documents (concept-concept ones left for
    :func:`attach_evidence`)."""
    hops = []
    for u, v, cost in zip(result.vertices, result.vertices[1:], result.hop_costs, strict=False):
        cu, cv = bool(graph.is_concept[u]), bool(graph.is_concept[v])
        if cu and cv:
            documents = None  # from the evidence store
        elif cu or cv:
            documents = [graph.keys[v] if cu else graph.keys[u]]
        else:
            documents = [graph.keys[u], graph.keys[v]]
        hops.append(
            {
                "from": graph.keys[u],
                "to": graph.keys[v],
                "cost": float(cost),
                "weight": graph.adjacency.edge_weight(u, v),
                "edge_kind": edge_kind(cu, cv),
                "documents": documents,
                "n_predications": None,
                "predicates": None,
                "sentences": None,
            }
        )
    return hops


def with_ties(body: dict, graph: Graph, allowed: np.ndarray | None, budget_s: float) -> dict:
    """``body["ties"]``: how many distinct loopless paths share the shortest cost, or None when
    counting takes longer than ``budget_s`` (the path itself is not lost to a slow count)."""
    s, t = graph.vid(body["source"]), graph.vid(body["target"])
    try:
        ties = tie_count(graph, s, t, allowed, deadline=time.monotonic() + budget_s)
    except sssp.DeadlineExceeded:
        body["ties"] = None
        return body
    body["ties"] = {"count": ties.count, "saturated": ties.saturated}
    return body


def path_alternatives(graph: Graph, source: str, target: str, k: int, allowed: np.ndarray | None) -> dict:
    """The k shortest loopless paths (through the vertices ``allowed`` keeps) as the answer of
    GET /v1/path: the cheapest is the top-level path (on demand), all k are ``alternatives``."""
    _fresh(graph)
    s, t = _vid(graph, source), _vid(graph, target)
    found = alternative_paths(graph, s, t, k, allowed)
    first = found[0] if found else PathResult(s, t, False, math.inf, method="none")
    return {
        "build_id": graph.build_id,
        "graph": graph.scope,
        "distances": "on-demand",
        "source": source,
        "target": target,
        "reachable": first.reachable,
        "vertices": [vertex_out(graph, v) for v in first.vertices],
        "hops": hops_of(graph, first),
        "total_cost": first.total_cost,
        "stored_distance": _finite_or_none(first.stored_distance),
        "method": "bidirectional-dijkstra" if first.reachable else "none",
        "alternatives": [
            {
                "rank": rank,
                "total_cost": result.total_cost,
                "vertices": [vertex_out(graph, v) for v in result.vertices],
                "hops": hops_of(graph, result),
            }
            for rank, result in enumerate(found, start=1)
        ],
    }


def needs_evidence(body: dict) -> bool:
    return any(hop["edge_kind"] in ("concept_concept", "concept_abstract") for hop in _all_hops(body))


def _all_hops(body: dict) -> list[dict]:
    """The hops of the path and of its alternatives."""
    hops = list(body["hops"])
    for alternative in body.get("alternatives") or ():
        hops += alternative["hops"]
    return hops


def attach_evidence(body: dict, mongo_db) -> dict:
    """Fill the documents, predicates and sentences of concept-concept hops from the evidence store (blocking I/O).

    When the store fails, those hops keep ``documents: null`` (unknown), never ``[]`` (none).
    A concept-abstract hop gets the predicates and sentences of its paper that name its concept.
    """
    concept_hops = [hop for hop in _all_hops(body) if hop["edge_kind"] == "concept_concept"]
    found = evidence_for_pairs(mongo_db, body["build_id"], [(hop["from"], hop["to"]) for hop in concept_hops])
    _attach_paper_evidence([hop for hop in _all_hops(body) if hop["edge_kind"] == "concept_abstract"], mongo_db, body["build_id"])
    if found is None:
        return body
    for hop in concept_hops:
        record = found[tuple(sorted((hop["from"], hop["to"])))]
        hop["documents"], hop["n_predications"] = record["documents"], record["n_predications"]
        hop["predicates"], hop["sentences"] = record["predicates"], record["sentences"]
    return body


def _attach_paper_evidence(hops: list[dict], mongo_db, build_id: str) -> None:
    """Each concept-abstract hop's predicates and sentences: what its paper says naming its concept
    (:func:`pipeline.store.evidence.paper_evidence_for`); left null when unknown."""
    pairs = [(hop["to"] if hop["from"] == hop["documents"][0] else hop["from"], hop["documents"][0]) for hop in hops]
    said = paper_evidence_for(mongo_db, build_id, pairs) if hops else None
    for hop, pair in zip(hops, pairs, strict=True) if said is not None else ():
        hop["predicates"], hop["sentences"] = said[pair]["predicates"], said[pair]["sentences"]


def neighbors(graph: Graph, key: str, k: int) -> dict:
    """The k concepts nearest to ``key`` (itself excluded, unreachable skipped)."""
    _fresh(graph)
    vid = _vid(graph, key)
    chosen, where = graph.nearest_concepts(vid, k)
    return {
        "build_id": graph.build_id,
        "graph": graph.scope,
        "distances": where,
        "key": key,
        "k": k,
        "neighbors": [
            {"key": graph.keys[v], "name": graph.names[v], "vid": int(v), "distance": float(d)} for v, d in chosen
        ],
    }
