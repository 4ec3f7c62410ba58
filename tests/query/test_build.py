"""Opening a build folder (pipeline/query/build.py): one function for the compare CLI and the path
service, with the behaviour on mismatched distances chosen by the caller."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from support import build_fixture

from pipeline.compare.commands import compare
from pipeline.query.build import (
    BuildMismatch,
    GraphUnavailable,
    open_build,
    resolve_build_dir,
)
from pipeline.query.graph import GraphStale


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    return build_fixture.make_build(tmp_path_factory.mktemp("fresh"), n_concepts=20, n_abstracts=10)


@pytest.fixture(scope="module")
def stale(tmp_path_factory):
    """A build whose full graph's distances.bp carries another graph's digest."""
    return build_fixture.make_build(tmp_path_factory.mktemp("stale"), n_concepts=20, n_abstracts=10, stale=True)


def test_open_build_opens_both_graphs(fresh):
    build = open_build(fresh.build_dir)
    try:
        assert build.build_id == fresh.build_id and build.build_dir == fresh.build_dir.resolve()
        assert set(build.graphs) == {"full", "cooccurrence"} and build.stale == {} and build.graph_errors == {}
        full = build.graph("full")
        assert full.keys == fresh.keys and full.build_id == fresh.build_id
        assert build.graph("cooccurrence").n == fresh.n_concepts
        assert build.record["build_id"] == fresh.build_id
    finally:
        build.close()


def test_open_build_only_the_scopes_asked_for(fresh):
    build = open_build(fresh.build_dir, scopes=["cooccurrence"])
    try:
        assert set(build.graphs) == {"cooccurrence"}
        with pytest.raises(GraphUnavailable, match="full graph: not in this build"):
            build.graph("full")
    finally:
        build.close()


def test_open_build_mismatch_raises_by_default(stale):
    with pytest.raises(BuildMismatch, match=r"full graph: distances\.bp was computed for another graph"):
        open_build(stale.build_dir)
    # the co-occurrence graph's distances are its own: opened alone, nothing is mismatched
    open_build(stale.build_dir, scopes=["cooccurrence"]).close()


def test_open_build_mismatch_marked_stale(stale):
    build = open_build(stale.build_dir, on_mismatch="mark_stale")
    try:
        assert list(build.stale) == ["full"] and "computed for another graph" in build.stale["full"]
        full = build.graph("full")
        with pytest.raises(GraphStale, match="computed for another graph"):
            full.distance(0, 1)
        cooccurrence = build.graph("cooccurrence")
        assert cooccurrence.stale_reason is None
        assert cooccurrence.distance(0, 0)[0] == 0.0
    finally:
        build.close()


def test_open_build_unknown_mismatch_behaviour(fresh):
    with pytest.raises(ValueError, match="on_mismatch must be one of raise, mark_stale"):
        open_build(fresh.build_dir, on_mismatch="ignore")  # type: ignore[arg-type]


def test_open_build_optional_graph_missing(tmp_path):
    made = build_fixture.make_build(tmp_path, n_concepts=12, n_abstracts=6)
    shutil.rmtree(made.build_dir / "cooccurrence")
    with pytest.raises(FileNotFoundError, match="has no cooccurrence graph"):
        open_build(made.build_dir)
    build = open_build(made.build_dir, optional=["cooccurrence"])
    try:
        assert set(build.graphs) == {"full"}
        assert build.graph_errors["cooccurrence"].startswith("FileNotFoundError: ")
        with pytest.raises(GraphUnavailable, match="cooccurrence graph: FileNotFoundError"):
            build.graph("cooccurrence")
    finally:
        build.close()


def test_build_concepts_table(tmp_path):
    made = build_fixture.make_build(tmp_path, n_concepts=12, n_abstracts=6)
    build = open_build(made.build_dir, scopes=["cooccurrence"])
    try:
        table = build.concepts()
        assert table is not None and table.cuis == made.keys[:12] and table.names == made.names[:12]
        assert table.semtypes_by_cui()[made.keys[0]] == ["gngm", "aapp"]
        (made.build_dir / "tables" / "concepts.parquet").unlink()
        assert build.concepts() is None
    finally:
        build.close()


def test_resolve_build_dir(fresh, tmp_path):
    assert resolve_build_dir(fresh.results_dir) == fresh.build_dir.resolve()
    assert resolve_build_dir(fresh.results_dir, fresh.build_id) == fresh.build_dir.resolve()
    with pytest.raises(FileNotFoundError, match="no complete build"):
        resolve_build_dir(tmp_path)
    with pytest.raises(FileNotFoundError, match="'nosuch' not found"):
        resolve_build_dir(fresh.results_dir, "nosuch")
    incomplete = tmp_path / "builds" / "half"
    incomplete.mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="build half is incomplete"):
        resolve_build_dir(tmp_path, "half")


def test_compare_cli_refuses_a_mismatched_build(stale, tmp_path):
    """`litpath compare` opens the build with on_mismatch="raise": a usage error before any server."""
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("cui,spoke_label,spoke_identifier\nC0000001,Disease,DOID:1\n")
    result = CliRunner().invoke(
        compare,
        ["--build-dir", str(stale.build_dir), "--graph", "full", "--mapping", str(mapping), "--out", str(tmp_path / "out")],
    )
    assert result.exit_code == 2, result.output
    assert "full graph: distances.bp was computed for another graph" in result.output
