"""Readable evidence end to end: hand-written SemMedDB rows (tests/data/evidence, real v43 column
layout) through ingest, merge, build-graph and load-mongo into the real MongoDB-wire server, and
out through the service's /v1/path and /v1/paths. Every expected value below is derived by hand
from the fixture's rows, in the comments."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from pymongo import MongoClient
from support.corpus_build import corpus_build
from support.data import DATA

from pipeline.builds.layout import BuildLayout
from pipeline.store.mongo import load_build
from services.api.main import create_app
from services.api.settings import Settings

pytestmark = pytest.mark.servers

ASPIRIN, HEADACHE, COX1 = "C0000001", "C0000002", "C0000003"
FIXTURE = DATA / "evidence"
# Sentence 41 is 664 characters: cut to the first 499 and an ellipsis.
LONG_41 = "Aspirin treated the headache of every patient " + "in the cohort, " * 40 + "without exception."
TEXT = {
    11: "Aspirin treats headache in adults (Sj\u00f6gren cohort).",  # latin-1 o-umlaut in the dump
    12: "Headache interacts with COX-1 levels.",
    21: 'Aspirin relieves "tension" headache; headache does not neg-treat it.',  # \" undone
    31: "Headache caused by aspirin withdrawal.",
    41: LONG_41[:499] + "\u2026",
}


def _sentence(sentence_id, pmid, year, predicate, subject):
    return {"sentence_id": sentence_id, "pmid": pmid, "year": year, "predicate": predicate, "subject": subject,
            "text": TEXT[sentence_id]}  # fmt: skip


# Aspirin--Headache: predications 1, 2, 5 (TREATS, Aspirin the subject), 3 (NEG_TREATS, Headache
# the subject) and 4 (CAUSES, Headache the subject): both directions count, NEG_ kept apart;
# by count, then name: TREATS 3, CAUSES 1, NEG_TREATS 1.
ASPIRIN_HEADACHE_PREDICATES = [
    {"predicate": "TREATS", "count": 3}, {"predicate": "CAUSES", "count": 1}, {"predicate": "NEG_TREATS", "count": 1},
]  # fmt: skip
# Its statements (sentence, predicate, subject; PMID, year from CITATIONS): (21, NEG_TREATS, Headache;
# 1002, 2020), (21, TREATS, Aspirin; 1002, 2020), (41, TREATS, Aspirin; 1004, 2020), (11, TREATS,
# Aspirin; 1001, 2015), (31, CAUSES, Headache; 1003, no CITATIONS row so no year) -- already in
# the rule's order: year (most recent first, unknown last), PMID, sentence id, predicate, subject.
ASPIRIN_HEADACHE_SENTENCES = [
    _sentence(21, 1002, 2020, "NEG_TREATS", HEADACHE),
    _sentence(21, 1002, 2020, "TREATS", ASPIRIN),
    _sentence(41, 1004, 2020, "TREATS", ASPIRIN),
    _sentence(11, 1001, 2015, "TREATS", ASPIRIN),
    _sentence(31, 1003, None, "CAUSES", HEADACHE),
]
# Headache--COX-1: predication 6 only.
HEADACHE_COX1_PREDICATES = [{"predicate": "INTERACTS_WITH", "count": 1}]
HEADACHE_COX1_SENTENCES = [_sentence(12, 1001, 2015, "INTERACTS_WITH", HEADACHE)]


@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory, mongo_uri):
    """The fixture's build, loaded three times: with the default 3 sentences per hop, with 5 and with 1."""
    results = tmp_path_factory.mktemp("results")
    config = {"inputs": {"semmeddb_predication": ["PREDICATION.csv"], "semmeddb_sentence": ["SENTENCE.csv"],
                         "semmeddb_citations": ["CITATIONS.csv"]}}  # fmt: skip
    build = BuildLayout(corpus_build(results, config, base=FIXTURE))
    databases = {per_hop: f"test_readable_{uuid.uuid4().hex[:8]}" for per_hop in (3, 5, 1)}
    for per_hop, database in databases.items():
        load_build(mongo_uri, database, build.build_id, build.tables.path, build.graph("full").graph_dir, {},
                   sentences_per_hop=per_hop if per_hop != 3 else None)  # fmt: skip
    yield results, databases
    with MongoClient(mongo_uri) as client:
        for database in databases.values():
            client.drop_database(database)


def _hops(client, **params):
    response = client.get("/v1/path", params={"source": ASPIRIN, "target": COX1, "graph": "cooccurrence", **params})
    assert response.status_code == 200, response.text
    return response.json()["hops"]


def test_path_hops_carry_predicates_and_sentences_of_the_fixture(fixture_store, mongo_uri):
    results, databases = fixture_store
    settings = Settings(results_dir=results, mongo_uri=mongo_uri, mongo_database=databases[3])
    with TestClient(create_app(settings)) as client:
        # Aspirin and COX-1 share no predication: the path goes through Headache
        first, second = _hops(client)
        assert (first["from"], first["to"], second["to"]) == (ASPIRIN, HEADACHE, COX1)
        assert first["documents"] == ["PMID:1001", "PMID:1002", "PMID:1003", "PMID:1004"]
        assert first["n_predications"] == 5
        assert first["predicates"] == ASPIRIN_HEADACHE_PREDICATES
        assert first["sentences"] == ASPIRIN_HEADACHE_SENTENCES[:3]  # evidence.sentences_per_hop: 3
        assert second["predicates"] == HEADACHE_COX1_PREDICATES
        assert second["sentences"] == HEADACHE_COX1_SENTENCES
        # evidence=false skips the store: unknown, not none
        assert all(hop["predicates"] is None and hop["sentences"] is None for hop in _hops(client, evidence=False))
        # the batch route gives the same hops
        batch = client.post("/v1/paths", json={"pairs": [{"source": ASPIRIN, "target": COX1}], "graph": "cooccurrence"})
        assert batch.status_code == 200
        assert batch.json()["results"][0]["path"]["hops"] == [first, second]


def test_more_sentences_per_hop_reach_the_paper_without_a_year_last(fixture_store, mongo_uri):
    results, databases = fixture_store
    settings = Settings(results_dir=results, mongo_uri=mongo_uri, mongo_database=databases[5])
    with TestClient(create_app(settings)) as client:
        first, _ = _hops(client)
        assert first["sentences"] == ASPIRIN_HEADACHE_SENTENCES


def test_unreachable_store_leaves_predicates_and_sentences_unknown(fixture_store):
    results, _ = fixture_store
    settings = Settings(results_dir=results, mongo_uri="mongodb://127.0.0.1:9/", db_timeout_ms=200)
    with TestClient(create_app(settings)) as client:
        assert all(hop["predicates"] is None and hop["sentences"] is None for hop in _hops(client))


# Concept-abstract hops: what each paper says naming the concept, sentences in sentence-id order
# (one paper: one PMID and year). Paper 1001 holds predications 1 (sentence 11, Aspirin TREATS
# Headache) and 6 (sentence 12, Headache INTERACTS_WITH COX-1); 1002 holds 2 and 3 (both in
# sentence 21); 1003 holds 4 (sentence 31, no year); 1004 holds 5 (sentence 41).
def _paper_sentence(sentence_id, pmid, year, predicate, subject):
    return _sentence(sentence_id, pmid, year, predicate, subject)


TREATS_11 = _paper_sentence(11, 1001, 2015, "TREATS", ASPIRIN)
INTERACTS_12 = _paper_sentence(12, 1001, 2015, "INTERACTS_WITH", HEADACHE)
SAID_IN_1002 = (
    [{"predicate": "NEG_TREATS", "count": 1}, {"predicate": "TREATS", "count": 1}],  # a tie: by name
    [_paper_sentence(21, 1002, 2020, "NEG_TREATS", HEADACHE), _paper_sentence(21, 1002, 2020, "TREATS", ASPIRIN)],
)
SAID_IN_1003 = ([{"predicate": "CAUSES", "count": 1}], [_paper_sentence(31, 1003, None, "CAUSES", HEADACHE)])
SAID_IN_1004 = ([{"predicate": "TREATS", "count": 1}], [_paper_sentence(41, 1004, 2020, "TREATS", ASPIRIN)])
PAPER_SAYS = {
    (ASPIRIN, "PMID:1001"): ([{"predicate": "TREATS", "count": 1}], [TREATS_11]),
    # Headache is in both of 1001's predications: counts 1 each, by name; both sentences, 11 first
    (HEADACHE, "PMID:1001"): ([{"predicate": "INTERACTS_WITH", "count": 1}, {"predicate": "TREATS", "count": 1}],
                              [TREATS_11, INTERACTS_12]),  # fmt: skip
    (COX1, "PMID:1001"): ([{"predicate": "INTERACTS_WITH", "count": 1}], [INTERACTS_12]),
    (ASPIRIN, "PMID:1002"): SAID_IN_1002,
    (HEADACHE, "PMID:1002"): SAID_IN_1002,
    (ASPIRIN, "PMID:1003"): SAID_IN_1003,
    (HEADACHE, "PMID:1003"): SAID_IN_1003,
    (ASPIRIN, "PMID:1004"): SAID_IN_1004,
    (HEADACHE, "PMID:1004"): SAID_IN_1004,
    (COX1, "PMID:1004"): ([], []),  # COX-1 is in no predication of 1004
}


@pytest.mark.parametrize("per_hop", [3, 1])
def test_paper_evidence_of_every_concept_and_paper(fixture_store, mongo_uri, per_hop):
    from pipeline.store.evidence import paper_evidence_for

    results, databases = fixture_store
    build_id = (results / "latest").resolve().name
    with MongoClient(mongo_uri) as client:
        found = paper_evidence_for(client[databases[per_hop]], build_id, list(PAPER_SAYS))
    # with one sentence per hop, each hop keeps the first of its own: Headache in 1001 quotes 11 only
    assert found == {pair: {"predicates": p, "sentences": s[:per_hop]} for pair, (p, s) in PAPER_SAYS.items()}


def test_full_graph_path_concept_abstract_hops_quote_their_paper(fixture_store, mongo_uri):
    results, databases = fixture_store
    settings = Settings(results_dir=results, mongo_uri=mongo_uri, mongo_database=databases[3])
    checked = set()
    with TestClient(create_app(settings)) as client:
        for cui, paper in PAPER_SAYS:
            body = client.get("/v1/path", params={"source": cui, "target": paper}).json()
            for hop in body["hops"]:
                if hop["edge_kind"] != "concept_abstract":
                    continue
                pair = (hop["to"], hop["from"]) if hop["from"].startswith("PMID:") else (hop["from"], hop["to"])
                predicates, sentences = PAPER_SAYS[pair]
                assert (hop["predicates"], hop["sentences"]) == (predicates, sentences[:3]), pair
                checked.add(pair)
    assert len(checked) >= 5


def test_python_client_hops_carry_the_same_evidence(fixture_store, mongo_uri):
    from pipeline.query import open_paths

    results, databases = fixture_store
    with open_paths(results / "latest", mongo_uri=mongo_uri, mongo_database=databases[3]) as paths:
        first, second = paths.path(ASPIRIN, COX1, scope="cooccurrence").hops
        assert (first.documents, first.n_predications) == (["PMID:1001", "PMID:1002", "PMID:1003", "PMID:1004"], 5)
        assert (first.predicates, first.sentences) == (ASPIRIN_HEADACHE_PREDICATES, ASPIRIN_HEADACHE_SENTENCES[:3])
        assert (second.predicates, second.sentences) == (HEADACHE_COX1_PREDICATES, HEADACHE_COX1_SENTENCES)
        checked = 0
        for cui, paper in PAPER_SAYS:
            for hop in paths.path(cui, paper).hops:
                if hop.edge_kind == "concept_abstract":
                    pair = (hop.target, hop.source) if hop.source.startswith("PMID:") else (hop.source, hop.target)
                    predicates, sentences = PAPER_SAYS[pair]
                    assert (hop.documents, hop.predicates, hop.sentences) == ([pair[1]], predicates, sentences[:3])
                    checked += 1
        assert checked >= 5
    # without a store the evidence is unknown
    with open_paths(results / "latest") as paths:
        assert all(hop.predicates is None and hop.documents is None for hop in paths.path(ASPIRIN, COX1).hops)
