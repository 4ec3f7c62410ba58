"""The k nearest concepts of a vertex: from its stored row, or a Dijkstra that stops after k concepts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from services.api import queries
from services.api.deps import SettingsDep, StateDep, run_bounded
from services.api.errors import InvalidRequest, error_responses
from services.api.models import GRAPH_DESCRIPTION, KEY_PATTERN, GraphName, NeighborsOut
from services.api.settings import MAX_PAGE_CAP

router = APIRouter(
    prefix="/v1", tags=["neighbors"], responses=error_responses(400, 401, 404, 413, 422, 500, 503, 504)
)


def _neighbors(state, scope: str, key: str, k: int) -> dict:
    return queries.neighbors(state.require_build().graph(scope), key, k)


@router.get("/neighbors/{key}", response_model=NeighborsOut)
async def get_neighbors(
    state: StateDep,
    settings: SettingsDep,
    key: Annotated[str, Path(pattern=KEY_PATTERN, description="CUI or document id")],
    k: Annotated[int, Query(ge=1, le=MAX_PAGE_CAP, description="How many, at most LITPATH_PAGE_CAP")] = 10,
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "full",
) -> dict:
    """The k concepts nearest to ``key`` (itself excluded, unreachable ones skipped), nearest first."""
    if k > settings.page_cap:
        raise InvalidRequest(
            f"k {k} exceeds the page cap {settings.page_cap}", {"page_cap": settings.page_cap}
        )
    return await run_bounded(state, _neighbors, state, graph, key, k)
