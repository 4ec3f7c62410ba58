"""The heavy handles of one served build, opened once in the app's lifespan.

A build is served only as a whole: its distances must carry the graph digest of the graph
the paths are walked on. A build that fails to load, or whose digests disagree, leaves the
service up (``/v1/health`` answers) with ``/v1/ready`` at 503 and every distance query
refused with the reason -- never an answer from mismatched artifacts.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from pipeline.paths import Adjacency, Tolerance, adjacency_from_edges_parquet, adjacency_from_graph_bp
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
    build_id: str
    build_dir: Path
    adjacency: Adjacency
    distances: object  # pipeline.store.adios.DistanceMatrix
    keys: list[str]
    names: list[str | None]
    is_concept: np.ndarray  # bool[n]
    vid_of: dict[str, int]
    concepts: ConceptIndex
    graph_digest: str | None
    distances_digest: str | None
    tolerance: Tolerance
    stale_reason: str | None = None

    @property
    def n(self) -> int:
        return self.adjacency.n

    def vid(self, key: str) -> int:
        vid = self.vid_of.get(key)
        if vid is None:
            raise UnknownKey(key)
        return vid

    def require_fresh(self) -> None:
        if self.stale_reason:
            raise BuildUnavailable(
                f"build {self.build_id} cannot answer distance queries: {self.stale_reason}"
            )

    def close(self) -> None:
        self.distances.close()


def load_build(settings: Settings) -> LoadedBuild:
    """Open every artifact of the configured build; raises with a clear message on failure."""
    from pipeline.store.adios import DistanceMatrix

    build_dir = resolve_build_dir(settings)
    graph_dir = build_dir / "graph"
    vertices = pq.read_table(graph_dir / "vertices.parquet", columns=["vid", "kind", "key", "name"])
    vids = vertices.column("vid").to_numpy()
    n = len(vids)
    if not np.array_equal(vids, np.arange(n)):
        raise ValueError(f"{graph_dir / 'vertices.parquet'}: vid must be 0..n-1 in order")
    keys = vertices.column("key").to_pylist()
    names = vertices.column("name").to_pylist()
    is_concept = np.asarray(vertices.column("kind").to_pylist(), dtype=object) == "concept"

    edges_parquet = graph_dir / "edges.parquet"
    if (graph_dir / "graph.bp").exists():
        adjacency, graph_attrs = adjacency_from_graph_bp(graph_dir / "graph.bp", edges_parquet)
        graph_digest = graph_attrs.get("graph_digest")
    else:  # no graph.bp: walk the Parquet edges and digest them the way graph.bp would carry it
        from pipeline.graph.csr import graph_digest as digest_of
        from pipeline.graph.csr import kind_codes

        adjacency = adjacency_from_edges_parquet(edges_parquet, n)
        table = pq.read_table(edges_parquet, columns=["src", "dst", "kind", "cost"])
        graph_digest = digest_of(
            keys,
            table.column("src").to_numpy(),
            table.column("dst").to_numpy(),
            kind_codes(table.column("kind")),
            table.column("cost").to_numpy(),
        )
    if adjacency.n != n:
        raise ValueError(f"graph has {adjacency.n} vertices but vertices.parquet has {n}")

    distances = DistanceMatrix(build_dir / "distances.bp")
    distances_digest = distances.attributes.get("graph_digest")
    stale_reason = None
    if distances.n != n:
        stale_reason = f"distances.bp is {distances.n}x{distances.n} but the graph has {n} vertices"
    elif not graph_digest or distances_digest != graph_digest:
        stale_reason = (
            f"distances.bp graph digest {str(distances_digest)[:12]}... does not match the graph's "
            f"{str(graph_digest)[:12]}...: the distances were computed for another graph; re-run the solve stage"
        )

    vid_of = {key: i for i, key in enumerate(keys)}
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

    record = json.loads((build_dir / "build.json").read_text())
    return LoadedBuild(
        build_id=str(record.get("build_id") or build_dir.name),
        build_dir=build_dir,
        adjacency=adjacency,
        distances=distances,
        keys=keys,
        names=names,
        is_concept=is_concept.astype(bool),
        vid_of=vid_of,
        concepts=ConceptIndex(cuis, cnames, semtypes, concept_vids),
        graph_digest=graph_digest,
        distances_digest=distances_digest,
        tolerance=Tolerance(rtol=settings.rtol, atol=settings.atol),
        stale_reason=stale_reason,
    )


@dataclass
class ServiceState:
    """Everything the routers need; ``build`` is None when loading failed (``load_error`` says why)."""

    settings: Settings
    build: LoadedBuild | None = None
    load_error: str | None = None
    mongo: object | None = None  # pymongo.MongoClient
    neo4j: object | None = None  # neo4j.Driver
    extras: dict = field(default_factory=dict)

    def require_build(self) -> LoadedBuild:
        if self.build is None:
            raise BuildUnavailable(f"no build loaded: {self.load_error}")
        return self.build

    @property
    def mongo_db(self):
        return None if self.mongo is None else self.mongo[self.settings.mongo_database]


def open_state(settings: Settings) -> ServiceState:
    state = ServiceState(settings)
    try:
        state.build = load_build(settings)
        if state.build.stale_reason:
            log.error("build %s is stale: %s", state.build.build_id, state.build.stale_reason)
        else:
            log.info("serving build %s (%d vertices)", state.build.build_id, state.build.n)
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
            settings.neo4j_uri.get_secret_value(), auth=auth, connection_timeout=timeout / 1000
        )
    return state


def close_state(state: ServiceState) -> None:
    if state.build is not None:
        state.build.close()
    if state.mongo is not None:
        state.mongo.close()
    if state.neo4j is not None:
        state.neo4j.close()
