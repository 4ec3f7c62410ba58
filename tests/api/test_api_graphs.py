"""The service on both graphs of a build, with stored and on-demand distances.

Three builds of the same random graph: dense distances for both graphs; rows of a few
sources (so some queries are answered from stored rows and the rest on demand); and no
distances at all (everything on demand). Every answer is checked against scipy on the same
graph, and the builds must agree with each other pair by pair.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.sparse.csgraph import dijkstra
from support.build_fixture import make_build

from pipeline.builds.tables import EDGE_KINDS
from services.api.main import create_app
from services.api.settings import Settings

SEED, N_CONCEPTS, N_ABSTRACTS = 11, 90, 60
SOURCES = [0, 5, 17, 42, 100, 130]  # full-graph vertex ids whose rows the "rows" build stores
TOL_REL, TOL_ABS = 1e-5, 1e-6


def _client(tmp_path_factory, name, **kwargs):
    results = tmp_path_factory.mktemp(name)
    build = make_build(results, n_concepts=N_CONCEPTS, n_abstracts=N_ABSTRACTS, seed=SEED, **kwargs)
    app = create_app(Settings(results_dir=results, page_cap=200))
    return build, TestClient(app)


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    builds = {
        "dense": _client(tmp_path_factory, "dense"),
        "rows": _client(tmp_path_factory, "rows", distances="rows", sources=SOURCES, cooccurrence_distances="rows"),
        "on-demand": _client(tmp_path_factory, "ondemand", distances=None, cooccurrence_distances=None),
    }
    for _, client in builds.values():
        client.__enter__()
    yield {name: client for name, (_, client) in builds.items()}, builds["dense"][0]
    for _, client in builds.values():
        client.__exit__(None, None, None)


@pytest.fixture(scope="module")
def references(clients):
    _, build = clients
    full = dijkstra(build.adjacency.to_scipy(), directed=True)
    cc = build.edges.filter(build.edges.column("kind").to_numpy(zero_copy_only=False) == EDGE_KINDS[0])
    from pipeline.query.paths import adjacency_from_edges

    co = adjacency_from_edges(
        N_CONCEPTS, cc.column("src").to_numpy(), cc.column("dst").to_numpy(), cc.column("cost").to_numpy()
    )
    return {"full": full, "cooccurrence": dijkstra(co.to_scipy(), directed=True)}


def _pairs(n, count, seed):
    rng = np.random.default_rng(seed)
    pairs = [(int(a), int(b)) for a, b in rng.integers(0, n, size=(count, 2))]
    return pairs + [(s, t) for s in SOURCES[:3] for t in (1, 2, 3) if s < n and t < n]


def _expected_source(mode, s, t):
    if mode == "dense":
        return "stored"
    if mode == "rows":
        return "stored" if s in SOURCES or t in SOURCES else "on-demand"
    return "on-demand"


@pytest.mark.parametrize("graph", ["full", "cooccurrence"])
def test_stored_and_on_demand_distances_agree_with_scipy(clients, references, graph):
    by_mode, build = clients
    reference = references[graph]
    n = reference.shape[0]
    sources = SOURCES if graph == "full" else [v for v in SOURCES if v < N_CONCEPTS]
    for s, t in _pairs(n, 40, seed=3):
        answers = {}
        for mode, client in by_mode.items():
            body = client.get(
                "/v1/distance", params={"source": build.keys[s], "target": build.keys[t], "graph": graph}
            ).json()
            assert body["graph"] == graph
            expected_where = _expected_source(mode, s, t) if mode != "rows" else (
                "stored" if s in sources or t in sources else "on-demand"
            )  # fmt: skip
            assert body["distances"] == expected_where, (mode, s, t)
            want = reference[s, t]
            assert body["reachable"] == bool(np.isfinite(want))
            if body["reachable"]:
                assert body["distance"] == pytest.approx(want, rel=TOL_REL, abs=TOL_ABS)
            answers[mode] = body["distance"]
        finite = [v for v in answers.values() if v is not None]
        assert len(finite) in (0, len(answers)), answers
        if finite:
            assert max(finite) - min(finite) <= TOL_ABS + TOL_REL * max(finite)


@pytest.mark.parametrize("graph", ["full", "cooccurrence"])
def test_paths_agree_across_stored_and_on_demand(clients, references, graph):
    by_mode, build = clients
    reference = references[graph]
    n = reference.shape[0]
    for s, t in _pairs(n, 25, seed=5):
        costs = {}
        for mode, client in by_mode.items():
            response = client.get(
                "/v1/path",
                params={"source": build.keys[s], "target": build.keys[t], "graph": graph, "evidence": False},
            )
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["graph"] == graph
            if not body["reachable"]:
                assert not np.isfinite(reference[s, t])
                continue
            path = [v["vid"] for v in body["vertices"]]
            assert path[0] == s and path[-1] == t and len(set(path)) == len(path)
            total = sum(hop["cost"] for hop in body["hops"])
            assert total == pytest.approx(reference[s, t], rel=TOL_REL, abs=TOL_ABS)
            if body["distances"] == "on-demand":
                assert body["method"] == "bidirectional-dijkstra"
            if graph == "cooccurrence":
                assert all(hop["edge_kind"] == "concept_concept" for hop in body["hops"])
            costs[mode] = total
        if costs:
            assert max(costs.values()) - min(costs.values()) <= 1e-4


def test_batch_paths_mix_stored_rows_and_on_demand(clients):
    by_mode, build = clients
    pairs = [{"source": build.keys[s], "target": build.keys[t]} for s, t in ((0, 9), (9, 0), (7, 8), (42, 77))]
    body = by_mode["rows"].post("/v1/paths", json={"pairs": pairs, "evidence": False}).json()
    assert body["graph"] == "full"
    where = [item["path"]["distances"] for item in body["results"]]
    assert where == ["stored", "stored", "on-demand", "stored"]


@pytest.mark.parametrize("graph", ["full", "cooccurrence"])
def test_neighbors_agree_across_modes(clients, references, graph):
    by_mode, build = clients
    reference = references[graph]
    for source in (0, 5, 23):
        row = reference[source].copy()
        row[source] = np.inf
        concept = np.zeros(len(row), bool)
        concept[:N_CONCEPTS] = True
        candidates = np.flatnonzero(concept & np.isfinite(row))
        expected = sorted(candidates, key=lambda v: (row[v], v))[:10]
        for mode, client in by_mode.items():
            body = client.get(
                f"/v1/neighbors/{build.keys[source]}", params={"k": 10, "graph": graph}
            ).json()
            got = [item["vid"] for item in body["neighbors"]]
            distances = [item["distance"] for item in body["neighbors"]]
            assert distances == pytest.approx([row[v] for v in expected], rel=TOL_REL, abs=TOL_ABS), mode
            # ties may order differently between float32 stored rows and float64 searches
            assert len(got) == len(expected)


def test_abstracts_are_not_in_the_cooccurrence_graph(clients):
    by_mode, build = clients
    abstract = build.keys[N_CONCEPTS + 1]
    response = by_mode["dense"].get(
        "/v1/path", params={"source": abstract, "target": build.keys[0], "graph": "cooccurrence"}
    )
    assert response.status_code == 404 and "cooccurrence graph" in response.json()["error"]["message"]
    response = by_mode["dense"].get("/v1/path", params={"source": abstract, "target": build.keys[0]})
    assert response.status_code == 200


def test_ready_says_how_each_graph_answers(clients):
    by_mode, _ = clients
    for mode, expected in (("dense", "stored (dense)"), ("rows", "stored rows + on demand"), ("on-demand", "on demand")):
        checks = by_mode[mode].get("/v1/ready").json()["checks"]
        assert expected in checks["graph_full"]["message"] and expected in checks["graph_cooccurrence"]["message"]
