"""The SPOKE comparison behind routers/compare.py: which mapping and Neo4j the service compares
with, and the comparison's failures as API errors.

The classification itself is the CLI's (:func:`pipeline.compare.run.classify_given_path`,
:func:`pipeline.compare.run.classify_pair`), so both give the same answer for the same inputs.
Every Neo4j query carries the request's remaining time as its transaction timeout: a request
past its deadline stops its queries on the server too. Neo4j's address never reaches a client
(the driver's messages name host and port); the service log has it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.builds.layout import BuildLayout
from pipeline.compare.classify import Comparator, Comparison
from pipeline.compare.run import classify_given_path, classify_pair, run_warnings
from pipeline.compare.spoke import DEFAULT_SCENARIO4_MAX_HOPS, CuiMapping, RelationshipFilter, SpokeGraph
from pipeline.query.build import resolve_build_dir
from pipeline.store.neo4j import Neo4jTimeout, Neo4jUnavailable
from services.api.errors import NoReport, RequestTimeout, SpokeUnavailable
from services.api.models import ComparePathIn
from services.api.settings import Settings
from services.api.state import ServiceState

log = logging.getLogger("litpath.api")

def mapping_path(settings: Settings, build_dir: Path | None) -> Path | None:
    """``compare_mapping`` (LITPATH_COMPARE_MAPPING), else the mapping of the build folder
    (the workflow writes it to ``<build>/mapping/``; :class:`pipeline.builds.layout.BuildLayout`);
    None when neither is set and no build can be found.

    ``build_dir`` is the served build's folder; None when no build is loaded, and then the
    configured build's folder is looked up.
    """
    if settings.compare_mapping is not None:
        return settings.compare_mapping
    if build_dir is None:
        try:
            build_dir = resolve_build_dir(settings.results_dir, settings.build)
        except OSError:
            return None
    return BuildLayout(build_dir).mapping.table


def load_mapping(state: ServiceState) -> CuiMapping:
    """The mapping, read once per file version and kept in the service state."""
    path = mapping_path(state.settings, None if state.build is None else state.build.build_dir)
    if path is None or not path.exists():  # the message names no server path: clients need not know the layout
        log.warning("no CUI -> SPOKE mapping at %s", path)
        raise SpokeUnavailable("no CUI -> SPOKE mapping for the served build (see LITPATH_COMPARE_MAPPING)")
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


def relationship_filter(settings: Settings) -> RelationshipFilter:
    """The SPOKE relationship types the service follows (LITPATH_COMPARE_ALLOW_RELATIONSHIPS or
    LITPATH_COMPARE_DENY_RELATIONSHIPS); settings naming both are refused (503, the reason logged)."""

    def names(text: str) -> tuple[str, ...]:
        return tuple(name.strip() for name in text.split(",") if name.strip())

    try:
        return RelationshipFilter(names(settings.compare_allow_relationships), names(settings.compare_deny_relationships))
    except ValueError as exc:
        log.warning("the SPOKE relationship filter is not usable: %s", exc)
        raise SpokeUnavailable("the service's SPOKE relationship filter is misconfigured; see the service log") from None


def comparator(state: ServiceState, hops: int, scenario4_max_hops: int, deadline: float) -> Comparator:
    """A comparator over the service's Neo4j driver whose queries end by ``deadline``."""
    if state.neo4j is None:
        raise SpokeUnavailable("SPOKE comparison needs a Neo4j: set LITPATH_NEO4J_URI")
    settings = state.settings
    spoke = SpokeGraph(
        state.neo4j, where="the configured SPOKE Neo4j", deadline=deadline,
        relationships=relationship_filter(settings), obsolete_property=settings.compare_obsolete_property or None,
    )  # fmt: skip
    return Comparator(load_mapping(state), spoke, hops=hops, scenario4_max_hops=scenario4_max_hops)


@contextmanager
def spoke_errors(settings: Settings) -> Iterator[None]:
    """Neo4j's failures as API errors: 504 past the deadline, 503 when it is unavailable."""
    try:
        yield
    except Neo4jTimeout:
        raise RequestTimeout(f"the SPOKE queries took longer than {settings.request_timeout_s} s") from None
    except Neo4jUnavailable as exc:
        # The driver's message names Neo4j's host and port: for the log, not the client.
        log.warning("SPOKE Neo4j unavailable: %s", exc)
        raise SpokeUnavailable("the SPOKE Neo4j is unavailable; try again later") from None


def _answer(state: ServiceState, scope: str, comparison: Comparison, comparator: Comparator) -> dict:
    answer = comparison.as_dict()
    # a hop limit above 1 without a relationship filter: the answer says what that means
    answer["notes"] = [*answer["notes"], *run_warnings(comparator)]
    return {
        "build_id": None if state.build is None else state.build.build_id,
        "graph": scope,
        **answer,
        "relationships": comparator.spoke.relationships.as_dict(),
        "neo4j_round_trips": comparator.spoke.round_trips,
    }


def compare_path(state: ServiceState, body: ComparePathIn, deadline: float) -> dict:
    """A given concept path, classified; it needs no build (its hops then have no cost)."""
    build = state.build
    graph = None if build is None else build.graphs.get(body.graph)
    compare = comparator(state, body.hops, DEFAULT_SCENARIO4_MAX_HOPS, deadline)
    with spoke_errors(state.settings):
        comparison = classify_given_path(
            compare, list(body.concepts), graph, build_id=None if build is None else build.build_id,
            mongo_db=state.mongo_db, evidence=body.evidence,
        )  # fmt: skip
    return _answer(state, body.graph, comparison, compare)


def compare_pair(
    state: ServiceState, source: str, target: str, hops: int, scope: str, scenario4_max_hops: int, deadline: float
) -> dict:
    """The literature path of a pair on graph ``scope`` of the served build, classified."""
    # A graph whose distances belong to another graph answers nothing, whatever the pair.
    graph = state.require_build().require_fresh(scope)
    compare = comparator(state, hops, scenario4_max_hops, deadline)
    with spoke_errors(state.settings):
        comparison = classify_pair(compare, graph, source, target, mongo_db=state.mongo_db)
    return _answer(state, scope, comparison, compare)


def read_report(state: ServiceState) -> str:
    """The served build's comparison report. Only that file: a report of another build would
    answer for a build the service does not serve (the workflow writes it by a rename, so it is
    never read half-written)."""
    layout = BuildLayout(state.require_build().build_dir)
    try:
        return layout.compare.report.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not layout.record.exists():
            raise NoReport("the served build's folder is gone (removed by litpath builds rm or prune)") from None
        raise NoReport("the served build has no comparison report (compare.enabled in its config)") from None
