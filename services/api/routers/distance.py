"""Stored shortest-path distance between two vertices."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.api import queries
from services.api.deps import StateDep
from services.api.models import KEY_PATTERN, DistanceOut, ErrorOut

router = APIRouter(
    prefix="/v1", tags=["distances"], responses={404: {"model": ErrorOut}, 503: {"model": ErrorOut}}
)

KeyQuery = Query(
    pattern=KEY_PATTERN, description="CUI (C0000000, GENE:123) or document id (PMID:1, CORD:abc)"
)


@router.get("/distance", response_model=DistanceOut)
async def get_distance(
    state: StateDep,
    source: Annotated[str, KeyQuery],
    target: Annotated[str, KeyQuery],
) -> dict:
    return queries.distance(state.require_build(), source, target)  # one 1x1 read: inline
