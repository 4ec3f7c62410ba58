"""Loading a build into the real local MongoDB-wire server (fixture ``mongo_uri``)."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner
from pymongo import MongoClient
from support import tiny_corpus as tiny  # noqa: E402

from pipeline.config.connections import redact_uri
from pipeline.graph.build import build_graph
from pipeline.store.commands import load_mongo_command
from pipeline.store.evidence import evidence_for_pairs, evidence_id
from pipeline.store.mongo import load_build

A, B, C, D, E, F = tiny.A, tiny.B, tiny.C, tiny.D, tiny.E, tiny.F


@pytest.fixture
def built(tmp_path):
    tables = tiny.write_tiny_tables(tmp_path / "tables")
    record = build_graph(tables, tmp_path / "graph", {})
    return tables, tmp_path / "graph", record


def test_redact_uri_hides_credentials():
    assert redact_uri("mongodb://user:s3cret@db.example:27017/x") == "mongodb://***@db.example:27017/x"
    assert redact_uri("mongodb://127.0.0.1:27017") == "mongodb://127.0.0.1:27017"


@pytest.mark.servers
def test_load_build_is_idempotent(mongo_uri, built):
    tables, graph_dir, graph_record = built
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    build_id = "b0123"
    record = {
        "inputs": [{"path": "x.csv", "sha256": "00"}],
        "config": graph_record["config"],
        "counts": graph_record["counts"],
    }
    first = load_build(mongo_uri, database, build_id, tables, graph_dir, record, batch_size=3)
    second = load_build(mongo_uri, database, build_id, tables, graph_dir, record, batch_size=3)
    assert first == second
    assert first["documents_in_build"] == 4  # PMID:1, 2, 3, 9 (PMID:4 is only cited)
    assert first["concepts_in_build"] == 6  # A..E are vertices, F only in the concepts table
    assert first["evidence_in_build"] == 6  # one per concept-concept edge

    client = MongoClient(mongo_uri)
    try:
        db = client[database]
        assert db.documents.count_documents({}) == 4
        assert db.concepts.count_documents({}) == 6
        assert db.evidence.count_documents({}) == 6
        assert db.documents.find_one({"_id": "PMID:1"})["builds"] == [build_id]
        assert db.documents.find_one({"_id": "PMID:1"})["ids"] == {"pmid": 1}

        a = db.concepts.find_one({"build": build_id, "cui": A})
        assert (a["_id"], a["name"], a["vid"], a["semtypes"]) == (
            f"{build_id}:{A}",
            "interleukin-7",
            0,
            ["aapp", "imft"],
        )
        assert db.concepts.find_one({"build": build_id, "vid": 4})["cui"] == E
        assert db.concepts.find_one({"build": build_id, "cui": F})["vid"] is None
        by_vid = db.concepts.find({"build": build_id, "vid": {"$in": [0, 2, 99]}})
        assert sorted(doc["vid"] for doc in by_vid) == [0, 2]

        # The writer's _ids are the reader's (one evidence_id), whichever order a pair is named in.
        ab = db.evidence.find_one({"_id": evidence_id(build_id, B, A)})
        assert ab["_id"] == f"{build_id}:{A}|{B}" == evidence_id(build_id, A, B)
        assert (ab["documents"], ab["sentence_ids"], ab["n_predications"]) == (
            ["PMID:1", "PMID:2"],
            [11, 22],
            2,
        )
        be = db.evidence.find_one({"_id": evidence_id(build_id, B, E)})
        assert (be["documents"], be["sentence_ids"], be["n_predications"]) == (["PMID:3"], [33], 1)
        # self pair: no edge, no evidence
        assert db.evidence.find_one({"_id": evidence_id(build_id, C, C)}) is None
        found = evidence_for_pairs(db, build_id, [(B, A), (E, B), (C, C)])
        assert found == {
            (A, B): {"documents": ["PMID:1", "PMID:2"], "n_predications": 2},
            (B, E): {"documents": ["PMID:3"], "n_predications": 1},
            (C, C): {"documents": [], "n_predications": 0},  # the build is loaded: known to have none
        }

        build = db.builds.find_one({"_id": build_id})
        assert build["status"] == "complete"
        assert build["inputs"] == record["inputs"]
        assert build["mongo_counts"] == first
        indexed = {tuple(spec["key"].keys()) for spec in db.concepts.list_indexes()}
        assert ("build", "cui") in indexed and ("build", "vid") in indexed
    finally:
        client.drop_database(database)
        client.close()


@pytest.mark.servers
def test_load_mongo_command(mongo_uri, built, tmp_path):
    tables, graph_dir, _ = built
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    args = [
        "--mongo-uri",
        mongo_uri,
        "--mongo-database",
        database,
        "--build-id",
        "cli",
        "--tables-dir",
        str(tables),
        "--graph-dir",
        str(graph_dir),
    ]
    result = CliRunner().invoke(load_mongo_command, args)
    try:
        assert result.exit_code == 0, result.output
        assert "evidence_in_build=6" in result.output
    finally:
        client = MongoClient(mongo_uri)
        client.drop_database(database)
        client.close()


@pytest.mark.servers
def test_load_mongo_reads_the_build_back_before_writing_its_report(mongo_uri, built, tmp_path, monkeypatch):
    """mongo_load.json (--report) is the workflow's record that the build is in the store: it is
    written only when the builds record reads back complete, not when a lost write left it
    behind (simulated: a load whose marking never reached the store)."""
    import json

    from pipeline.store import commands

    tables, graph_dir, _ = built
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    report = tmp_path / "mongo_load.json"
    args = ["--mongo-uri", mongo_uri, "--mongo-database", database, "--build-id", "readback",
            "--tables-dir", str(tables), "--graph-dir", str(graph_dir), "--report", str(report)]  # fmt: skip
    client = MongoClient(mongo_uri)
    try:
        result = CliRunner().invoke(load_mongo_command, args)
        assert result.exit_code == 0, result.output
        assert json.loads(report.read_text())["build_id"] == "readback"
        report.unlink()

        def lost_marking(uri, database, build_id, *args, **kwargs):
            client[database].builds.replace_one({"_id": build_id}, {"status": "loading"}, upsert=True)
            return {"documents_written": 0}

        monkeypatch.setattr(commands, "load_build", lost_marking)
        result = CliRunner().invoke(load_mongo_command, args)
        assert result.exit_code != 0
        assert "reads back as 'loading'" in result.output and "run it again" in result.output
        assert not report.exists()
    finally:
        client.drop_database(database)
        client.close()
