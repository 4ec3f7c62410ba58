"""The MongoDB-wire server stopped in the middle of a load: bounded retries, a clear failure,
then a rerun after the restart gives the same counts as a clean load, without duplicates."""

from __future__ import annotations

import time
import uuid

import pytest
from pymongo import MongoClient

from pipeline.graph.build import build_graph
from pipeline.store.mongo import MongoUnavailable, RetryPolicy, load_build
from services.local.servers import MongoServer

pytestmark = [pytest.mark.faults, pytest.mark.servers]

from support import tiny_corpus as tiny  # noqa: E402

QUICK = RetryPolicy(attempts=3, first_wait=0.2, max_wait=0.5, timeout_ms=500)


@pytest.fixture
def built(tmp_path):
    tables = tiny.write_tiny_tables(tmp_path / "tables")
    record = build_graph(tables, tmp_path / "graph", {})
    return tables, tmp_path / "graph", {"config": record["config"], "counts": record["counts"]}


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
        return {
            name: db[name].count_documents({}) for name in ("documents", "concepts", "evidence", "builds")
        }
    finally:
        client.close()


def test_mongo_stopped_mid_load_then_rerun_matches_clean_load(mongo, built):
    tables, graph_dir, record = built
    clean_db, drill_db = f"clean_{uuid.uuid4().hex[:8]}", f"drill_{uuid.uuid4().hex[:8]}"
    clean = load_build(mongo.uri, clean_db, "b1", tables, graph_dir, record, batch_size=1)

    stopped = []

    def stop_after_first_batches(collection: str, written: int, total: int | None) -> None:
        if collection == "concepts" and written == 2 and not stopped:
            mongo.stop()  # mid-load: documents done, concepts half written
            stopped.append(time.monotonic())

    started = time.monotonic()
    with pytest.raises(
        MongoUnavailable, match=r"unavailable while writing concepts rows 2\.\.2: gave up after 3"
    ):
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
    assert partial["concepts"] < clean["concepts_in_build"]  # the load really was cut short

    rerun = load_build(mongo.uri, drill_db, "b1", tables, graph_dir, record, batch_size=1)
    assert rerun == clean
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

    def bounce(collection: str, written: int, total: int | None) -> None:
        if collection == "documents" and written == 1 and not bounced:
            mongo.stop()
            mongo.start(timeout=180)
            bounced.append(True)

    counts = load_build(mongo.uri, database, "b2", tables, graph_dir, record, batch_size=1, progress=bounce)
    assert bounced
    assert (
        counts["documents_in_build"] == 4
        and counts["concepts_in_build"] == 6
        and counts["evidence_in_build"] == 6
    )
