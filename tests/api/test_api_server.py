"""The path service as a real uvicorn process on loopback, started by `serve` (litpath serve)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra
from support.build_fixture import make_build
from support.serving import ServiceDidNotStart, running_service

from pipeline.runtime.process import free_port

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory):
    return make_build(tmp_path_factory.mktemp("results"), n_concepts=80, n_abstracts=60, seed=3)


@pytest.fixture(scope="module")
def server(fixture_build, tmp_path_factory):
    """``python -m services.api.commands`` (the `litpath serve` command) on a free loopback port."""
    log_path = tmp_path_factory.mktemp("log") / "serve.log"
    env = {"LITPATH_BATCH_CAP": "5", "LITPATH_API_KEY": "k3y"}
    try:
        with running_service(fixture_build.results_dir, log_path, env=env) as service:
            yield service.base, service.process
    except ServiceDidNotStart as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def http(server):
    base, _ = server
    with httpx.Client(base_url=base, headers={"X-API-Key": "k3y"}, timeout=10) as client:
        yield client


def test_serve_binds_loopback_only(server):
    base, process = server
    assert base.startswith("http://127.0.0.1:") and process.poll() is None
    out = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    port = base.rsplit(":", 1)[1]
    listening = [line for line in out.splitlines() if f":{port} " in line]
    assert listening and all("127.0.0.1:" in line for line in listening)


def test_health_ok_over_http(server):
    base, _ = server
    response = httpx.get(f"{base}/v1/health")  # no key needed
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_ready_ok_over_http(http, fixture_build):
    response = http.get("/v1/ready")
    assert response.status_code == 200 and response.json()["build_id"] == fixture_build.build_id


def test_ready_without_key_401_over_http(server):
    base, _ = server
    response = httpx.get(f"{base}/v1/ready")
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"


def test_concepts_ok_over_http(http):
    assert http.get("/v1/concepts", params={"q": "C0000010"}).json()["items"][0]["cui"] == "C0000010"
    assert http.get("/v1/concepts/C0000010").status_code == 200
    assert http.get("/v1/concepts/C0999999").json()["error"]["code"] == "unknown_key"


def test_distance_ok_over_http(http):
    response = http.get("/v1/distance", params={"source": "C0000001", "target": "C0000002"})
    assert response.status_code == 200 and "reachable" in response.json()
    assert http.get("/v1/distance", params={"source": "C0000001", "target": "nope"}).status_code == 422


def test_path_unknown_404_over_http(http):
    response = http.get("/v1/path", params={"source": "C0000001", "target": "PMID:42"})
    assert response.status_code == 404 and "PMID:42" in response.json()["error"]["message"]


def test_paths_over_cap_422_over_http(http):
    pairs = [{"source": "C0000001", "target": "C0000002"}] * 6
    response = http.post("/v1/paths", json={"pairs": pairs})
    assert response.status_code == 422 and response.json()["error"]["detail"] == {"batch_cap": 5}


def test_neighbors_ok_over_http(http):
    response = http.get("/v1/neighbors/C0000001", params={"k": 4})
    assert response.status_code == 200 and len(response.json()["neighbors"]) <= 4


def test_path_concurrent_random_pairs_valid_over_http(server, fixture_build):
    """200 concurrent requests: each path is a graph path whose cost equals scipy's distance."""
    base, _ = server
    keys, adjacency = fixture_build.keys, fixture_build.adjacency
    reference = dijkstra(adjacency.to_scipy(), directed=True)
    rng = np.random.default_rng(9)
    pairs = rng.integers(0, len(keys), size=(200, 2))

    async def fetch_all():
        limits = httpx.Limits(max_connections=16)
        async with httpx.AsyncClient(
            base_url=base, headers={"X-API-Key": "k3y"}, limits=limits, timeout=30
        ) as client:
            return await asyncio.gather(
                *(client.get("/v1/path", params={"source": keys[s], "target": keys[t]}) for s, t in pairs)
            )

    responses = asyncio.run(fetch_all())
    for (s, t), response in zip(pairs, responses, strict=True):
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["reachable"] == bool(np.isfinite(reference[s, t]))
        if body["reachable"]:
            path = [v["vid"] for v in body["vertices"]]
            assert path[0] == s and path[-1] == t
            total = sum(adjacency.edge_cost(u, v) for u, v in zip(path, path[1:], strict=False))
            assert total == pytest.approx(reference[s, t], rel=1e-5, abs=1e-6)


def test_serve_refuses_a_rebound_host_header_over_http(server):
    """On loopback, `litpath serve` answers only loopback Host names (DNS rebinding)."""
    base, _ = server
    response = httpx.get(f"{base}/v1/health", headers={"Host": "attacker.example"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_host"
    assert httpx.get(base.replace("127.0.0.1", "localhost") + "/v1/health").status_code == 200


def test_serve_beyond_loopback_needs_an_api_key(fixture_build):
    env = {k: v for k, v in os.environ.items() if k not in ("LITPATH_API_KEY", "LITPATH_HOST")}
    cmd = [sys.executable, "-m", "services.api.commands", "--host", "0.0.0.0", "--port", str(free_port()),
           "--results-dir", str(fixture_build.results_dir)]  # fmt: skip
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "set LITPATH_API_KEY" in done.stderr
