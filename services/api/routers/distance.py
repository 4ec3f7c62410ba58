"""The shortest-path distance between two vertices, stored or computed on demand."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.api import queries
from services.api.deps import SettingsDep, StateDep, run_bounded
from services.api.models import GRAPH_DESCRIPTION, KEY_PATTERN, DistanceOut, ErrorOut, GraphName

router = APIRouter(
    prefix="/v1", tags=["distances"], responses={404: {"model": ErrorOut}, 503: {"model": ErrorOut}}
)

KeyQuery = Query(
    pattern=KEY_PATTERN, description="CUI (C0000000, GENE:123) or document id (PMID:1, CORD:abc)"
)


@router.get("/distance", response_model=DistanceOut)
async def get_distance(
    state: StateDep,
    settings: SettingsDep,
    source: Annotated[str, KeyQuery],
    target: Annotated[str, KeyQuery],
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "full",
) -> dict:
    """The shortest-path distance: stored when a row covers the pair, else computed on demand."""
    return await run_bounded(settings, lambda: queries.distance(state.require_build().graph(graph), source, target))
