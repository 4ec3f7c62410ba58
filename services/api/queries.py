"""The answers behind the routers: plain functions of a loaded build (run off the event loop)."""

from __future__ import annotations

import math

import numpy as np

from pipeline.paths import edge_kind, reconstruct_path
from services.api.errors import PathInconsistent
from services.api.evidence import evidence_for_pairs
from services.api.state import LoadedBuild


def vertex_out(build: LoadedBuild, vid: int) -> dict:
    return {
        "key": build.keys[vid],
        "kind": "concept" if build.is_concept[vid] else "abstract",
        "name": build.names[vid],
        "vid": int(vid),
    }


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def distance(build: LoadedBuild, source: str, target: str) -> dict:
    build.require_fresh()
    s, t = build.vid(source), build.vid(target)
    value = build.distances.value(t, s)
    return {
        "build_id": build.build_id,
        "source": vertex_out(build, s),
        "target": vertex_out(build, t),
        "reachable": math.isfinite(value),
        "distance": _finite_or_none(value),
    }


def path(build: LoadedBuild, source: str, target: str) -> dict:
    """Shortest path with per-hop cost, weight and kind; concept-concept documents left for :func:`attach_evidence`.

    Concept-abstract hops name the abstract; citation hops name both papers.
    """
    build.require_fresh()
    s, t = build.vid(source), build.vid(target)
    row = build.distances.row(t)  # D[., t]: the only read of the matrix for this query
    result = reconstruct_path(build.adjacency, row, s, t, build.tolerance)
    if result.reachable and not result.consistent:
        raise PathInconsistent(
            f"the distances and the graph of build {build.build_id} disagree for {source} -> {target}; "
            "no path is returned",
            {"stored_distance": result.stored_distance, "path_cost": result.total_cost},
        )
    hops = []
    for u, v, cost in zip(result.vertices, result.vertices[1:], result.hop_costs, strict=False):
        cu, cv = bool(build.is_concept[u]), bool(build.is_concept[v])
        if cu and cv:
            documents = None  # from the evidence store
        elif cu or cv:
            documents = [build.keys[v] if cu else build.keys[u]]
        else:
            documents = [build.keys[u], build.keys[v]]
        hops.append(
            {
                "from": build.keys[u],
                "to": build.keys[v],
                "cost": float(cost),
                "weight": build.adjacency.edge_weight(u, v),
                "edge_kind": edge_kind(cu, cv),
                "documents": documents,
                "n_predications": None,
            }
        )
    return {
        "build_id": build.build_id,
        "source": source,
        "target": target,
        "reachable": result.reachable,
        "vertices": [vertex_out(build, v) for v in result.vertices],
        "hops": hops,
        "total_cost": result.total_cost,
        "stored_distance": _finite_or_none(result.stored_distance),
        "method": result.method,
    }


def needs_evidence(body: dict) -> bool:
    return any(hop["edge_kind"] == "concept_concept" for hop in body["hops"])


def attach_evidence(body: dict, mongo_db) -> dict:
    """Fill the documents of concept-concept hops from the evidence store (blocking I/O).

    When the store fails, those hops keep ``documents: null`` (unknown), never ``[]`` (none).
    """
    concept_hops = [hop for hop in body["hops"] if hop["edge_kind"] == "concept_concept"]
    found = evidence_for_pairs(mongo_db, body["build_id"], [(hop["from"], hop["to"]) for hop in concept_hops])
    if found is None:
        return body
    for hop in concept_hops:
        record = found[tuple(sorted((hop["from"], hop["to"])))]
        hop["documents"], hop["n_predications"] = record["documents"], record["n_predications"]
    return body


def neighbors(build: LoadedBuild, key: str, k: int) -> dict:
    """The k concepts nearest to ``key`` by stored distance (itself excluded, unreachable skipped)."""
    build.require_fresh()
    vid = build.vid(key)
    row = build.distances.row(vid)
    candidates = np.flatnonzero(build.is_concept & np.isfinite(row))
    candidates = candidates[candidates != vid]
    if len(candidates) > k:
        part = np.argpartition(row[candidates], k - 1)[:k]
        candidates = candidates[part]
    order = np.lexsort((candidates, row[candidates]))
    chosen = candidates[order]
    return {
        "build_id": build.build_id,
        "key": key,
        "k": k,
        "neighbors": [
            {"key": build.keys[v], "name": build.names[v], "vid": int(v), "distance": float(row[v])}
            for v in chosen
        ],
    }
