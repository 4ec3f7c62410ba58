"""Shortest paths: one pair (GET /v1/path) or a bounded batch (POST /v1/paths)."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Query

from services.api import queries
from services.api.deps import SettingsDep, StateDep, deadline_of, run_bounded
from services.api.errors import ApiError, InvalidRequest, RequestTimeout, error_responses
from services.api.models import GRAPH_DESCRIPTION, KEY_PATTERN, GraphName, PathOut, PathsIn, PathsOut

router = APIRouter(prefix="/v1", tags=["paths"], responses=error_responses(400, 401, 413, 422, 500, 503, 504))

KeyQuery = Query(
    pattern=KEY_PATTERN, description="CUI (C0000000, GENE:123) or document id (PMID:1, CORD:abc)"
)


@router.get("/path", response_model=PathOut, responses=error_responses(404))
async def get_path(
    state: StateDep,
    source: Annotated[str, KeyQuery],
    target: Annotated[str, KeyQuery],
    evidence: Annotated[
        bool, Query(description="Look up supporting documents, predicates and sentences of concept-concept hops")
    ] = True,
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "full",
) -> dict:
    """The shortest path, its hops (cost, weight, kind, documents) and its distance, stored or on demand.

    An unreachable pair is a 200 with ``reachable: false`` and no vertices. The documents of a
    concept-concept hop are null when they are unknown (no evidence store, the store failed, or it
    has not completely loaded this build), ``[]`` when the store has none.
    """
    return await run_bounded(state, _path, state, graph, source, target, evidence)


def _path(state, scope: str, source: str, target: str, evidence: bool) -> dict:
    body = queries.path(state.require_build().graph(scope), source, target)
    if evidence and state.mongo_db is not None and queries.needs_evidence(body):
        body = queries.attach_evidence(body, state.mongo_db)
    return body


def _batch(state, settings, body: PathsIn, deadline: float) -> dict:
    build = state.require_build()
    graph = build.graph(body.graph)
    results = []
    for pair in body.pairs:
        if time.monotonic() > deadline:
            raise RequestTimeout(f"batch took longer than {settings.request_timeout_s} s")
        try:
            found = queries.path(graph, pair.source, pair.target)
            if body.evidence and state.mongo_db is not None and queries.needs_evidence(found):
                found = queries.attach_evidence(found, state.mongo_db)
            results.append({"source": pair.source, "target": pair.target, "path": found, "error": None})
        except ApiError as exc:  # one bad pair does not fail the batch
            if exc.status == 503:
                raise
            error = {"code": exc.code, "message": exc.message, "detail": exc.detail}
            results.append({"source": pair.source, "target": pair.target, "path": None, "error": error})
    return {"build_id": build.build_id, "graph": graph.scope, "results": results}


@router.post("/paths", response_model=PathsOut)
async def post_paths(state: StateDep, settings: SettingsDep, body: PathsIn) -> dict:
    """Paths for up to LITPATH_BATCH_CAP pairs; an unknown key fails only its own item."""
    if len(body.pairs) > settings.batch_cap:
        raise InvalidRequest(
            f"batch of {len(body.pairs)} pairs exceeds the batch cap {settings.batch_cap}",
            {"batch_cap": settings.batch_cap},
        )
    return await run_bounded(state, _batch, state, settings, body, deadline_of(settings))
