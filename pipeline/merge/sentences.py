"""Rule 6 of the merge (:mod:`pipeline.merge`): the sentences table, the text a hop's evidence quotes.

A hop is judged by the sentences its predications were read from, so the merge keeps the SENTENCE
rows that some predication of the build names (by sentence_id), with rules 1-2 applied (a deleted
paper's sentences go with it), one row per sentence_id (when SENTENCE files disagree, the later
file's row wins, as for documents), the text cut to :data:`SENTENCE_TEXT_CAP` characters (the last
one an ellipsis) so that the evidence store's records stay small whatever a sentence's length.

Memory: the sentence ids the predications name are held as a sorted int64 array with a flag per
id (9 bytes per cited sentence: 0.3 GB at 30M predications); when that does not fit half the
budget, the step works in sentence_id ranges (bounds sampled from the predications), reading the
predications and the SENTENCE files once per range. SENTENCE rows are streamed a batch at a time.
The rows are written in the order they are found (by range, then newest file first), not sorted:
the readers look sentences up by id.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.merge.documents import PaperIds
from pipeline.merge.inputs import MergeInputs, StepReads
from pipeline.merge.partitions import sampled_splits, table_batches
from pipeline.runtime.columnar import distinct_sorted

# The longest sentence text kept, in characters. SemMedDB sentences are mostly under 300
# characters; a longer one (a table row, a run-on list) is cut to 499 and an ellipsis.
SENTENCE_TEXT_CAP = 500
ELLIPSIS = "\u2026"
# Bytes held per cited sentence: its id (int64) and whether a row was written for it (bool).
BYTES_PER_CITED_SENTENCE = 9


def capped_text(text: pa.Array | pa.ChunkedArray, cap: int = SENTENCE_TEXT_CAP) -> pa.Array | pa.ChunkedArray:
    """Each text of more than ``cap`` characters cut to its first ``cap - 1`` and an ellipsis."""
    too_long = pc.greater(pc.utf8_length(text), cap)
    if not pc.any(too_long).as_py():
        return text
    cut = pc.binary_join_element_wise(pc.utf8_slice_codeunits(text, 0, cap - 1), ELLIPSIS, "")
    return pc.if_else(too_long, cut, text)


def write_sentences(inputs: MergeInputs, papers: PaperIds, predications: Path, path: Path) -> int:
    """The sentences table (sentence_id, doc_id, text) of the sentences the merged ``predications``
    name, written to ``path``; its rows. Files without a text column (ingested before the text was
    kept) give null texts, counted as ``sentences_without_text``."""
    cited_rows = pq.ParquetFile(predications).metadata.num_rows if predications.exists() else 0
    partitions = inputs.partitions(cited_rows * BYTES_PER_CITED_SENTENCE, "sentence_partitions")
    bounds = [None, *sampled_splits([predications], partitions, "sentence_id"), None] if cited_rows else [None, None]
    sources = [(index, d) for index, d in enumerate(inputs.file_dirs)][::-1]  # newest file first: it wins
    written = 0
    # how far the step is: each range reads every file's sentences again
    told = StepReads(inputs, "sentences", (len(bounds) - 1) * inputs.table_rows("sentences"), 1.0)
    with pq.ParquetWriter(path, tables.SENTENCES) as writer:
        for low, high in zip(bounds, bounds[1:], strict=False):
            cited = _cited_sentences(predications, low, high) if cited_rows else np.zeros(0, np.int64)
            done = np.zeros(len(cited), bool)
            for index, file_dir in sources:
                sentence_path = TableFolder(file_dir).table("sentences")
                if not sentence_path.exists():
                    continue
                for part in table_batches(sentence_path):
                    rows = _new_cited_rows(part, cited, done, low, high)
                    rows = papers.clean(rows, index, "doc_id", "sentences")
                    if "text" not in rows.column_names:
                        inputs.bump("sentences_without_text", rows.num_rows)
                        rows = rows.append_column("text", pa.nulls(rows.num_rows, pa.string()))
                    rows = rows.set_column(2, "text", capped_text(rows.column("text")))
                    writer.write_table(rows.cast(tables.SENTENCES))
                    written += rows.num_rows
                    told.read(part.num_rows)
    return written


def _cited_sentences(predications: Path, low: int | None, high: int | None) -> np.ndarray:
    """The distinct sentence ids in [low, high) of the predications, sorted."""
    found = []
    for part in table_batches(predications, ["sentence_id"]):
        ids = part.column("sentence_id").to_numpy()
        found.append(distinct_sorted(ids[_in_range(ids, low, high)]))  # each batch's first: less held
    return distinct_sorted(*found) if found else np.zeros(0, np.int64)


def _in_range(ids: np.ndarray, low: int | None, high: int | None) -> np.ndarray:
    keep = np.ones(len(ids), bool)
    if low is not None:
        keep &= ids >= low
    if high is not None:
        keep &= ids < high
    return keep


def _new_cited_rows(part: pa.Table, cited: np.ndarray, done: np.ndarray, low: int | None, high: int | None) -> pa.Table:
    """The rows of ``part`` whose sentence is cited and not written yet (the first row of a
    sentence_id within the part), marking them done; sentence_id, doc_id and text (if any)."""
    ids = part.column("sentence_id").to_numpy()
    at = np.minimum(np.searchsorted(cited, ids), max(len(cited) - 1, 0))
    keep = _in_range(ids, low, high) & (cited[at] == ids if len(cited) else np.zeros(len(ids), bool))
    keep &= ~done[at] if len(cited) else keep
    rows = np.flatnonzero(keep)
    _, first = np.unique(ids[rows], return_index=True)  # a sentence twice in one part: its first row
    rows = np.sort(rows[first])
    done[at[rows]] = True
    columns = [name for name in ("sentence_id", "doc_id", "text") if name in part.column_names]
    return part.select(columns).take(pa.array(rows, pa.int64()))
