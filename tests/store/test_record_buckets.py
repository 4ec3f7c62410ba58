"""Record buckets grouped ahead of the load (``litpath bucket-records``, bucket files): the same
buckets as the load groups itself, byte for byte, and a store loaded from them that equals one
loaded by grouping in the load; a bucket file of another kind, format, or damaged is refused."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from click.testing import CliRunner
from pymongo import MongoClient

from pipeline.builds.layout import bucket_file, bucket_file_record
from pipeline.store.buckets import Bucket, ListedBucket
from pipeline.store.commands import bucket_records_command, load_mongo_command
from pipeline.store.record_buckets import (
    RECORDS,
    BucketFile,
    BucketFileError,
    GroupingSettings,
    KindRecords,
    kind_records,
    write_bucket_file,
)
from pipeline.store.store_format import BUCKET_COLLECTIONS, BUILD_BUCKETS, KINDS


def _bucket_rows(buckets) -> list[tuple]:
    return [(b.bucket_id, b.first, b.rows, b.data) for b in buckets]


@pytest.mark.parametrize("kind", KINDS)
def test_a_bucket_file_holds_the_buckets_the_load_would_group(built, tmp_path, kind):
    tables, graph = built
    # a budget small enough that the evidence and papers are grouped in several partitions
    settings = GroupingSettings(budget_bytes=1 << 16, spill_dir=tmp_path)
    path = bucket_file(tmp_path / "store", kind)
    counts = write_bucket_file(path, kind, kind_records(kind, tables, graph, settings))
    expected = _bucket_rows(kind_records(kind, tables, graph, settings).buckets())
    assert _bucket_rows(BucketFile.open(path, kind).buckets()) == expected
    assert counts[f"{kind}_buckets"] == len(expected) and counts[f"{kind}_in_build"] == sum(r[2] for r in expected)
    if kind in ("evidence", "papers"):
        assert len(expected) > 3  # more than one bucket, so the order and boundaries are checked
    record = json.loads(bucket_file_record(path).read_text())
    assert record["kind"] == kind and record["counts"] == counts


def test_documents_and_papers_need_no_graph(built, tmp_path):
    tables, _graph = built
    settings = GroupingSettings(budget_bytes=1 << 30, spill_dir=tmp_path)
    for kind in ("documents", "papers"):
        assert sum(b.rows for b in kind_records(kind, tables, None, settings).buckets()) > 100
    with pytest.raises(ValueError, match="graph folder"):
        kind_records("evidence", tables, None, settings)


def _small_file(tmp_path, kind="documents") -> tuple:
    n = 700
    columns = {field.name: pa.nulls(n, field.type) for field in RECORDS[kind]}
    rows = pa.table({**columns, "doc_id": [f"PMID:{i:04d}" for i in range(n)], "pmid": pa.array(range(n), pa.int64())})
    records = KindRecords(kind, lambda: [rows], None)
    path = bucket_file(tmp_path, kind)
    write_bucket_file(path, kind, records)
    return path, records


def test_a_bucket_file_of_another_kind_or_format_or_incomplete_is_refused(tmp_path):
    path, _records = _small_file(tmp_path)
    assert len(list(BucketFile.open(path, "documents").buckets())) > 1
    with pytest.raises(BucketFileError, match="holds 'documents' buckets, not 'papers'"):
        BucketFile.open(path, "papers")
    record = bucket_file_record(path)
    meta = json.loads(record.read_text())
    record.write_text(json.dumps({**meta, "store_format": 1}))
    with pytest.raises(BucketFileError, match="store format 1"):
        BucketFile.open(path, "documents")
    record.unlink()  # the record is written last: without it the file is incomplete
    with pytest.raises(BucketFileError, match="no complete bucket file"):
        BucketFile.open(path, "documents")


def test_a_damaged_bucket_is_refused_as_it_is_read(tmp_path):
    path, _records = _small_file(tmp_path)
    with pa.OSFile(str(path)) as source:  # read into memory: the file is written over below
        table = ipc.open_file(source).read_all()
    data = table.column("data").to_pylist()
    damaged = bytearray(data[1])
    damaged[-1] ^= 0xFF
    data[1] = bytes(damaged)
    table = table.set_column(3, "data", pa.array(data, pa.large_binary()))
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    buckets = BucketFile.open(path, "documents").buckets()
    next(buckets)  # the first bucket is intact
    with pytest.raises(BucketFileError, match="does not match its bytes"):
        next(buckets)
    # A bucket the store holds (a load on top of an earlier build) is listed, its bytes unread
    damaged_id = table.column("bucket_id")[1].as_py()
    listed = list(BucketFile.open(path, "documents").buckets(listed_only={damaged_id}))
    assert isinstance(listed[1], ListedBucket) and listed[1].bucket_id == damaged_id
    assert [b.bucket_id for b in listed] == table.column("bucket_id").to_pylist()
    assert all(isinstance(b, Bucket) for i, b in enumerate(listed) if i != 1)
    # A rebuild taking the bucket as it is does not hash it again: it carries the listed id and
    # the bytes unchanged, and a load that reads them refuses them (test below)
    mapped = BucketFile.open(path, "documents").mapped()
    try:
        taken = mapped.reused(1)
        assert (taken.bucket_id, taken.data) == (damaged_id, data[1])
        with pytest.raises(BucketFileError, match="does not match its bytes"):
            mapped.bucket(1)
    finally:
        mapped.close()


@pytest.mark.servers
def test_a_load_reads_only_the_buckets_the_store_lacks(mongo_uri, tmp_path):
    """Loaded again as another build (a citation rerun's documents), a file's buckets the store
    holds are neither sent nor read: a damaged one among them does not stop the load, and the
    listing is the same; damaged and unknown to the store, it is refused."""
    path, _records = _small_file(tmp_path)
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    record = tmp_path / "config.json"
    record.write_text(json.dumps({"results_dir": str(tmp_path)}))
    common = ["--mongo-uri", mongo_uri, "--mongo-database", database, "--tables-dir", str(tmp_path),
              "--buckets-dir", str(path.parent), "--kind", "documents", "--partial", "--build-record", str(record)]  # fmt: skip
    client = MongoClient(mongo_uri)
    try:
        first = CliRunner().invoke(load_mongo_command, [*common, "--build-id", "one", "--report", str(tmp_path / "1.json")])
        assert first.exit_code == 0, first.output
        # a partial load leaves the build loading: mark it complete, as load-mongo --complete would
        client[database].builds.update_one({"_id": "one"}, {"$set": {"status": "complete"}})
        with pa.OSFile(str(path)) as source:
            table = ipc.open_file(source).read_all()
        data = table.column("data").to_pylist()
        data[1] = data[1][:-1] + bytes([data[1][-1] ^ 0xFF])
        table = table.set_column(3, "data", pa.array(data, pa.large_binary()))
        with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        second = CliRunner().invoke(load_mongo_command, [*common, "--build-id", "two", "--report", str(tmp_path / "2.json")])
        assert second.exit_code == 0, second.output
        counts = json.loads((tmp_path / "2.json").read_text())["counts"]
        assert counts["documents_buckets_written"] == 0 and counts["documents_buckets"] == len(data), counts
        listings = [sorted(d["_id"] for d in client[database][BUILD_BUCKETS].find({"build": b})) for b in ("one", "two")]
        assert len(listings[1]) == len(listings[0]) > 0
        client.drop_database(database)
        third = CliRunner().invoke(load_mongo_command, [*common, "--build-id", "three", "--report", str(tmp_path / "3.json")])
        assert third.exit_code != 0 and "does not match its bytes" in third.output + str(third.exception)
    finally:
        client.drop_database(database)
        client.close()


@pytest.mark.servers
def test_a_load_from_bucket_files_stores_what_a_grouping_load_stores(mongo_uri, built, tmp_path):
    """Through the commands the workflow runs: bucket-records for each kind, then load-mongo
    --buckets-dir; against load-mongo grouping everything itself, into another database."""
    tables, graph = built
    runner = CliRunner()
    store = tmp_path / "store"
    for kind in KINDS:
        result = runner.invoke(bucket_records_command, ["--kind", kind, "--tables-dir", str(tables), "--graph-dir",
                                                        str(graph), "--out", str(bucket_file(store, kind))])  # fmt: skip
        assert result.exit_code == 0, result.output
    databases = [f"litpath_test_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    reports = [tmp_path / "from-files.json", tmp_path / "grouped.json"]
    client = MongoClient(mongo_uri)
    try:
        for database, report, extra in zip(databases, reports, (["--buckets-dir", str(store)], []), strict=True):
            args = ["--mongo-uri", mongo_uri, "--mongo-database", database, "--build-id", "b", "--tables-dir",
                    str(tables), "--graph-dir", str(graph), "--report", str(report), *extra]  # fmt: skip
            result = runner.invoke(load_mongo_command, args)
            assert result.exit_code == 0, result.output
        from_files, grouped = (json.loads(report.read_text())["counts"] for report in reports)
        assert {from_files.pop(f"{kind}_source") for kind in KINDS} == {"bucket file"}
        assert {from_files.pop(f"{kind}_reuse") for kind in KINDS} == {"none: the merge was not on the delta of an earlier build"}
        assert {grouped.pop(f"{kind}_source") for kind in KINDS} == {"grouped by the load"}
        assert from_files == grouped and grouped["evidence_written"] > 500
        for collection in [*BUCKET_COLLECTIONS.values(), BUILD_BUCKETS]:
            stored = [{doc["_id"]: doc for doc in client[database][collection].find({})} for database in databases]
            assert stored[0] == stored[1], collection
    finally:
        for database in databases:
            client.drop_database(database)
        client.close()
