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


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small synthetic corpus through ingest, merge and build-graph."""
    from support.pipeline_runs import merged_and_graphed

    return merged_and_graphed(tmp_path_factory.mktemp("build"))


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
