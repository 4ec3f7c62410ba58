"""The time slice of a build (``ingest.until_year``): only the papers published up to a year.

Hypothesis-generation methods are checked by cutting the literature at a year Y, predicting
connections from what was known then, and looking at which of them the papers after Y went on
to make (`litpath validate-slice`, :mod:`pipeline.validate`). For that the build of the slice
must hold nothing published after Y: its documents, mentions, predications, sentences and citations are
those of papers whose year is known and at most Y. The merged tables are cut once all the
merge's rules have run (a paper's year is its merged record's, rule 3), so a slice is exactly
the full merge with the later papers' rows removed. A paper without a year cannot be placed in
time and is left out of every slice; each removal is counted in ``counts.json``
(``time_slice``). The concepts table is a dictionary (names, semantic types) and stays whole:
a concept that only later papers mention has no edge in the slice, so it is no vertex of it.

The tables are rewritten batch by batch; the set of kept doc_ids is held in memory (one
string per paper up to Y).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import TableFolder

# The tables cut, and the doc_id columns a row needs all of in the slice (a citation needs both
# of its papers).
PAPER_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("doc_id",),
    "mentions": ("doc_id",),
    "predications": ("doc_id",),
    "sentences": ("doc_id",),
    "citations": ("citing", "cited"),
}
BATCH_ROWS = 1 << 20


def papers_until(documents: Path, until_year: int) -> tuple[pa.Array, dict[str, int]]:
    """The doc_ids of the papers published up to ``until_year``, and the counts of the papers
    kept, published later, and without a year."""
    table = pq.read_table(documents, columns=["doc_id", "year"])
    year = table.column("year")
    known = pc.is_valid(year)
    kept = pc.and_(known, pc.less_equal(pc.fill_null(year, 0), until_year))
    doc_ids = pc.filter(table.column("doc_id"), kept).combine_chunks()
    n_known = int(pc.sum(known).as_py() or 0)
    return doc_ids, {
        "papers_kept": len(doc_ids),
        "papers_after_year": n_known - len(doc_ids),
        "papers_without_year": table.num_rows - n_known,
    }


def keep_rows_of_papers(path: Path, columns: tuple[str, ...], kept: pa.Array) -> tuple[int, int]:
    """Rewrite the Parquet file ``path`` with only the rows whose ``columns`` are all in ``kept``;
    (rows before, rows after)."""
    source = pq.ParquetFile(path)
    before = source.metadata.num_rows
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    after = 0
    with pq.ParquetWriter(partial, source.schema_arrow) as writer:
        for batch in source.iter_batches(batch_size=BATCH_ROWS):
            keep = pc.is_in(batch.column(columns[0]), value_set=kept)
            for column in columns[1:]:
                keep = pc.and_(keep, pc.is_in(batch.column(column), value_set=kept))
            chosen = batch.filter(pc.fill_null(keep, False))
            after += chosen.num_rows
            writer.write_batch(chosen)
    os.replace(partial, path)
    return before, after


def cut_at_year(tables_dir: Path, until_year: int) -> dict[str, Any]:
    """Keep only the rows of papers published up to ``until_year`` in the merged tables of
    ``tables_dir``; the record of what was removed (``counts.json``'s ``time_slice``)."""
    folder = TableFolder(tables_dir)
    kept, papers = papers_until(folder.table("documents"), until_year)
    record: dict[str, Any] = {"until_year": until_year, **papers, "rows": {}}
    for name, columns in PAPER_COLUMNS.items():
        path = folder.table(name)
        if not path.exists():
            continue
        before, after = keep_rows_of_papers(path, columns, kept)
        record["rows"][name] = {"before": before, "kept": after, "removed": before - after}
    return record


__all__ = ["PAPER_COLUMNS", "cut_at_year", "keep_rows_of_papers", "papers_until"]
