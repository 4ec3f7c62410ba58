"""SPOKE comparison over HTTP: classify a given path, a pair's literature path, serve the latest report.

Needs the SPOKE Neo4j (``LITPATH_NEO4J_URI``) and the CUI -> SPOKE mapping (``LITPATH_COMPARE_MAPPING``,
else the served build's own); see :mod:`services.api.comparisons`. The report is the served
build's own (``<build>/compare/report.html``, which the workflow writes). Comparisons run in their
own pool of ``LITPATH_COMPARE_CONCURRENCY`` threads.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from pipeline.compare.spoke import DEFAULT_SCENARIO4_MAX_HOPS, MAX_PAIR_HOPS
from services.api import comparisons
from services.api.deps import SettingsDep, StateDep, deadline_of, run_bounded
from services.api.errors import STATUS_MEANINGS, InvalidRequest, error_responses
from services.api.models import CUI_PATTERN, GRAPH_DESCRIPTION, CompareOut, ComparePathIn, ErrorOut, GraphName

router = APIRouter(prefix="/v1", tags=["compare"], responses=error_responses(400, 401, 413, 422, 500, 503, 504))


@router.post("/compare/path", response_model=CompareOut)
async def post_compare_path(state: StateDep, settings: SettingsDep, body: ComparePathIn) -> dict:
    """Classify a given concept path against SPOKE; unknown or unmapped CUIs are listed, not errors."""
    return await run_bounded(state, comparisons.compare_path, state, body, deadline_of(settings), pool="compare")


CuiQuery = Query(pattern=CUI_PATTERN, description="CUI (C0000000) or GENE:<entrez>")


# OpenAPI cannot relate two parameters, so the pair's one extra rule is stated in this
# operation's own 422 (and in target's description).
SAME_CONCEPT_422 = {
    422: {
        "model": ErrorOut,
        "description": f"{STATUS_MEANINGS[422]}; here also a pair whose source equals its target "
        "(a concept is not compared with itself)",
    }
}


@router.get("/compare/pair", response_model=CompareOut, responses=SAME_CONCEPT_422)
async def get_compare_pair(
    state: StateDep,
    settings: SettingsDep,
    source: Annotated[str, CuiQuery],
    target: Annotated[
        str, Query(pattern=CUI_PATTERN, description="CUI (C0000000) or GENE:<entrez>; must differ from source")
    ],
    hops: Annotated[int, Query(ge=1, le=4, description="SPOKE hop limit h")] = 1,
    graph: Annotated[GraphName, Query(description=GRAPH_DESCRIPTION)] = "cooccurrence",
    scenario4_max_hops: Annotated[
        int,
        Query(ge=1, le=MAX_PAIR_HOPS, description="Safety cap of the SPOKE search when the literature has no path"),
    ] = DEFAULT_SCENARIO4_MAX_HOPS,
) -> dict:
    """The literature path between two concepts (on the co-occurrence graph by default, as in the
    paper), classified; scenario 4 when only SPOKE connects them. ``source`` and ``target`` must
    differ (422 otherwise): a concept is not compared with itself."""
    if source == target:
        raise InvalidRequest("source and target must differ", {"source": source, "target": target})
    return await run_bounded(
        state, comparisons.compare_pair, state, source, target, hops, graph, scenario4_max_hops,
        deadline_of(settings), pool="compare",
    )  # fmt: skip


@router.get(
    "/reports/latest",
    response_class=HTMLResponse,
    responses={
        200: {"content": {"text/html": {}}, "description": "The report: one self-contained HTML page"},
        **error_responses(404),
    },
)
async def get_latest_report(state: StateDep) -> HTMLResponse:
    """The served build's comparison report (self-contained HTML)."""
    return HTMLResponse(await run_bounded(state, comparisons.read_report, state))
