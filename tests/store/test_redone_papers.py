"""The papers a rebuild on the earlier build's buckets groups again, and their predications
(:func:`pipeline.store.record_buckets.redone_papers`). Where the merge on the delta says what
became of the predications (the earlier table less the deleted papers' rows, kept beside it), the
papers are found without reading a predication and only the rows of those that can still have
some are looked for; the reference is the same function told nothing of the sort, which reads
the changed papers' rows before and now and compares them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.builds.layout import BuildLayout, TableFolder
from pipeline.runtime import filtered_reads
from pipeline.store.record_buckets import EarlierBuild, redone_papers

COLUMNS = ["doc_id", "predication_id", "subject_cui"]


def _predications(rows: list[tuple[str, int]]) -> pa.Table:
    rows = sorted(rows)  # the merge writes them in doc_id order
    return pa.table({"predication_id": [p for _, p in rows], "doc_id": [d for d, _ in rows],
                     "subject_cui": [f"C{p:07d}" for _, p in rows]})  # fmt: skip


def _documents(years: dict[str, int | None]) -> pa.Table:
    return pa.table({"doc_id": list(years), "year": pa.array(list(years.values()), pa.int32())})


def _write(folder: Path, documents: pa.Table, predications: pa.Table) -> Path:
    folder.mkdir(parents=True)
    pq.write_table(documents, folder / "documents.parquet")
    pq.write_table(predications, folder / "predications.parquet", row_group_size=2)
    return folder


@pytest.fixture
def builds(tmp_path: Path) -> tuple[Path, EarlierBuild]:
    """An earlier build and one on top of it: PMID:2 revised to another year, PMID:3 deleted with
    its predications, PMID:4 deleted without any, PMID:5 new, PMID:7 (predications, no documents
    row before) given one, CORD:1 merged into its PubMed twin; PMID:1 and PMID:8 untouched."""
    before = {"PMID:1": 2001, "PMID:2": 2002, "PMID:3": 2003, "PMID:4": 2004, "PMID:8": 2008, "CORD:1": 2020}
    now = {"PMID:1": 2001, "PMID:2": 2012, "PMID:5": 2015, "PMID:7": 2007, "PMID:8": 2008}
    rows = [("PMID:1", 10), ("PMID:2", 20), ("PMID:2", 21), ("PMID:3", 30), ("PMID:3", 31), ("PMID:7", 70),
            ("PMID:8", 80), ("PMID:8", 81)]  # fmt: skip
    earlier_root = tmp_path / "one"
    _write(BuildLayout(earlier_root).tables.path, _documents(before), _predications(rows))
    tables = _write(tmp_path / "two" / "tables", _documents(now),
                    _predications([row for row in rows if row[0] != "PMID:3"]))  # fmt: skip
    pq.write_table(_predications([row for row in rows if row[0] == "PMID:3"]), TableFolder(tables).removed_rows("predications"))
    changed = pa.array(sorted(["PMID:2", "PMID:3", "PMID:4", "PMID:5", "PMID:7", "CORD:1"]), pa.string())
    return tables, EarlierBuild(earlier_root, changed, TableFolder(tables).removed_rows("predications"))


def _told_nothing(earlier: EarlierBuild) -> EarlierBuild:
    return dataclasses.replace(earlier, removed_predications=None, predications_unchanged=False)


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.select(COLUMNS).to_pylist(), key=lambda row: (row["doc_id"], row["predication_id"]))


def test_the_papers_redone_and_their_rows_equal_those_found_by_reading_every_changed_paper(builds, monkeypatch):
    tables, earlier = builds
    looked_for = []
    original = filtered_reads.rows_with_values

    def spy(path, columns, key, values):
        looked_for.append((Path(path).name, sorted(values.to_pylist())))
        return original(path, columns, key, values)

    monkeypatch.setattr("pipeline.store.record_buckets.rows_with_values", spy)
    papers, (before, now) = redone_papers(tables, earlier, COLUMNS)
    asked = [values for name, values in looked_for if name == "predications.parquet"]
    looked_for.clear()
    reference_papers, (reference_before, reference_now) = redone_papers(tables, _told_nothing(earlier), COLUMNS)

    assert papers.to_pylist() == reference_papers.to_pylist() == ["CORD:1", "PMID:2", "PMID:3", "PMID:4", "PMID:5", "PMID:7"]
    assert now.select(COLUMNS).to_pylist() == reference_now.select(COLUMNS).to_pylist()
    assert _sorted(before) == _sorted(reference_before)
    assert {row["doc_id"] for row in now.to_pylist()} == {"PMID:2", "PMID:7"}
    # only the papers that can have predications now were looked for: not PMID:3 (removed), nor
    # PMID:4 and CORD:1 (in the earlier documents, not in these)
    assert asked == [["PMID:2", "PMID:5", "PMID:7"]]


def test_a_paper_revised_in_its_year_alone_is_redone_with_its_rows(builds):
    tables, earlier = builds
    papers, (_, now) = redone_papers(tables, earlier, COLUMNS)
    assert "PMID:2" in papers.to_pylist()
    assert sorted(now.filter(pc.equal(now["doc_id"], "PMID:2"))["predication_id"].to_pylist()) == [20, 21]


def test_an_unchanged_predications_table_is_read_once(builds, tmp_path):
    """A citation file: the merge kept the earlier predications and documents; here a revised year
    too, so that a paper is redone: its rows before are its rows now, read once."""
    _, earlier = builds
    kept = tmp_path / "three" / "tables"
    kept.mkdir(parents=True)
    documents = pq.read_table(BuildLayout(earlier.root).tables.path / "documents.parquet")
    revised = pc.if_else(pc.equal(documents["doc_id"], "PMID:8"), pa.scalar(2018, pa.int32()), documents["year"])
    pq.write_table(documents.set_column(1, "year", revised), kept / "documents.parquet")
    pq.write_table(pq.read_table(BuildLayout(earlier.root).tables.path / "predications.parquet"),
                   kept / "predications.parquet")  # fmt: skip
    unchanged = dataclasses.replace(earlier, changed=pa.array(["PMID:1", "PMID:8"]), removed_predications=None,
                                    predications_unchanged=True)  # fmt: skip
    papers, (before, now) = redone_papers(kept, unchanged, COLUMNS)
    reference_papers, (reference_before, reference_now) = redone_papers(kept, _told_nothing(unchanged), COLUMNS)
    assert papers.to_pylist() == reference_papers.to_pylist() == ["PMID:8"]
    assert now["predication_id"].to_pylist() == [80, 81]
    assert before.select(COLUMNS).to_pylist() == reference_before.select(COLUMNS).to_pylist() == now.select(COLUMNS).to_pylist()
    assert now.select(COLUMNS).to_pylist() == reference_now.select(COLUMNS).to_pylist()
