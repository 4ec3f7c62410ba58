"""The k nearest concepts of a vertex: from its stored row, or a Dijkstra that stops after k concepts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from services.api import queries
from services.api.deps import SettingsDep, StateDep, run_bounded
from services.api.errors import InvalidRequest
from services.api.models import GRAPH_DESCRIPTION, KEY_PATTERN, ErrorOut, GraphName, NeighborsOut

router = APIRouter(
    prefix="/v1", tags=["neighbors"], responses={404: {"model": ErrorOut}, 503: {"model": ErrorOut}}
)


@router.get("/neighbors/{key}", response_model=NeighborsOut)
async def get_neighbors(
    state: StateDep,
    settings: SettingsDep,
    key: Annotated[str, Path(pattern=KEY_PATTERN)],
    k: Annotated[int, Query(ge=1, description="How many, at most LITPATH_PAGE_CAP")] = 10,
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "full",
) -> dict:
    if k > settings.page_cap:
        raise InvalidRequest(
            f"k {k} exceeds the page cap {settings.page_cap}", {"page_cap": settings.page_cap}
        )
    return await run_bounded(settings, lambda: queries.neighbors(state.require_build().graph(graph), key, k))
