"""SPOKE comparison over HTTP: classify a given path, a pair's literature path, serve the latest report.

Needs ``LITPATH_NEO4J_URI`` (the SPOKE Neo4j) and the CUI -> SPOKE mapping: the file named by
``LITPATH_COMPARE_MAPPING``, else the served build's ``mapping/cui_spoke_mapping.parquet``, else
``<results_dir>/spoke/cui_spoke_mapping.parquet``. The report is the served build's own
(``<build>/compare/report.html``, which the workflow writes). The classification is the CLI's
(:mod:`pipeline.compare.classify`), so both give the same answer for the same inputs.

Comparisons run in their own pool of ``LITPATH_COMPARE_CONCURRENCY`` threads, and every Neo4j
query carries the request's remaining time as its transaction timeout: a request past its
deadline stops its queries on the server too. Neo4j's address never reaches a client (the
driver's messages name host and port); the service log has it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from pipeline.compare.spoke import DEFAULT_SCENARIO4_MAX_HOPS, MAX_PAIR_HOPS
from services.api.deps import SettingsDep, StateDep, deadline_of, run_bounded
from services.api.errors import ApiError, InvalidRequest, RequestTimeout, error_responses
from services.api.models import CUI_PATTERN, GRAPH_DESCRIPTION, ConceptKey, GraphName

log = logging.getLogger("litpath.api")

router = APIRouter(prefix="/v1", tags=["compare"], responses=error_responses(400, 401, 413, 422, 500, 503, 504))

MAPPING_ENV = "LITPATH_COMPARE_MAPPING"
MAX_PATH_CONCEPTS = 100


class SpokeUnavailable(ApiError):
    status, code = 503, "spoke_unavailable"


class NoReport(ApiError):
    status, code = 404, "no_report"


class ComparePathIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    concepts: list[ConceptKey] = Field(
        min_length=2, max_length=MAX_PATH_CONCEPTS, description="A path as CUIs, in order (repeats allowed)"
    )
    hops: int = Field(1, ge=1, le=4, description="SPOKE hop limit h")
    evidence: StrictBool = Field(True, description="Look up supporting documents of each hop")
    graph: GraphName = Field("cooccurrence", description=GRAPH_DESCRIPTION + "; its edges give the hops' costs")


class CompareOut(BaseModel):
    build_id: str | None
    graph: GraphName = Field(description=GRAPH_DESCRIPTION)
    source: str
    target: str
    scenario: str
    description: str
    hop_limit: int
    concepts: list[str]
    mapped: dict[str, list[dict[str, Any]]]
    unmapped: list[str]
    spoke_hops: list[dict[str, Any]]
    n_connected: int
    literature: dict[str, Any] | None
    pair_link: dict[str, Any] | None
    spoke_walk: list[dict[str, Any]] | None = Field(
        description="Scenarios 1 and 3a: the one SPOKE node per mapped concept the path runs through"
    )
    notes: list[str]
    neo4j_round_trips: int


def mapping_path(settings) -> Path:
    """$LITPATH_COMPARE_MAPPING, else the served build's own mapping (the workflow writes it to
    ``<build>/mapping/``), else ``<results_dir>/spoke/cui_spoke_mapping.parquet``."""
    if os.environ.get(MAPPING_ENV):
        return Path(os.environ[MAPPING_ENV])
    from services.api.state import resolve_build_dir

    try:
        in_build = resolve_build_dir(settings) / "mapping" / "cui_spoke_mapping.parquet"
        if in_build.exists():
            return in_build
    except (FileNotFoundError, OSError):
        pass
    return Path(settings.results_dir) / "spoke" / "cui_spoke_mapping.parquet"


def _mapping(state):
    """The mapping, read once per file version and kept in the service state."""
    from pipeline.compare.spoke import CuiMapping

    path = mapping_path(state.settings)
    if not path.exists():  # the message names no server path: clients need not know the layout
        log.warning("no CUI -> SPOKE mapping at %s", path)
        raise SpokeUnavailable(f"no CUI -> SPOKE mapping for the served build (see {MAPPING_ENV})")
    stamp = (str(path), path.stat().st_mtime_ns)
    cached = state.extras.get("compare_mapping")
    if cached is None or cached[0] != stamp:
        try:
            cached = (stamp, CuiMapping.from_file(path))
        except (ValueError, OSError) as exc:
            log.warning("the CUI -> SPOKE mapping %s cannot be read: %s", path, exc)
            raise SpokeUnavailable("the CUI -> SPOKE mapping cannot be read; see the service log") from None
        state.extras["compare_mapping"] = cached
    return cached[1]


def _comparator(state, hops: int, scenario4_max_hops: int, deadline: float):
    from pipeline.compare.classify import Comparator
    from pipeline.compare.spoke import SpokeGraph

    if state.neo4j is None:
        raise SpokeUnavailable("SPOKE comparison needs a Neo4j: set LITPATH_NEO4J_URI")
    spoke = SpokeGraph(state.neo4j, where="the configured SPOKE Neo4j", deadline=deadline)
    return Comparator(_mapping(state), spoke, hops=hops, scenario4_max_hops=scenario4_max_hops)


def _classify(
    state, paths, hops: int, scope: str, deadline: float, scenario4_max_hops: int = DEFAULT_SCENARIO4_MAX_HOPS
) -> dict:
    from pipeline.store.neo4j import Neo4jTimeout, Neo4jUnavailable

    comparator = _comparator(state, hops, scenario4_max_hops, deadline)
    try:
        comparison = comparator.compare_paths(paths)[0]
    except Neo4jTimeout:
        raise RequestTimeout(f"the SPOKE queries took longer than {state.settings.request_timeout_s} s") from None
    except Neo4jUnavailable as exc:
        # The driver's message names Neo4j's host and port: for the log, not the client.
        log.warning("SPOKE Neo4j unavailable: %s", exc)
        raise SpokeUnavailable("the SPOKE Neo4j is unavailable; try again later") from None
    build = state.build
    return {
        "build_id": None if build is None else build.build_id,
        "graph": scope,
        **comparison.as_dict(),
        "neo4j_round_trips": comparator.spoke.round_trips,
    }


def _compare_path(state, body: ComparePathIn, deadline: float) -> dict:
    from pipeline.compare.literature import NO_STORE, LiteratureHop, LiteraturePath, attach_evidence

    concepts = list(body.concepts)
    build = state.build
    graph = build.graphs.get(body.graph) if build is not None else None
    hops = []
    for a, b in zip(concepts, concepts[1:], strict=False):
        cost = None
        if graph is not None and a in graph.vid_of and b in graph.vid_of and a != b:
            try:
                cost = graph.adjacency.edge_cost(graph.vid_of[a], graph.vid_of[b])
            except KeyError:
                cost = None  # not an edge of the literature graph
        hops.append(LiteratureHop(a, b, cost))
    path = LiteraturePath(concepts[0], concepts[-1], True, concepts, concepts, hops)
    if body.evidence and build is not None:
        attach_evidence([path], state.mongo_db, build.build_id)
    else:
        path.evidence_status = NO_STORE if build is not None else "no build loaded"
    return _classify(state, [path], body.hops, body.graph, deadline)


def _compare_pair(
    state, source: str, target: str, hops: int, scope: str, scenario4_max_hops: int, deadline: float
) -> dict:
    from pipeline.compare.literature import PathFinder, attach_evidence

    build = state.require_build()
    build.require_fresh(scope)
    path = PathFinder(build.graph(scope)).path(source, target)
    if path.reachable:
        attach_evidence([path], state.mongo_db, build.build_id)
    return _classify(state, [path], hops, scope, deadline, scenario4_max_hops)


@router.post("/compare/path", response_model=CompareOut)
async def post_compare_path(state: StateDep, settings: SettingsDep, body: ComparePathIn) -> dict:
    """Classify a given concept path against SPOKE; unknown or unmapped CUIs are listed, not errors."""
    return await run_bounded(state, _compare_path, state, body, deadline_of(settings), pool="compare")


CuiQuery = Query(pattern=CUI_PATTERN, description="CUI (C0000000) or GENE:<entrez>")


@router.get("/compare/pair", response_model=CompareOut)
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
        state, _compare_pair, state, source, target, hops, graph, scenario4_max_hops, deadline_of(settings),
        pool="compare",
    )  # fmt: skip


def _read_report(state) -> str:
    """The served build's comparison report. Only that file: a report of another build would
    answer for a build the service does not serve (the workflow writes it by a rename, so it is
    never read half-written)."""
    path = state.require_build().build_dir / "compare" / "report.html"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NoReport("the served build has no comparison report (compare.enabled in its config)") from None


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
    return HTMLResponse(await run_bounded(state, _read_report, state))
