"""A rebuild's bucket files on top of the earlier build (``litpath bucket-records`` after a merge on
the delta) equal, bucket for bucket, those grouped afresh from the same tables and graph: for one
more PubMed update file that deletes and re-adds papers, for one more citation file, and for both
at once (a week's new files); and the earlier buckets are reused, not regrouped."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.pipeline_runs import ingested_in_input_order

from pipeline.builds.layout import BuildLayout, bucket_file
from pipeline.cli import cli
from pipeline.graph.build import build_cooccurrence_graph, build_graph
from pipeline.merge import merge_ingested
from pipeline.store import record_buckets
from pipeline.store.record_buckets import BucketFile, GroupingSettings, group_kind
from pipeline.store.store_format import KINDS


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A synthetic corpus with two PubMed update files (the second re-adds a paper the first
    deletes) and a second citation file, each file ingested; (kind, path, folder) in input order."""
    return ingested_in_input_order(tmp_path_factory.mktemp("reuse"), scale=20_000, seed=3, n_update_files=2,
                                   n_citation_updates=1, profile="calibrated")  # fmt: skip


def _build(root: Path, dirs: list[Path], previous: Path | None) -> BuildLayout:
    build = BuildLayout(root)
    merge_ingested(dirs, build.tables.path, {}, previous=None if previous is None else BuildLayout(previous).tables.path)
    build_graph(build.tables.path, build.graph("full").graph_dir, {})
    return build


def _grouped(build: BuildLayout, settings: GroupingSettings, reuse: bool, store: Path | None = None) -> dict:
    return {kind: group_kind(kind, build.tables.path, build.graph("full").graph_dir, settings,
                             bucket_file(store, kind) if store else build.bucket_file(kind), reuse=reuse)
            for kind in KINDS}  # fmt: skip


def _buckets(path: Path, kind: str) -> list[tuple]:
    return [(b.bucket_id, b.first, b.rows) for b in BucketFile.open(path, kind).buckets()]


@pytest.mark.parametrize("added", ["pubmed update", "citations", "both"])
def test_bucket_files_on_top_of_the_earlier_build_equal_a_fresh_grouping(corpus, tmp_path, monkeypatch, added):
    dirs = [folder for _, _, folder in corpus]
    kinds_added = {"pubmed update": ["pubmed_xml"], "citations": ["citations_table"]}.get(added, ["pubmed_xml", "citations_table"])
    new = {max(i for i, (kind, _, _) in enumerate(corpus) if kind == kind_added) for kind_added in kinds_added}
    settings = GroupingSettings(budget_bytes=1 << 30, spill_dir=tmp_path)
    _grouped(_build(tmp_path / "one", [folder for i, folder in enumerate(dirs) if i not in new], None), settings, reuse=True)
    two = _build(tmp_path / "two", dirs, tmp_path / "one")
    incremental = json.loads(two.tables.counts.read_text())["incremental"]
    assert incremental["used"], incremental
    # the small corpus has few buckets: reuse even when most of them are cut again, to test the cuts
    monkeypatch.setattr(record_buckets, "MAX_REBUILT_SHARE", dict.fromkeys(KINDS, 1.0))
    rebuilt = _grouped(two, settings, reuse=True)
    fresh = _grouped(two, settings, reuse=False, store=tmp_path / "fresh")
    for kind in KINDS:
        assert _buckets(two.bucket_file(kind), kind) == _buckets(bucket_file(tmp_path / "fresh", kind), kind), kind
        assert fresh[kind][f"{kind}_reuse"].startswith("none"), fresh[kind]
        same = [k for k in fresh[kind] if not k.endswith("_reuse")]
        assert {k: rebuilt[kind][k] for k in same} == {k: fresh[kind][k] for k in same}, kind
    # A citation file leaves every table the documents and papers are grouped from as it was: the
    # earlier files are taken as they are. The evidence here reads the full graph, whose citation
    # edges changed: its buckets are rebuilt on the earlier ones.
    taken = {"documents", "papers"} if added == "citations" else set()
    for kind in ("documents", "evidence", "papers"):
        if kind in taken:
            assert rebuilt[kind][f"{kind}_reuse"].startswith("taken: build one's file"), rebuilt[kind]
            assert os.path.samefile(two.bucket_file(kind), BuildLayout(tmp_path / "one").bucket_file(kind))
            continue
        assert rebuilt[kind][f"{kind}_reuse"] == "on build one", rebuilt[kind]
        assert rebuilt[kind][f"{kind}_reused_buckets"] > 0, rebuilt[kind]
    if added != "citations":  # deleted papers: pairs only they named are patched, not grouped again
        assert rebuilt["evidence"]["evidence_patched"] > 0, rebuilt["evidence"]
    if added == "citations":  # no paper's predications or year changed: every bucket is the earlier one
        assert rebuilt["evidence"]["evidence_reused_buckets"] == rebuilt["evidence"]["evidence_buckets"]
        # the citations renumber abstracts, never concepts (they come first): the concepts' ids,
        # and so their records, are the earlier build's
        assert rebuilt["concepts"]["concepts_reuse"].startswith("taken: build one's file"), rebuilt["concepts"]
        # ... and with one concept vertex other, they would not be
        altered = tmp_path / "altered" / "graph"
        shutil.copytree(two.graph("full").graph_dir, altered)
        vertices = pq.read_table(altered / "vertices.parquet")
        keys = vertices.column("key").to_pylist()
        keys[0] = "C9999999"
        pq.write_table(vertices.set_column(vertices.schema.get_field_index("key"), "key", pa.array(keys)),
                       altered / "vertices.parquet")  # fmt: skip
        assert record_buckets._other_graph("concepts", altered, tmp_path / "one")
        assert not record_buckets._other_graph("concepts", two.graph("full").graph_dir, tmp_path / "one")
        # grouped on the co-occurrence graph (the workflow's), which is the earlier build's: taken
        one = BuildLayout(tmp_path / "one")
        for build in (one, two):
            build_cooccurrence_graph(build.tables.path, build.graph("cooccurrence").graph_dir, {})
        out = bucket_file(tmp_path / "on-cooccurrence", "evidence")
        result = CliRunner().invoke(cli, ["bucket-records", "--kind", "evidence", "--tables-dir", str(two.tables.path),
                                          "--graph-dir", str(two.graph("cooccurrence").graph_dir), "--out", str(out)])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "taken: build one's file" in result.output
        counts = BucketFile.open(out, "evidence").counts
        assert counts["evidence_reuse"].startswith("taken: build one's file"), counts
        assert _buckets(out, "evidence") == _buckets(bucket_file(tmp_path / "fresh", "evidence"), "evidence")
