"""The /v1 path service through ``with TestClient(app)`` (lifespan included).

The build is a small random graph with every edge kind, zero-cost edges and isolated
vertices; its distances come from scipy (see build_fixture.py). Paths and distances are
checked against scipy.sparse.csgraph on the same graph.
"""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.sparse.csgraph import dijkstra
from support.build_fixture import make_build

from pipeline.compare.classify import SCENARIOS
from services.api.main import create_app
from services.api.models import Scenario
from services.api.settings import Settings

TOL_REL, TOL_ABS = 1e-5, 1e-6


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory):
    return make_build(tmp_path_factory.mktemp("results"), n_concepts=120, n_abstracts=80, seed=7)


@pytest.fixture(scope="module")
def reference(fixture_build):
    """float64 all-pairs distances from scipy, independent of distances.bp."""
    return dijkstra(fixture_build.adjacency.to_scipy(), directed=True)


@pytest.fixture(scope="module")
def client(fixture_build):
    app = create_app(Settings(results_dir=fixture_build.results_dir, batch_cap=8, page_cap=50))
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def stale_client(tmp_path_factory):
    results = tmp_path_factory.mktemp("stale")
    make_build(results, n_concepts=20, n_abstracts=10, stale=True)
    with TestClient(create_app(Settings(results_dir=results))) as test_client:
        yield test_client


def _assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "detail"}
    assert body["error"]["code"] == code
    return body["error"]


def _check_path(body: dict, fixture_build, reference) -> None:
    """Consecutive vertices are graph edges, hop costs sum to the stored distance, as scipy says."""
    adjacency, keys = fixture_build.adjacency, fixture_build.keys
    vid = {k: i for i, k in enumerate(keys)}
    s, t = vid[body["source"]], vid[body["target"]]
    expected = reference[s, t]
    assert body["reachable"] == bool(np.isfinite(expected))
    if not body["reachable"]:
        assert body["vertices"] == [] and body["hops"] == [] and body["stored_distance"] is None
        return
    path = [v["vid"] for v in body["vertices"]]
    assert path[0] == s and path[-1] == t and len(set(path)) == len(path)
    assert len(body["hops"]) == len(path) - 1
    total = 0.0
    for (u, v), hop in zip(zip(path, path[1:], strict=False), body["hops"], strict=True):
        assert (hop["from"], hop["to"]) == (keys[u], keys[v])
        assert hop["cost"] == pytest.approx(adjacency.edge_cost(u, v))  # raises if (u, v) is not an edge
        assert hop["weight"] == pytest.approx(np.exp(-hop["cost"]), rel=1e-5)
        total += hop["cost"]
    assert body["total_cost"] == pytest.approx(total, rel=1e-9)
    assert total == pytest.approx(body["stored_distance"], rel=TOL_REL, abs=TOL_ABS)
    assert total == pytest.approx(expected, rel=TOL_REL, abs=TOL_ABS)


# ------------------------------------------------------------------------------ health / ready


def test_health_ok(client):
    response = client.get("/v1/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_ready_ok(client, fixture_build):
    response = client.get("/v1/ready")
    assert response.status_code == 200
    body = response.json()
    assert body["ready"] is True and body["build_id"] == fixture_build.build_id
    assert body["checks"]["graph_full"]["ok"] and body["checks"]["graph_cooccurrence"]["ok"]
    assert "distances stored (dense)" in body["checks"]["graph_full"]["message"]


def test_ready_stale_build_503(stale_client):
    error = _assert_error(stale_client.get("/v1/ready"), 503, "not_ready")
    assert "computed for another graph" in error["message"]
    assert error["detail"]["checks"]["graph_full"]["ok"] is False


def test_ready_no_build_503(tmp_path):
    with TestClient(create_app(Settings(results_dir=tmp_path))) as test_client:
        assert test_client.get("/v1/health").status_code == 200
        error = _assert_error(test_client.get("/v1/ready"), 503, "not_ready")
        assert "no complete build" in error["message"]
        _assert_error(
            test_client.get("/v1/distance?source=C0000001&target=C0000002"), 503, "build_unavailable"
        )


def test_ready_incomplete_build_503(tmp_path):
    build = make_build(tmp_path, n_concepts=10, n_abstracts=5)
    (build.build_dir / "build.json").unlink()
    with TestClient(create_app(Settings(results_dir=tmp_path))) as test_client:
        error = _assert_error(test_client.get("/v1/ready"), 503, "not_ready")
        assert "incomplete" in error["message"]


def test_ready_unloadable_build_503_names_no_server_path(tmp_path, caplog):
    """Why the build did not load reaches every client (/v1/ready, every route's 503): the reason
    with file names, never where the server keeps them; the log has the full paths."""
    build = make_build(tmp_path, n_concepts=10, n_abstracts=5)
    (build.build_dir / "graph" / "graph.bp").rename(build.build_dir / "graph" / "moved.bp")
    with caplog.at_level("ERROR", logger="litpath.api"), TestClient(create_app(Settings(results_dir=tmp_path))) as api:
        ready = _assert_error(api.get("/v1/ready"), 503, "not_ready")
        query = _assert_error(api.get("/v1/distance?source=C0000001&target=C0000002"), 503, "build_unavailable")
    for text in (ready["message"], str(ready["detail"]), query["message"]):
        assert "graph.bp missing" in text and str(tmp_path) not in text, text
    assert str(build.build_dir / "graph" / "graph.bp") in caplog.text


def test_missing_cooccurrence_graph_503_names_no_server_path(tmp_path, caplog):
    build = make_build(tmp_path, n_concepts=10, n_abstracts=5)
    (build.build_dir / "cooccurrence" / "vertices.parquet").unlink()
    with caplog.at_level("WARNING", logger="litpath.api"), TestClient(create_app(Settings(results_dir=tmp_path))) as api:
        ready = _assert_error(api.get("/v1/ready"), 503, "not_ready")
        params = {"source": "C0000001", "target": "C0000002", "graph": "cooccurrence"}
        query = _assert_error(api.get("/v1/distance", params=params), 503, "build_unavailable")
        assert api.get("/v1/distance", params={**params, "graph": "full"}).status_code == 200
    for text in (ready["message"], str(ready["detail"]), query["message"]):
        assert "vertices.parquet missing" in text and str(tmp_path) not in text, text
    assert str(build.build_dir / "cooccurrence" / "vertices.parquet") in caplog.text


def test_client_safe_cuts_absolute_paths_to_their_names():
    from services.api.errors import client_safe

    assert client_safe("no complete build: /srv/results/latest does not exist") == (
        "no complete build: latest does not exist"
    )
    assert client_safe("distances.bp missing (/srv/r/builds/b/distances.bp)") == "distances.bp missing (distances.bp)"
    assert client_safe("[Errno 2] No such file or directory: '/srv/my results/x.bp'") == (
        "[Errno 2] No such file or directory: 'x.bp'"
    )
    assert client_safe("/srv/r/builds/b/distances.bp: truncated, ratio 1/2") == "distances.bp: truncated, ratio 1/2"


def test_ready_mongo_unreachable_503(fixture_build):
    settings = Settings(
        results_dir=fixture_build.results_dir, mongo_uri="mongodb://127.0.0.1:9/", db_timeout_ms=200
    )
    with TestClient(create_app(settings)) as test_client:
        error = _assert_error(test_client.get("/v1/ready"), 503, "not_ready")
        assert error["detail"]["checks"]["mongo"]["ok"] is False
        assert "127.0.0.1:9" not in error["message"]  # connection strings never leak


def test_ready_serves_named_build(fixture_build):
    settings = Settings(results_dir=fixture_build.results_dir, build=fixture_build.build_id)
    with TestClient(create_app(settings)) as test_client:
        assert test_client.get("/v1/ready").json()["build_id"] == fixture_build.build_id


def test_ready_unknown_named_build_503(fixture_build):
    settings = Settings(results_dir=fixture_build.results_dir, build="nosuchbuild")
    with TestClient(create_app(settings)) as test_client:
        _assert_error(test_client.get("/v1/ready"), 503, "not_ready")


def test_settings_build_rejects_paths():
    with pytest.raises(ValueError):
        Settings(build="../elsewhere")


# ------------------------------------------------------------------------------ concepts


def test_concepts_search_by_name(client, fixture_build):
    word = fixture_build.names[5].split()[0]
    concepts = zip(fixture_build.keys, fixture_build.names[: fixture_build.n_concepts], strict=False)
    expected = {key for key, name in concepts if word in name.lower()}
    assert "C0000005" in expected
    found, offset = [], 0
    while offset is not None:  # every page, whatever the number of matches
        response = client.get("/v1/concepts", params={"q": word.upper(), "limit": 50, "offset": offset})
        assert response.status_code == 200
        body = response.json()
        assert body["total"] == len(expected)
        assert all(word in item["name"].lower() for item in body["items"])
        found += [item["cui"] for item in body["items"]]
        offset = body["next_offset"]
    assert sorted(found) == sorted(expected)


def test_concepts_search_exact_name_first(client, fixture_build):
    response = client.get("/v1/concepts", params={"q": fixture_build.names[17]})
    assert response.status_code == 200
    assert response.json()["items"][0]["cui"] == "C0000017"


def test_concepts_search_by_cui(client):
    response = client.get("/v1/concepts", params={"q": "c0000042"})
    assert response.status_code == 200
    first = response.json()["items"][0]
    assert first["cui"] == "C0000042" and first["in_graph"] and first["vid"] == 42


def test_concepts_pagination(client, fixture_build):
    pages, offset = [], 0
    while offset is not None:
        body = client.get("/v1/concepts", params={"limit": 50, "offset": offset}).json()
        pages.extend(item["cui"] for item in body["items"])
        offset = body["next_offset"]
    assert sorted(pages) == fixture_build.keys[: fixture_build.n_concepts]


def test_concepts_limit_over_cap_422(client):
    error = _assert_error(client.get("/v1/concepts", params={"limit": 51}), 422, "invalid_request")
    assert error["detail"]["page_cap"] == 50


def test_concepts_negative_offset_422(client):
    _assert_error(client.get("/v1/concepts", params={"offset": -1}), 422, "invalid_request")


def test_concepts_get_ok(client, fixture_build):
    response = client.get("/v1/concepts/C0000003")
    assert response.status_code == 200
    assert response.json() == {
        "cui": "C0000003",
        "name": fixture_build.names[3],
        "semtypes": ["gngm", "aapp"],
        "vid": 3,
        "in_graph": True,
    }


def test_concepts_get_unknown_404(client):
    error = _assert_error(client.get("/v1/concepts/C9999999"), 404, "unknown_key")
    assert "C9999999" in error["message"]


def test_concepts_get_malformed_422(client):
    _assert_error(client.get("/v1/concepts/not-a-cui"), 422, "invalid_request")


# ------------------------------------------------------------------------------ distance


def test_distance_ok(client, fixture_build, reference):
    keys = fixture_build.keys
    s, t = next(
        (s, t)
        for s in range(fixture_build.n_concepts)
        for t in range(len(keys) - 1, fixture_build.n_concepts, -1)
        if np.isfinite(reference[s, t]) and reference[s, t] > 0
    )
    response = client.get("/v1/distance", params={"source": keys[s], "target": keys[t]})
    assert response.status_code == 200
    body = response.json()
    assert body["source"]["key"] == keys[s] and body["target"]["kind"] == "abstract"
    assert body["reachable"] is True
    assert body["distance"] == pytest.approx(reference[s, t], rel=TOL_REL, abs=TOL_ABS)


def test_distance_unreachable(client, fixture_build):
    response = client.get("/v1/distance", params={"source": "C0000001", "target": fixture_build.keys[-1]})
    assert response.status_code == 200
    assert response.json()["reachable"] is False and response.json()["distance"] is None


def test_distance_unknown_404(client):
    error = _assert_error(client.get("/v1/distance?source=C0000001&target=PMID:99999999"), 404, "unknown_key")
    assert "PMID:99999999" in error["message"]


def test_distance_malformed_422(client):
    error = _assert_error(
        client.get("/v1/distance?source=C0000001&target=../../etc/passwd"), 422, "invalid_request"
    )
    assert error["detail"][0]["field"] == "query.target"


def test_distance_missing_param_422(client):
    _assert_error(client.get("/v1/distance?source=C0000001"), 422, "invalid_request")


def test_distance_stale_build_503(stale_client):
    error = _assert_error(
        stale_client.get("/v1/distance?source=C0000001&target=C0000002"), 503, "build_unavailable"
    )
    assert "re-run the solve stage" in error["message"]


def test_distance_random_pairs_match_scipy(client, fixture_build, reference):
    """Property: stored distances over hundreds of random pairs equal scipy's on the same graph."""
    rng = np.random.default_rng(1)
    keys = fixture_build.keys
    for s, t in rng.integers(0, len(keys), size=(300, 2)):
        body = client.get("/v1/distance", params={"source": keys[s], "target": keys[t]}).json()
        if np.isfinite(reference[s, t]):
            assert body["distance"] == pytest.approx(reference[s, t], rel=TOL_REL, abs=TOL_ABS)
        else:
            assert body["reachable"] is False


# ------------------------------------------------------------------------------ path


def test_path_ok(client, fixture_build, reference):
    keys = fixture_build.keys
    response = client.get("/v1/path", params={"source": keys[0], "target": keys[130]})
    assert response.status_code == 200
    body = response.json()
    _check_path(body, fixture_build, reference)
    assert body["method"] == "walk" and body["build_id"] == fixture_build.build_id
    kinds = {hop["edge_kind"] for hop in body["hops"]}
    assert kinds <= {"concept_concept", "concept_abstract", "abstract_abstract"}


def test_path_hop_documents_by_edge_kind(client, fixture_build, reference):
    """Without an evidence store, concept-concept hops have documents null; others name the papers."""
    keys = fixture_build.keys
    concepts = set(keys[: fixture_build.n_concepts])
    seen = set()
    for t in range(100, 200, 3):
        body = client.get("/v1/path", params={"source": keys[2], "target": keys[t]}).json()
        for hop in body["hops"]:
            seen.add(hop["edge_kind"])
            if hop["edge_kind"] == "concept_concept":
                assert hop["documents"] is None
            elif hop["edge_kind"] == "concept_abstract":
                paper = hop["to"] if hop["from"] in concepts else hop["from"]
                assert hop["documents"] == [paper]
            else:
                assert hop["documents"] == [hop["from"], hop["to"]]
    assert {"concept_abstract", "abstract_abstract"} <= seen


def test_path_same_vertex(client):
    body = client.get("/v1/path", params={"source": "C0000004", "target": "C0000004"}).json()
    assert body["reachable"] and body["hops"] == [] and body["total_cost"] == 0.0


def test_path_unreachable_200(client, fixture_build):
    response = client.get("/v1/path", params={"source": "C0000001", "target": fixture_build.keys[-2]})
    assert response.status_code == 200
    body = response.json()
    assert body["reachable"] is False and body["vertices"] == [] and body["hops"] == []
    assert body["total_cost"] is None and body["stored_distance"] is None


def test_path_unknown_404(client):
    error = _assert_error(client.get("/v1/path?source=C1234567&target=C0000002"), 404, "unknown_key")
    assert error["detail"] == {"key": "C1234567"}


def test_path_malformed_422(client):
    _assert_error(client.get("/v1/path?source=C123&target=C0000002"), 422, "invalid_request")
    _assert_error(
        client.get("/v1/path?source=C0000001&target=C0000002&evidence=maybe"), 422, "invalid_request"
    )


def test_path_stale_build_503(stale_client):
    _assert_error(stale_client.get("/v1/path?source=C0000001&target=C0000002"), 503, "build_unavailable")


def test_path_random_pairs_valid(client, fixture_build, reference):
    """Every returned path on hundreds of random pairs is a graph path of the stored (= scipy) cost."""
    rng = np.random.default_rng(2)
    keys = fixture_build.keys
    reachable = 0
    for s, t in rng.integers(0, len(keys), size=(250, 2)):
        response = client.get("/v1/path", params={"source": keys[s], "target": keys[t], "evidence": "false"})
        assert response.status_code == 200
        _check_path(response.json(), fixture_build, reference)
        reachable += response.json()["reachable"]
    assert reachable > 150


def test_paths_timeout_504(fixture_build):
    """Blocking work (batches, evidence lookups, readiness probes) runs under the request deadline."""
    settings = Settings(results_dir=fixture_build.results_dir, request_timeout_s=1e-9)
    with TestClient(create_app(settings)) as test_client:
        pairs = [{"source": "C0000001", "target": "C0000002"}]
        _assert_error(test_client.post("/v1/paths", json={"pairs": pairs}), 504, "timeout")


# ------------------------------------------------------------------------------ paths (batch)


def test_paths_ok(client, fixture_build, reference):
    keys = fixture_build.keys
    pairs = [{"source": keys[i], "target": keys[-1 - i * 7]} for i in range(8)]
    response = client.post("/v1/paths", json={"pairs": pairs, "evidence": False})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["source"], r["target"]) for r in results] == [(p["source"], p["target"]) for p in pairs]
    for item in results:
        assert item["error"] is None
        _check_path(item["path"], fixture_build, reference)


def test_paths_unknown_item_error(client):
    pairs = [{"source": "C0000001", "target": "C0000002"}, {"source": "C0000001", "target": "C7777777"}]
    results = client.post("/v1/paths", json={"pairs": pairs}).json()["results"]
    assert results[0]["path"]["reachable"] in (True, False) and results[0]["error"] is None
    assert results[1]["path"] is None and results[1]["error"]["code"] == "unknown_key"
    assert "C7777777" in results[1]["error"]["message"]


def test_paths_over_cap_422(client):
    pairs = [{"source": "C0000001", "target": "C0000002"}] * 9
    error = _assert_error(client.post("/v1/paths", json={"pairs": pairs}), 422, "invalid_request")
    assert error["detail"] == {"batch_cap": 8}


def test_paths_empty_422(client):
    _assert_error(client.post("/v1/paths", json={"pairs": []}), 422, "invalid_request")


def test_paths_malformed_422(client):
    _assert_error(client.post("/v1/paths", json={"pairs": [{"source": "C0000001"}]}), 422, "invalid_request")
    _assert_error(client.post("/v1/paths", json={"pairs": [], "file": "/etc/passwd"}), 422, "invalid_request")
    bad_json = client.post("/v1/paths", content=b"{not json", headers={"content-type": "application/json"})
    _assert_error(bad_json, 422, "invalid_request")


def test_paths_evidence_must_be_a_boolean_422(client):
    """`"evidence": 0` is not a boolean: refused, as the schema says (strict types)."""
    pairs = [{"source": "C0000001", "target": "C0000002"}]
    for value in (0, 1, "true", None):
        error = _assert_error(
            client.post("/v1/paths", json={"pairs": pairs, "evidence": value}), 422, "invalid_request"
        )
        assert error["detail"][0]["field"] == "body.evidence"


def test_paths_body_not_utf8_is_the_one_422(client):
    """A body FastAPI cannot decode is a malformed request in the one error shape, not a bare 400."""
    response = client.post(
        "/v1/paths", content=b'{"pairs": "\xff\xfe"}', headers={"content-type": "application/json"}
    )
    _assert_error(response, 422, "invalid_request")


def test_paths_body_over_the_cap_413_before_it_is_read(fixture_build):
    """Refused from its Content-Length, or as a chunked body passes the cap; before the API key."""
    settings = Settings(results_dir=fixture_build.results_dir, max_body_bytes=2048, api_key="k")
    pair = {"source": "C0000001", "target": "C0000002"}
    body = ('{"pairs": [' + ",".join(['{"source": "C0000001", "target": "C0000002"}'] * 100) + "]}").encode()
    with TestClient(create_app(settings)) as test_client:
        declared = test_client.post("/v1/paths", content=body, headers={"content-type": "application/json"})
        error = _assert_error(declared, 413, "payload_too_large")
        assert error["detail"] == {"max_body_bytes": 2048}

        def chunks():
            for start in range(0, len(body), 512):
                yield body[start : start + 512]

        streamed = test_client.post(
            "/v1/paths", content=chunks(), headers={"content-type": "application/json"}
        )
        _assert_error(streamed, 413, "payload_too_large")
        small = test_client.post("/v1/paths", json={"pairs": [pair]}, headers={"X-API-Key": "k"})
        assert small.status_code == 200


def test_host_outside_the_allow_list_400(fixture_build):
    """DNS rebinding: a page of another site resolved to 127.0.0.1 sends its own name as Host."""
    settings = Settings(results_dir=fixture_build.results_dir, allowed_hosts="127.0.0.1,localhost,::1")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as test_client:
        assert test_client.get("/v1/health").status_code == 200
        assert test_client.get("/v1/health", headers={"host": "localhost:8000"}).status_code == 200
        assert test_client.get("/v1/health", headers={"host": "[::1]:8000"}).status_code == 200
        _assert_error(
            test_client.get("/v1/health", headers={"host": "rebind.example:8000"}), 400, "invalid_host"
        )


def test_queued_work_past_its_deadline_never_runs(fixture_build, monkeypatch):
    """One compute thread busy past the deadline: the next request times out in the queue and its
    work is dropped; the pool never grows beyond its size."""
    import threading
    import time

    from services.api.routers import paths

    started = []
    release = threading.Event()

    def slow_path(state, settings, scope, source, *_rest):
        started.append(source)
        release.wait(5)
        return {}

    monkeypatch.setattr(paths, "_path", slow_path)
    settings = Settings(results_dir=fixture_build.results_dir, compute_threads=1, request_timeout_s=0.3)
    with TestClient(create_app(settings)) as test_client:
        _assert_error(test_client.get("/v1/path?source=C0000001&target=C0000002"), 504, "timeout")
        _assert_error(test_client.get("/v1/path?source=C0000003&target=C0000002"), 504, "timeout")
        release.set()
        time.sleep(0.2)
    assert started == ["C0000001"]


def test_openapi_states_the_configured_caps_and_the_api_key(client):
    document = client.get("/openapi.json").json()
    parameters = {p["name"]: p for p in document["paths"]["/v1/concepts"]["get"]["parameters"]}
    assert parameters["limit"]["schema"]["maximum"] == 50  # the client fixture's page_cap
    parameters = {p["name"]: p for p in document["paths"]["/v1/neighbors/{key}"]["get"]["parameters"]}
    assert parameters["k"]["schema"]["maximum"] == 50
    assert document["components"]["schemas"]["PathsIn"]["properties"]["pairs"]["maxItems"] == 8
    assert document["components"]["schemas"]["PathsIn"]["properties"]["evidence"]["type"] == "boolean"
    scheme = document["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "X-API-Key")
    post_paths = document["paths"]["/v1/paths"]["post"]
    assert post_paths["security"] == [{"ApiKey": []}, {}]  # no key configured: the key is optional
    assert {"401", "413", "422", "503", "504"} <= set(post_paths["responses"])
    for operations in document["paths"].values():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert response["content"]["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/ErrorOut"
                    }
    assert "security" not in document["paths"]["/v1/health"]["get"]


def _operations(document):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            url = path.replace("{cui}", "C0000001").replace("{key}", "C0000001")
            yield method, url, operation


@pytest.mark.parametrize("api_key", [None, "s3cret"], ids=["no-key", "key"])
def test_openapi_security_is_what_the_service_enforces(fixture_build, api_key):
    """With a key every /v1 route but health requires it, and answers 401 without it; without a
    key the document declares it optional, and no route asks for it."""
    settings = Settings(results_dir=fixture_build.results_dir, api_key=api_key)
    with TestClient(create_app(settings)) as api:
        document = api.get("/openapi.json").json()
        for method, url, operation in _operations(document):
            security = operation.get("security")
            if url == "/v1/health":
                assert security is None
            elif api_key is None:
                assert security == [{"ApiKey": []}, {}], url
            else:
                assert security == [{"ApiKey": []}], url
            status = api.request(method, url, json={}).status_code
            assert (status == 401) == (security == [{"ApiKey": []}]), (method, url, status)


def test_openapi_announces_the_same_concept_pair_422(client):
    """OpenAPI cannot relate two parameters: the operation's own 422 says source must differ from
    target, and the service answers so."""
    operation = client.get("/openapi.json").json()["paths"]["/v1/compare/pair"]["get"]
    assert "source equals its target" in operation["responses"]["422"]["description"]
    _assert_error(client.get("/v1/compare/pair?source=C0000001&target=C0000001"), 422, "invalid_request")


def test_openapi_types_the_comparison(client):
    """The comparison's answer is typed all the way down: no free-form objects."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    properties = schemas["CompareOut"]["properties"]
    assert properties["scenario"]["enum"] == list(SCENARIOS)
    assert properties["spoke_hops"]["items"] == {"$ref": "#/components/schemas/SpokeHopOut"}
    assert properties["mapped"]["additionalProperties"]["items"] == {"$ref": "#/components/schemas/MappedNodeOut"}
    for name in ("CompareOut", "SpokeHopOut", "SpokeLinkOut", "LiteratureOut", "LiteratureHopOut"):
        for field, schema in schemas[name]["properties"].items():
            assert schema not in ({}, {"type": "object"}, {"additionalProperties": True, "type": "object"}), (
                name,
                field,
            )
    assert get_args(Scenario) == SCENARIOS


def test_paths_stale_build_503(stale_client):
    pairs = [{"source": "C0000001", "target": "C0000002"}]
    _assert_error(stale_client.post("/v1/paths", json={"pairs": pairs}), 503, "build_unavailable")


# ------------------------------------------------------------------------------ neighbors


def test_neighbors_ok(client, fixture_build, reference):
    response = client.get("/v1/neighbors/C0000002", params={"k": 5})
    assert response.status_code == 200
    got = response.json()["neighbors"]
    row = reference[2].copy()
    row[2] = np.inf
    row[fixture_build.n_concepts :] = np.inf  # concepts only
    expected = np.sort(row[np.isfinite(row)])[:5]
    assert [n["distance"] for n in got] == pytest.approx(expected, rel=TOL_REL, abs=TOL_ABS)
    concepts = set(fixture_build.keys[: fixture_build.n_concepts])
    assert all(n["key"] in concepts and n["key"] != "C0000002" for n in got)


def test_neighbors_of_abstract(client, fixture_build):
    response = client.get(f"/v1/neighbors/{fixture_build.keys[130]}", params={"k": 3})
    assert response.status_code == 200 and len(response.json()["neighbors"]) == 3


def test_neighbors_isolated_vertex_empty(client, fixture_build):
    response = client.get(f"/v1/neighbors/{fixture_build.keys[-1]}")
    assert response.status_code == 200 and response.json()["neighbors"] == []


def test_neighbors_unknown_404(client):
    _assert_error(client.get("/v1/neighbors/C7654321"), 404, "unknown_key")


def test_neighbors_k_over_cap_422(client):
    _assert_error(client.get("/v1/neighbors/C0000002?k=51"), 422, "invalid_request")
    _assert_error(client.get("/v1/neighbors/C0000002?k=0"), 422, "invalid_request")


# ------------------------------------------------------------------------------ api key, unknown routes


def test_api_key_required_401(fixture_build):
    settings = Settings(results_dir=fixture_build.results_dir, api_key="s3cret")
    with TestClient(create_app(settings)) as test_client:
        assert test_client.get("/v1/health").status_code == 200
        _assert_error(test_client.get("/v1/ready"), 401, "unauthorized")
        _assert_error(test_client.get("/v1/path?source=C0000001&target=C0000002"), 401, "unauthorized")
        wrong = test_client.get("/v1/concepts", headers={"X-API-Key": "nope"})
        _assert_error(wrong, 401, "unauthorized")
        right = test_client.get("/v1/path?source=C0000001&target=C0000002", headers={"X-API-Key": "s3cret"})
        assert right.status_code == 200


def test_unknown_route_404(client):
    _assert_error(client.get("/v1/nothing"), 404, "not_found")
    _assert_error(client.delete("/v1/path"), 405, "method_not_allowed")


def test_errors_mongo_failure_is_a_clear_503() -> None:
    """A MongoDB failure under a query becomes 503 naming the dependency, never a bare 500."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from pymongo.errors import ServerSelectionTimeoutError

    from services.api.errors import register_error_handlers

    app = FastAPI()
    register_error_handlers(app)

    @app.get("/boom")
    def boom() -> None:
        raise ServerSelectionTimeoutError("127.0.0.1:27017: connection refused")

    with TestClient(app) as client:
        response = client.get("/boom")
    assert response.status_code == 503
    body = response.json()["error"]
    assert body["code"] == "dependency_unavailable" and "MongoDB" in body["message"]
    assert "27017" not in response.text
