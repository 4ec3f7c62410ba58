"""The evidence over its memory budget: grouped in edge partitions spilled to disk, it gives the
same evidence, edge for edge, as the in-memory grouping; and a load under a tiny budget writes
the same MongoDB documents as one with room to spare."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pymongo import MongoClient
from support.spills import stale_spill_folder

from pipeline.graph.build import build_graph
from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus
from pipeline.merge import merge_ingested
from pipeline.store import mongo
from pipeline.store.mongo import evidence_partitions, load_build


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small synthetic corpus through ingest, merge and build-graph."""
    corpus = tmp_path_factory.mktemp("corpus")
    manifest = generate_corpus(corpus, 3000, seed=7)
    out = tmp_path_factory.mktemp("build")
    folders = []
    for i, entry in enumerate(manifest["files"]):
        folders.append(out / "ingest" / f"{i:03d}")
        ingest_file(entry["kind"], corpus / entry["path"], folders[-1])
    merge_ingested(folders, out / "tables", {})
    build_graph(out / "tables", out / "graph", {})
    return out / "tables", out / "graph"


def _as_rows(pieces) -> dict:
    rows = {}
    for piece in pieces:
        for row in piece.to_pylist():
            key = (row.pop("cui_a"), row.pop("cui_b"))
            assert key not in rows, f"edge {key} in two partitions"
            rows[key] = {"documents": sorted(row["documents"]), "sentence_ids": sorted(row["sentence_ids"]),
                         "n_predications": row["n_predications"]}  # fmt: skip
    return rows


def test_partitioned_evidence_equals_the_in_memory_grouping(built, tmp_path):
    tables, graph = built
    edge_keys = mongo._concept_edge_keys(graph)
    reference = _as_rows(mongo._evidence_tables(tables, edge_keys, 1 << 18, 1, tmp_path))
    assert len(reference) == len(edge_keys) > 500  # every concept-concept edge has its evidence
    for partitions, batch_rows in ((2, 1 << 18), (7, 211)):
        spilled = _as_rows(mongo._evidence_tables(tables, edge_keys, batch_rows, partitions, tmp_path / "spill"))
        assert spilled == reference
        assert not any((tmp_path / "spill").iterdir())  # partitions removed


def test_partitions_follow_the_budget():
    assert evidence_partitions(0, 1 << 30) == 1
    assert evidence_partitions(1000, 1 << 30) == 1
    rows = 30_000_000
    assert evidence_partitions(rows, rows * mongo.EVIDENCE_BYTES_PER_ROW) == 1
    assert evidence_partitions(rows, rows * mongo.EVIDENCE_BYTES_PER_ROW // 4) == 4
    assert evidence_partitions(rows, rows * mongo.EVIDENCE_BYTES_PER_ROW // 4 - 1) == 5


@pytest.mark.servers
def test_a_load_under_a_tiny_budget_writes_the_same_evidence(mongo_uri, built, tmp_path):
    tables, graph = built
    databases = [f"litpath_test_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    client = MongoClient(mongo_uri)
    try:
        roomy = load_build(mongo_uri, databases[0], "b", tables, graph, {}, budget_bytes=1 << 30)
        tight = load_build(mongo_uri, databases[1], "b", tables, graph, {}, budget_bytes=4096,
                           spill_dir=tmp_path / "spill")  # fmt: skip
        assert roomy.pop("evidence_partitions") == 1 and tight.pop("evidence_partitions") > 10
        assert roomy == tight and roomy["evidence_written"] > 500
        documents = [
            {doc["_id"]: doc for doc in client[database].evidence.find({"build": "b"})} for database in databases
        ]
        assert documents[0] == documents[1]
        assert not any((tmp_path / "spill").iterdir())
    finally:
        for database in databases:
            client.drop_database(database)
        client.close()


def test_an_empty_graph_has_no_evidence(tmp_path):
    empty = mongo._group_evidence(mongo._EVIDENCE_ROWS.empty_table(), pa.array([], pa.string()))
    assert empty.num_rows == 0 and empty.column_names[:2] == ["cui_a", "cui_b"]


def test_load_sweeps_a_killed_loads_evidence_spill_first(tmp_path):
    """The sweep runs when the load starts, before MongoDB is reached (here: never)."""
    graph_dir = tmp_path / "build" / "graph"
    graph_dir.mkdir(parents=True)
    for name in ("vertices.parquet", "edges.parquet"):
        (graph_dir / name).touch()
    stale = stale_spill_folder(graph_dir.parent, ".evidence-spill-")
    closed = mongo.RetryPolicy(attempts=1, timeout_ms=100)
    with pytest.raises(mongo.MongoUnavailable):
        load_build("mongodb://127.0.0.1:1/", "litpath", "b", tmp_path / "tables", graph_dir, {}, retry=closed)
    assert not stale.exists()
