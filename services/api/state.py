"""The heavy handles of one served build, opened once in the app's lifespan.

A build is served only as a whole: its distances must carry the graph digest of the graph
the paths are walked on. A build that fails to load, or whose digests disagree, leaves the
service up (``/v1/health`` answers) with ``/v1/ready`` at 503 and every distance query
refused with the reason -- never an answer from mismatched artifacts.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from pipeline.graphs import Graph, open_graph
from pipeline.paths import Tolerance
from services.api.errors import BuildUnavailable, UnknownKey
from services.api.settings import Settings

log = logging.getLogger("litpath.api")


def resolve_build_dir(settings: Settings) -> Path:
    """The build folder to serve: ``<results>/latest`` or ``<results>/builds/<id>``, complete only."""
    results = Path(settings.results_dir)
    if settings.build == "latest":
        latest = results / "latest"
        if not latest.exists():
            raise FileNotFoundError(f"no complete build: {latest} does not exist")
        build_dir = latest.resolve()
    else:
        build_dir = (results / "builds" / settings.build).resolve()
        if not build_dir.is_dir():
            raise FileNotFoundError(f"build {settings.build!r} not found under {results / 'builds'}")
    if not (build_dir / "build.json").exists():
        raise FileNotFoundError(f"build {build_dir.name} is incomplete (no build.json)")
    return build_dir


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


@dataclass
class LoadedBuild:
    """A served build: its graphs (``full`` and ``cooccurrence``, see :mod:`pipeline.graphs`) and
    the concept index. A graph that failed to open is in ``graph_errors`` with the reason."""

    build_id: str
    build_dir: Path
    graphs: dict[str, Graph]
    concepts: ConceptIndex
    tolerance: Tolerance
    graph_errors: dict[str, str] = field(default_factory=dict)

    def graph(self, scope: str = "full") -> Graph:
        found = self.graphs.get(scope)
        if found is None:
            reason = self.graph_errors.get(scope, "not in this build")
            raise BuildUnavailable(f"build {self.build_id} cannot answer on the {scope} graph: {reason}")
        return found

    @property
    def full(self) -> Graph:
        return self.graph("full")

    # The full graph's fields, for callers that ask the build directly.
    @property
    def n(self) -> int:
        return self.full.n

    @property
    def adjacency(self):
        return self.full.adjacency

    @property
    def vid_of(self) -> dict[str, int]:
        return self.full.vid_of

    @property
    def stale_reason(self) -> str | None:
        return self.full.stale_reason

    @property
    def graph_digest(self) -> str | None:
        return self.full.graph_digest

    def vid(self, key: str, scope: str = "full") -> int:
        vid = self.graph(scope).vid_of.get(key)
        if vid is None:
            raise UnknownKey(key, f"concept or document of the {scope} graph")
        return vid

    def require_fresh(self, scope: str = "full") -> None:
        graph = self.graph(scope)
        if graph.stale_reason:
            raise BuildUnavailable(
                f"build {self.build_id} cannot answer distance queries on the {scope} graph: {graph.stale_reason}"
            )

    def close(self) -> None:
        for graph in self.graphs.values():
            graph.close()


def load_build(settings: Settings) -> LoadedBuild:
    """Open the configured build's graphs; raises with a clear message when the full graph fails.

    The co-occurrence graph is optional (builds made before it existed have none): when it
    fails to open, the reason is kept and queries on it answer 503 with it.
    """
    build_dir = resolve_build_dir(settings)
    record = json.loads((build_dir / "build.json").read_text())
    build_id = str(record.get("build_id") or build_dir.name)
    tolerance = Tolerance(rtol=settings.rtol, atol=settings.atol)
    graphs: dict[str, Graph] = {"full": open_graph(build_dir, "full", tolerance, build_id=build_id)}
    errors: dict[str, str] = {}
    try:
        graphs["cooccurrence"] = open_graph(build_dir, "cooccurrence", tolerance, build_id=build_id)
    except Exception as exc:  # noqa: BLE001 -- the reason is served with every query on that graph
        errors["cooccurrence"] = f"{type(exc).__name__}: {exc}"
    full = graphs["full"]
    keys, names, is_concept, vid_of = full.keys, full.names, full.is_concept, full.vid_of
    concepts_path = build_dir / "tables" / "concepts.parquet"
    if concepts_path.exists():
        table = pq.read_table(concepts_path, columns=["cui", "name", "semtypes"])
        cuis, cnames, semtypes = (table.column(c).to_pylist() for c in ("cui", "name", "semtypes"))
        known = set(cuis)
        for i in np.flatnonzero(is_concept):  # graph concepts missing from the table still searchable
            if keys[i] not in known:
                cuis.append(keys[i]), cnames.append(names[i]), semtypes.append([])
    else:
        idx = np.flatnonzero(is_concept)
        cuis, cnames, semtypes = [keys[i] for i in idx], [names[i] for i in idx], [[] for _ in idx]
    concept_vids = {c: vid_of[c] for c in cuis if c in vid_of and is_concept[vid_of[c]]}
    return LoadedBuild(
        build_id=build_id,
        build_dir=build_dir,
        graphs=graphs,
        concepts=ConceptIndex(cuis, cnames, semtypes, concept_vids),
        tolerance=tolerance,
        graph_errors=errors,
    )


@dataclass
class ServiceState:
    """Everything the routers need; ``build`` is None when loading failed (``load_error`` says why).

    ``pools`` are the bounded thread pools blocking work runs in (services/api/deps.py,
    run_bounded): ``compute`` (paths, distances, searches, reports), ``compare`` (SPOKE
    comparisons, ``compare_concurrency`` at once) and ``probe`` (readiness checks, so a busy
    service still answers /v1/ready).
    """

    settings: Settings
    build: LoadedBuild | None = None
    load_error: str | None = None
    mongo: object | None = None  # pymongo.MongoClient
    neo4j: object | None = None  # neo4j.Driver
    extras: dict = field(default_factory=dict)
    pools: dict[str, ThreadPoolExecutor] = field(default_factory=dict)

    def require_build(self) -> LoadedBuild:
        if self.build is None:
            raise BuildUnavailable(f"no build loaded: {self.load_error}")
        return self.build

    @property
    def mongo_db(self):
        return None if self.mongo is None else self.mongo[self.settings.mongo_database]


def open_state(settings: Settings) -> ServiceState:
    state = ServiceState(settings)
    state.pools = {
        name: ThreadPoolExecutor(size, thread_name_prefix=f"litpath-{name}")
        for name, size in (
            ("compute", settings.compute_threads),
            ("compare", settings.compare_concurrency),
            ("probe", 2),
        )
    }
    try:
        state.build = load_build(settings)
        if state.build.stale_reason:
            log.error("build %s is stale: %s", state.build.build_id, state.build.stale_reason)
        else:
            log.info(
                "serving build %s: %s", state.build.build_id,
                "; ".join(f"{g.scope} graph {g.n} vertices, distances {g.method}" for g in state.build.graphs.values()),
            )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 -- the reason is served by /v1/ready
        state.load_error = f"{type(exc).__name__}: {exc}"
        log.error("no build loaded: %s", state.load_error)
    timeout = settings.db_timeout_ms
    if settings.mongo_uri is not None:
        from pymongo import MongoClient

        state.mongo = MongoClient(
            settings.mongo_uri.get_secret_value(),
            serverSelectionTimeoutMS=timeout,
            connectTimeoutMS=timeout,
            socketTimeoutMS=timeout,
            appname="litpath-api",
        )
    if settings.neo4j_uri is not None:
        from neo4j import GraphDatabase

        auth = None
        if settings.neo4j_password is not None:
            auth = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
        state.neo4j = GraphDatabase.driver(
            settings.neo4j_uri.get_secret_value(),
            auth=auth,
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
