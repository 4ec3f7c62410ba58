"""The merge on the delta (pipeline.merge.delta) against the full merge of the same inputs: an
earlier build's tables plus new files must give the tables a merge of every file gives, row for
row and in order, and a case its rules do not allow must fall back to the full merge and say why."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.pipeline_runs import ingested_in_input_order

from pipeline.builds.layout import TableFolder
from pipeline.merge import merge_ingested
from pipeline.merge.documents import PaperIds
from pipeline.merge.inputs import MergeInputs


@pytest.fixture(scope="module", params=[5, 11])
def corpus(request, tmp_path_factory):
    """A synthetic corpus with two PubMed update files (the second re-adds a paper the first
    deletes) and a second citation file, each file ingested; the folders in input order."""
    root = tmp_path_factory.mktemp(f"delta{request.param}")
    return ingested_in_input_order(root, scale=3000, seed=request.param, n_update_files=2, n_citation_updates=1)


def _tables(folder: Path) -> dict[str, pa.Table]:
    # changed_papers.parquet and the rows removed (<table>.removed.parquet) are the delta merge's
    # notes for the stages after it, not tables
    return {p.stem: pq.read_table(p) for p in sorted(folder.glob("*.parquet"))
            if p != TableFolder(folder).changed_papers and not p.name.endswith(".removed.parquet")}  # fmt: skip


def assert_same_tables(delta: Path, full: Path) -> None:
    got, want = _tables(delta), _tables(full)
    assert sorted(got) == sorted(want)
    for name, table in want.items():
        assert got[name].schema.equals(table.schema), name
        assert got[name].equals(table), name
    counts = json.loads(TableFolder(delta).counts.read_text())
    assert counts["tables"] == json.loads(TableFolder(full).counts.read_text())["tables"]


def _on_delta(dirs, earlier, tmp_path, config):
    previous = tmp_path / "previous"
    merge_ingested(earlier, previous, dict(config))
    counts = merge_ingested(dirs, tmp_path / "delta", dict(config), previous=previous)
    merge_ingested(dirs, tmp_path / "full", dict(config))
    return counts


@pytest.mark.parametrize(
    ("mention_source", "memory_gib"),
    # a budget of some KiB: the merges (and the earlier build's) work in partitions spilled to disk
    [("auto", 0), ("both", 0), *(pytest.param(source, 2e-5, marks=pytest.mark.slow) for source in ("auto", "both"))],
)
def test_one_more_pubmed_update_file_equals_the_full_merge(corpus, tmp_path, mention_source, memory_gib):
    dirs = [d for _, _, d in corpus]
    last_update = max(i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml")
    assert pq.read_table(TableFolder(dirs[last_update]).table("deletions")).num_rows  # it deletes, and re-adds
    config = {"mention_source": mention_source, "resources": {"memory_gib": memory_gib, "spill_dir": str(tmp_path)}}
    counts = _on_delta(dirs, dirs[:last_update] + dirs[last_update + 1 :], tmp_path, config)
    assert counts["incremental"]["used"], counts["incremental"]
    assert counts["merge"]["delta_documents_recomputed"] > 0
    assert_same_tables(tmp_path / "delta", tmp_path / "full")
    # the papers merged again, for the stages that redo only those: the new file's papers and
    # the ones it deletes, sorted
    changed = pq.read_table(TableFolder(tmp_path / "delta").changed_papers).column("doc_id").to_pylist()
    assert changed == sorted(set(changed)) and len(changed) == counts["incremental"]["changed_papers"]
    new_file = TableFolder(dirs[last_update])
    named = set(pq.read_table(new_file.table("documents")).column("doc_id").to_pylist())
    assert set(pq.read_table(new_file.table("deletions")).column("doc_id").to_pylist()) <= set(changed)
    assert named & set(changed) and len(changed) == counts["merge"]["delta_documents_recomputed"]
    # the new file's papers that no file deletes were merged from their new records and earlier row
    assert counts["merge"]["delta_documents_from_earlier_row"] > 0
    # the tables that only lost the deleted papers' rows, with those rows beside them: the earlier
    # table is the table and its removed rows (each row once), and they are whole papers
    less_deleted = counts["incremental"]["tables_less_deleted"]
    assert "predications" in less_deleted, counts["incremental"]
    deleted = set(pq.read_table(new_file.table("deletions")).column("doc_id").to_pylist())
    for name in less_deleted:
        removed = pq.read_table(TableFolder(tmp_path / "delta").removed_rows(name))
        assert removed.num_rows and set(removed.column("doc_id").to_pylist()) <= deleted, name
        kept = pq.read_table(TableFolder(tmp_path / "delta").table(name))
        earlier = pq.read_table(TableFolder(tmp_path / "previous").table(name))
        assert sorted(map(str, earlier.to_pylist())) == sorted(map(str, pa.concat_tables([kept, removed.cast(kept.schema)]).to_pylist())), name
        assert not set(kept.column("doc_id").to_pylist()) & set(removed.column("doc_id").to_pylist()), name


def test_both_update_files_at_once_equal_the_full_merge(corpus, tmp_path):
    dirs = [d for _, _, d in corpus]
    updates = [i for i, (kind, path, _) in enumerate(corpus) if kind == "pubmed_xml" and "updatefiles" in path]
    assert len(updates) == 2
    counts = _on_delta(dirs, [d for i, d in enumerate(dirs) if i not in updates], tmp_path, {})
    assert counts["incremental"]["used"], counts["incremental"]
    assert_same_tables(tmp_path / "delta", tmp_path / "full")


def test_an_update_file_and_a_citation_file_at_once_equal_the_full_merge(corpus, tmp_path):
    """A week's new files together: the last PubMed update file (it deletes and revises papers)
    and the last citation file, added to a build of the rest in one rerun."""
    dirs = [d for _, _, d in corpus]
    last_update = max(i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml")
    last_citations = max(i for i, (kind, _, _) in enumerate(corpus) if kind == "citations_table")
    earlier = [d for i, d in enumerate(dirs) if i not in (last_update, last_citations)]
    counts = _on_delta(dirs, earlier, tmp_path, {})
    assert counts["incremental"]["used"], counts["incremental"]
    assert sorted(counts["incremental"]["files_added"]) == sorted(Path(corpus[i][1]).name for i in (last_update, last_citations))
    assert counts["merge"]["delta_documents_recomputed"] > 0 and counts["merge"]["delta_citing_papers_recomputed"] > 0
    assert_same_tables(tmp_path / "delta", tmp_path / "full")


def test_one_more_citation_file_equals_the_full_merge(corpus, tmp_path):
    dirs = [d for _, _, d in corpus]
    citation_files = [i for i, (kind, _, _) in enumerate(corpus) if kind == "citations_table"]
    assert len(citation_files) == 2 and citation_files[-1] == len(dirs) - 1
    counts = _on_delta(dirs, dirs[:-1], tmp_path, {})
    assert counts["incremental"]["used"], counts["incremental"]
    assert counts["merge"]["delta_citing_papers_recomputed"] > 0
    assert counts["incremental"]["files_added"] == [Path(corpus[-1][1]).name]
    assert_same_tables(tmp_path / "delta", tmp_path / "full")
    # nothing of the citation file touches the papers: those tables are the earlier files (hard
    # links, the same file), and the DOI match is the one the earlier build kept
    unchanged = ["concepts", "documents", "mentions", "predications", "sentences"]
    assert counts["incremental"]["tables_unchanged"] == unchanged
    assert counts["incremental"]["tables_less_deleted"] == []
    assert not list((tmp_path / "delta").glob("*.removed.parquet"))
    assert counts["incremental"]["doi_match"] == {"before": "kept", "after": "kept"}
    earlier_bytes = {}
    for name in unchanged:
        assert os.path.samefile(tmp_path / "delta" / f"{name}.parquet", tmp_path / "previous" / f"{name}.parquet"), name
        earlier_bytes[name] = (tmp_path / "previous" / f"{name}.parquet").read_bytes()
    # Merged again into the same folder, the tables are written as new files: the earlier build's
    # shared ones are not written through (pipeline.merge.unshare_tables)
    merge_ingested(dirs[:-1], tmp_path / "delta", {})
    for name in unchanged:
        assert (tmp_path / "previous" / f"{name}.parquet").read_bytes() == earlier_bytes[name], name
        assert not os.path.samefile(tmp_path / "delta" / f"{name}.parquet", tmp_path / "previous" / f"{name}.parquet")


def test_an_earlier_build_without_its_doi_match_is_matched_again(corpus, tmp_path):
    """A build of a litpath that kept no DOI match (or a file of another shape) is matched again on
    its files; the tables are the same either way."""
    dirs = [d for _, _, d in corpus]
    merge_ingested(dirs[:-1], tmp_path / "previous", {})
    kept = TableFolder(tmp_path / "previous").doi_matches
    assert pq.read_table(kept).num_rows == len(_doi_matches(dirs[:-1], tmp_path))
    pq.write_table(pa.table({"doc_id": ["CORD:x"]}), kept)  # not the table's shape: not trusted
    counts = merge_ingested(dirs, tmp_path / "delta", {}, previous=tmp_path / "previous")
    assert counts["incremental"]["doi_match"] == {"before": "matched", "after": "kept"}
    merge_ingested(dirs, tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")


def _deleting_file(folder: Path, doc_ids: list[str]) -> Path:
    """A PubMed update file's ingest folder that only deletes ``doc_ids``."""
    folder.mkdir()
    pq.write_table(pa.table({"doc_id": doc_ids}), TableFolder(folder).table("deletions"))
    TableFolder(folder).counts.write_text(json.dumps({
        "kind": "pubmed_xml", "source_file": folder.name, "sha256": "f" * 64, "rows_read": len(doc_ids),
        "rows_accepted": len(doc_ids), "rows_quarantined": 0, "tables": {"deletions": len(doc_ids)},
    }))  # fmt: skip
    return folder


def _revising_file(folder: Path, like: Path, records: pa.Table) -> Path:
    """A PubMed update file's ingest folder of only ``records`` (documents), its counts like those
    of the ingest folder ``like``."""
    folder.mkdir()
    pq.write_table(records, TableFolder(folder).table("documents"))
    counts = json.loads(TableFolder(like).counts.read_text())
    counts.update({"source_file": folder.name, "sha256": "e" * 64, "rows_read": records.num_rows,
                   "rows_accepted": records.num_rows, "rows_quarantined": 0,
                   "tables": {"documents": records.num_rows}})  # fmt: skip
    TableFolder(folder).counts.write_text(json.dumps(counts))
    return folder


@pytest.mark.parametrize("where", ["after every PubMed file", "before the last PubMed file"])
def test_revised_records_with_missing_values_equal_the_full_merge(corpus, tmp_path, where):
    """A new PubMed file revises papers of earlier files, its records lacking values the earlier
    ones had (no abstract, no DOI) or changing them (the title), and adds a paper. At the end of
    the PubMed files its records come first in rule 3's order, and the delta merges them with each
    paper's earlier row (a null is the earlier value); before an earlier PubMed file they do not,
    and the delta reads every file's records of them. Either way the tables are the full merge's."""
    dirs = [d for _, _, d in corpus]
    pubmed = [i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml"]
    merge_ingested(dirs, tmp_path / "before", {})
    earlier = pq.read_table(TableFolder(dirs[pubmed[0]]).table("documents"))
    rows = earlier.slice(0, 41).to_pylist()
    for i, row in enumerate(rows[:40]):
        row.update(abstract=None, doi=None, title=f"Revised {i}")
    rows[40].update(doc_id="PMID:999999999", pmid=999999999)  # a paper no earlier file has
    revised = pa.Table.from_pylist(rows, schema=earlier.schema)
    new = _revising_file(tmp_path / "revising", dirs[pubmed[0]], revised)
    at = pubmed[-1] + 1 if where == "after every PubMed file" else pubmed[-1]
    with_revisions = dirs[:at] + [new] + dirs[at:]
    counts = merge_ingested(with_revisions, tmp_path / "delta", {}, previous=tmp_path / "before")
    assert counts["incremental"]["used"], counts["incremental"]
    from_earlier_row = counts["merge"].get("delta_documents_from_earlier_row", 0)
    assert from_earlier_row == (41 if where == "after every PubMed file" else 0)
    merge_ingested(with_revisions, tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")
    documents = pq.read_table(tmp_path / "full" / "documents.parquet").to_pylist()
    row = {r["doc_id"]: r for r in documents}[revised.column("doc_id")[0].as_py()]
    assert row["title"] == "Revised 0" and row["abstract"] is not None  # the value is the earlier record's


def _doi_matches(dirs, tmp_path) -> dict[str, str]:
    papers = PaperIds(MergeInputs(dirs, tmp_path, {}))
    papers.load_deletions()
    papers.match_dois()
    assert papers.remap  # the corpus has CORD-19 papers matched by DOI
    return papers.remap


def test_deleting_a_doi_matched_paper_equals_the_full_merge(corpus, tmp_path):
    """A new file deletes the PubMed paper a CORD-19 paper was matched to by DOI: the match goes
    (the CORD-19 paper stands alone again, its citations follow it), and a paper cited by others
    goes for good. Done on the delta, the tables are the full merge's."""
    dirs = [d for _, _, d in corpus]
    merge_ingested(dirs, tmp_path / "before", {})
    target = sorted(_doi_matches(dirs, tmp_path).values())[0]
    cited = pq.read_table(tmp_path / "before" / "citations.parquet").column("cited").to_pylist()
    deleting = _deleting_file(tmp_path / "deleting", [target, cited[len(cited) // 2]])
    cord = next(i for i, (kind, _, _) in enumerate(corpus) if kind == "cord19_metadata")
    with_deletion = dirs[:cord] + [deleting] + dirs[cord:]
    counts = merge_ingested(with_deletion, tmp_path / "delta", {}, previous=tmp_path / "before")
    assert counts["incremental"]["used"], counts["incremental"]
    # a file that deletes a paper's target changes the match: that paper's DOI is matched again
    assert counts["incremental"]["doi_match"] == {"before": "kept", "after": "updated"}
    merge_ingested(with_deletion, tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")
    assert target not in pq.read_table(tmp_path / "full" / "documents.parquet").column("doc_id").to_pylist()


@pytest.mark.parametrize("new_file", ["pubmed update", "citations"])
def test_predications_naming_a_doi_matched_paper_fall_back_to_the_full_merge(corpus, tmp_path, new_file):
    """Deletions and DOI matches act on the id a row was read with, which a merged table no longer
    shows: when a SemMedDB table names a CORD-19 paper that is matched by DOI, the merge is whole
    -- unless the new file is a citation file: no deletion, the same match, and the earlier
    build's rows (kept whole) are the full merge's."""
    dirs = [d for _, _, d in corpus]
    new = len(dirs) - 1 if new_file == "citations" else \
        max(i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml")  # fmt: skip
    index = next(i for i, (kind, _, _) in enumerate(corpus) if kind == "semmeddb_predication")
    odd = tmp_path / "odd"
    shutil.copytree(dirs[index], odd)
    predications = pq.read_table(TableFolder(odd).table("predications"))
    doc_ids = predications.column("doc_id").to_pylist()
    doc_ids[0] = sorted(_doi_matches(dirs, tmp_path))[0]
    pq.write_table(predications.set_column(predications.schema.get_field_index("doc_id"), "doc_id",
                                           pa.array(doc_ids, pa.string())), TableFolder(odd).table("predications"))  # fmt: skip
    dirs[index] = odd
    merge_ingested(dirs[:new] + dirs[new + 1 :], tmp_path / "before", {})
    counts = merge_ingested(dirs, tmp_path / "delta", {}, previous=tmp_path / "before")
    full = merge_ingested(dirs, tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")
    if new_file == "citations":
        assert counts["incremental"]["used"], counts["incremental"]
        assert {"predications", "mentions", "sentences"} <= set(counts["incremental"]["tables_unchanged"])
        return
    assert not counts["incremental"]["used"] and "matched by DOI" in counts["incremental"]["reason"]
    # the rewrites started before the match refused the delta leave neither files nor tallies
    assert not [p.name for p in (tmp_path / "delta").iterdir() if p.name.endswith(".delta-rewrite")]
    assert counts["merge"] == full["merge"]


def test_a_new_semmeddb_file_falls_back_to_the_full_merge(corpus, tmp_path):
    dirs = [d for _, _, d in corpus]
    predications = next(i for i, (kind, _, _) in enumerate(corpus) if kind == "semmeddb_predication")
    merge_ingested([d for i, d in enumerate(dirs) if i != predications], tmp_path / "before", {})
    counts = merge_ingested(dirs, tmp_path / "delta", {}, previous=tmp_path / "before")
    assert not counts["incremental"]["used"] and "predications" in counts["incremental"]["reason"]
    merge_ingested(dirs, tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")


def test_earlier_files_not_a_subsequence_fall_back(corpus, tmp_path):
    dirs = [d for _, _, d in corpus]
    merge_ingested(dirs[:-1], tmp_path / "before", {})
    swapped = tmp_path / "swapped"
    shutil.copytree(tmp_path / "before", swapped)
    counts = json.loads(TableFolder(swapped).counts.read_text())
    counts["files"] = counts["files"][::-1]
    TableFolder(swapped).counts.write_text(json.dumps(counts))
    result = merge_ingested(dirs, tmp_path / "delta", {}, previous=swapped)
    assert not result["incremental"]["used"] and "minus some" in result["incremental"]["reason"]


def test_the_merge_command_finds_the_earlier_build(corpus, tmp_path):
    """``litpath merge --previous-build auto`` starts from the complete build beside its own whose
    inputs are some of its files, unless ingest.incremental is false."""
    from click.testing import CliRunner

    from pipeline.builds.identity import RESULTS_FORMAT
    from pipeline.builds.layout import ResultsLayout
    from pipeline.builds.record import write_build_config
    from pipeline.merge.commands import merge

    dirs = [d for _, _, d in corpus]
    results = ResultsLayout(tmp_path / "results")

    def resolved(folders):
        counts = [json.loads(TableFolder(d).counts.read_text()) for d in folders]
        return [[c["kind"], c["source_file"], c["sha256"]] for c in counts]

    earlier, later = results.build("earlier"), results.build("later")
    write_build_config(earlier.config, {}, resolved(dirs[:-1]))
    merge_ingested(dirs[:-1], earlier.tables.path, {})
    earlier.record.write_text(json.dumps({"litpath": {"results_format": RESULTS_FORMAT}}))
    write_build_config(later.config, {}, resolved(dirs))
    settings = tmp_path / "run_config.yaml"
    for incremental in (True, False):
        settings.write_text(json.dumps({"ingest": {"incremental": incremental}}))
        result = CliRunner().invoke(merge, ["--out", str(later.tables.path), "--config", str(settings),
                                            "--previous-build", "auto", *map(str, dirs)])  # fmt: skip
        assert result.exit_code == 0, result.output
        counts = json.loads(later.tables.counts.read_text())
        assert counts.get("incremental", {}).get("used", False) == incremental
    merge_ingested(dirs, tmp_path / "full", {})
    assert_same_tables(later.tables.path, tmp_path / "full")


def test_new_pubmed_records_of_cord_dois_update_the_match_on_the_delta(corpus, tmp_path):
    """A new PubMed file with records carrying CORD-19 papers' DOIs: one for a paper no PubMed
    record had (matched now), one with a smaller PMID than a matched paper's target (matched to it
    now), one with a larger (no change), one for a paper whose target it deletes (matched to it now); and
    it deletes a paper no CORD-19 paper is matched to. The
    match is updated from the kept one, not made again on every file, and the tables are the full
    merge's."""
    dirs = [d for _, _, d in corpus]
    pubmed = [i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml"]
    cord = next(i for i, (kind, _, _) in enumerate(corpus) if kind == "cord19_metadata")
    merge_ingested(dirs, tmp_path / "before", {})
    matches = _doi_matches(dirs, tmp_path)
    cord_papers = pq.read_table(TableFolder(dirs[cord]).table("documents")).to_pylist()
    cord_papers = [r for r in cord_papers if r["doc_id"].startswith("CORD:") and r["doi"]]
    unmatched = next(r for r in cord_papers if r["doc_id"] not in matches)
    matched = [r for r in cord_papers if r["doc_id"] in matches][:3]
    like = pq.read_table(TableFolder(dirs[pubmed[0]]).table("documents"))
    rows = like.slice(0, 4).to_pylist()
    twins = [(999999997, unmatched), (1, matched[0]), (999999998, matched[1]), (999999996, matched[2])]
    for row, (pmid, paper) in zip(rows, twins, strict=True):
        row.update(doc_id=f"PMID:{pmid}", pmid=pmid, doi=paper["doi"], title=f"Twin of {paper['doc_id']}")
    new = _revising_file(tmp_path / "twins", dirs[pubmed[0]], pa.Table.from_pylist(rows, schema=like.schema))
    targets = set(matches.values())
    bystander = next(d for d in pq.read_table(tmp_path / "before" / "documents.parquet").column("doc_id").to_pylist()
                     if d.startswith("PMID:") and d not in targets and d not in {r["doc_id"] for r in rows})  # fmt: skip
    # and the target of the third: its new record is the one left
    pq.write_table(pa.table({"doc_id": [bystander, matches[matched[2]["doc_id"]]]}), TableFolder(new).table("deletions"))
    counts = json.loads(TableFolder(new).counts.read_text())
    counts["tables"]["deletions"] = 2
    TableFolder(new).counts.write_text(json.dumps(counts))
    with_twins = dirs[: pubmed[-1] + 1] + [new] + dirs[pubmed[-1] + 1 :]
    delta = merge_ingested(with_twins, tmp_path / "delta", {}, previous=tmp_path / "before")
    assert delta["incremental"]["used"], delta["incremental"]
    assert delta["incremental"]["doi_match"] == {"before": "kept", "after": "updated"}
    merge_ingested(with_twins, tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")
    after = dict(zip(*pq.read_table(TableFolder(tmp_path / "full").doi_matches).to_pydict().values(), strict=True))
    assert after[unmatched["doc_id"]] == "PMID:999999997"
    assert after[matched[0]["doc_id"]] == "PMID:1"
    assert after[matched[1]["doc_id"]] == matches[matched[1]["doc_id"]]
    assert after[matched[2]["doc_id"]] == "PMID:999999996"
    assert bystander not in pq.read_table(tmp_path / "full" / "documents.parquet").column("doc_id").to_pylist()


def test_a_new_cord19_release_matches_again_on_every_file(corpus, tmp_path):
    """New CORD-19 records may carry DOIs of their own: the match is not updated but made again."""
    dirs = [d for _, _, d in corpus]
    cord = next(i for i, (kind, _, _) in enumerate(corpus) if kind == "cord19_metadata")
    merge_ingested(dirs, tmp_path / "before", {})
    release = pq.read_table(TableFolder(dirs[cord]).table("documents")).slice(0, 50)
    new = _revising_file(tmp_path / "cord-update", dirs[cord], release)
    counts = merge_ingested(dirs + [new], tmp_path / "delta", {}, previous=tmp_path / "before")
    assert counts["incremental"]["doi_match"]["after"] == "matched", counts["incremental"]
    merge_ingested(dirs + [new], tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")


def test_deleting_a_paper_no_cord19_paper_is_matched_to_keeps_the_match(corpus, tmp_path):
    dirs = [d for _, _, d in corpus]
    merge_ingested(dirs, tmp_path / "before", {})
    targets = set(_doi_matches(dirs, tmp_path).values())
    bystander = next(d for d in pq.read_table(tmp_path / "before" / "documents.parquet").column("doc_id").to_pylist()
                     if d.startswith("PMID:") and d not in targets)  # fmt: skip
    deleting = _deleting_file(tmp_path / "deleting", [bystander])
    counts = merge_ingested(dirs + [deleting], tmp_path / "delta", {}, previous=tmp_path / "before")
    assert counts["incremental"]["doi_match"] == {"before": "kept", "after": "updated"}
    merge_ingested(dirs + [deleting], tmp_path / "full", {})
    assert_same_tables(tmp_path / "delta", tmp_path / "full")


def test_the_merge_keeps_freed_memory_on_the_delta_only(corpus, tmp_path, monkeypatch):
    """The merge asks to keep the memory it frees (pipeline.runtime.resources.
    keep_freed_memory_on_the_delta) when it works on the delta, not when it merges in full: a
    first build's merge is sized to the memory budget."""
    asked = []
    monkeypatch.setattr("pipeline.merge.keep_freed_memory_on_the_delta", lambda: asked.append(1) or False)
    dirs = [d for _, _, d in corpus]
    merge_ingested(dirs[:-1], tmp_path / "before", {})
    assert not asked
    counts = merge_ingested(dirs, tmp_path / "delta", {}, previous=tmp_path / "before")
    assert counts["incremental"]["used"] and asked == [1], counts["incremental"]
    predications = next(i for i, (kind, _, _) in enumerate(corpus) if kind == "semmeddb_predication")
    merge_ingested([d for i, d in enumerate(dirs) if i != predications], tmp_path / "other", {})
    counts = merge_ingested(dirs, tmp_path / "refused", {}, previous=tmp_path / "other")
    assert not counts["incremental"]["used"] and asked == [1], counts["incremental"]


def test_the_progress_on_the_delta_counts_the_rows_each_rule_reads(corpus, tmp_path, monkeypatch):
    """On the delta the merge's line counts the rows of the earlier tables read -- the documents
    spliced and the tables rewritten less the deleted papers' rows, the rewrites from their own
    threads as they read -- and ends at its total, each row counted once; a table kept as it is
    counts none. (The full merge's measure, every file's rows, put a 10M update rerun at 11.6 % as
    it ended.)"""
    import threading

    import pipeline.merge as merge_module
    from pipeline.runtime.progress import Progress

    lines: list[Progress] = []
    from_threads: list[int] = []

    class Recorded(Progress):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            lines.append(self)

        def advance(self, amount=1):
            if threading.current_thread() is not threading.main_thread():
                from_threads.append(amount)
            super().advance(amount)

    dirs = [d for _, _, d in corpus]
    last_update = max(i for i, (kind, _, _) in enumerate(corpus) if kind == "pubmed_xml")
    previous = tmp_path / "previous"
    merge_ingested(dirs[:last_update] + dirs[last_update + 1 :], previous, {})
    monkeypatch.setattr(merge_module, "Progress", Recorded)
    counts = merge_ingested(dirs, tmp_path / "delta", {}, previous=previous)
    assert counts["incremental"]["used"], counts["incremental"]
    (line,) = lines
    earlier = {name: pq.ParquetFile(TableFolder(previous).table(name)).metadata.num_rows
               for name in ("documents", "mentions", "predications", "sentences", "citations", "concepts")}  # fmt: skip
    assert line.total == sum(earlier.values())  # an update file deletes: every table is read
    assert line.done == line.total
    # the rewrites' rows came from their threads, as they read them: the three tables whole
    assert sum(from_threads) == earlier["mentions"] + earlier["predications"] + earlier["sentences"]
    # a citation file deletes nothing: the tables kept count none
    lines.clear()
    merge_ingested(dirs[:-1], tmp_path / "before-citations", {})
    merge_ingested(dirs, tmp_path / "citations", {}, previous=tmp_path / "before-citations")
    line = lines[-1]
    kept = {name: pq.ParquetFile(TableFolder(tmp_path / "before-citations").table(name)).metadata.num_rows
            for name in ("documents", "citations", "concepts")}  # fmt: skip
    assert line.total == sum(kept.values()) and line.done == line.total


@pytest.mark.parametrize("lanes", [1, 2])
def test_the_full_merge_counts_its_steps_in_percent_by_what_their_rows_cost(corpus, tmp_path, monkeypatch, lanes):
    """A full merge's line moves by each step's share -- its rows read times what a row costs
    it (MERGE_ROW_SECONDS) -- and is at 100 % when it is done; the documents, the mentions, the
    predications and the sentences move it as they read, the citations and the concepts as they
    end. (Counted in rows alone, a 10M merge said "ETA 85.3 s" with 16 s left: a document costs
    seven predications. At 30M, step by step, it said "ETA 89.2 s" with 4 s left: the sentences
    had run beside the others unseen; then, with the sentences told, it forecast twice the time
    left while the mentions ran unseen beside them.)"""
    from support.progress_lines import RecordedLines

    import pipeline.merge as merge_module
    from pipeline.merge import MERGE_ROW_SECONDS, MergeInputs, PaperIds, merge_shares, merge_steps
    from pipeline.runtime.progress import PERCENT

    dirs = [d for _, _, d in corpus]
    recorded = RecordedLines()
    monkeypatch.setattr(merge_module, "Progress", recorded)
    counts = merge_ingested(dirs, tmp_path / "full", {"resources": {"merge_lanes": lanes}})
    assert counts["merge"].get("merge_lanes", 1) == lanes
    assert [(line.total, line.unit) for line in recorded.lines] == [(100, PERCENT)]
    done = recorded.done
    assert done == sorted(done) and done[-1] == pytest.approx(100.0)
    # each step moved the line by its share, once: its rows read times their cost
    inputs = MergeInputs(dirs, tmp_path / "sized", {})
    inputs.load_counts()
    step_rows = {name: sum(inputs.table_rows(table) for table in reads)
                 for name, reads, _ in merge_steps(inputs, PaperIds(inputs), "predications", tmp_path / "sized")}  # fmt: skip
    shares = merge_shares(step_rows)
    if lanes == 1:  # one step after another: each ends the line at the shares of the steps so far
        ends, so_far = {}, 0.0
        for name in step_rows:
            so_far += 100 * shares[name]
            ends[name] = so_far
        assert {name: max(v for stage, v in recorded.reports if stage == name) for name in step_rows} == \
            pytest.approx(ends)  # fmt: skip
        # the documents and the mentions moved it as they read, before their end
        for name in ("documents", "mentions"):
            told = [v for stage, v in recorded.reports if stage == name]
            assert told[0] < told[-1], (name, told)
    # the sentences moved the line as they read, not only as they ended
    assert sum(1 for stage, _ in recorded.reports if "sentences" in stage) > 1
    total = sum(rows * MERGE_ROW_SECONDS[name] for name, rows in step_rows.items())
    assert shares["documents"] == pytest.approx(step_rows["documents"] * MERGE_ROW_SECONDS["documents"] / total)
    assert merge_shares({"documents": 0, "concepts": 0}) == {"documents": 0.5, "concepts": 0.5}
    unmeasured = merge_shares({"predications": 1, "a new table": 1})
    assert unmeasured["a new table"] == pytest.approx(0.5)  # counted as the predications' rows


def test_the_documents_and_the_mentions_tell_their_reading_then_each_range(corpus, tmp_path, monkeypatch):
    """Over a budget that splits them into ranges, the documents and the mentions move the line
    by their measured reading share as they read (DOCUMENTS_READ_SHARE, MENTIONS_READ_SHARE "in
    ranges"), then by an equal part of the rest at each range, and the tables are the same as in
    memory."""
    from support.progress_lines import RecordedLines

    import pipeline.merge as merge_module
    from pipeline.merge import partitions
    from pipeline.merge.documents import DOCUMENTS_READ_SHARE
    from pipeline.merge.mentions import MENTIONS_READ_SHARE

    dirs = [d for _, _, d in corpus]
    recorded = RecordedLines()
    monkeypatch.setattr(merge_module, "Progress", recorded)
    monkeypatch.setattr(partitions, "MERGE_STREAM_ROWS", 500)  # each file read in parts, as a large one is
    resources = {"merge_lanes": 1, "memory_gib": 256 / 2**20, "spill_dir": str(tmp_path / "spill")}
    counts = merge_ingested(dirs, tmp_path / "ranges", {"resources": resources})
    reports = recorded.reports
    for name, read_share in (("documents", DOCUMENTS_READ_SHARE), ("mentions", MENTIONS_READ_SHARE)):
        ranges = counts["merge"][f"{name[:-1] if name == 'mentions' else 'document'}_partitions"]
        assert ranges > 1
        first = next(i for i, (stage, _) in enumerate(reports) if stage == name)
        start = reports[first - 1][1] if first else 0.0  # where the steps before it left the line
        told = [v for stage, v in reports if stage == name]
        share = told[-1] - start
        # the reading's reports end at its share of the step; each range then adds an equal part
        read_end = start + share * read_share["in ranges"]
        after_reading = sorted({round(v, 6) for v in told if v > read_end + 1e-6})
        assert any(v == pytest.approx(read_end) for v in told), (name, read_end, told)
        assert len([v for v in told if start < v < read_end - 1e-6]) > 0, (name, told)  # the rows as read
        assert after_reading == pytest.approx([read_end + share * (1 - read_share["in ranges"]) * k / ranges
                                               for k in range(1, ranges + 1)]), (name, told)  # fmt: skip
    merge_ingested(dirs, tmp_path / "memory", {})
    assert_same_tables(tmp_path / "ranges", tmp_path / "memory")
