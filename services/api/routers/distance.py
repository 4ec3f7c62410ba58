"""The shortest-path distance between two vertices, stored or computed on demand."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.api import queries
from services.api.deps import StateDep, run_bounded
from services.api.errors import error_responses
from services.api.models import GRAPH_DESCRIPTION, KEY_PATTERN, DistanceOut, GraphName

router = APIRouter(prefix="/v1", tags=["distances"], responses=error_responses(400, 401, 404, 413, 422, 500, 503, 504))

KeyQuery = Query(
    pattern=KEY_PATTERN, description="CUI (C0000000, GENE:123) or document id (PMID:1, CORD:abc)"
)


def _distance(state, scope: str, source: str, target: str) -> dict:
    return queries.distance(state.require_build().graph(scope), source, target)


@router.get("/distance", response_model=DistanceOut)
async def get_distance(
    state: StateDep,
    source: Annotated[str, KeyQuery],
    target: Annotated[str, KeyQuery],
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "full",
) -> dict:
    """The shortest-path distance: stored when a row covers the pair, else computed on demand.
    An unreachable pair is a 200 with ``reachable: false``."""
    return await run_bounded(state, _distance, state, graph, source, target)
