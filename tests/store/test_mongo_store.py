"""Loading a build into the real local MongoDB-wire server (fixture ``mongo_uri``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pymongo import MongoClient
from support import tiny_corpus as tiny  # noqa: E402

from pipeline.config.connections import redact_uri
from pipeline.graph.build import build_graph
from pipeline.store.buckets import decode
from pipeline.store.commands import load_mongo_command
from pipeline.store.evidence import evidence_for_pairs
from pipeline.store.mongo import load_build
from pipeline.store.store_format import BUCKET_COLLECTIONS, read_listing

A, B, C, D, E, F = tiny.A, tiny.B, tiny.C, tiny.D, tiny.E, tiny.F


@pytest.fixture
def built(tmp_path):
    tables = tiny.write_tiny_tables(tmp_path / "tables")
    record = build_graph(tables, tmp_path / "graph", {})
    return tables, tmp_path / "graph", record


def test_redact_uri_hides_credentials():
    assert redact_uri("mongodb://user:s3cret@db.example:27017/x") == "mongodb://***@db.example:27017/x"
    assert redact_uri("mongodb://127.0.0.1:27017") == "mongodb://127.0.0.1:27017"


def _records(db, build_id: str, kind: str) -> list[dict]:
    """A build's rows of one kind as the store holds them: its listing's buckets, decoded, in order."""
    listing = read_listing(db, build_id, kind)
    docs = {doc["_id"]: doc for doc in db[BUCKET_COLLECTIONS[kind]].find({"_id": {"$in": listing.ids}})}
    return [row for bucket_id in listing.ids for row in decode(docs[bucket_id]["arrow"]).to_pylist()]


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
    client = MongoClient(mongo_uri)
    try:
        db = client[database]
        stored = {name: db[name].count_documents({}) for name in db.list_collection_names()}
        second = load_build(mongo_uri, database, build_id, tables, graph_dir, record, batch_size=3)
        # the same documents again; the second load found every bucket there and wrote none
        assert {name: db[name].count_documents({}) for name in db.list_collection_names()} == stored
        assert {k: v for k, v in second.items() if "written" not in k} == {
            k: v for k, v in first.items() if "written" not in k
        }
        assert first["documents_written"] == 4 and second["documents_written"] == second["evidence_written"] == 0
        # the bytes sent are the stored buckets' own (what the next rerun's forecast scales)
        for kind, collection in BUCKET_COLLECTIONS.items():
            assert first[f"{kind}_bytes_written"] == sum(len(d["arrow"]) for d in db[collection].find()) > 0, kind
            assert second[f"{kind}_bytes_written"] == 0, kind
        assert first["documents_in_build"] == 4  # PMID:1, 2, 3, 9 (PMID:4 is only cited)
        assert first["concepts_in_build"] == 6  # A..E are vertices, F only in the concepts table
        assert first["evidence_in_build"] == 6  # one per concept-concept edge

        documents = _records(db, build_id, "documents")
        assert [d["doc_id"] for d in documents] == ["PMID:1", "PMID:2", "PMID:3", "PMID:9"]
        assert documents[0]["pmid"] == 1 and documents[0]["source"] is not None
        concepts = {c["cui"]: c for c in _records(db, build_id, "concepts")}
        assert (concepts[A]["name"], concepts[A]["vid"], concepts[A]["semtypes"]) == ("interleukin-7", 0, ["aapp", "imft"])
        assert concepts[E]["vid"] == 4 and concepts[F]["vid"] is None
        evidence = {(e["cui_a"], e["cui_b"]): e for e in _records(db, build_id, "evidence")}
        ab = evidence[(A, B)]
        assert (ab["documents"], ab["sentence_ids"], ab["n_predications"], ab["n_documents"], ab["truncated"]) == (
            ["PMID:1", "PMID:2"], [11, 22], 2, 2, False,
        )  # fmt: skip
        assert (evidence[(B, E)]["documents"], evidence[(B, E)]["sentence_ids"]) == (["PMID:3"], [33])
        assert (C, C) not in evidence  # self pair: no edge, no evidence
        # The reader finds a pair in either order, and knows that a pair without a record has none.
        found = evidence_for_pairs(db, build_id, [(B, A), (E, B), (C, C)])
        assert {pair: (f["documents"], f["n_predications"]) for pair, f in found.items()} == {
            (A, B): (["PMID:1", "PMID:2"], 2),
            (B, E): (["PMID:3"], 1),
            (C, C): ([], 0),  # the build is loaded: known to have none
        }
        assert found[(C, C)]["predicates"] == found[(C, C)]["sentences"] == []
        assert found[(B, E)]["predicates"] == [{"predicate": "INTERACTS_WITH", "count": 1}]

        build = db.builds.find_one({"_id": build_id})
        assert (build["status"], build["store_format"]) == ("complete", 2)
        assert build["inputs"] == record["inputs"]
        assert build["mongo_counts"] == second
        indexed = {tuple(spec["key"].keys()) for spec in db.build_buckets.list_indexes()}
        assert ("build", "kind") in indexed
    finally:
        client.drop_database(database)
        client.close()


@pytest.mark.servers
def test_a_second_build_writes_only_the_buckets_it_changes(mongo_uri, tmp_path):
    """Two builds of a calibrated synthetic corpus, the second with one more PubMed update file
    (new papers, revised ones, a deletion): the buckets of rows the update leaves alone are shared,
    and the second load writes only the others; what each build lists is its own rows, exactly."""
    from support.pipeline_runs import merged_and_graphed

    corpus = {"scale": 40_000, "seed": 4, "profile": "calibrated"}
    first_tables, first_graph = merged_and_graphed(tmp_path / "a", n_update_files=1, **corpus)
    second_tables, second_graph = merged_and_graphed(tmp_path / "b", n_update_files=2, **corpus)
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    try:
        one = load_build(mongo_uri, database, "one", first_tables, first_graph, {})
        two = load_build(mongo_uri, database, "two", second_tables, second_graph, {})
        db = client[database]
        for kind in ("documents", "concepts", "evidence"):
            assert one[f"{kind}_buckets_written"] == one[f"{kind}_buckets"]
            shared = set(read_listing(db, "one", kind).ids) & set(read_listing(db, "two", kind).ids)
            assert len(shared) == two[f"{kind}_buckets"] - two[f"{kind}_buckets_written"], kind
        # evidence: the buckets written are those of the pairs whose rows changed (a changed row
        # rewrites its bucket; a boundary key added or removed, at most the two beside it); an
        # update file of PubMed records may change none, SemMedDB's tables being the same
        evidence = [{(e["cui_a"], e["cui_b"]): e for e in _records(db, b, "evidence")} for b in ("one", "two")]
        changed = {pair for pair in evidence[0].keys() | evidence[1].keys() if evidence[0].get(pair) != evidence[1].get(pair)}
        assert (two["evidence_buckets_written"] == 0) == (not changed)
        assert two["evidence_buckets_written"] <= 2 * len(changed) < two["evidence_buckets"] / 4
        assert 0 < two["documents_buckets_written"] < two["documents_buckets"]
        for build, tables in (("one", first_tables), ("two", second_tables)):
            expected = pq.read_table(tables / "documents.parquet", columns=["doc_id", "title"]).to_pylist()
            assert [{k: d[k] for k in ("doc_id", "title")} for d in _records(db, build, "documents")] == expected
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


@pytest.mark.servers
def test_kinds_loaded_one_by_one_then_completed_equal_one_load(mongo_uri, built, tmp_path):
    """The workflow's way: `load-mongo --partial --kind K` per kind from its bucket file (the build
    stays "loading", no reader takes it), then `--complete --loaded ...` reads them back and marks
    it complete. The store then holds what one load of every kind writes, record for record."""
    import json

    from pipeline.store.commands import bucket_records_command

    tables, graph_dir, _ = built
    store = tmp_path / "store"
    for kind in ("documents", "concepts", "evidence", "papers"):
        out = store / f"{kind}.buckets.arrow"
        result = CliRunner().invoke(bucket_records_command, ["--kind", kind, "--tables-dir", str(tables),
                                                             "--graph-dir", str(graph_dir), "--out", str(out)])  # fmt: skip
        assert result.exit_code == 0, result.output
    one, by_kind = f"litpath_test_{uuid.uuid4().hex[:8]}", f"litpath_test_{uuid.uuid4().hex[:8]}"
    common = ["--mongo-uri", mongo_uri, "--build-id", "kinds", "--tables-dir", str(tables)]
    client = MongoClient(mongo_uri)
    try:
        whole = CliRunner().invoke(load_mongo_command, [*common, "--mongo-database", one, "--graph-dir",
                                                        str(graph_dir), "--buckets-dir", str(store)])  # fmt: skip
        assert whole.exit_code == 0, whole.output
        reports = []
        for kind in ("papers", "documents", "evidence", "concepts"):  # in the order their files come
            report = tmp_path / f"{kind}.mongo_load.json"
            result = CliRunner().invoke(load_mongo_command, [
                *common, "--mongo-database", by_kind, "--graph-dir", str(graph_dir), "--buckets-dir", str(store),
                "--partial", "--kind", kind, "--report", str(report)])  # fmt: skip
            assert result.exit_code == 0, result.output
            assert json.loads(report.read_text())["kinds"] == [kind]
            assert client[by_kind].builds.find_one({"_id": "kinds"})["status"] == "loading"
            reports.append(report)
        # --complete refuses to mark a build whose kinds are not all there (without --kind, the
        # kinds not in a report are written by the call itself)
        missing = CliRunner().invoke(load_mongo_command, [*common, "--mongo-database", by_kind, "--graph-dir",
                                                          str(graph_dir), "--loaded", str(reports[0]),
                                                          "--kind", "documents"])  # fmt: skip
        assert missing.exit_code != 0 and "--complete needs every kind" in missing.output
        # --complete reads each kind's listing back (its buckets were read back by the kind's
        # load): a listing gone since is refused, and the build stays loading
        listing = list(client[by_kind].build_buckets.find({"build": "kinds", "kind": "evidence"}))
        client[by_kind].build_buckets.delete_many({"build": "kinds", "kind": "evidence"})
        gone = CliRunner().invoke(load_mongo_command, [*common, "--mongo-database", by_kind, "--graph-dir",
                                                       str(graph_dir), *[f"--loaded={r}" for r in reports]])  # fmt: skip
        assert gone.exit_code == 1 and "evidence: the build's bucket listing reads back as missing" in str(gone.exception)
        assert client[by_kind].builds.find_one({"_id": "kinds"})["status"] == "loading"
        client[by_kind].build_buckets.insert_many(listing)
        done = CliRunner().invoke(load_mongo_command, [*common, "--mongo-database", by_kind, "--graph-dir",
                                                       str(graph_dir), *[f"--loaded={r}" for r in reports]])  # fmt: skip
        assert done.exit_code == 0, done.output
        records = {db: client[db].builds.find_one({"_id": "kinds"}) for db in (one, by_kind)}
        assert records[by_kind]["status"] == "complete"
        counts = {db: {k: v for k, v in records[db]["mongo_counts"].items() if not k.endswith("_source")}
                  for db in records}  # fmt: skip
        assert counts[one] == counts[by_kind]
        for kind in ("documents", "concepts", "evidence", "papers"):
            assert _records(client[one], "kinds", kind) == _records(client[by_kind], "kinds", kind), kind
        # a report of another build is refused
        other = CliRunner().invoke(load_mongo_command, [*common[:3], "other", *common[4:], "--mongo-database",
                                                        by_kind, "--graph-dir", str(graph_dir),
                                                        *[f"--loaded={r}" for r in reports]])  # fmt: skip
        assert other.exit_code != 0 and "a load of build kinds" in other.output
    finally:
        client.drop_database(one)
        client.drop_database(by_kind)
        client.close()


@pytest.mark.servers
def test_load_reports_the_store_no_longer_backs_are_forgotten(mongo_uri, tmp_path):
    """The workflow's check before it plans (workflow/rules/common.smk): a build's load reports go
    when the store has no record of the build, or the complete report is there and the record is
    not complete; they stay when the record is complete, when a run stopped between the kinds'
    loads and the last one, and when the store cannot be read."""
    from pipeline.store.mongo import forget_loads_the_store_lacks

    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    complete, kinds = tmp_path / "mongo_load.json", [tmp_path / f"store/{k}.mongo_load.json" for k in ("a", "b")]
    (tmp_path / "store").mkdir()

    def reports(with_complete: bool = True) -> list[Path]:
        for path in ([complete] if with_complete else []) + kinds:
            path.write_text("{}\n")
        return [p for p in (complete, *kinds) if p.exists()]

    def check(uri: str | None = mongo_uri) -> str | None:
        return forget_loads_the_store_lacks(complete, kinds, uri, database, "b1", timeout_ms=1_000)

    client = MongoClient(mongo_uri)
    try:
        assert check() is None  # no report: nothing to ask
        reports()
        note = check()  # no record of the build at all: every report goes
        assert note and "no record of build b1" in note and "3 load report(s)" in note, note
        assert "***@" in note or "@" not in mongo_uri.split("//", 1)[1]  # credentials never in the line
        assert not any(p.exists() for p in (complete, *kinds))

        client[database]["builds"].insert_one({"_id": "b1", "status": "complete"})
        assert reports() and check() is None and all(p.exists() for p in (complete, *kinds))

        client[database]["builds"].update_one({"_id": "b1"}, {"$set": {"status": "loading"}})
        complete.unlink()
        assert check() is None and all(p.exists() for p in kinds)  # kinds loaded, the last load not run yet
        reports()
        note = check()  # the complete report says more than the store holds
        assert note and "build status 'loading' for build b1" in note, note
        assert not any(p.exists() for p in (complete, *kinds))

        reports()
        assert check(None) is None  # no URI: no store to ask
        note = check("mongodb://127.0.0.1:1/")
        assert note and "could not check" in note and all(p.exists() for p in (complete, *kinds)), note
    finally:
        client.drop_database(database)
        client.close()


def test_the_read_back_checks_what_the_load_wrote_and_a_sample_of_what_the_store_held(mongo_uri):
    """A load's read-back (``_verify``) checks every bucket it wrote and a sample of those the store
    already held; a bucket gone from the store is found among either."""
    import pyarrow as pa

    from pipeline.store.mongo import MongoUnavailable, _verify, write_records
    from pipeline.store.record_buckets import DOCUMENTS

    n = 3000
    rows = pa.table({name: pa.nulls(n, field.type) for name, field in zip(DOCUMENTS.names, DOCUMENTS, strict=True)})
    rows = rows.set_column(0, "doc_id", pa.array([f"PMID:{i:05d}" for i in range(n)]))
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    try:
        db = client[database]
        write_records(db, "b", "documents", [rows])
        ids = read_listing(db, "b", "documents").ids
        assert len(ids) > 10
        assert _verify(db, "b", "documents") == len(ids)  # all written by this load: all checked
        # all held before: a sample of at most known_sample is checked
        assert _verify(db, "b", "documents", frozenset(ids), known_sample=5) <= 5
        db[BUCKET_COLLECTIONS["documents"]].delete_one({"_id": ids[0]})  # the sample's first
        with pytest.raises(MongoUnavailable, match="1 of the build's buckets are missing"):
            _verify(db, "b", "documents")
        with pytest.raises(MongoUnavailable, match="missing"):
            _verify(db, "b", "documents", frozenset(ids), known_sample=5)
    finally:
        client.drop_database(database)
        client.close()
