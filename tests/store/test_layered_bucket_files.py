"""A rerun's bucket files leave the bytes of the buckets they reuse in a base file: the earlier
build's complete file, hard-linked beside them (``<kind>.buckets.base.arrow``). Over a chain of
reruns every file reads, bucket for bucket and byte for byte, as a grouping afresh of the same
tables; each keeps one base, the chain's first complete file, which outlives the builds it came
from; a file whose base went missing is refused with the base named; and below
``LAYERED_MIN_SHARE`` of its buckets in that base a file is written complete again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.pipeline_runs import ingested_in_input_order

from pipeline.builds.layout import BuildLayout, bucket_file, bucket_file_base, bucket_file_record
from pipeline.graph.build import build_graph
from pipeline.merge import merge_ingested
from pipeline.store import record_buckets
from pipeline.store.buckets import decode
from pipeline.store.record_buckets import BucketFile, BucketFileError, GroupingSettings, group_kind

LAYERED = ("evidence", "papers")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """Builds one (no PubMed update file), two (the first update file) and three (both), each
    merged on the delta of the one before and grouped with reuse; and three grouped afresh."""
    root = tmp_path_factory.mktemp("layered")
    corpus = ingested_in_input_order(root / "ingest", scale=20_000, seed=5, n_update_files=2, profile="calibrated")
    updates = [i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml"][-2:]
    dirs = [folder for _, _, folder in corpus]
    settings = GroupingSettings(budget_bytes=1 << 30, spill_dir=root)
    inputs = {
        "one": [d for i, d in enumerate(dirs) if i not in updates],
        "two": [d for i, d in enumerate(dirs) if i != updates[1]],
        "three": dirs,
    }
    previous, counts = None, {}
    for name, build_inputs in inputs.items():
        build = BuildLayout(root / name)
        merge_ingested(build_inputs, build.tables.path, {},
                       previous=None if previous is None else previous.tables.path)  # fmt: skip
        if previous is not None:
            assert json.loads(build.tables.counts.read_text())["incremental"]["used"], name
        build_graph(build.tables.path, build.graph("full").graph_dir, {})
        counts[name] = {kind: group_kind(kind, build.tables.path, build.graph("full").graph_dir, settings,
                                         build.bucket_file(kind)) for kind in LAYERED}  # fmt: skip
        previous = build
    three = BuildLayout(root / "three")
    for kind in LAYERED:
        group_kind(kind, three.tables.path, three.graph("full").graph_dir, settings, bucket_file(root / "fresh", kind),
                   reuse=False)  # fmt: skip
    return root, counts


def _contents(path: Path, kind: str) -> list[tuple]:
    """Every bucket's id, first key, rows and rows decoded (read and checked against its id)."""
    return [(b.bucket_id, b.first, b.rows, decode(b.data)) for b in BucketFile.open(path, kind).buckets()]


@pytest.mark.parametrize("kind", LAYERED)
def test_a_chain_of_reruns_reads_as_a_fresh_grouping_on_one_base(chain, kind, tmp_path):
    root, counts = chain
    one, two, three = (BuildLayout(root / name) for name in ("one", "two", "three"))
    assert BucketFile.open(one.bucket_file(kind), kind).base is None  # a first build's file is complete
    for build, name in ((two, "two"), (three, "three")):
        file = BucketFile.open(build.bucket_file(kind), kind)
        assert counts[name][kind][f"{kind}_reuse"].startswith("on build"), counts[name][kind]
        # its base is the chain's first complete file, linked, not a copy and not a chain of bases
        assert file.base == bucket_file_base(build.bucket_file(kind))
        assert os.path.samefile(file.base, one.bucket_file(kind))
        assert 0 < counts[name][kind][f"{kind}_base_buckets"] <= counts[name][kind][f"{kind}_reused_buckets"]
        assert json.loads(bucket_file_record(build.bucket_file(kind)).read_text())["base"] == file.base.name
        # it holds the bytes of the buckets not in the base only
        assert file.path.stat().st_size < one.bucket_file(kind).stat().st_size / 2, name
    fresh = _contents(bucket_file(root / "fresh", kind), kind)
    assert _contents(three.bucket_file(kind), kind) == fresh
    # three's store folder holds all it reads: copied alone elsewhere (as if one and two were
    # pruned), it reads the same
    kept = tmp_path / "three"
    shutil.copytree(three.root / "store", kept)
    assert _contents(bucket_file(kept, kind), kind) == fresh


def test_a_file_whose_base_is_missing_is_refused_with_the_base_named(chain, tmp_path):
    root, _ = chain
    store = tmp_path / "store"
    shutil.copytree(BuildLayout(root / "three").root / "store", store)
    bucket_file_base(bucket_file(store, "papers")).unlink()
    with pytest.raises(BucketFileError, match=r"papers\.buckets\.base\.arrow, which is missing"):
        BucketFile.open(bucket_file(store, "papers"), "papers")


def _copy_of_three(root: Path, tmp_path: Path) -> BuildLayout:
    """Build three copied (its bases as links), for a test that regroups it: the chain stays as
    the other tests read it."""
    shutil.copytree(root / "three", tmp_path / "three", copy_function=os.link)
    return BuildLayout(tmp_path / "three")


def test_below_the_layered_share_the_file_is_written_complete_and_its_old_base_removed(chain, monkeypatch, tmp_path):
    root, _ = chain
    three = _copy_of_three(root, tmp_path)
    settings = GroupingSettings(budget_bytes=1 << 30, spill_dir=root)
    assert bucket_file_base(three.bucket_file("papers")).exists()
    monkeypatch.setattr(record_buckets, "LAYERED_MIN_SHARE", 1.01)
    counts = group_kind("papers", three.tables.path, three.graph("full").graph_dir, settings, three.bucket_file("papers"))
    assert counts["papers_reuse"].startswith("on build"), counts
    assert "papers_base_buckets" not in counts
    file = BucketFile.open(three.bucket_file("papers"), "papers")
    assert file.base is None and not bucket_file_base(file.path).exists()
    assert "base" not in json.loads(bucket_file_record(file.path).read_text())
    assert _contents(file.path, "papers") == _contents(bucket_file(root / "fresh", "papers"), "papers")


@pytest.mark.servers
def test_a_layered_file_loads_into_an_empty_store_what_the_fresh_file_does(chain, mongo_uri):
    """A store that lacks the reused buckets (a second store, one restored from an older backup)
    is sent them from the base: it then holds what a load of the fresh grouping writes."""
    import uuid

    from pymongo import MongoClient

    from pipeline.store.mongo import load_build
    from pipeline.store.store_format import BUCKET_COLLECTIONS, read_listing

    root, _ = chain
    three = BuildLayout(root / "three")
    databases = {folder: f"litpath_test_{uuid.uuid4().hex[:8]}" for folder in ("three", "fresh")}
    client = MongoClient(mongo_uri)
    try:
        for folder, database in databases.items():
            files = {kind: bucket_file(root / folder / "store" if folder == "three" else root / folder, kind)
                     for kind in LAYERED}  # fmt: skip
            load_build(mongo_uri, database, "three", three.tables.path, three.graph("full").graph_dir, {},
                       bucket_files=files, kinds=LAYERED, complete=False)  # fmt: skip
        for kind in LAYERED:
            stored = []
            for database in databases.values():
                listing = read_listing(client[database], "three", kind)
                docs = {d["_id"]: d for d in client[database][BUCKET_COLLECTIONS[kind]].find({"_id": {"$in": listing.ids}})}
                stored.append([(bucket_id, decode(docs[bucket_id]["arrow"])) for bucket_id in listing.ids])
            assert stored[0] == stored[1], kind
    finally:
        for database in databases.values():
            client.drop_database(database)
        client.close()


def test_a_grouping_that_dies_midway_leaves_no_file_to_trust_and_the_next_one_writes_it_whole(chain, monkeypatch,
                                                                                                tmp_path):  # fmt: skip
    """The base is put in place first and the record written last: a grouping killed after
    the base but before the record leaves a file that is refused, and the next one is complete."""
    root, _ = chain
    three = _copy_of_three(root, tmp_path)
    settings = GroupingSettings(budget_bytes=1 << 30, spill_dir=root)
    path = three.bucket_file("evidence")
    written = record_buckets._bucket_table

    def dies(buckets):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(record_buckets, "_bucket_table", dies)
    with pytest.raises(KeyboardInterrupt):
        group_kind("evidence", three.tables.path, three.graph("full").graph_dir, settings, path)
    assert bucket_file_base(path).exists() and not bucket_file_record(path).exists()
    with pytest.raises(BucketFileError, match="no complete bucket file"):
        BucketFile.open(path, "evidence")
    monkeypatch.setattr(record_buckets, "_bucket_table", written)
    group_kind("evidence", three.tables.path, three.graph("full").graph_dir, settings, path)
    assert _contents(path, "evidence") == _contents(bucket_file(root / "fresh", "evidence"), "evidence")
