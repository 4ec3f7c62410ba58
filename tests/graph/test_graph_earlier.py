"""Graphs from the build the merge started from (pipeline.graph.earlier): after one more citation
file, the co-occurrence graph taken from the earlier build and the full graph patched on it equal
the graphs built from scratch on the same tables -- files, digest and counts; where other tables
changed, or the settings, both are built from the tables."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.pipeline_runs import ingested_in_input_order

from pipeline.builds.layout import BuildLayout, GraphFolder
from pipeline.graph.build import build_cooccurrence_graph, build_graph
from pipeline.merge import merge_ingested
from pipeline.store.adios import read_graph_bp


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A synthetic corpus with two PubMed update files and a second citation file, ingested; the
    folders in input order, the last one the citation file."""
    files = ingested_in_input_order(tmp_path_factory.mktemp("earlier"), scale=6000, seed=13, n_update_files=2,
                                    n_citation_updates=1, profile="calibrated")  # fmt: skip
    assert files[-1][0] == "citations_table"
    return files


def _build(root: Path, dirs: list[Path], previous: Path | None = None, config: dict | None = None,
           cooccurrence_from: bool = False) -> BuildLayout:  # fmt: skip
    """Merge, the co-occurrence graph, then the full graph (``cooccurrence_from``: taking its
    concept edges from the co-occurrence graph, as the workflow does)."""
    build = BuildLayout(root)
    merge_ingested(dirs, build.tables.path, {}, previous=None if previous is None else BuildLayout(previous).tables.path)
    build_cooccurrence_graph(build.tables.path, build.graph("cooccurrence").graph_dir, config or {})
    build_graph(build.tables.path, build.graph("full").graph_dir, config or {},
                cooccurrence_from=build.graph("cooccurrence").graph_dir if cooccurrence_from else None)  # fmt: skip
    return build


def _record(build: BuildLayout, scope: str) -> dict:
    return json.loads(GraphFolder(build.graph(scope).graph_dir).counts.read_text())


def _assert_same_graph(got: BuildLayout, want: BuildLayout, scope: str) -> None:
    mine, theirs = GraphFolder(got.graph(scope).graph_dir), GraphFolder(want.graph(scope).graph_dir)
    for table in ("vertices", "edges"):
        assert pq.read_table(getattr(mine, table)).equals(pq.read_table(getattr(theirs, table))), (scope, table)
    (n, *csr), attributes = read_graph_bp(mine.graph_bp)
    (n_scratch, *csr_scratch), attributes_scratch = read_graph_bp(theirs.graph_bp)
    attributes.pop("created"), attributes_scratch.pop("created")  # when the file was written
    assert n == n_scratch and attributes == attributes_scratch, scope
    assert all((a == b).all() for a, b in zip(csr, csr_scratch, strict=True)), scope
    ours, scratch = _record(got, scope), _record(want, scope)
    assert ours["graph_digest"] == scratch["graph_digest"], scope
    assert ours["counts"] == scratch["counts"], scope
    assert ours["path_index"]["hubs"] == scratch["path_index"]["hubs"], scope


def _unread(monkeypatch, *names: str) -> None:
    """Make these readers of the tables an error: the patch must take what they read from the
    earlier graph (the mentions' papers, the abstracts' titles)."""
    readers = {"doc_ids": "pipeline.graph.earlier._distinct_doc_ids", "titles": "pipeline.graph.assemble.document_titles"}

    def refused(*_args, **_kwargs):
        raise AssertionError("read from the tables, not taken from the earlier graph")

    for name in names:
        monkeypatch.setattr(readers[name], refused)


def _refused_sort(*_args, **_kwargs):
    raise AssertionError("the earlier graph's edges were sorted again")


def test_one_more_citation_file_takes_and_patches_the_earlier_graphs(corpus, tmp_path, monkeypatch):
    corpus = [folder for _, _, folder in corpus]
    _build(tmp_path / "one", corpus[:-1])
    with monkeypatch.context() as patch:
        _unread(patch, "doc_ids", "titles")
        # the earlier edges stay in their order: no sort of them (assemble._in_order_then_citations)
        patch.setattr("pipeline.graph.assemble.sort_edges", _refused_sort)
        two = _build(tmp_path / "two", corpus, previous=tmp_path / "one")
    scratch = _build(tmp_path / "scratch", corpus)
    assert json.loads(two.tables.counts.read_text())["incremental"]["used"]
    for scope in ("cooccurrence", "full"):
        _assert_same_graph(two, scratch, scope)
    taken, patched = _record(two, "cooccurrence")["earlier_build"], _record(two, "full")["earlier_build"]
    assert (taken["used"], taken["build"]) == ("taken", "one"), taken
    assert (patched["used"], patched["build"]) == ("patched", "one"), patched
    assert _record(two, "full")["timings"].get("earlier_edges") is not None  # nothing counted but the citations
    assert "concept_concept" not in _record(two, "full")["timings"]
    # the citation file's pairs are edges of the new graph: not the earlier graph with its files copied
    assert _record(two, "full")["counts"]["citation_rows"] > _record(BuildLayout(tmp_path / "one"), "full")["counts"]["citation_rows"]
    for scope in ("cooccurrence", "full"):
        assert _record(scratch, scope)["earlier_build"]["used"] is None


def _before_and_after_the_update_file(corpus, tmp_path) -> tuple[BuildLayout, BuildLayout]:
    """A build without the last PubMed update file (it deletes papers), and one with it on top of
    that build, the full graph taking its concept edges from the co-occurrence graph."""
    last_update = max(i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml")
    folders = [folder for _, _, folder in corpus]
    one = _build(tmp_path / "one", folders[:last_update] + folders[last_update + 1 :])
    return one, _build(tmp_path / "two", folders, previous=tmp_path / "one", cooccurrence_from=True)


def test_an_update_file_patches_the_full_graph_less_the_deleted_papers(corpus, tmp_path, monkeypatch):
    """An update file deletes papers: the mentions are the earlier ones less their rows, so the
    full graph takes the earlier concept--abstract edges of the papers still mentioned, and its
    concept--concept edges from the build's co-occurrence graph (counted again: the deleted
    predications change the Jaccard weights of their concepts' pairs) -- the graph built from
    scratch on the same tables. Without that co-occurrence graph, it is counted."""
    with monkeypatch.context() as patch:
        _unread(patch, "doc_ids")  # the papers of the mentions: the earlier graph's, less the merge's removed rows'
        one, two = _before_and_after_the_update_file(corpus, tmp_path)
    scratch = _build(tmp_path / "scratch", [folder for _, _, folder in corpus], cooccurrence_from=True)
    incremental = json.loads(two.tables.counts.read_text())["incremental"]
    assert incremental["used"] and "predications" not in incremental["tables_unchanged"], incremental
    assert incremental["tables_less_deleted"] == ["mentions", "predications"], incremental
    for scope in ("cooccurrence", "full"):
        _assert_same_graph(two, scratch, scope)
    # the co-occurrence graph counted on the delta: the earlier count less the removed rows'
    on_delta = _record(two, "cooccurrence")["earlier_build"]
    assert (on_delta["used"], on_delta["build"]) == ("patched", "one"), on_delta
    assert "counted on the delta" in on_delta["why"], on_delta
    assert _record(scratch, "cooccurrence")["earlier_build"]["used"] is None
    # what the next build counts on: the same counts as counting the table whole
    for name in ("concept_predications", "pair_predications"):
        assert _as_counts(GraphFolder(two.graph("cooccurrence").graph_dir), name) == \
            _as_counts(GraphFolder(scratch.graph("cooccurrence").graph_dir), name), name  # fmt: skip
    patched = _record(two, "full")["earlier_build"]
    assert (patched["used"], patched["build"]) == ("patched", "one"), patched
    assert patched["why"].startswith("papers were deleted"), patched
    assert "concept_abstract" not in _record(two, "full")["timings"]  # the mentions were not counted
    # papers were deleted: the earlier graph had more abstracts, and some of them are gone
    before, after = _record(one, "full")["counts"], _record(two, "full")["counts"]
    assert after["edges_concept_abstract"] < before["edges_concept_abstract"], (before, after)
    # without the build's co-occurrence graph: counted from the tables, the same graph
    counted = BuildLayout(tmp_path / "two")
    record = build_graph(counted.tables.path, tmp_path / "counted", {})
    assert record["earlier_build"]["used"] is None and "co-occurrence graph" in record["earlier_build"]["why"], record
    assert record["graph_digest"] == _record(scratch, "full")["graph_digest"]
    assert record["counts"] == _record(scratch, "full")["counts"]


def test_an_update_file_and_a_citation_file_at_once_patch_the_graphs(corpus, tmp_path):
    """A week's new files in one rerun: the last PubMed update file (it deletes papers) and the
    citation file. The papers were deleted and the citations changed: the full graph is patched
    less the deleted papers, its citation edges counted from the new table, and both graphs are
    those built from scratch."""
    last_update = max(i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml")
    folders = [folder for _, _, folder in corpus]
    earlier = [folder for i, folder in enumerate(folders) if i not in (last_update, len(folders) - 1)]
    _build(tmp_path / "one", earlier, cooccurrence_from=True)
    two = _build(tmp_path / "two", folders, previous=tmp_path / "one", cooccurrence_from=True)
    scratch = _build(tmp_path / "scratch", folders, cooccurrence_from=True)
    assert json.loads(two.tables.counts.read_text())["incremental"]["used"]
    for scope in ("cooccurrence", "full"):
        _assert_same_graph(two, scratch, scope)
    patched = _record(two, "full")["earlier_build"]
    assert (patched["used"], patched["build"]) == ("patched", "one"), patched
    assert patched["why"].startswith("papers were deleted"), patched
    assert _record(two, "full")["counts"]["citation_rows"] > _record(BuildLayout(tmp_path / "one"), "full")["counts"]["citation_rows"]


def _as_counts(folder: GraphFolder, name: str) -> dict:
    """A counts file as {concept or concept pair: counts}: the codes are the count's own order,
    and a count on the delta keeps the codes of concepts no row names any more (left out)."""
    concepts = pq.read_table(folder.concept_predications).to_pydict()
    if name == "concept_predications":
        return {cui: (n, rows) for cui, n, rows in zip(concepts["cui"], concepts["predications"], concepts["rows"],
                                                      strict=True) if rows}  # fmt: skip
    pairs = pq.read_table(folder.pair_predications).to_pydict()
    cui = concepts["cui"]
    return {tuple(sorted((cui[a], cui[b]))): n for a, b, n in zip(pairs["a"], pairs["b"], pairs["predications"], strict=True)}


def test_the_cooccurrence_count_on_the_delta_refuses_removed_rows_that_do_not_add_up(corpus, tmp_path):
    """The removed rows beside the predications are what the count on the delta subtracts: one
    of them dropped from that file (so the table and the counts disagree) is an error naming it."""
    _, two = _before_and_after_the_update_file(corpus, tmp_path)
    removed = two.tables.removed_rows("predications")
    rows = pq.read_table(removed)
    assert rows.num_rows > 1
    pq.write_table(rows.slice(1), removed)
    with pytest.raises(ValueError, match="predications.removed.parquet is not what the earlier build"):
        build_cooccurrence_graph(two.tables.path, tmp_path / "wrong", {})


def test_a_patched_update_graph_refuses_mentions_that_are_not_the_earlier_less_papers(corpus, tmp_path):
    """The patch trusts the merge's word that the mentions are the earlier ones less whole papers,
    and checks it: a mentions table with one row fewer (a paper that keeps its other rows) is
    refused with an error naming the table, not built into a wrong graph."""
    _, two = _before_and_after_the_update_file(corpus, tmp_path)
    mentions = two.tables.table("mentions")
    table = pq.read_table(mentions)
    keep = [True] * table.num_rows
    doc_ids = table.column("doc_id").to_pylist()
    row = next(i for i in range(1, table.num_rows) if doc_ids[i] == doc_ids[i - 1])  # a paper of 2+ rows
    keep[row] = False
    mentions.unlink()  # a hard link into the earlier build's folder: never written through
    pq.write_table(table.filter(keep), mentions)
    with pytest.raises(ValueError, match="not the earlier build's mentions less the deleted papers' rows"):
        build_graph(two.tables.path, tmp_path / "wrong", {}, cooccurrence_from=two.graph("cooccurrence").graph_dir)


def test_other_settings_build_from_the_tables(corpus, tmp_path):
    corpus = [folder for _, _, folder in corpus]
    # one more citation file, but another minimum support: the earlier graphs are not this build's
    _build(tmp_path / "three", corpus[:-1])
    four = _build(tmp_path / "four", corpus, previous=tmp_path / "three", config={"graph": {"min_support": 2}})
    scratch = _build(tmp_path / "scratch", corpus, config={"graph": {"min_support": 2}})
    for scope in ("cooccurrence", "full"):
        note = _record(four, scope)["earlier_build"]
        assert note["used"] is None and "other settings" in note["why"], note
        _assert_same_graph(four, scratch, scope)


def _semtype_of_some_concepts(build: BuildLayout) -> str:
    """A semantic type a few of the build's concepts have (their pairs and mentions are excluded)."""
    semtypes = pq.read_table(build.tables.table("concepts"), columns=["semtypes"]).column("semtypes").to_pylist()
    counted: dict[str, int] = {}
    for types in semtypes:
        for semtype in types or []:
            counted[semtype] = counted.get(semtype, 0) + 1
    return min(counted, key=lambda semtype: (counted[semtype], semtype))


@pytest.mark.parametrize("settings", ["defaults", "min_support 2, an excluded semtype, novel only"])
def test_the_full_graph_takes_its_concept_edges_from_the_cooccurrence_graph(corpus, tmp_path, settings):
    """The workflow builds the co-occurrence graph first and the full graph takes its edges: the
    same graph as counting the predications again -- also where some concepts the predications
    name are on no edge (below the support, an excluded semantic type, not novel), which are
    coded from the predications so that ``concepts_seen`` counts them."""
    folders = [folder for _, _, folder in corpus]
    counted = _build(tmp_path / "counted", folders)
    config = {} if settings == "defaults" else {"graph": {
        "min_support": 2, "exclude_semtypes": [_semtype_of_some_concepts(counted)], "novelty_only": True}}  # fmt: skip
    if config:
        counted = _build(tmp_path / "counted-settings", folders, config=config)
    taken = BuildLayout(tmp_path / "taken")
    record = build_graph(counted.tables.path, taken.graph("full").graph_dir, config,
                         cooccurrence_from=counted.graph("cooccurrence").graph_dir)  # fmt: skip
    taken.graph("cooccurrence").graph_dir.parent.mkdir(parents=True, exist_ok=True)
    assert record["concept_concept_edges"].startswith("taken from the co-occurrence graph"), record["concept_concept_edges"]
    assert _record(counted, "full")["concept_concept_edges"] == "counted from the predications"
    _assert_same_graph(taken, counted, "full")
    if config:  # concepts the predications name on no co-occurrence edge, coded all the same
        seen = _record(counted, "cooccurrence")["counts"]
        assert seen["concepts_seen"] > seen["concept_vertices"], seen
        assert seen["concept_pairs_below_min_support_removed"] > 0 and seen["predication_rows_excluded_semtype_removed"] > 0


def test_a_cooccurrence_graph_of_other_settings_or_tables_is_not_taken(corpus, tmp_path):
    """Built with other settings, or from a predications table with one row less (the same
    number of files, the row count checked alone would not tell every case): counted, and why."""
    import shutil

    folders = [folder for _, _, folder in corpus]
    one = _build(tmp_path / "one", folders)
    less = tmp_path / "less" / "tables"
    shutil.copytree(one.tables.path, less)
    predications = pq.read_table(less / "predications.parquet")
    pq.write_table(predications.slice(1), less / "predications.parquet")
    build_cooccurrence_graph(less, tmp_path / "less" / "cooccurrence", {})
    other = BuildLayout(tmp_path / "other")
    for source, config, why in ((one.graph("cooccurrence").graph_dir, {"graph": {"min_support": 3}}, "other graph settings"),
                                (tmp_path / "less" / "cooccurrence", {}, "other predications")):  # fmt: skip
        record = build_graph(one.tables.path, other.graph("full").graph_dir, config, cooccurrence_from=source)
        assert record["concept_concept_edges"].startswith("counted from the predications: "), record
        assert why in record["concept_concept_edges"]
    # an unchanged copy of the table is the same table
    shutil.copy(one.tables.table("predications"), less / "predications.parquet")
    build_cooccurrence_graph(less, tmp_path / "less" / "cooccurrence", {})
    record = build_graph(one.tables.path, other.graph("full").graph_dir, {}, cooccurrence_from=tmp_path / "less" / "cooccurrence")
    assert record["concept_concept_edges"].startswith("taken from"), record["concept_concept_edges"]
