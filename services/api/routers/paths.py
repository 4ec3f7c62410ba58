"""Shortest paths: one pair (GET /v1/path) or a bounded batch (POST /v1/paths)."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Query

from pipeline.query import sssp
from pipeline.query.alternatives import TypeFilter, UnknownSemanticType
from services.api import queries
from services.api.deps import SettingsDep, StateDep, deadline_of, run_bounded
from services.api.errors import (
    ApiError,
    InvalidRequest,
    PathInconsistent,
    RequestTimeout,
    UnknownSemanticTypeError,
    error_responses,
)
from services.api.models import GRAPH_DESCRIPTION, KEY_PATTERN, GraphName, PathOut, PathsIn, PathsOut
from services.api.settings import MAX_ALTERNATIVES

router = APIRouter(prefix="/v1", tags=["paths"], responses=error_responses(400, 401, 413, 422, 500, 503, 504))

KeyQuery = Query(
    pattern=KEY_PATTERN, description="CUI (C0000000, GENE:123) or document id (PMID:1, CORD:abc)"
)
# SemMedDB semantic type abbreviations (dsyn, gngm, ...), repeated or comma-separated.
SEMTYPES_PATTERN = r"^[A-Za-z]{1,16}(,[A-Za-z]{1,16})*$"


@router.get("/path", response_model=PathOut, responses=error_responses(404))
async def get_path(
    state: StateDep,
    settings: SettingsDep,
    source: Annotated[str, KeyQuery],
    target: Annotated[str, KeyQuery],
    evidence: Annotated[
        bool, Query(description="Look up supporting documents, predicates and sentences of concept-concept hops")
    ] = True,
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "full",
    k: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_ALTERNATIVES,
            description="How many paths: the k shortest loopless ones, cheapest first, in alternatives "
            "(at most LITPATH_MAX_ALTERNATIVES); 1: the shortest path alone",
        ),
    ] = 1,
    include_types: Annotated[
        list[Annotated[str, Query(pattern=SEMTYPES_PATTERN)]] | None,
        Query(
            description="Semantic types (dsyn, gngm, ...): every intermediate concept must carry one of them. "
            "The two ends and abstracts are never filtered"
        ),
    ] = None,
    exclude_types: Annotated[
        list[Annotated[str, Query(pattern=SEMTYPES_PATTERN)]] | None,
        Query(description="Semantic types no intermediate concept may carry (the ends and abstracts are never filtered)"),
    ] = None,
) -> dict:
    """The shortest path, its hops (cost, weight, kind, documents) and its distance, stored or on demand.

    An unreachable pair is a 200 with ``reachable: false`` and no vertices. The documents of a
    concept-concept hop are null when they are unknown (no evidence store, the store failed, or it
    has not completely loaded this build), ``[]`` when the store has none. ``ties`` counts the
    distinct shortest paths. With ``k`` > 1 or a type filter, ``alternatives`` lists the k shortest
    loopless paths through the concepts the filter keeps, and the top-level path is the first.
    """
    if k > settings.max_alternatives:
        raise InvalidRequest(
            f"k {k} exceeds the cap {settings.max_alternatives}", {"max_alternatives": settings.max_alternatives}
        )
    type_filter = TypeFilter.of(_split(include_types), _split(exclude_types))
    return await run_bounded(state, _path, state, settings, graph, source, target, evidence, k, type_filter)


def _split(values: list[str] | None) -> list[str]:
    return [part for value in values or () for part in value.split(",")]


def _path(state, settings, scope: str, source: str, target: str, evidence: bool, k: int, type_filter) -> dict:
    served = state.require_build()
    graph = served.graph(scope)
    try:
        allowed = served.semantic_types(scope).allowed(type_filter)
    except UnknownSemanticType as exc:
        detail = {"include_types": list(type_filter.include), "exclude_types": list(type_filter.exclude)}
        raise UnknownSemanticTypeError(str(exc), detail) from None
    if k > 1 or type_filter.active:
        body = queries.path_alternatives(graph, source, target, k, allowed)
    else:
        body = queries.path(graph, source, target)
    body = queries.with_ties(body, graph, allowed, settings.tie_count_s)
    if evidence and state.mongo_db is not None and queries.needs_evidence(body):
        body = queries.attach_evidence(body, state.mongo_db)
    return body


# The part of a request's deadline a batch keeps to send what it has answered (1 s at most): its
# searches stop that much earlier, and the pairs left get a "timeout" error of their own.
BATCH_RESERVE = 0.25


def _batch(state, settings, body: PathsIn, deadline: float) -> dict:
    """The batch's pairs in order, each with its path or its own error. One that fails -- an
    unknown key, a walk that disagrees with its stored distance, a search that reached the
    deadline -- fails alone; only a graph that cannot answer at all fails the request (503). At
    the deadline the pairs answered so far are returned, the rest as ``timeout``: a client keeps
    them and asks again for the others, where a 504 would have lost them all (a batch that
    reached its deadline before its first pair is a 504, as any request)."""
    build = state.require_build()
    graph = build.graph(body.graph)
    answer_by = deadline - min(1.0, BATCH_RESERVE * settings.request_timeout_s)
    results = []
    for index, pair in enumerate(body.pairs):
        if time.monotonic() >= answer_by:
            results += _unanswered(body.pairs[index:], index, settings)
            break
        try:
            with sssp.search_deadline(answer_by):
                found = queries.with_ties(
                    queries.path(graph, pair.source, pair.target), graph, None, settings.tie_count_s
                )
            if body.evidence and state.mongo_db is not None and queries.needs_evidence(found):
                found = queries.attach_evidence(found, state.mongo_db)
            results.append({"source": pair.source, "target": pair.target, "path": found, "error": None})
        except sssp.DeadlineExceeded:
            results += _unanswered(body.pairs[index:], index, settings)
            break
        except ApiError as exc:  # one bad pair does not fail the batch
            if exc.status == 503 and not isinstance(exc, PathInconsistent):
                raise
            error = {"code": exc.code, "message": exc.message, "detail": exc.detail}
            results.append({"source": pair.source, "target": pair.target, "path": None, "error": error})
    return {"build_id": build.build_id, "graph": graph.scope, "results": results}


def _unanswered(pairs, answered: int, settings) -> list[dict]:
    """The items of ``pairs``, which the deadline left unanswered after ``answered`` others."""
    if not answered:
        raise RequestTimeout(f"batch took longer than {settings.request_timeout_s} s")
    message = (
        f"not answered within the request's {settings.request_timeout_s} s: ask for this pair again, "
        "alone or in a smaller batch"
    )
    return [{"source": pair.source, "target": pair.target, "path": None,
             "error": {"code": "timeout", "message": message, "detail": None}} for pair in pairs]  # fmt: skip


@router.post("/paths", response_model=PathsOut)
async def post_paths(state: StateDep, settings: SettingsDep, body: PathsIn) -> dict:
    """Paths for up to LITPATH_BATCH_CAP pairs, in order. An unknown key, or a pair not answered
    before the request's deadline (code ``timeout``), fails only its own item: the pairs answered
    by then are returned."""
    if len(body.pairs) > settings.batch_cap:
        raise InvalidRequest(
            f"batch of {len(body.pairs)} pairs exceeds the batch cap {settings.batch_cap}",
            {"batch_cap": settings.batch_cap},
        )
    return await run_bounded(state, _batch, state, settings, body, deadline_of(settings))
