"""Supporting documents of path hops from the real MongoDB-wire server (fixture ``mongo_uri``)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pymongo import MongoClient
from support.build_fixture import make_build
from support.evidence_store import store_evidence

from services.api.main import create_app
from services.api.settings import Settings

pytestmark = pytest.mark.servers


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory):
    return make_build(tmp_path_factory.mktemp("results"), n_concepts=60, n_abstracts=30, seed=5)


@pytest.fixture(scope="module")
def evidence_db(mongo_uri, fixture_build):
    """Evidence for every concept-concept edge of the build except every third one, in the store's layout."""
    database = f"test_api_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    edges = fixture_build.edges.to_pandas()
    keys, build_id = fixture_build.keys, fixture_build.build_id
    stored = {}
    records = []
    for i, row in enumerate(edges[edges["kind"] == "concept_concept"].itertuples()):
        if i % 3 == 2:
            continue  # no evidence record for this pair: documents must come back empty
        a, b = sorted((keys[row.src], keys[row.dst]))
        documents = sorted([f"PMID:{900000 + i}", f"PMID:{800000 + i}"])
        stored[(a, b)] = documents
        records.append({"cui_a": a, "cui_b": b, "documents": documents, "sentence_ids": [i], "n_predications": 2})
    # Another build's evidence for the same pairs must never be returned.
    store_evidence(client[database], "otherbuild", [{**r, "documents": ["PMID:1"]} for r in records])
    # The loader marks a build complete last (store_evidence too); until then its evidence is unknown.
    store_evidence(client[database], build_id, records)
    yield database, stored
    client.drop_database(database)
    client.close()


def test_path_evidence_from_mongo(mongo_uri, evidence_db, fixture_build):
    database, stored = evidence_db
    settings = Settings(results_dir=fixture_build.results_dir, mongo_uri=mongo_uri, mongo_database=database)
    keys = fixture_build.keys
    checked = 0
    with TestClient(create_app(settings)) as client:
        assert client.get("/v1/ready").json()["checks"]["mongo"]["ok"] is True
        rng = np.random.default_rng(4)
        for s, t in rng.integers(0, fixture_build.n_concepts, size=(40, 2)):
            body = client.get("/v1/path", params={"source": keys[s], "target": keys[t]}).json()
            for hop in body["hops"]:
                if hop["edge_kind"] != "concept_concept":
                    continue
                pair = tuple(sorted((hop["from"], hop["to"])))
                assert hop["documents"] == stored.get(pair, [])
                assert hop["n_predications"] == (2 if pair in stored else 0)
                checked += 1
    assert checked > 10


def test_path_evidence_off_by_query(mongo_uri, evidence_db, fixture_build):
    database, _ = evidence_db
    settings = Settings(results_dir=fixture_build.results_dir, mongo_uri=mongo_uri, mongo_database=database)
    with TestClient(create_app(settings)) as client:
        for t in range(1, 20):
            body = client.get(
                "/v1/path", params={"source": "C0000000", "target": fixture_build.keys[t], "evidence": False}
            ).json()
            assert all(h["documents"] is None for h in body["hops"] if h["edge_kind"] == "concept_concept")


def test_ready_ok_with_databases(mongo_uri, neo4j_env, fixture_build):
    settings = Settings(
        results_dir=fixture_build.results_dir,
        mongo_uri=mongo_uri,
        neo4j_uri=neo4j_env["LITPATH_NEO4J_URI"],
        neo4j_password=neo4j_env["LITPATH_NEO4J_PASSWORD"],
    )
    with TestClient(create_app(settings)) as client:
        response = client.get("/v1/ready")
        assert response.status_code == 200, response.text
        checks = response.json()["checks"]
        assert checks["mongo"]["ok"] and checks["neo4j"]["ok"]


def test_path_evidence_unknown_until_the_build_is_loaded(mongo_uri, fixture_build, monkeypatch):
    """Evidence of a build the store has not loaded completely (its load still running, or failed)
    is unknown, null; [] would claim that no predication supports the hop."""
    from pipeline.store import evidence

    monkeypatch.setattr(evidence, "RECHECK_INCOMPLETE_S", 0.0)
    database = f"test_api_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    client[database].builds.insert_one({"_id": fixture_build.build_id, "status": "loading"})
    settings = Settings(results_dir=fixture_build.results_dir, mongo_uri=mongo_uri, mongo_database=database)
    keys = fixture_build.keys
    try:
        with TestClient(create_app(settings)) as api:

            def concept_hops() -> list[dict]:
                hops = []
                for t in range(1, fixture_build.n_concepts):
                    body = api.get("/v1/path", params={"source": keys[0], "target": keys[t]}).json()
                    hops += [h for h in body.get("hops", []) if h["edge_kind"] == "concept_concept"]
                return hops

            hops = concept_hops()
            assert hops and all(h["documents"] is None and h["n_predications"] is None for h in hops)
            client[database].builds.update_one(
                {"_id": fixture_build.build_id}, {"$set": {"status": "complete"}}
            )
            hops = concept_hops()  # loaded, and this store has no document for any pair: known, none
            assert hops and all(h["documents"] == [] and h["n_predications"] == 0 for h in hops)
    finally:
        client.drop_database(database)
        client.close()


def test_path_evidence_unknown_again_once_the_store_drops_the_build(mongo_uri, fixture_build, monkeypatch):
    """"Complete" is read again every LITPATH_EVIDENCE_RECHECK_S: a store dropped (or restored
    from before the load) under the running service turns the documents back to unknown, instead
    of answering [] ("no predication") for ever."""
    import time

    from pipeline.store import evidence

    monkeypatch.setattr(evidence, "RECHECK_COMPLETE_S", evidence.RECHECK_COMPLETE_S)  # restored after
    database = f"test_api_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    client[database].builds.insert_one({"_id": fixture_build.build_id, "status": "complete"})
    settings = Settings(
        results_dir=fixture_build.results_dir, mongo_uri=mongo_uri, mongo_database=database, evidence_recheck_s=0.3
    )
    keys = fixture_build.keys
    try:
        with TestClient(create_app(settings)) as api:

            def concept_hops() -> list[dict]:
                hops = []
                for t in range(1, fixture_build.n_concepts):
                    body = api.get("/v1/path", params={"source": keys[0], "target": keys[t]}).json()
                    hops += [h for h in body.get("hops", []) if h["edge_kind"] == "concept_concept"]
                return hops

            hops = concept_hops()
            assert hops and all(h["documents"] == [] for h in hops)  # complete, and no document: none
            client[database].builds.delete_one({"_id": fixture_build.build_id})
            time.sleep(0.4)
            hops = concept_hops()
            assert hops and all(h["documents"] is None and h["n_predications"] is None for h in hops)
    finally:
        client.drop_database(database)
        client.close()
