"""Rule 4 of the merge (:mod:`pipeline.merge`): the mentions table, counts summed per (doc_id, cui).

What one mention is depends on the mention source: an ENTITY row placed in its paper
(``entities``, :mod:`pipeline.merge.entities`), a predication argument slot (``predications``),
or the union of the two per (paper, sentence, concept) (``both``, :func:`mention_union`).
:func:`write_mentions` sums them in memory or, beyond the memory budget, in doc_id ranges on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.ingest.base import DICTIONARY_COLUMNS
from pipeline.merge.documents import PaperIds
from pipeline.merge.entities import placed_entities
from pipeline.merge.inputs import MergeInputs, StepReads
from pipeline.merge.partitions import RangePartitions, table_batches
from pipeline.runtime.columnar import split_keys, string_codes, sum_by_key

# Peak bytes per mention row of the in-memory sum (strings, codes, sort, output): beyond the
# memory budget the merge sums the mentions in doc_id-range partitions on disk instead.
MERGE_BYTES_PER_MENTION = 120
# The per-file tables the mentions step samples for its doc_id ranges (those with a doc_id).
_MENTION_TABLES = ("mentions", "entity_mentions", "predications")
# The per-file tables whose rows the mentions step holds, by mention source (its memory estimate,
# and the rows the merge's progress counts for it):
# only what the source reads. Counting the ENTITY rows that "predications" never reads (ten times
# its own rows) split the 30M-predication merge into 15 doc_id ranges where 2 fit the budget.
HELD_TABLES = {
    "predications": ("mentions",),
    "entities": ("entity_mentions",),
    "both": ("mentions", "entity_mentions", "predications"),  # each file's argument slots too
}
# Rows of parts the in-memory sum holds before it sums them into one (memory near the output's).
_MENTIONS_COMPACT_ROWS = 1 << 24
# The share of the mentions step that reads every file's mention rows, in memory or spilling them
# into doc_id ranges beyond the budget; the rest sums them, a range at a time. Measured at 10M
# calibrated predications (mention source "predications"), the merge's steps one after another
# (AMD EPYC): in memory 0.4 s of 4.5 (one file holds them all, read at once, so the line then
# waits for the sum); in 2 ranges 3.8 of 8.4.
MENTIONS_READ_SHARE = {"in memory": 0.1, "in ranges": 0.45}
_MENTION_SUMS = pa.schema([("doc_id", pa.string()), ("cui", pa.string()), ("count", pa.int64())])
_SENTENCE_MENTIONS = pa.schema(
    [("doc_id", pa.string()), ("sentence_id", pa.int64()), ("cui", pa.string()), ("count", pa.int64())]
)
_SENTENCE_KEY = ["doc_id", "sentence_id", "cui"]


def write_mentions(inputs: MergeInputs, papers: PaperIds, mention_source: str, path: Path) -> int:
    """The mentions table (summed per (doc_id, cui), sorted) written to ``path``; its rows.

    When the mention rows would not fit the memory budget, they are split by doc_id range into
    partitions on disk and summed one partition at a time
    (:class:`~pipeline.merge.partitions.RangePartitions`), which gives the same table in the
    same order. ENTITY rows reach the sum already placed in their papers, within the budget too
    (:func:`~pipeline.merge.entities.placed_entities`).
    """
    rows = sum(inputs.table_rows(name) for name in HELD_TABLES[mention_source])
    partitions = inputs.partitions(rows * MERGE_BYTES_PER_MENTION, "mention_partitions")
    told = StepReads(inputs, "mentions", rows, MENTIONS_READ_SHARE["in memory" if partitions == 1 else "in ranges"])
    mentions = _Mentions(inputs, papers, mention_source, told.read)
    written = counted = 0
    with pq.ParquetWriter(path, tables.MENTIONS, use_dictionary=DICTIONARY_COLUMNS["mentions"]) as writer:
        for done, parts in enumerate(mentions.parts_by_range(partitions), start=1):
            table = _sum_mentions(parts).cast(tables.MENTIONS) if parts else tables.MENTIONS.empty_table()
            if table.num_rows or partitions == 1:  # in memory, the table is written even when empty
                writer.write_table(table)
            written += table.num_rows
            counted += pc.sum(table.column("count")).as_py() or 0
            told.ranges_done(done, partitions)
    inputs.bump("mentions_counted", counted)
    return written


class _Mentions:
    """The mention parts of every file, for one mention source, cleaned by rules 1-2."""

    def __init__(
        self, inputs: MergeInputs, papers: PaperIds, mention_source: str, on_read: Callable[[int], None] | None = None
    ) -> None:
        self.inputs = inputs
        self.papers = papers
        self.source = mention_source
        # told the rows of the held tables (HELD_TABLES) read, part by part
        self.on_read = on_read or (lambda rows: None)

    def parts_by_range(self, partitions: int) -> Iterator[list[pa.Table]]:
        """The (doc_id, cui, count) parts to sum of each doc_id range, in doc_id order: all of
        them at once with one partition; else routed into ``partitions`` ranges on disk, a
        batch at a time, then read back one range at a time."""
        if partitions == 1:
            yield self._parts_in_memory()
            return
        with self.inputs.spill() as folder:
            spilled = RangePartitions(folder, self.inputs.splits(partitions, "doc_id", *_MENTION_TABLES))
            for stream, part in self._stream(streamed=True):
                spilled.add(stream, part)
            spilled.close()
            for k in range(spilled.k):
                streams = {name: spilled.read(name, k) for name in spilled.names}
                if self.source == "both":
                    yield mention_union(self.inputs, streams.get("entities"), streams.get("arguments"))
                else:
                    yield [t for t in (streams.get("mentions"),) if t is not None and t.num_rows]

    def _parts_in_memory(self) -> list[pa.Table]:
        """The (doc_id, cui, count) parts of every file, for one sum."""
        if self.source == "both":
            entities, arguments = [], []
            for stream, part in self._stream():
                (entities if stream == "entities" else arguments).append(part)
            return mention_union(
                self.inputs,
                _concat_as(entities, _SENTENCE_MENTIONS) if entities else None,
                _concat_as(arguments, _SENTENCE_MENTIONS.remove(3)) if arguments else None,
            )
        parts: list[pa.Table] = []
        for _, part in self._stream():
            parts.append(part)
            if sum(p.num_rows for p in parts) > _MENTIONS_COMPACT_ROWS and len(parts) > 1:
                parts = [_sum_mentions(parts)]  # keep memory near the output size
        return parts

    def _stream(self, streamed: bool = False) -> Iterator[tuple[str, pa.Table]]:
        """(stream name, cleaned part) of every file: "mentions" parts (doc_id, cui, count), or for
        ``both`` "entities" (doc_id, sentence_id, cui, count) and "arguments" (doc_id,
        sentence_id, cui) parts, each already distinct within its file. The ENTITY parts come
        first (:func:`~pipeline.merge.entities.placed_entities`), then the predication parts, in
        file order.

        When ``streamed``, predication mentions come in parts of MERGE_STREAM_ROWS rows at most,
        so that a file is never held whole (the partitioned merge: a mentions file of a full
        release has hundreds of millions of rows).
        """
        key = _SENTENCE_KEY
        if self.source in ("entities", "both"):
            for index, placed in placed_entities(self.inputs):
                self.on_read(placed.num_rows)
                if self.source == "entities":
                    yield "mentions", self._clean_mentions(placed, index)
                    continue
                placed = self.papers.clean(placed.select([*key, "count"]), index, "doc_id", "entity_mentions")
                placed = placed.group_by(key).aggregate([("count", "sum")]).rename_columns([*key, "count"])
                yield "entities", placed
        for index, file_dir in enumerate(self.inputs.file_dirs):
            if self.source == "predications" and streamed:
                path = TableFolder(file_dir).table("mentions")
                for part in table_batches(path, read_dictionary=["doc_id", "cui"]) if path.exists() else ():
                    self.on_read(part.num_rows)
                    yield "mentions", self._clean_mentions(part, index)
            elif self.source == "predications":
                part = self.inputs.read(file_dir, "mentions", ("doc_id", "cui"))
                if part is not None:
                    self.on_read(part.num_rows)
                    yield "mentions", self._clean_mentions(part, index)
            elif self.source == "both":
                slot_counts = self.inputs.read(file_dir, "mentions", ("doc_id", "cui"))
                if slot_counts is not None:  # not counted as removed: the same rows are, as arguments
                    self.on_read(slot_counts.num_rows)
                    slot_counts = self._clean_mentions(slot_counts, index, label=None)
                    self.inputs.bump("predication_argument_slots", pc.sum(slot_counts.column("count")).as_py() or 0)
                arguments = self._argument_keys(index, file_dir)
                self.on_read(self.inputs.file_counts[index].get("tables", {}).get("predications", 0))
                if arguments is not None:
                    yield "arguments", arguments

    def _argument_keys(self, index: int, file_dir: Path) -> pa.Table | None:
        """Distinct (doc_id, sentence_id, cui) of the predication arguments of one file, cleaned
        by rules 1-2; None if the file has no predications table."""
        path = TableFolder(file_dir).table("predications")
        if not path.exists():
            return None
        key = _SENTENCE_KEY
        parts = []
        columns = ["doc_id", "sentence_id", "subject_cui", "object_cui"]
        with pq.ParquetFile(path) as predications:
            for batch in predications.iter_batches(batch_size=1 << 20, columns=columns):
                sides = [
                    pa.table([batch["doc_id"], batch["sentence_id"], batch[side]], names=key)
                    for side in ("subject_cui", "object_cui")
                ]
                # a sentence's predications are mostly adjacent: most repeats go batch by batch
                parts.append(pa.concat_tables(sides).group_by(key).aggregate([]))
        if not parts:
            return None
        distinct = pa.concat_tables(parts).group_by(key).aggregate([])
        return self.papers.clean(distinct, index, "doc_id", "predication_argument_mentions")

    def _clean_mentions(self, part: pa.Table, index: int, label: str | None = "mentions") -> pa.Table:
        """doc_id, cui (dictionary or plain strings: _sum_mentions takes both) and an int64 count."""
        part = part.select(["doc_id", "cui", "count"])
        if not self.papers.untouched(index):  # deletions and remapping work on plain strings
            part = part.set_column(0, "doc_id", part.column("doc_id").cast(pa.string()))
        part = self.papers.clean(part, index, "doc_id", label)
        return part.set_column(2, "count", part.column("count").cast(pa.int64()))


def mention_union(inputs: MergeInputs, entities: pa.Table | None, arguments: pa.Table | None) -> list[pa.Table]:
    """``mention_source: both``: the union of the textual mentions of some papers attested by
    ENTITY rows (``entities``: doc_id, sentence_id, cui, count) and by predication arguments
    (``arguments``: doc_id, sentence_id, cui), as (doc_id, cui, count) parts for :func:`_sum_mentions`.

    The paper's weight counts "the number of times a concept, c, appears in an abstract, p"
    -- occurrences in the text. ENTITY rows are those occurrences, one row per mention. A
    predication argument is an occurrence too, but one SemRep also lists as an ENTITY row
    of the same sentence, and several predications of a sentence share one argument
    occurrence. PREDICATION rows carry only the sentence (argument offsets are in
    PREDICATION_AUX, which litpath does not read), so the finest place where the two
    sources can be matched is (paper, sentence, concept). There:

    * the mentions are the ENTITY rows of the concept in that sentence, if any;
    * else, if the concept is an argument of any predication of the sentence, 1 -- however
      many predications name it, as nothing shows they name different occurrences.

    So ``both`` = ENTITY mentions + (paper, sentence, concept) argument keys with no ENTITY
    row, never more, and each count is at least that of ``entities``. The merge counts the
    argument keys (``predication_argument_mentions``), those an ENTITY row already covers
    (``..._covered_by_entities``) and those added (``..._added``), plus the argument slots
    ``predications`` would have counted (``predication_argument_slots``).

    The join needs both sources at once; it is done here because the ingest reads one file
    per job. Deletions and DOI remapping (rules 1-2) are applied per file first.
    """
    key = _SENTENCE_KEY
    entities = (
        (entities if entities is not None else _SENTENCE_MENTIONS.empty_table())
        .group_by(key)
        .aggregate([("count", "sum")])
        .rename_columns([*key, "count"])
    )
    arguments = (
        (arguments if arguments is not None else _SENTENCE_MENTIONS.remove(3).empty_table())
        .group_by(key)
        .aggregate([])
    )
    added = arguments.join(entities.select(key), key, join_type="left anti")
    inputs.bump("entity_mentions_counted", pc.sum(entities.column("count")).as_py() or 0)
    inputs.bump("predication_argument_mentions", arguments.num_rows)
    inputs.bump("predication_argument_mentions_covered_by_entities", arguments.num_rows - added.num_rows)
    inputs.bump("predication_argument_mentions_added", added.num_rows)
    ones = pa.array(np.ones(added.num_rows, np.int64))
    return [
        entities.select(["doc_id", "cui", "count"]),
        added.select(["doc_id", "cui"]).append_column("count", ones),
    ]


def _sum_mentions(parts: list[pa.Table]) -> pa.Table:
    """Counts summed per (doc_id, cui), sorted by (doc_id, cui).

    Strings are hashed once per distinct value of each row group (into codes that follow
    their sort order); grouping and sorting then run on one int64 key per row.
    """
    doc_chunks = [chunk for part in parts for chunk in part.column("doc_id").chunks]
    cui_chunks = [chunk for part in parts for chunk in part.column("cui").chunks]
    count = np.concatenate(
        [np.zeros(0, np.int64)] + [part.column("count").to_numpy().astype(np.int64) for part in parts]
    )
    with ThreadPoolExecutor(max_workers=2) as pool:  # both release the GIL for most of their work
        coding_cuis = pool.submit(string_codes, cui_chunks)
        doc, docs = string_codes(doc_chunks)
        cui, cuis = coding_cuis.result()
    width = max(len(cuis), 1)
    key = doc * width
    key += cui
    del doc, cui
    key, summed = sum_by_key(key, count)
    doc, cui = split_keys(key, width)
    del key
    return pa.table(
        {"doc_id": docs.take(pa.array(doc)), "cui": cuis.take(pa.array(cui)), "count": pa.array(summed, pa.int64())},
        schema=_MENTION_SUMS,
    )


def _concat_as(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """The parts' columns of ``schema``, cast to it and stacked (an empty table if none)."""
    return pa.concat_tables(
        [part.select(schema.names).cast(schema) for part in parts] or [schema.empty_table()]
    )
