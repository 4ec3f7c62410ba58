"""Service settings: environment variables ``LITPATH_*`` (or a ``.env`` file), read once."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

BUILD_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# Hard ceilings of the runtime caps below: pydantic checks these before a handler runs, and the
# published OpenAPI states the configured caps (services/api/main.py, _runtime_bounds).
MAX_BATCH_CAP = 10_000
MAX_PAGE_CAP = 10_000
MAX_ALTERNATIVES = 100


class Settings(BaseSettings):
    """What the service serves and its limits. Nothing here is ever taken from a request."""

    model_config = SettingsConfigDict(env_prefix="LITPATH_", env_file=None, extra="ignore")

    results_dir: Path = Field(Path("results"), description="Folder holding builds/<build_id>/ and latest")
    build: str = Field("latest", description="Build id to serve, or 'latest' (the latest complete build)")
    mongo_uri: SecretStr | None = Field(None, description="MongoDB URI of the evidence store; off when unset")
    mongo_database: str = Field("litpath", description="MongoDB database name")
    neo4j_uri: SecretStr | None = Field(None, description="Neo4j Bolt URI; checked by /v1/ready when set")
    neo4j_user: str = Field("neo4j", description="Neo4j user (used only with a password)")
    neo4j_password: SecretStr | None = Field(None, description="Neo4j password; no auth when unset")
    api_key: SecretStr | None = Field(None, description="When set, /v1 requests need header X-API-Key")
    batch_cap: int = Field(100, ge=1, le=MAX_BATCH_CAP, description="Most pairs in one POST /v1/paths")
    page_cap: int = Field(
        100, ge=1, le=MAX_PAGE_CAP, description="Largest limit= (concept search) and k= (neighbours)"
    )
    max_alternatives: int = Field(
        10,
        ge=1,
        le=MAX_ALTERNATIVES,
        description="Largest k= of GET /v1/path (the k shortest loopless paths: Yen's algorithm runs about "
        "k x path length searches)",
    )
    # 25 ms: on the calibrated 30M build's full graph (4.6M vertices) the count took 28 ms at the
    # median and 272 ms at p99 against 1.3 / 9.8 ms for the path itself (docs/design.md §9), so a
    # longer default would make every plain path answer an order of magnitude slower.
    tie_count_s: float = Field(
        0.025,
        gt=0,
        description="Longest a path answer's count of shortest-path ties may take, seconds (within the "
        "request's deadline); past it the answer's ties are null. Raise it for a count on every answer "
        "of a large graph, at that cost per answer",
    )
    max_body_bytes: int = Field(
        262_144,
        ge=1024,
        le=64 << 20,
        description="Largest request body, bytes (413 beyond it, before the body is read or parsed)",
    )
    request_timeout_s: float = Field(
        10.0, gt=0, description="Per-request deadline, seconds: 504 past it, and on-demand searches stop at it"
    )
    # Memory of the pools below.
    # On-demand searches run in workspaces that the library keeps between requests and shares
    # between the threads (pipeline/query/sssp.py): at most search_workspaces of them, each up to
    # 48 bytes a vertex of the largest graph searched (two searches of 8-byte distance, parent and
    # reached entries) plus 16 bytes a queued heap entry; an indexed search reaches a few thousand
    # vertices and touches a few pages of it, a search that explores a whole component all of it.
    # So, at n vertices, the service holds
    #     the graphs (12 bytes an arc, 8 a vertex) + their path indexes (8 bytes an indexed arc)
    #     + 8 bytes an edge (the float64 weights) + the vertex tables (keys and names: about
    #     350 bytes a vertex) + search_workspaces x 64 B x n + the stored distance rows last
    #     read, where a graph's distances are stored (at most 256 MiB a graph,
    #     pipeline.query.graph.ROW_CACHE_BYTES)
    # and `litpath serve --workers N` multiplies everything. search_workspaces defaults to the
    # CPUs (searches beyond them only queue for the cores), at most the threads that search.
    # Measured on the 30M-predication graph (6.0M vertices, 168M arcs, and its co-occurrence
    # graph): 5.3 GiB once ready, 6.1 GiB at peak under wrk with 4 connections at the defaults
    # (bench/results/path_index.md).
    compute_threads: int = Field(
        8, ge=1, le=256, description="Worker threads for path, distance, search and report work"
    )
    compare_concurrency: int = Field(
        2, ge=1, le=64, description="SPOKE comparisons run at once (each holds Neo4j queries)"
    )
    search_workspaces: int | None = Field(
        None,
        ge=1,
        le=256,
        description="Search workspaces (O(n) bytes each) shared by the searching threads; a search that "
        "finds them all busy waits, until its request's deadline at most. Unset: this machine's CPUs, at most "
        "compute_threads + compare_concurrency",
    )
    workspace_idle_s: float = Field(
        60.0,
        ge=0,
        description="A search workspace unused this long is freed (up to 64 bytes a vertex), checked when "
        "a worker thread goes idle; 0 frees them after every request (each on-demand search then "
        "allocates one again)",
    )
    evidence_recheck_s: float = Field(
        300.0,
        gt=0,
        description="How long the evidence store's 'build loaded completely' is believed before it is "
        "read again (a dropped or restored store is noticed within this time)",
    )
    compare_mapping: Path | None = Field(
        None,
        description="CUI -> SPOKE mapping file of /v1/compare; when unset, the served build's "
        "mapping/ (BuildLayout.mapping)",
    )
    compare_allow_relationships: str = Field(
        "", description="Comma-separated SPOKE relationship types /v1/compare follows (empty: see the deny list)"
    )
    compare_deny_relationships: str = Field(
        "", description="Comma-separated SPOKE relationship types /v1/compare never follows (e.g. ENCODES_OeP)"
    )
    compare_obsolete_property: str = Field(
        "vestige", description="Node property marking obsolete SPOKE nodes, never compared; empty: none"
    )
    allowed_hosts: str = Field(
        "",
        description="Comma-separated Host header values the service answers (DNS-rebinding guard); "
        "empty or * = any. `litpath serve` on a loopback address defaults it to the loopback names",
    )
    db_timeout_ms: int = Field(2000, ge=50, description="Database connect/select/socket timeout, ms")
    rtol: float = Field(1e-5, ge=0, description="Relative float32 tolerance of the path walk")
    atol: float = Field(1e-6, ge=0, description="Absolute tolerance of the path walk")
    host: str = Field("127.0.0.1", description="Bind address of `litpath serve`")
    port: int = Field(8000, ge=1, le=65535, description="Port of `litpath serve`")

    def workspaces(self) -> int:
        """How many search workspaces may exist at once (search_workspaces, or its default)."""
        searching = self.compute_threads + self.compare_concurrency
        if self.search_workspaces is not None:
            return min(self.search_workspaces, searching)
        return max(1, min(os.cpu_count() or 1, searching))

    @field_validator("api_key", "mongo_uri", "neo4j_uri", "neo4j_password", "compare_mapping", mode="before")
    @classmethod
    def _empty_is_unset(cls, value):
        return None if value == "" else value

    @field_validator("build")
    @classmethod
    def _build_is_a_name(cls, value: str) -> str:
        if not BUILD_ID.match(value) or value in {".", ".."}:
            raise ValueError("build must be a build id (letters, digits, '.', '_', '-') or 'latest'")
        return value


@lru_cache
def get_settings() -> Settings:
    return Settings()
