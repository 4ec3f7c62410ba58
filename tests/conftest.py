"""Shared pytest fixtures.

Local servers and cluster: ``mongo_server``/``mongo_uri`` and ``neo4j_server``/``neo4j_uri`` start a real
MongoDB-wire server or Neo4j (see services/local/servers.py) in a temporary directory, once per
test session, and only when a test asks for them, so tests without servers pay nothing. They are
stopped when the session ends. Tests using them carry ``@pytest.mark.servers``. Both require a
password, as everywhere: ``mongo_uri`` carries it; Neo4j's is ``neo4j_auth`` (the driver's
``auth=``), and ``neo4j_env`` gives the ``LITPATH_NEO4J_*`` variables a litpath command reads. ``slurm_cluster``
starts a real single-node Slurm cluster (services/local/slurm.py); it skips, saying how to install
Slurm, only where its daemons are missing. ``sample_results`` is a results folder holding the
bundled sample built by the real stages (``support.corpus_build``), once per session: read it,
never write into it (copy the build first).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.solve.apsp_fw import SolverError, build_solver, find_solver
from services.local.servers import MongoServer, Neo4jServer
from services.local.slurm import SlurmCluster, missing_daemons

SERVER_START_TIMEOUT_S = 180.0


@pytest.fixture(scope="session")
def sample_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.corpus_build import sample_build

    results = tmp_path_factory.mktemp("sample-results")
    sample_build(results)
    return results


@pytest.fixture(scope="session")
def mongo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MongoServer]:
    server = MongoServer(tmp_path_factory.mktemp("mongo-server"))
    server.start(timeout=SERVER_START_TIMEOUT_S)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mongo_uri(mongo_server: MongoServer) -> str:
    return mongo_server.uri


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jServer]:
    server = Neo4jServer(tmp_path_factory.mktemp("neo4j-server"))
    server.start(timeout=SERVER_START_TIMEOUT_S)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def neo4j_uri(neo4j_server: Neo4jServer) -> str:
    return neo4j_server.uri


@pytest.fixture(scope="session")
def neo4j_auth(neo4j_server: Neo4jServer) -> tuple[str, str]:
    return neo4j_server.auth


@pytest.fixture(scope="session")
def neo4j_env(neo4j_server: Neo4jServer) -> dict[str, str]:
    """LITPATH_NEO4J_URI, _USER and _PASSWORD of the session's Neo4j."""
    return neo4j_server.client_env()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running local Slurm cluster: node ``localhost``, partition ``debug``, this machine's CPUs."""
    missing = missing_daemons()
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing): apt-get install -y slurm-wlm munge")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    cluster.start(timeout=60)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def apsp_fw() -> Path:
    """The apsp-fw binary ($LITPATH_APSP_FW or solver/build, built when missing)."""
    try:
        return find_solver()
    except SolverError:
        return build_solver()
