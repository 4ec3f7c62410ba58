"""pipeline.store.evidence: how long "this build is loaded completely" is believed.

A fake database (one ``builds`` collection answering ``find_one`` on ``_id``) and a fake clock:
the re-checks are counted, and time passes only when the test says so.
"""

from __future__ import annotations

import pytest

from pipeline.store import evidence


class _Builds:
    def __init__(self):
        self.records: dict[str, dict] = {}
        self.reads = 0

    def find_one(self, query, projection=None):
        self.reads += 1
        return self.records.get(query["_id"])


class _Db:
    name = "litpath"

    def __init__(self):
        self.client = object()  # the cache is per client, database and build
        self.builds = _Builds()

    def __getitem__(self, collection: str):
        assert collection == "builds"
        return self.builds


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(evidence, "time", fake)
    monkeypatch.setattr(evidence, "_loaded", {})  # no answer cached by another test
    monkeypatch.setattr(evidence, "RECHECK_COMPLETE_S", 300.0)
    monkeypatch.setattr(evidence, "RECHECK_INCOMPLETE_S", 5.0)
    return fake


def test_complete_is_read_again_after_the_interval_and_a_dropped_record_is_seen(clock):
    db = _Db()
    db.builds.records["b1"] = {"_id": "b1", "status": "complete"}
    assert evidence.build_loaded(db, "b1") is True
    del db.builds.records["b1"]  # the store dropped, or restored from before the load
    clock.now += 299.0
    assert evidence.build_loaded(db, "b1") is True and db.builds.reads == 1  # cached: one read in 5 min
    clock.now += 2.0
    assert evidence.build_loaded(db, "b1") is False and db.builds.reads == 2
    # Not complete: read again after a few seconds, so a new load is seen soon.
    db.builds.records["b1"] = {"_id": "b1", "status": "complete"}
    clock.now += 4.0
    assert evidence.build_loaded(db, "b1") is False
    clock.now += 2.0
    assert evidence.build_loaded(db, "b1") is True and db.builds.reads == 3


def test_recheck_interval_is_a_setting(clock):
    db = _Db()
    db.builds.records["b2"] = {"_id": "b2", "status": "complete"}
    evidence.set_recheck_interval(10.0)  # monkeypatch restores the module's value afterwards
    assert evidence.build_loaded(db, "b2") is True
    db.builds.records["b2"]["status"] = "loading"  # a reload under way
    clock.now += 11.0
    assert evidence.build_loaded(db, "b2") is False
    with pytest.raises(ValueError, match="> 0"):
        evidence.set_recheck_interval(0)


def test_build_status_reads_the_record():
    db = _Db()
    assert evidence.build_status(db, "nope") is None
    db.builds.records["b3"] = {"_id": "b3", "status": "loading"}
    assert evidence.build_status(db, "b3") == "loading"
