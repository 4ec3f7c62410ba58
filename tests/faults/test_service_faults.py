"""The service under faults: a damaged distances.bp is never served; Neo4j going away and
coming back flips /v1/ready to 503 and back to 200 without restarting the service."""

from __future__ import annotations

import os
import time

import pytest
from fastapi.testclient import TestClient
from support.build_fixture import make_build

from services.api.main import create_app
from services.api.settings import Settings
from services.local.servers import Neo4jServer

pytestmark = pytest.mark.faults


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    return error


@pytest.fixture
def build(tmp_path):
    return make_build(tmp_path / "results", n_concepts=120, n_abstracts=80, seed=5, block_size=64)


def test_ready_truncated_distances_503(build):
    data = build.build_dir / "distances.bp" / "data.0"
    os.truncate(data, data.stat().st_size - 4096)
    with TestClient(create_app(Settings(results_dir=build.results_dir))) as client:
        assert client.get("/v1/health").status_code == 200
        error = _error(client.get("/v1/ready"), 503, "not_ready")
        assert "DistancesCorrupt" in error["message"] and "truncated" in error["message"]
        query = _error(client.get("/v1/distance?source=C0000001&target=C0000002"), 503, "build_unavailable")
        assert "truncated" in query["message"]


def test_ready_missing_metadata_503(build):
    (build.build_dir / "distances.bp" / "md.idx").write_bytes(b"")
    with TestClient(create_app(Settings(results_dir=build.results_dir))) as client:
        error = _error(client.get("/v1/ready"), 503, "not_ready")
        assert "BP5 file md.idx is missing or empty" in error["message"]
        _error(client.get("/v1/distance?source=C0000001&target=C0000002"), 503, "build_unavailable")


def test_ready_truncated_metadata_503(build):
    # A BP5 metadata file cut to a third makes ADIOS2 2.12 segfault instead of raising: the
    # probe in a child process must catch it, or this test process dies with it.
    meta = build.build_dir / "distances.bp" / "mmd.0"
    os.truncate(meta, meta.stat().st_size // 3)
    with TestClient(create_app(Settings(results_dir=build.results_dir))) as client:
        assert client.get("/v1/health").status_code == 200
        error = _error(client.get("/v1/ready"), 503, "not_ready")
        assert "truncated or damaged" in error["message"], error
        _error(client.get("/v1/distance?source=C0000001&target=C0000002"), 503, "build_unavailable")


def test_ready_truncated_graph_metadata_503(build):
    meta = build.build_dir / "graph" / "graph.bp" / "mmd.0"
    os.truncate(meta, meta.stat().st_size // 3)
    with TestClient(create_app(Settings(results_dir=build.results_dir))) as client:
        error = _error(client.get("/v1/ready"), 503, "not_ready")
        assert "GraphCorrupt" in error["message"] and "truncated or damaged" in error["message"], error


def test_ready_unfinished_solve_503(build):
    (build.build_dir / "distances.bp.partial").mkdir()
    with TestClient(create_app(Settings(results_dir=build.results_dir))) as client:
        error = _error(client.get("/v1/ready"), 503, "not_ready")
        assert "distances.bp.partial exists" in error["message"]


def test_intact_distances_are_served(build):
    from scipy.sparse.csgraph import dijkstra

    reference = dijkstra(build.adjacency.to_scipy(), directed=True, indices=[0])[0]
    target = next(t for t in range(1, build.n_concepts) if 0 < reference[t] < float("inf"))
    with TestClient(create_app(Settings(results_dir=build.results_dir))) as client:
        assert client.get("/v1/ready").status_code == 200
        response = client.get("/v1/distance", params={"source": build.keys[0], "target": build.keys[target]})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["reachable"] is True and body["distances"] == "stored"
        assert body["distance"] == pytest.approx(reference[target], rel=1e-5)


@pytest.mark.servers
def test_ready_neo4j_down_then_back_without_restart(build, tmp_path):
    server = Neo4jServer(tmp_path / "neo4j")  # our own: this test stops it
    server.start(timeout=180)
    try:
        settings = Settings(
            results_dir=build.results_dir,
            neo4j_uri=server.uri,
            neo4j_password=server.password,
            db_timeout_ms=1000,
        )
        with TestClient(create_app(settings)) as client:
            ready = client.get("/v1/ready")
            assert ready.status_code == 200, ready.text
            assert ready.json()["checks"]["neo4j"]["ok"] is True

            server.stop()
            error = _error(client.get("/v1/ready"), 503, "not_ready")
            assert error["detail"]["checks"]["neo4j"]["ok"] is False
            assert error["detail"]["checks"]["neo4j"]["message"].startswith("unreachable")
            assert "neo4j: unreachable" in error["message"]
            assert error["detail"]["checks"]["build"]["ok"] is True  # only the dependency is down
            assert server.uri not in error["message"]

            server.start(timeout=180)  # same port, same data
            deadline = time.monotonic() + 30
            while (ready := client.get("/v1/ready")).status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert ready.status_code == 200, ready.text
            assert ready.json()["checks"]["neo4j"]["ok"] is True
    finally:
        server.stop()
