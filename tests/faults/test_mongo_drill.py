"""The MongoDB-wire server stopped in the middle of a load: bounded retries, a clear failure,
then a rerun after the restart gives the same counts as a clean load, without duplicates."""

from __future__ import annotations

import time
import uuid

import pytest
from pymongo import MongoClient

from pipeline.store.mongo import MongoUnavailable, RetryPolicy, load_build
from services.local.servers import MongoServer

pytestmark = [pytest.mark.faults, pytest.mark.servers]


QUICK = RetryPolicy(attempts=3, first_wait=0.2, max_wait=0.5, timeout_ms=500)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A synthetic corpus's build: several buckets of each kind, so a load can stop between two."""
    from support.pipeline_runs import merged_and_graphed

    tables, graph_dir = merged_and_graphed(tmp_path_factory.mktemp("built"))
    return tables, graph_dir, {"counts": {"note": "drill"}}


@pytest.fixture
def mongo(tmp_path):
    server = MongoServer(tmp_path / "mongo")  # our own: this test stops it
    server.start(timeout=180)
    try:
        yield server
    finally:
        server.stop()


def _collection_counts(uri: str, database: str) -> dict[str, int]:
    client = MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        db = client[database]
        names = ("document_buckets", "concept_buckets", "evidence_buckets", "build_buckets", "builds")
        return {name: db[name].count_documents({}) for name in names}
    finally:
        client.close()


def test_mongo_stopped_mid_load_then_rerun_matches_clean_load(mongo, built):
    tables, graph_dir, record = built
    clean_db, drill_db = f"clean_{uuid.uuid4().hex[:8]}", f"drill_{uuid.uuid4().hex[:8]}"
    clean = load_build(mongo.uri, clean_db, "b1", tables, graph_dir, record, batch_size=1)

    stopped = []

    def stop_after_first_batches(kind: str, written: int, total: int | None) -> None:
        if kind == "evidence" and written > 0 and not stopped:
            mongo.stop()  # mid-load: documents and concepts done, evidence half written
            stopped.append(time.monotonic())

    started = time.monotonic()
    with pytest.raises(MongoUnavailable, match=r"unavailable while writing evidence buckets 1\.\.1: gave up after 3"):
        load_build(
            mongo.uri,
            drill_db,
            "b1",
            tables,
            graph_dir,
            record,
            batch_size=1,
            progress=stop_after_first_batches,
            retry=QUICK,
        )
    assert stopped, "the progress hook never stopped the server"
    assert time.monotonic() - started < 60, "retries must be bounded"

    mongo.start(timeout=180)
    partial = _collection_counts(mongo.uri, drill_db)
    assert partial["evidence_buckets"] < clean["evidence_buckets"]  # the load really was cut short

    rerun = load_build(mongo.uri, drill_db, "b1", tables, graph_dir, record, batch_size=1)
    # the same build; the rerun wrote only what the cut-short load had not
    assert {k: v for k, v in rerun.items() if "written" not in k} == {k: v for k, v in clean.items() if "written" not in k}
    assert 0 < rerun["evidence_buckets_written"] < clean["evidence_buckets_written"]
    assert _collection_counts(mongo.uri, drill_db) == _collection_counts(mongo.uri, clean_db)
    client = MongoClient(mongo.uri)
    try:
        assert client[drill_db].builds.find_one({"_id": "b1"})["status"] == "complete"
    finally:
        client.close()


def test_mongo_retry_rides_out_a_short_outage(mongo, built):
    """Down for less than the retry budget: the load completes by itself."""
    tables, graph_dir, record = built
    database = f"outage_{uuid.uuid4().hex[:8]}"
    bounced = []

    def bounce(kind: str, written: int, total: int | None) -> None:
        if kind == "documents" and written >= 1 and not bounced:
            mongo.stop()
            mongo.start(timeout=180)
            bounced.append(True)

    counts = load_build(mongo.uri, database, "b2", tables, graph_dir, record, batch_size=1, progress=bounce)
    assert bounced
    assert counts["documents_in_build"] > 100 and counts["evidence_in_build"] > 100
    assert counts["documents_buckets_written"] == counts["documents_buckets"]
