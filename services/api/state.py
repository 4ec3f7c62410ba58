"""The heavy handles of one served build, opened once in the app's lifespan.

A build is served only as a whole: its distances must carry the graph digest of the graph
the paths are walked on. The build is opened by :func:`pipeline.query.build.open_build`, as
the comparison opens it, with mismatched distances marked stale: a build that fails to load,
or whose digests disagree, leaves the service up (``/v1/health`` answers) with ``/v1/ready``
at 503 and every distance query refused with the reason -- never an answer from mismatched
artifacts. The reasons clients see name no server path (:func:`services.api.errors.client_safe`);
the service log has the full ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.query import sssp
from pipeline.query.alternatives import SemanticTypes
from pipeline.query.build import Build, GraphUnavailable, open_build, resolve_build_dir
from pipeline.query.graph import Graph, GraphStale
from pipeline.query.paths import Tolerance
from pipeline.store import evidence
from services.api.errors import BuildUnavailable, client_safe
from services.api.pools import WorkerPool
from services.api.settings import Settings

log = logging.getLogger("litpath.api")


class ConceptIndex:
    """Concepts by CUI and a case-insensitive name search (exact, then prefix, then substring)."""

    def __init__(
        self, cuis: list[str], names: list[str | None], semtypes: list[list[str]], vid_of: dict[str, int]
    ):
        order = np.argsort(np.array([(n or "").lower() for n in names], dtype=object), kind="stable")
        self.cuis = [cuis[i] for i in order]
        self.names = [names[i] for i in order]
        self.semtypes = [list(semtypes[i] or []) for i in order]
        self.position = {cui: i for i, cui in enumerate(self.cuis)}
        self._lower = pd.Series([(n or "").lower() for n in self.names], dtype=object)
        self._vid_of = vid_of

    def __len__(self) -> int:
        return len(self.cuis)

    def record(self, i: int) -> dict:
        vid = self._vid_of.get(self.cuis[i])
        return {
            "cui": self.cuis[i],
            "name": self.names[i],
            "semtypes": self.semtypes[i],
            "vid": vid,
            "in_graph": vid is not None,
        }

    def get(self, cui: str) -> dict | None:
        i = self.position.get(cui)
        return None if i is None else self.record(i)

    def search(self, query: str | None, limit: int, offset: int) -> tuple[list[dict], int]:
        """One page of matches and the total number of matches (all concepts when no query)."""
        if not query:
            total = len(self.cuis)
            return [self.record(i) for i in range(offset, min(offset + limit, total))], total
        q = query.strip().lower()
        exact_cui = self.position.get(query.strip().upper())
        contains = self._lower.str.contains(q, regex=False).to_numpy()
        hits = np.flatnonzero(contains)
        rank = np.where(self._lower.to_numpy()[hits] == q, 0, 1)
        rank = np.where(
            (rank == 1) & self._lower.iloc[hits].str.startswith(q).to_numpy(), 1, np.where(rank == 0, 0, 2)
        )
        ordered = hits[np.lexsort((hits, rank))].tolist()
        if exact_cui is not None:
            ordered = [exact_cui] + [i for i in ordered if i != exact_cui]
        total = len(ordered)
        return [self.record(i) for i in ordered[offset : offset + limit]], total


def concept_index(build: Build) -> ConceptIndex:
    """The concepts table's concepts, and the full graph's concepts missing from it (still
    searchable), each with its vertex id when it is a concept vertex of the full graph."""
    full = build.graph("full")
    keys, names, is_concept, vid_of = full.keys, full.names, full.is_concept, full.vid_of
    table = build.concepts()
    if table is not None:
        cuis, cnames, semtypes = list(table.cuis), list(table.names), list(table.semtypes)
        known = set(cuis)
        for i in np.flatnonzero(is_concept):
            if keys[i] not in known:
                cuis.append(keys[i]), cnames.append(names[i]), semtypes.append([])
    else:
        idx = np.flatnonzero(is_concept)
        cuis, cnames, semtypes = [keys[i] for i in idx], [names[i] for i in idx], [[] for _ in idx]
    concept_vids = {c: vid_of[c] for c in cuis if c in vid_of and is_concept[vid_of[c]]}
    return ConceptIndex(cuis, cnames, semtypes, concept_vids)


@dataclass
class ServedBuild:
    """The served build (:class:`pipeline.query.build.Build`: its ``full`` and ``cooccurrence``
    graphs) with the service's concept index; its errors are the API's (503 with the reason)."""

    build: Build
    concepts: ConceptIndex
    _semantic_types: dict[str, SemanticTypes] = field(default_factory=dict, repr=False)

    @property
    def build_id(self) -> str:
        return self.build.build_id

    @property
    def build_dir(self) -> Path:
        return self.build.build_dir

    @property
    def graphs(self) -> dict[str, Graph]:
        return self.build.graphs

    @property
    def graph_errors(self) -> dict[str, str]:
        """Why a graph did not open, by scope (the co-occurrence graph is optional), as clients
        may read it: no server path."""
        return {scope: client_safe(reason) for scope, reason in self.build.graph_errors.items()}

    def graph(self, scope: str = "full") -> Graph:
        try:
            return self.build.graph(scope)
        except GraphUnavailable as exc:
            raise BuildUnavailable(client_safe(str(exc))) from None

    def require_fresh(self, scope: str = "full") -> Graph:
        """The graph, when its stored distances belong to it; else 503 with the reason."""
        graph = self.graph(scope)
        try:
            graph.require_fresh()
        except GraphStale as exc:
            raise BuildUnavailable(str(exc)) from None
        return graph

    def semantic_types(self, scope: str = "full") -> SemanticTypes:
        """The semantic types of graph ``scope``'s concept vertices, for the type filters of
        GET /v1/path (made on first use; two threads making it at once make the same thing)."""
        found = self._semantic_types.get(scope)
        if found is None:
            by_cui = dict(zip(self.concepts.cuis, self.concepts.semtypes, strict=True))
            found = self._semantic_types[scope] = SemanticTypes(self.graph(scope), by_cui)
        return found

    def close(self) -> None:
        self.build.close()


def open_served_build(settings: Settings) -> ServedBuild:
    """Open the configured build; raises with a clear message when the full graph fails.

    The co-occurrence graph is optional (builds made before it existed have none): when it
    fails to open, the reason is kept and queries on it answer 503 with it. Distances of
    another graph mark their graph stale rather than failing the load.
    """
    build = open_build(
        resolve_build_dir(settings.results_dir, settings.build),
        on_mismatch="mark_stale",
        optional=("cooccurrence",),
        tolerance=Tolerance(rtol=settings.rtol, atol=settings.atol),
    )
    try:
        return ServedBuild(build, concept_index(build))
    except BaseException:
        build.close()
        raise


@dataclass
class ServiceState:
    """Everything the routers need; ``build`` is None when loading failed (``load_error`` says why).

    ``pools`` are the bounded thread pools blocking work runs in (services/api/deps.py,
    run_bounded): ``compute`` (paths, distances, searches, reports), ``compare`` (SPOKE
    comparisons, ``compare_concurrency`` at once) and ``probe`` (readiness checks, so a busy
    service still answers /v1/ready). The threads of the first two search the graph; each frees
    its search memory after ``workspace_idle_s`` without work (services/api/pools.py).
    ``load_error`` is what clients are told (no server path).
    """

    settings: Settings
    build: ServedBuild | None = None
    load_error: str | None = None
    mongo: object | None = None  # pymongo.MongoClient
    neo4j: object | None = None  # neo4j.Driver
    extras: dict = field(default_factory=dict)
    pools: dict[str, WorkerPool] = field(default_factory=dict)

    def require_build(self) -> ServedBuild:
        if self.build is None:
            raise BuildUnavailable(f"no build loaded: {self.load_error}")
        return self.build

    @property
    def mongo_db(self):
        return None if self.mongo is None else self.mongo[self.settings.mongo_database]


def open_state(settings: Settings) -> ServiceState:
    state = ServiceState(settings)
    # Searches share at most search_workspaces workspaces (settings.py has the memory formula);
    # a pool thread idle workspace_idle_s frees those unused as long.
    sssp.set_workspace_limit(settings.workspaces())
    searching = {
        "idle_s": settings.workspace_idle_s,
        "on_idle": lambda: sssp.release_idle_workspaces(settings.workspace_idle_s),
    }
    state.pools = {
        "compute": WorkerPool(settings.compute_threads, "litpath-compute", **searching),
        "compare": WorkerPool(settings.compare_concurrency, "litpath-compare", **searching),
        "probe": WorkerPool(2, "litpath-probe"),
    }
    evidence.set_recheck_interval(settings.evidence_recheck_s)
    try:
        state.build = open_served_build(settings)
        for scope, reason in state.build.build.graph_errors.items():
            log.warning("build %s: no %s graph: %s", state.build.build_id, scope, reason)
        stale = state.build.build.stale
        if stale:
            reasons = "; ".join(f"{scope} graph: {reason}" for scope, reason in stale.items())
            log.error("build %s is stale: %s", state.build.build_id, reasons)
        else:
            log.info(
                "serving build %s: %s", state.build.build_id,
                "; ".join(f"{g.scope} graph {g.n} vertices, distances {g.method}" for g in state.build.graphs.values()),
            )  # fmt: skip
        for graph in state.build.graphs.values():
            if graph.path_index is None:  # slower on-demand answers, never other ones
                log.warning(
                    "build %s, %s graph: no path index (%s); its on-demand searches run without it",
                    state.build.build_id, graph.scope, graph.path_index_reason,
                )  # fmt: skip
            else:
                log.info(
                    "build %s, %s graph: path index of %d hub rows, %d arcs", state.build.build_id, graph.scope,
                    graph.path_index.rows, graph.path_index.arcs,
                )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 -- the reason is served by /v1/ready
        reason = f"{type(exc).__name__}: {exc}"
        log.error("no build loaded: %s", reason)
        state.load_error = f"{client_safe(reason)} (the service log has the details)"
    timeout = settings.db_timeout_ms
    if settings.mongo_uri is not None:
        from pipeline.store.mongo import connect

        state.mongo = connect(settings.mongo_uri.get_secret_value(), timeout_ms=timeout, app="litpath-api")
    if settings.neo4j_uri is not None:
        from pipeline.store.neo4j import Neo4jSettings, connect

        password = settings.neo4j_password
        neo4j_settings = Neo4jSettings(
            uri=settings.neo4j_uri.get_secret_value(),
            user=settings.neo4j_user if password is not None else None,  # no auth without a password
            password=None if password is None else password.get_secret_value(),
        )
        # Not verified: the service starts whether Neo4j is up or not, and /v1/ready says which.
        state.neo4j = connect(
            neo4j_settings,
            verify=False,
            connection_timeout=timeout / 1000,
            # Retries of a managed transaction stop with the request (the default retries for 30 s).
            max_transaction_retry_time=settings.request_timeout_s,
        )
    return state


def close_state(state: ServiceState) -> None:
    for pool in state.pools.values():
        pool.shutdown(wait=False, cancel_futures=True)
    if state.build is not None:
        state.build.close()
    if state.mongo is not None:
        state.mongo.close()
    if state.neo4j is not None:
        state.neo4j.close()
