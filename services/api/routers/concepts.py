"""Concept search and lookup."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from services.api.deps import SettingsDep, StateDep, run_bounded
from services.api.errors import InvalidRequest, UnknownKey, error_responses
from services.api.models import CUI_PATTERN, ConceptOut, ConceptPage
from services.api.settings import MAX_PAGE_CAP

router = APIRouter(
    prefix="/v1/concepts", tags=["concepts"], responses=error_responses(400, 401, 413, 422, 500, 503)
)


def _search(state, q: str | None, limit: int, offset: int) -> dict:
    items, total = state.require_build().concepts.search(q, limit, offset)
    return {
        "items": items,
        "total": total,
        "limit": limit,
        "offset": offset,
        "next_offset": offset + limit if offset + limit < total else None,
    }


@router.get("", response_model=ConceptPage, responses=error_responses(504))
async def search_concepts(
    state: StateDep,
    settings: SettingsDep,
    q: Annotated[
        str | None,
        Query(max_length=200, description="Name fragment (case-insensitive) or CUI; all concepts when empty"),
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE_CAP, description="Page size, at most LITPATH_PAGE_CAP")
    ] = 20,
    offset: Annotated[int, Query(ge=0, le=10_000_000, description="Matches to skip")] = 0,
) -> dict:
    """One page of concepts whose name contains ``q`` (exact name first, then prefix, then
    substring) or whose CUI is ``q``."""
    if limit > settings.page_cap:
        raise InvalidRequest(
            f"limit {limit} exceeds the page cap {settings.page_cap}", {"page_cap": settings.page_cap}
        )
    # A substring scan over every concept name: work for a worker thread, not the event loop.
    return await run_bounded(state, _search, state, q, limit, offset)


@router.get("/{cui}", response_model=ConceptOut, responses=error_responses(404))
async def get_concept(state: StateDep, cui: Annotated[str, Path(pattern=CUI_PATTERN)]) -> dict:
    """One concept by CUI (a dictionary lookup)."""
    record = state.require_build().concepts.get(cui)
    if record is None:
        raise UnknownKey(cui, "concept")
    return record
