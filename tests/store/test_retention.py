"""litpath builds list|prune|rm (pipeline.store.retention): never `latest`, and no orphan left in
MongoDB -- every bucket left is listed by a remaining build, every listed bucket is there."""

from __future__ import annotations

import json
import random
import uuid

import pytest
from click.testing import CliRunner
from pymongo import MongoClient
from support.evidence_store import store_evidence

from pipeline.builds.layout import ResultsLayout
from pipeline.store.evidence import evidence_for_pairs
from pipeline.store.retention import (
    BuildEntry,
    RetentionError,
    collect_buckets,
    list_builds,
    prune_candidates,
    remove_builds,
)
from pipeline.store.store_format import BUCKET_COLLECTIONS, BUILD_BUCKETS, read_listing


def _entry(build_id: str, created: str, latest: bool = False, folder: bool = True) -> BuildEntry:
    return BuildEntry(build_id, created, f"/r/builds/{build_id}" if folder else None, 0, None, latest)


@pytest.mark.parametrize("seed", range(30))
def test_prune_keeps_the_newest_and_never_latest(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    entries = sorted(
        (_entry(f"b{i:02d}", f"2026-01-{rng.randint(1, 28):02d}", folder=rng.random() < 0.85) for i in range(n)),
        key=lambda e: (e.created, e.build_id),
    )
    with_folder = [e for e in entries if e.folder is not None]
    latest = rng.choice(with_folder).build_id if with_folder and rng.random() < 0.9 else None
    entries = [BuildEntry(e.build_id, e.created, e.folder, 0, None, e.build_id == latest) for e in entries]
    keep = rng.randint(1, 5)
    doomed = prune_candidates(entries, keep)
    # reference: the folder builds, newest first; latest is kept first, then the newest up to keep
    newest_first = [e.build_id for e in reversed(with_folder)]
    kept = ([latest] if latest else []) + [b for b in newest_first if b != latest]
    assert sorted(doomed) == sorted(kept[keep:])
    assert latest not in doomed
    assert all(e.folder is not None for e in entries if e.build_id in doomed)  # store-only builds: rm's
    assert len([e for e in with_folder if e.build_id not in doomed]) == min(keep, len(with_folder))


def test_keep_must_be_positive():
    with pytest.raises(RetentionError):
        prune_candidates([_entry("a", "1", latest=True)], 0)


def _results(tmp_path, build_ids, latest):
    results = ResultsLayout(tmp_path / "results")
    for i, build_id in enumerate(build_ids):
        folder = results.build(build_id).root
        folder.mkdir(parents=True)
        (folder / "build.json").write_text(json.dumps({"completed": f"2026-01-0{i + 1}T00:00:00+00:00"}))
        (folder / "payload.bin").write_bytes(b"x" * (100 + i))
    results.latest.symlink_to(f"builds/{latest}")
    return results


def test_sizes_count_files_shared_between_builds_once(tmp_path):
    """A rerun hard-links the earlier build's unchanged files: listed as shared, and removing one
    of the two builds frees only its own bytes, removing both frees the shared file too."""
    results = _results(tmp_path, ["b1", "b2", "b3"], latest="b3")
    shared = results.build("b1").root / "tables.parquet"
    shared.write_bytes(b"t" * 1000)
    (results.build("b2").root / "tables.parquet").hardlink_to(shared)
    sizes = {e.build_id: (e.folder_bytes, e.shared_bytes) for e in list_builds(results, None)}
    build_json = {b: results.build(b).record.stat().st_size for b in ("b1", "b2", "b3")}
    assert sizes == {
        "b1": (build_json["b1"] + 100 + 1000, 1000),
        "b2": (build_json["b2"] + 101 + 1000, 1000),
        "b3": (build_json["b3"] + 102, 0),
    }
    freed = remove_builds(results, None, ["b1"])["folders_bytes"]
    assert freed == build_json["b1"] + 100  # the shared table is still b2's
    assert {e.build_id: e.shared_bytes for e in list_builds(results, None)} == {"b2": 0, "b3": 0}
    assert remove_builds(results, None, ["b2"])["folders_bytes"] == build_json["b2"] + 101 + 1000


def test_removing_both_builds_that_share_a_file_frees_it(tmp_path):
    results = _results(tmp_path, ["b1", "b2", "b3"], latest="b3")
    shared = results.build("b1").root / "tables.parquet"
    shared.write_bytes(b"t" * 1000)
    (results.build("b2").root / "tables.parquet").hardlink_to(shared)
    build_json = sum(results.build(b).record.stat().st_size for b in ("b1", "b2"))
    assert remove_builds(results, None, ["b1", "b2"])["folders_bytes"] == build_json + 100 + 101 + 1000


def _records(seed: int, n: int) -> list[dict]:
    rng = random.Random(seed)
    return [
        {"cui_a": f"C{i:07d}", "cui_b": f"C{i + 1 + rng.randint(0, 5):07d}", "documents": [f"PMID:{rng.randint(1, 99)}"],
         "n_predications": rng.randint(1, 4)}
        for i in range(0, 2 * n, 2)
    ]  # fmt: skip


def _assert_no_orphans(db):
    listed = {}
    for part in db[BUILD_BUCKETS].find({}):
        listed.setdefault(part["kind"], set()).update(part["ids"])
    for kind, collection in BUCKET_COLLECTIONS.items():
        stored = {doc["_id"] for doc in db[collection].find({}, {"_id": 1})}
        assert stored == listed.get(kind, set()), kind


@pytest.mark.servers
def test_rm_and_prune_over_folders_and_store(mongo_uri, tmp_path):
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    try:
        db = client[database]
        base = _records(1, 3000)
        # b2 changes a tenth of b1's pairs, b3 is b2 with more pairs: shared and own buckets
        b2 = [dict(r, n_predications=r["n_predications"] + 10) if i % 10 == 0 else r for i, r in enumerate(base)]
        b3 = b2 + [dict(r, cui_a="D" + r["cui_a"][1:]) for r in _records(3, 400)]
        for build_id, records in (("b1", base), ("b2", b2), ("b3", b3), ("other", base[:50])):
            store_evidence(db, build_id, records)
        # format-1 records of b1 (before store format 2), which its removal takes along
        db.evidence.insert_many([{"_id": "b1:A|B", "build": "b1"}, {"_id": "b2:A|B", "build": "b2"}])
        db.documents.insert_many([{"_id": "PMID:1", "builds": ["b1"]}, {"_id": "PMID:2", "builds": ["b1", "b2"]}])
        results = _results(tmp_path, ["b1", "b2", "b3"], latest="b2")
        entries = list_builds(results, db)
        assert [e.build_id for e in entries if e.folder is not None] == ["b1", "b2", "b3"]
        assert [e.build_id for e in entries if e.latest] == ["b2"]
        assert {e.build_id: e.store_status for e in entries}["other"] == "complete"
        before = evidence_for_pairs(db, "b2", [(r["cui_a"], r["cui_b"]) for r in b2[:200]])

        with pytest.raises(RetentionError, match="never removed"):
            remove_builds(results, db, ["b3", "b2"])
        assert read_listing(db, "b3", "evidence") is not None  # refused before removing anything
        with pytest.raises(RetentionError, match="no build"):
            remove_builds(results, db, ["nope"])

        report = remove_builds(results, db, ["b1"])
        assert report["removed"] == ["b1"] and not results.build("b1").root.exists()
        assert report["buckets_deleted"]["evidence"] > 0  # b1's own buckets
        assert report["compaction"]["compacted"] is True
        assert read_listing(db, "b1", "evidence") is None and db.builds.find_one({"_id": "b1"}) is None
        assert db.evidence.find_one({"_id": "b1:A|B"}) is None and db.evidence.find_one({"_id": "b2:A|B"})
        assert db.documents.find_one({"_id": "PMID:1"}) is None
        assert db.documents.find_one({"_id": "PMID:2"})["builds"] == ["b2"]
        _assert_no_orphans(db)
        assert evidence_for_pairs(db, "b2", [(r["cui_a"], r["cui_b"]) for r in b2[:200]]) == before

        # prune --keep 1 keeps latest (b2), although b3 is newer; the store-only build stays
        results_entries = list_builds(results, db)
        assert prune_candidates(results_entries, 1) == ["b3"]
        remove_builds(results, db, prune_candidates(results_entries, 1))
        assert {e.build_id for e in list_builds(results, db)} == {"other", "b2"}
        _assert_no_orphans(db)
        assert evidence_for_pairs(db, "b2", [(r["cui_a"], r["cui_b"]) for r in b2[:200]]) == before
    finally:
        client.drop_database(database)
        client.close()


@pytest.mark.servers
def test_buckets_are_not_collected_while_a_build_loads(mongo_uri):
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    client = MongoClient(mongo_uri)
    try:
        db = client[database]
        store_evidence(db, "loading", _records(4, 600), complete=False)
        db[BUILD_BUCKETS].delete_many({"build": "loading"})  # as before a load lists its buckets
        assert collect_buckets(db) is None
        assert db[BUCKET_COLLECTIONS["evidence"]].count_documents({}) > 0
        db.builds.update_one({"_id": "loading"}, {"$set": {"status": "failed"}})
        assert collect_buckets(db)["evidence"] > 0  # a failed load's buckets are orphans
        _assert_no_orphans(db)
    finally:
        client.drop_database(database)
        client.close()


@pytest.mark.servers
def test_builds_command(mongo_uri, tmp_path, monkeypatch):
    from pipeline.store.commands import builds

    results = _results(tmp_path, ["b1", "b2"], latest="b2")
    config = tmp_path / "config.yaml"
    database = f"litpath_test_{uuid.uuid4().hex[:8]}"
    config.write_text(f"results_dir: {results.root}\nmongo: {{database: {database}}}\n")
    monkeypatch.setenv("LITPATH_MONGO_URI", mongo_uri)
    client = MongoClient(mongo_uri)
    try:
        for build_id in ("b1", "b2"):
            store_evidence(client[database], build_id, _records(5, 100))
        listed = CliRunner().invoke(builds, ["--config", str(config), "list", "--json"])
        assert listed.exit_code == 0, listed.output
        assert [(e["build_id"], e["latest"]) for e in json.loads(listed.output)] == [("b1", False), ("b2", True)]
        refused = CliRunner().invoke(builds, ["--config", str(config), "rm", "b2"])
        assert refused.exit_code != 0 and "never removed" in refused.output
        pruned = CliRunner().invoke(builds, ["--config", str(config), "prune", "--keep", "1"])
        assert pruned.exit_code == 0, pruned.output
        assert "removed 1 build(s): b1" in pruned.output and mongo_uri.split("@")[0] not in pruned.output
        assert client[database].builds.find_one({"_id": "b1"}) is None
    finally:
        client.drop_database(database)
        client.close()


def test_builds_store_operations_may_take_minutes(mongo_uri, tmp_path):
    """Collecting and compacting scan the whole store (9 s to compact a 12 GB local store): the
    builds command's client does not cut an operation short at the 10 s the other commands use."""
    from pipeline.store.commands import STORE_SCAN_TIMEOUT_MS, _BuildsContext

    config = tmp_path / "config.yaml"
    config.write_text(f"results_dir: {tmp_path / 'results'}\nmongo: {{database: litpath_test_timeout}}\n")
    context = _BuildsContext(config, mongo_uri)
    try:
        assert context.db().client.options.pool_options.socket_timeout == STORE_SCAN_TIMEOUT_MS / 1000
        assert STORE_SCAN_TIMEOUT_MS >= 10 * 60 * 1000
    finally:
        context.close()


# --- what a results folder holds besides complete builds (found in review) -----------------------


@pytest.mark.parametrize("build_id", ["..", ".", "/tmp", "../results", "b1/..", ""])
def test_an_id_that_is_no_folder_name_removes_nothing(tmp_path, build_id):
    """An id read from the store is any string: `rm ..` had emptied the results folder."""
    results = _results(tmp_path, ["b1", "b2"], latest="b2")
    (results.root / "keep.txt").write_text("mine")
    with pytest.raises(RetentionError, match="is not a build id"):
        remove_builds(results, None, [build_id])
    assert (results.root / "keep.txt").exists() and results.build("b1").root.exists()


def test_prune_leaves_a_build_without_build_json(tmp_path):
    """A folder without build.json may be a run still writing it: prune neither removes it nor
    counts it among those kept; list says it is incomplete; rm still removes it."""
    results = _results(tmp_path, ["b1", "b2", "b3"], latest="b3")
    running = results.build("b4").root
    running.mkdir()
    (running / "config.yaml").write_text("inputs: {}\n")
    entries = list_builds(results, None)
    assert [(e.build_id, e.complete) for e in entries] == [("b1", True), ("b2", True), ("b3", True), ("b4", False)]
    assert prune_candidates(entries, 1) == ["b1", "b2"]
    assert prune_candidates(entries, 2) == ["b1"]
    remove_builds(results, None, ["b4"])
    assert not running.exists()


def test_a_build_folder_that_is_a_link(tmp_path):
    """A build moved to another disk and linked back keeps its id: latest still protects it, and
    rm removes the linked folder and the link; a link to a folder that holds no build is refused
    before anything is removed."""
    results = _results(tmp_path, ["b1", "b2", "b3"], latest="b3")
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    for build_id in ("b2", "b3"):
        results.build(build_id).root.rename(elsewhere / f"{build_id}-moved")
        results.build(build_id).root.symlink_to(elsewhere / f"{build_id}-moved")
    assert [(e.build_id, e.latest) for e in list_builds(results, None)] == [("b1", False), ("b2", False), ("b3", True)]
    with pytest.raises(RetentionError, match="never removed"):
        remove_builds(results, None, ["b3"])
    not_a_build = tmp_path / "photos"
    not_a_build.mkdir()
    (not_a_build / "holiday.jpg").write_bytes(b"jpg")
    results.build("b0").root.symlink_to(not_a_build)
    with pytest.raises(RetentionError, match="holds no build"):
        remove_builds(results, None, ["b2", "b0"])
    assert (elsewhere / "b2-moved").exists() and (not_a_build / "holiday.jpg").exists()
    report = remove_builds(results, None, ["b2", "b2"])
    assert report["removed"] == ["b2"]
    assert not (elsewhere / "b2-moved").exists() and not results.build("b2").root.is_symlink()
    assert (elsewhere / "b3-moved").exists()


def test_removal_with_mongodb_on_but_no_uri_is_refused(tmp_path, monkeypatch):
    """A plain shell has no $LITPATH_MONGO_URI: removing the folders alone would leave the store's
    records and buckets. --folders-only says that is meant; a dry run needs no store."""
    from pipeline.store.commands import builds

    monkeypatch.delenv("LITPATH_MONGO_URI", raising=False)
    results = _results(tmp_path, ["b1", "b2", "b3"], latest="b3")
    config = tmp_path / "config.yaml"
    config.write_text(f"results_dir: {results.root}\nmongo: {{enabled: true}}\n")
    for command in (["prune", "--keep", "1"], ["rm", "b1"]):
        refused = CliRunner().invoke(builds, ["--config", str(config), *command])
        assert refused.exit_code != 0 and "no MongoDB URI is known" in refused.output, refused.output
        assert results.build("b1").root.exists()
    dry = CliRunner().invoke(builds, ["--config", str(config), "prune", "--keep", "1", "--dry-run"])
    assert dry.exit_code == 0 and "would remove: b1, b2" in dry.output, dry.output
    assert f"results: {results.root.resolve()}; store: not consulted" in dry.output
    done = CliRunner().invoke(builds, ["--config", str(config), "rm", "--folders-only", "b1"])
    assert done.exit_code == 0 and "removed 1 build(s): b1" in done.output, done.output
