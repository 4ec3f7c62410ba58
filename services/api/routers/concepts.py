"""Concept search and lookup."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from services.api.deps import SettingsDep, StateDep
from services.api.errors import InvalidRequest, UnknownKey
from services.api.models import CUI_PATTERN, ConceptOut, ConceptPage, ErrorOut

router = APIRouter(
    prefix="/v1/concepts", tags=["concepts"], responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}}
)


@router.get("", response_model=ConceptPage)
async def search_concepts(
    state: StateDep,
    settings: SettingsDep,
    q: Annotated[
        str | None, Query(max_length=200, description="Name fragment or CUI; all concepts when empty")
    ] = None,
    limit: Annotated[int, Query(ge=1, description="Page size, at most LITPATH_PAGE_CAP")] = 20,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict:
    if limit > settings.page_cap:
        raise InvalidRequest(
            f"limit {limit} exceeds the page cap {settings.page_cap}", {"page_cap": settings.page_cap}
        )
    build = state.require_build()
    items, total = build.concepts.search(q, limit, offset)
    return {
        "items": items,
        "total": total,
        "limit": limit,
        "offset": offset,
        "next_offset": offset + limit if offset + limit < total else None,
    }


@router.get("/{cui}", response_model=ConceptOut)
async def get_concept(state: StateDep, cui: Annotated[str, Path(pattern=CUI_PATTERN)]) -> dict:
    record = state.require_build().concepts.get(cui)
    if record is None:
        raise UnknownKey(cui, "concept")
    return record
