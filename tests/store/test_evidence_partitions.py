"""The evidence over its memory budget: grouped in edge partitions spilled to disk, it gives the
same evidence, edge for edge, as the in-memory grouping; and a load under a tiny budget writes
the same MongoDB documents as one with room to spare."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pymongo import MongoClient
from support.spills import stale_spill_folder

from pipeline.store import evidence_rows, mongo
from pipeline.store.evidence_rows import evidence_partitions
from pipeline.store.mongo import load_build


def _as_rows(pieces) -> list:
    rows = [row for piece in pieces for row in piece.to_pylist()]
    keys = [(row["cui_a"], row["cui_b"]) for row in rows]
    assert len(set(keys)) == len(keys), "an edge in two partitions"
    return rows


def test_partitioned_evidence_equals_the_in_memory_grouping(built, tmp_path):
    tables, graph = built
    edge_keys = evidence_rows.concept_edge_keys(graph)
    reference = _as_rows(evidence_rows.evidence_tables(tables, edge_keys, 1 << 18, 1, tmp_path))
    assert len(reference) == len(edge_keys[0]) > 500  # every concept-concept edge has its evidence
    # in edge order, which is the (cui_a, cui_b) order the store's buckets need
    assert [(r["cui_a"], r["cui_b"]) for r in reference] == sorted((r["cui_a"], r["cui_b"]) for r in reference)
    for partitions, batch_rows in ((2, 1 << 18), (7, 211)):
        spilled = _as_rows(evidence_rows.evidence_tables(tables, edge_keys, batch_rows, partitions, tmp_path / "spill"))
        assert spilled == reference  # the same rows, in the same order
        assert not any((tmp_path / "spill").iterdir())  # partitions removed


def test_evidence_lists_are_sorted_distinct_and_capped_against_a_plain_python_grouping(built, tmp_path):
    """Each edge's documents and sentence ids, computed again row by row from the predications."""
    import pyarrow.parquet as pq

    tables, graph = built
    edge_keys = evidence_rows.concept_edge_keys(graph)
    edges = set(zip(edge_keys[0].to_pylist(), edge_keys[1].to_pylist(), strict=True))
    expected: dict = {}
    for row in pq.read_table(tables / "predications.parquet").to_pylist():
        pair = tuple(sorted((row["subject_cui"], row["object_cui"])))
        if pair in edges:
            entry = expected.setdefault(pair, (set(), set(), set()))
            entry[0].add(row["doc_id"]), entry[1].add(row["sentence_id"]), entry[2].add(row["predication_id"])
    cap = 3
    rows = _as_rows(evidence_rows.evidence_tables(tables, edge_keys, 1 << 18, 1, tmp_path, max_evidence=cap))
    assert any(r["truncated"] for r in rows) and not all(r["truncated"] for r in rows)
    for row in rows:
        documents, sentences, predications = expected[(row["cui_a"], row["cui_b"])]
        assert row["documents"] == sorted(documents)[:cap] and row["n_documents"] == len(documents)
        assert row["sentence_ids"] == sorted(sentences)[:cap] and row["n_predications"] == len(predications)
        assert row["truncated"] == (len(documents) > cap or len(sentences) > cap)


def test_partitions_follow_the_budget():
    assert evidence_partitions(0, 1 << 30) == 1
    assert evidence_partitions(1000, 1 << 30) == 1
    rows = 30_000_000
    # each partition in half the budget
    assert evidence_partitions(rows, 2 * rows * evidence_rows.EVIDENCE_BYTES_PER_ROW) == 1
    assert evidence_partitions(rows, rows * evidence_rows.EVIDENCE_BYTES_PER_ROW // 2) == 4
    assert evidence_partitions(rows, rows * evidence_rows.EVIDENCE_BYTES_PER_ROW // 2 - 2) == 5


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
        assert roomy.pop("paper_partitions") == 1 and tight.pop("paper_partitions") > 10  # doc_id ranges
        assert roomy == tight and roomy["evidence_written"] > 500 and roomy["papers_written"] > 500
        for collection in ("evidence_buckets", "paper_buckets"):
            buckets = [
                {doc["_id"]: doc["arrow"] for doc in client[database][collection].find({})} for database in databases
            ]
            assert buckets[0] == buckets[1], collection
        assert not any((tmp_path / "spill").iterdir())
    finally:
        for database in databases:
            client.drop_database(database)
        client.close()


def test_an_empty_graph_has_no_evidence(tmp_path):
    none = (pa.array([], pa.string()), pa.array([], pa.string()))
    empty = evidence_rows.group_evidence(evidence_rows.EVIDENCE_ROWS.empty_table(), none, 10)
    assert empty.num_rows == 0 and empty.schema == evidence_rows.EVIDENCE


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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_edge_rows_match_a_plain_python_lookup_on_random_pairs(tmp_path, seed):
    """Which predications lie on which edge (either way round), found by integer codes, against a
    dict of the edges' (cui_a, cui_b): cuis on no edge, a concept paired with itself, pairs given
    object first, batches smaller than the table, and edges listed in no particular order."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    cuis = [f"C{n:07d}" for n in rng.choice(10_000, 60, replace=False)]
    pairs = {tuple(sorted(rng.choice(cuis[:40], 2, replace=False).tolist())) for _ in range(200)}
    edges = list(pairs)
    rng.shuffle(edges)
    edge_keys = (pa.array([a for a, _ in edges]), pa.array([b for _, b in edges]))
    n = 5_000
    subject = rng.choice(cuis, n).tolist()
    object_ = [s if rng.random() < 0.05 else str(rng.choice(cuis)) for s in subject]
    table = pa.table({"predication_id": np.arange(n), "doc_id": [f"PMID:{i % 97}" for i in range(n)],
                      "sentence_id": np.arange(n) * 3, "predicate": ["TREATS"] * n,
                      "subject_cui": subject, "object_cui": object_})  # fmt: skip
    pq.write_table(table, tmp_path / "predications.parquet")
    position = {edge: k for k, edge in enumerate(edges)}
    expected = [(position[tuple(sorted((s, o)))], i) for i, (s, o) in enumerate(zip(subject, object_, strict=True))
                if tuple(sorted((s, o))) in position]  # fmt: skip
    rows = pa.concat_tables(evidence_rows._evidence_rows(tmp_path, edge_keys, 333))
    assert list(zip(rows["edge"].to_pylist(), rows["predication_id"].to_pylist(), strict=True)) == expected
    assert rows["subject_cui"].to_pylist() == [subject[i] for _, i in expected]
    assert 0 < len(expected) < n


@pytest.mark.parametrize("prefix", [".evidence-spill-", ".papers-spill-"])
def test_bucket_stage_sweeps_a_killed_jobs_spill_first(tmp_path, prefix):
    """`litpath bucket-records` sweeps its spill folder (the store folder by default) when it
    starts: the evidence and papers jobs spill there, and a job killed mid-grouping leaves its
    folder behind (here the tables folder is empty: the stage writes an empty bucket file)."""
    from click.testing import CliRunner

    from pipeline.cli import cli

    store = tmp_path / "build" / "store"
    store.mkdir(parents=True)
    (tmp_path / "tables").mkdir()
    stale = stale_spill_folder(store, prefix)
    result = CliRunner().invoke(cli, ["bucket-records", "--kind", "papers", "--tables-dir", str(tmp_path / "tables"),
                                       "--out", str(store / "papers.buckets.arrow")])  # fmt: skip
    assert not stale.exists(), result.output
    assert "removed stale spill folder" in result.output
