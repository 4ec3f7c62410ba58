"""GET /v1/path with k, include_types and exclude_types, and the tie count of every path answer:
in process (TestClient) and through a real uvicorn process (`litpath serve`), against networkx on
the fixture build's graph (shortest_simple_paths for the k costs and, read further, for the
ties; the filters applied by removing the concepts they exclude). The fixture's concepts carry
``gngm``/``aapp`` (every third) or ``dsyn``."""

from __future__ import annotations

import itertools

import httpx
import networkx as nx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from support.build_fixture import make_build
from support.serving import ServiceDidNotStart, running_service

from services.api.main import create_app
from services.api.settings import Settings

FRESH = int(np.random.SeedSequence().entropy % (2**32))


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory):
    # Full graph on demand, as a served release's is; co-occurrence graph dense.
    return make_build(tmp_path_factory.mktemp("results"), n_concepts=90, n_abstracts=70, seed=11, distances=None)


@pytest.fixture(scope="module")
def client(fixture_build):
    # A generous tie-count budget: the counts are checked exactly, on a machine that may be busy.
    app = create_app(Settings(results_dir=fixture_build.results_dir, max_alternatives=8, tie_count_s=30.0))
    with TestClient(app) as test_client:
        yield test_client


def _semtypes(i: int) -> set[str]:
    return {"gngm", "aapp"} if i % 3 == 0 else {"dsyn"}


def _reference(fixture_build, s: int, t: int, include=(), exclude=()) -> nx.Graph:
    adjacency, n_concepts = fixture_build.adjacency, fixture_build.n_concepts
    graph = nx.Graph()
    graph.add_nodes_from(range(adjacency.n))
    for u in range(adjacency.n):
        for e in range(int(adjacency.row_ptr[u]), int(adjacency.row_ptr[u + 1])):
            graph.add_edge(u, int(adjacency.col_idx[e]), weight=float(adjacency.cost[e]))
    removed = {
        v for v in range(n_concepts) if v not in (s, t)
        and ((include and not _semtypes(v) & set(include)) or _semtypes(v) & set(exclude))
    }  # fmt: skip
    return graph.subgraph(set(graph) - removed)


TIE_SCAN = 60  # simple paths read from networkx to count the ties


def _expected(graph: nx.Graph, s: int, t: int, k: int) -> tuple[list[float], int]:
    """networkx's first k costs, and the ties: its simple paths, in cost order, whose cost equals
    the shortest (the graph has zero-cost edges, which all_shortest_paths follows one way only)."""
    if s == t:
        return [0.0], 1
    try:
        paths = itertools.islice(nx.shortest_simple_paths(graph, s, t, weight="weight"), max(k, TIE_SCAN))
        costs = [sum(graph[u][v]["weight"] for u, v in itertools.pairwise(p)) for p in paths]
    except nx.NetworkXNoPath:
        return [], 0
    return costs[:k], sum(1 for c in costs if c <= costs[0] * (1 + 1e-12))


def _check(body: dict, fixture_build, s: int, t: int, k: int, include=(), exclude=()) -> None:
    keys = fixture_build.keys
    graph = _reference(fixture_build, s, t, include, exclude)
    costs, ties = _expected(graph, s, t, k)
    note = f"seed {FRESH}: {keys[s]} -> {keys[t]}, k={k}, include={include}, exclude={exclude}"
    if ties < TIE_SCAN:
        assert body["ties"] == {"count": ties, "saturated": False}, note
    else:
        assert body["ties"]["count"] >= TIE_SCAN, note
    alternatives = body["alternatives"]
    if k == 1 and not include and not exclude:
        assert alternatives is None
        return
    np.testing.assert_allclose([a["total_cost"] for a in alternatives], costs, rtol=1e-9, err_msg=note)
    assert [a["rank"] for a in alternatives] == list(range(1, len(costs) + 1))
    for alternative in alternatives:
        path = [v["vid"] for v in alternative["vertices"]]
        assert path[0] == s and path[-1] == t and len(set(path)) == len(path), note
        assert all(graph.has_edge(u, v) for u, v in itertools.pairwise(path)), note  # the filter holds
        assert [(h["from"], h["to"]) for h in alternative["hops"]] == [
            (keys[u], keys[v]) for u, v in itertools.pairwise(path)
        ]
        assert sum(h["cost"] for h in alternative["hops"]) == pytest.approx(alternative["total_cost"], rel=1e-12)
    if alternatives:
        assert body["vertices"] == alternatives[0]["vertices"] and body["distances"] == "on-demand"
        assert body["total_cost"] == alternatives[0]["total_cost"]
    else:
        assert body["reachable"] is False and body["vertices"] == []


def test_k_paths_filters_and_ties_equal_networkx(client, fixture_build):
    rng = np.random.default_rng(FRESH)
    n = len(fixture_build.keys)
    cases = [((), ()), ((), ("gngm",)), (("dsyn",), ()), (("dsyn", "aapp"), ("gngm",))]
    for query in range(16):
        s, t = (int(v) for v in rng.integers(0, n, 2))
        include, exclude = cases[query % len(cases)]
        k = int(rng.choice([1, 3, 8]))
        params = {"source": fixture_build.keys[s], "target": fixture_build.keys[t], "k": k}
        params.update({"include_types": list(include), "exclude_types": list(exclude)})
        response = client.get("/v1/path", params=params)
        assert response.status_code == 200, response.text
        _check(response.json(), fixture_build, s, t, k, include, exclude)


def test_comma_separated_types_and_the_cooccurrence_graph(client, fixture_build):
    keys = fixture_build.keys
    body = client.get(
        "/v1/path",
        params={"source": keys[1], "target": keys[40], "graph": "cooccurrence", "k": 4, "exclude_types": "gngm,AAPP"},
    ).json()
    concepts = [v["vid"] for a in body["alternatives"] for v in a["vertices"][1:-1]]
    assert all(not _semtypes(v) & {"gngm", "aapp"} for v in concepts)
    assert body["graph"] == "cooccurrence" and body["ties"]["count"] >= (1 if body["reachable"] else 0)


def test_k_one_without_filters_answers_as_before_plus_ties(client, fixture_build):
    keys = fixture_build.keys
    body = client.get("/v1/path", params={"source": keys[0], "target": keys[130]}).json()
    assert body["alternatives"] is None and body["method"] == "bidirectional-dijkstra"
    assert body["ties"]["count"] >= 1
    batch = client.post("/v1/paths", json={"pairs": [{"source": keys[0], "target": keys[130]}]}).json()
    assert batch["results"][0]["path"]["ties"] == body["ties"]


def test_bad_k_and_unknown_types_are_refused(client, fixture_build):
    keys = fixture_build.keys
    params = {"source": keys[0], "target": keys[5]}
    response = client.get("/v1/path", params={**params, "k": 9})
    assert response.status_code == 422 and response.json()["error"]["detail"] == {"max_alternatives": 8}
    assert client.get("/v1/path", params={**params, "k": 0}).status_code == 422
    assert client.get("/v1/path", params={**params, "k": 101}).status_code == 422
    response = client.get("/v1/path", params={**params, "include_types": "nosuch"})
    assert response.status_code == 404  # as an unknown key: well formed, not in this build
    error = response.json()["error"]
    assert error["code"] == "unknown_semantic_type"
    assert "'nosuch'" in error["message"] and "dsyn" in error["message"]
    assert client.get("/v1/path", params={**params, "exclude_types": "a b"}).status_code == 422


def test_k_is_capped_in_the_served_openapi_document(client):
    document = client.get("/openapi.json").json()
    (k,) = [p for p in document["paths"]["/v1/path"]["get"]["parameters"] if p["name"] == "k"]
    assert k["schema"]["maximum"] == 8 and k["schema"]["default"] == 1


def test_alternatives_over_http(fixture_build, tmp_path):
    try:
        with running_service(
            fixture_build.results_dir, tmp_path / "serve.log", env={"LITPATH_TIE_COUNT_S": "30"}
        ) as service:
            keys = fixture_build.keys
            with httpx.Client(base_url=service.base, timeout=30) as http:
                for s, t in ((2, 100), (5, 61), (7, 150)):
                    response = http.get(
                        "/v1/path",
                        params={"source": keys[s], "target": keys[t], "k": 5, "exclude_types": "gngm"},
                    )
                    assert response.status_code == 200, response.text
                    _check(response.json(), fixture_build, s, t, 5, (), ("gngm",))
    except ServiceDidNotStart as exc:
        pytest.fail(str(exc))


def test_a_tie_count_past_its_budget_is_null_and_the_path_stands(fixture_build):
    """LITPATH_TIE_COUNT_S bounds what the count adds to an answer (25 ms by default: at 30M
    predications the count costs more than the path); past it ``ties`` is null, the path is kept."""
    keys = fixture_build.keys
    app = create_app(Settings(results_dir=fixture_build.results_dir, tie_count_s=1e-9))
    with TestClient(app) as tight:
        body = tight.get("/v1/path", params={"source": keys[0], "target": keys[130]}).json()
        assert body["ties"] is None and body["reachable"] and body["hops"]
        assert Settings().tie_count_s == 0.025
