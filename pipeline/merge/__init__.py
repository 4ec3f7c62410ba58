"""Combine per-file ingest outputs into the build-level tables.

``file_dirs`` are the ``out_dir`` s of :func:`pipeline.ingest.run.ingest_file`, in input
order (baseline files, then update files in file-name order; the kinds may be mixed).
The rules, applied in this order:

1. **Deletions** (PubMed ``DeleteCitation``) in file order: a deletion announced by file *k*
   removes every row about that ``doc_id`` that came from files ``0..k`` (documents,
   mentions, predications, and citations it makes); a record in a later file re-adds the
   paper. A citation *to* a paper that stays deleted is dropped too. Every removal is counted.
2. **DOI match**: a ``CORD:`` paper whose DOI (case-insensitive) equals the DOI of a
   ``PMID:`` paper becomes that paper (smallest PMID if several share the DOI); its
   mentions and citations are remapped.
3. **Documents** deduplicated per ``doc_id``: each field is taken from the first record that
   has it, records ranked pubmed > cord19 > semmeddb and, within a source, later file first
   (an update file's version of a record wins). ``source``/``source_file`` are those of the
   top-ranked record.
4. **Mentions** summed per (doc_id, cui): the counts behind the concept-abstract weight, "the
   number of times a concept, c, appears in an abstract, p, divided by the total number of
   concepts that appear in p" (COAST, SC22, appendix XI-E). ``config["mention_source"]``
   picks what one mention is (see :func:`mention_source_for`; the choice and its reason go
   to ``counts.json``):

   * ``"entities"`` -- one SemMedDB ENTITY row, i.e. one concept occurrence SemRep found in
     the text of a sentence, placed in its paper through SENTENCE (an entity whose sentence
     is in no SENTENCE file is quarantined here). This is the paper's definition.
   * ``"predications"`` -- one predication argument slot: each predication counts one
     mention of each distinct subject and each distinct object (see
     :mod:`pipeline.ingest.semmeddb`). A concept that is an argument of three predications
     of one sentence counts 3; a concept in the text but in no predication counts 0.
   * ``"both"`` -- the union of the textual mentions the two sources attest, per (paper,
     sentence, concept); no mention is counted twice (:meth:`_Merger.mention_union`).
   * ``"auto"`` (default) -- ``"entities"`` when ENTITY and SENTENCE files are among the
     inputs, else ``"predications"``.
5. **Predications** streamed through (filtered and remapped), **citations** deduplicated,
   **concepts** deduplicated: first non-null name in file order, union of semantic types.

Memory follows ``resources.memory_gib``: the document records and the mentions are merged in
memory when they fit it, else in doc_id-range partitions spilled to disk (the same tables,
bit for bit); likewise ENTITY mentions are joined to their papers through SENTENCE in memory,
else in sentence_id-range partitions (:meth:`_Merger._placed_entities`); the citation pairs are
deduplicated in memory, else in citing-range partitions (:meth:`_Merger.write_citations`).
Concepts are held whole (tens of thousands of rows); predications are streamed batch by batch.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.config import check_setting, schema_of
from pipeline.ingest.base import DICTIONARY_COLUMNS, IngestError
from pipeline.merge.partitions import (
    RangePartitions,
    sample_step,
    sampled_splits,
    strided_sample,
    table_batches,
)
from pipeline.runtime.columnar import split_keys, sum_by_key
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import Progress
from pipeline.runtime.resources import SpillFolder, memory_budget_bytes, spill_parent, sweep_stale_spills

SOURCE_RANK = {"pubmed": 0, "cord19": 1, "semmeddb": 2}
# The values of ingest.mention_source, as the config schema defines them.
MENTION_SOURCES = tuple(schema_of("ingest.mention_source")["enum"])
_MENTION_SUMS = pa.schema([("doc_id", pa.string()), ("cui", pa.string()), ("count", pa.int64())])
_SENTENCE_MENTIONS = pa.schema(
    [("doc_id", pa.string()), ("sentence_id", pa.int64()), ("cui", pa.string()), ("count", pa.int64())]
)
_CITATION_PAIRS = pa.schema([("citing", pa.string()), ("cited", pa.string())])


_MENTIONS_COMPACT_ROWS = 1 << 24
# Peak bytes per mention row of the in-memory sum (strings, codes, sort, output): beyond the
# memory budget the merge sums the mentions in doc_id-range partitions on disk instead.
MERGE_BYTES_PER_MENTION = 120
# The per-file tables whose rows the mentions step counts (and samples for its doc_id ranges).
_MENTION_TABLES = ("mentions", "entity_mentions", "predications")
# Peak bytes per byte of document records (their decoded Parquet size) when pandas merges them:
# 15.2 GiB for the 1.95 GiB of the 30M-predication corpus (17M records with titles and abstracts).
MERGE_BYTES_PER_DOCUMENT_BYTE = 8
# Peak bytes per SENTENCE row and per ENTITY row of the in-memory ENTITY-SENTENCE join (the
# sentence_id -> doc_id table and its hash aggregation; an ENTITY row read, joined, filtered and
# cleaned): at 10M predications the join of 20.1M ENTITY rows to 7.4M sentences held 3.3 GiB.
# Beyond the memory budget the join runs in sentence_id-range partitions on disk instead.
MERGE_BYTES_PER_SENTENCE = 100
MERGE_BYTES_PER_ENTITY = 160
# Peak bytes per citation row of the in-memory dedup and sort (the running distinct pairs, each
# file's pairs beside them, the sort): at 10M predications 9.0M pairs held 1.43 GiB. Beyond the
# memory budget the pairs are deduplicated in citing-range partitions on disk instead.
MERGE_BYTES_PER_CITATION = 170
# The columns of SENTENCE the join reads, in one schema for every SENTENCE file.
_SENTENCE_DOCS = pa.schema([("sentence_id", pa.int64()), ("doc_id", pa.string())])


_CODES = pa.dictionary(pa.int32(), pa.string())


def _dictionary_column(chunks: list[pa.Array]) -> pa.ChunkedArray:
    """A column's chunks as dictionary chunks sharing one dictionary.

    Chunks read from Parquet with ``read_dictionary`` already are dictionaries (one per row
    group): unifying them hashes each row group's distinct values, not every row. Plain
    string chunks (entity mentions, remapped doc ids) are encoded here.
    """
    chunks = [
        chunk.cast(_CODES)
        if pa.types.is_dictionary(chunk.type)
        else pc.dictionary_encode(chunk.cast(pa.string()))
        for chunk in chunks
    ]
    return pa.table({"c": pa.chunked_array(chunks, _CODES)}).unify_dictionaries().column("c")


def _sorted_codes(chunks: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """(code per row, distinct values) of a column's chunks: codes number the distinct values
    in sorted order."""
    unified = _dictionary_column(chunks)
    if not unified.num_chunks:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    dictionary = unified.chunk(0).dictionary
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    indices = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in unified.chunks])
    return rank[indices], dictionary.take(pa.array(order))


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
        coding_cuis = pool.submit(_sorted_codes, cui_chunks)
        doc, docs = _sorted_codes(doc_chunks)
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


def mention_source_for(requested: str, file_counts: list[dict[str, Any]]) -> tuple[str, str]:
    """(the mention source used, why) for a requested ``mention_source`` and the inputs' counts.

    ``auto`` takes ENTITY rows -- concept occurrences in the text, the paper's "number of
    times a concept, c, appears in an abstract" -- whenever ENTITY files are among the inputs;
    they need SENTENCE files to find their papers, so without any it falls back to
    predication arguments rather than quarantine every entity.
    """
    check_setting("ingest.mention_source", requested)
    if requested != "auto":
        return requested, f"mention_source: {requested} set in the configuration"
    kinds = Counter(counts.get("kind") for counts in file_counts)
    entity_files, sentence_files = kinds["semmeddb_entity"], kinds["semmeddb_sentence"]
    if entity_files and sentence_files:
        return "entities", (
            f"auto: {entity_files} SemMedDB ENTITY file(s) and {sentence_files} SENTENCE file(s) "
            "among the inputs, so a mention is an ENTITY row (a concept occurrence in the text)"
        )
    if entity_files:
        return "predications", (
            f"auto: {entity_files} SemMedDB ENTITY file(s) but no SENTENCE file to place their "
            "sentences in papers, so a mention is a predication argument"
        )
    return (
        "predications",
        "auto: no SemMedDB ENTITY file among the inputs, so a mention is a predication argument",
    )


def _concat_as(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """The parts' columns of ``schema``, cast to it and stacked (an empty table if none)."""
    return pa.concat_tables(
        [part.select(schema.names).cast(schema) for part in parts] or [schema.empty_table()]
    )


def _read(file_dir: Path, name: str, dictionary_columns: tuple[str, ...] = ()) -> pa.Table | None:
    path = TableFolder(file_dir).table(name)
    return pq.read_table(path, read_dictionary=list(dictionary_columns) or None) if path.exists() else None


def _remap(column: pa.ChunkedArray | pa.Array, mapping: dict[str, str]) -> pa.Array:
    if not mapping:
        return column
    keys = pa.array(list(mapping.keys()), pa.string())
    values = pa.array(list(mapping.values()), pa.string())
    position = pc.index_in(column, value_set=keys)
    return pc.if_else(pc.is_null(position), column, pc.take(values, position))


def _uncompressed_bytes(path: Path) -> int:
    """The size of a Parquet file's data once decoded (from its metadata; 0 when absent)."""
    if not path.exists():
        return 0
    metadata = pq.ParquetFile(path).metadata
    return sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))


def _merged_documents(records: pa.Table) -> pa.Table:
    """One row per doc_id from its records (``_file`` = the file's position): per column the
    first value that is not null, taking records by source rank (PubMed, CORD-19, SemMedDB)
    and then the latest file first; ``source`` and ``source_file`` from the top record itself;
    ``pmid`` from the doc_id. Sorted by doc_id."""
    import pandas as pd  # here, not at the top: `litpath ingest` imports this module too

    if records.num_rows == 0:
        return tables.DOCUMENTS.empty_table()
    frame = records.to_pandas()
    frame["_rank"] = frame["source"].map(SOURCE_RANK).fillna(len(SOURCE_RANK))
    frame = frame.sort_values(["doc_id", "_rank", "_file"], ascending=[True, True, False], kind="stable")
    merged = frame.groupby("doc_id", sort=True, as_index=False).first()
    # first() skips nulls per column; source/source_file must come from the top record
    top = frame.drop_duplicates("doc_id").set_index("doc_id")
    merged["source"] = merged["doc_id"].map(top["source"])
    merged["source_file"] = merged["doc_id"].map(top["source_file"])
    merged["pmid"] = pd.array([None] * len(merged), dtype="Int64")  # set from doc_id below
    merged = merged.astype({"year": "Int32"})
    table = pa.Table.from_pandas(merged[tables.DOCUMENTS.names], schema=tables.DOCUMENTS, preserve_index=False)
    doc_id = table.column("doc_id")
    pubmed = pc.starts_with(doc_id, "PMID:")
    digits = pc.if_else(pubmed, pc.utf8_slice_codeunits(doc_id, 5), pa.scalar(None, pa.string()))
    return table.set_column(1, "pmid", pc.cast(digits, pa.int64()))


def _sentence_doc(sentences: list[pa.Table]) -> pa.Table | None:
    """sentence_id -> doc_id from SENTENCE rows (the smallest doc_id if they disagree); None if none."""
    if not sentences:
        return None
    return (
        pa.concat_tables([part.select(_SENTENCE_DOCS.names).cast(_SENTENCE_DOCS) for part in sentences])
        .group_by("sentence_id")
        .aggregate([("doc_id", "min")])
        .rename_columns(["sentence_id", "doc_id"])
    )


def _distinct_citations(pairs: pa.Table) -> pa.Table:
    """The distinct (citing, cited) pairs, sorted by citing, then cited, in the citations schema.

    Sorted first, then each pair kept where it differs from the one before: half the memory of
    a hash group_by on the two string columns (79 against 166 bytes per pair on 6M pairs).
    """
    pairs = pairs.select(["citing", "cited"])
    pairs = pairs.take(pc.sort_indices(pairs, [("citing", "ascending"), ("cited", "ascending")]))
    if pairs.num_rows > 1:
        repeated = None
        for column in pairs.columns:
            now, before = column[1:], column[:-1]
            both_null = pc.and_(pc.is_null(now), pc.is_null(before))
            same = pc.coalesce(pc.equal(now, before), both_null)  # group_by's equality: null == null
            repeated = same if repeated is None else pc.and_(repeated, same)
        keep = np.ones(pairs.num_rows, dtype=bool)
        keep[1:] = ~repeated.to_numpy(zero_copy_only=False)
        pairs = pairs.filter(pa.array(keep))
    return pairs.cast(tables.CITATIONS)


def _deleted_mask(column: pa.ChunkedArray | pa.Array, doomed: pa.Array) -> pa.Array:
    """True where the row's doc_id is among ``doomed`` (:meth:`_Merger._doomed`)."""
    if not len(doomed):
        return pa.array(np.zeros(len(column), dtype=bool))
    return pc.fill_null(pc.is_in(column, value_set=doomed), False)


class _Merger:
    def __init__(self, file_dirs: list[Path], out_dir: Path, config: dict[str, Any]) -> None:
        self.file_dirs = [Path(d) for d in file_dirs]
        self.out_dir = Path(out_dir)
        requested = config.get("mention_source", schema_of("ingest.mention_source")["default"])
        self.mention_source_requested = check_setting("ingest.mention_source", requested)
        # what "auto" means depends on the inputs: settled by load_counts
        self.mention_source = self.mention_source_reason = ""
        self.stats: dict[str, int] = {}
        self.file_counts: list[dict[str, Any]] = []
        self.last_deleted: dict[str, int] = {}
        self._doomed_by_file: dict[int, pa.Array] = {}
        self.remap: dict[str, str] = {}
        self.final_deleted: set[str] = set()
        self.merge_quarantine: list[dict[str, Any]] = []
        self.budget_bytes = memory_budget_bytes(config)
        self.spill_parent = spill_parent(config, self.out_dir)

    def bump(self, key: str, n: int) -> None:
        self.stats[key] = self.stats.get(key, 0) + int(n)

    def load_counts(self) -> None:
        for file_dir in self.file_dirs:
            counts_path = TableFolder(file_dir).counts
            if not counts_path.exists():
                raise IngestError(f"{file_dir}: no counts.json; the ingest of this file did not finish")
            self.file_counts.append(json.loads(counts_path.read_text()))
        self.mention_source, self.mention_source_reason = mention_source_for(
            self.mention_source_requested, self.file_counts
        )

    def _doomed(self, index: int) -> pa.Array:
        """The doc_ids that file ``index`` or a later one deletes (rule 1), built once per file."""
        doomed = self._doomed_by_file.get(index)
        if doomed is None:
            doomed = pa.array([doc for doc, at in self.last_deleted.items() if at >= index], pa.string())
            self._doomed_by_file[index] = doomed
        return doomed

    def load_deletions(self) -> None:
        for index, file_dir in enumerate(self.file_dirs):
            deletions = _read(file_dir, "deletions")
            if deletions is None:
                continue
            for doc_id in deletions.column("doc_id").to_pylist():
                self.last_deleted[doc_id] = index
            self.bump("deletions_announced", deletions.num_rows)

    def write_documents(self, path: Path) -> int:
        """The documents table (one row per paper, sorted by doc_id) written to ``path``; its rows.

        First the DOI match of CORD-19 papers to PubMed ids (:meth:`_match_dois`, from the key
        columns only); then each paper's records merged (:func:`_merged_documents`). When the
        records would not fit the memory budget (titles and abstracts held by pandas take about
        MERGE_BYTES_PER_DOCUMENT_BYTE times their size in Parquet), they are split by doc_id
        range into partitions on disk and merged one partition at a time, which gives the same
        table in the same order.
        """
        self._match_dois()
        record_bytes = sum(_uncompressed_bytes(TableFolder(d).table("documents")) for d in self.file_dirs)
        partitions = max(1, math.ceil(record_bytes * MERGE_BYTES_PER_DOCUMENT_BYTE / (0.5 * self.budget_bytes)))
        deleted = pa.array(sorted(self.last_deleted), pa.string())
        still_there = np.zeros(len(deleted), dtype=bool)  # deleted by an earlier file, re-added by a later one
        written = 0
        with pq.ParquetWriter(path, tables.DOCUMENTS) as writer:
            if partitions == 1:
                parts = list(self._document_records())
                pieces = [pa.concat_tables(parts)] if parts else []
            else:
                self.bump("document_partitions", partitions)
                pieces = self._partitioned_records(partitions)
            for records in pieces:
                merged = _merged_documents(records)
                self.bump("documents_deduplicated", records.num_rows - merged.num_rows)
                still_there |= pc.is_in(deleted, value_set=merged.column("doc_id")).to_numpy(zero_copy_only=False)
                if merged.num_rows:
                    writer.write_table(merged)
                    written += merged.num_rows
        self.final_deleted = set(deleted.filter(pa.array(~still_there)).to_pylist())
        self.bump("documents_deleted_final", len(self.final_deleted))
        return written

    def _match_dois(self) -> None:
        """``self.remap``: each CORD-19 paper whose DOI a PubMed record also has -> that paper's
        doc_id (the smallest PMID with the DOI); rules 1-2 applied first. Reads the key columns only."""
        pubmed, cord = [], []
        for index, file_dir in enumerate(self.file_dirs):
            path = TableFolder(file_dir).table("documents")
            if not path.exists():
                continue
            docs = pq.read_table(path, columns=["doc_id", "doi", "pmid"])
            doomed = _deleted_mask(docs.column("doc_id"), self._doomed(index))
            self.bump("documents_removed_by_deletion", pc.sum(doomed).as_py() or 0)
            docs = docs.filter(pc.invert(doomed))
            self.bump("document_records", docs.num_rows)
            docs = docs.filter(pc.is_valid(docs.column("doi")))
            pubmed.append(docs.filter(pc.starts_with(docs.column("doc_id"), "PMID:")))
            cord.append(docs.filter(pc.starts_with(docs.column("doc_id"), "CORD:")).select(["doc_id", "doi"]))
        self.remap = {}
        if not pubmed or not cord:
            self.bump("cord_papers_matched_by_doi", 0)
            return
        pubmed_doi = pa.concat_tables(pubmed)
        pubmed_doi = pubmed_doi.take(
            pc.sort_indices(pubmed_doi, [("doi", "ascending", "at_end"), ("pmid", "ascending", "at_end")])
        )
        doi = pubmed_doi.column("doi").combine_chunks()
        first = np.ones(len(doi), dtype=bool)  # the smallest PMID of each DOI
        if len(doi) > 1:
            first[1:] = pc.not_equal(doi[1:], doi[:-1]).to_numpy(zero_copy_only=False)
        dois, targets = doi.filter(pa.array(first)), pubmed_doi.column("doc_id").combine_chunks().filter(pa.array(first))
        for part in cord:  # in file order: a paper listed twice takes its last record's DOI
            position = pc.index_in(part.column("doi"), value_set=dois)
            matched = pc.is_valid(position)
            for doc_id, target in zip(
                part.column("doc_id").filter(matched).to_pylist(),
                pc.take(targets, position.filter(matched)).to_pylist(),
                strict=True,
            ):
                self.remap[doc_id] = target
        self.bump("cord_papers_matched_by_doi", len(self.remap))

    def _document_records(self, streamed: bool = False) -> Iterator[pa.Table]:
        """Every file's document records, rules 1-2 applied, DOI matches remapped, with the
        file's position (``_file``); a file at a time, or when ``streamed`` in parts of
        MERGE_STREAM_ROWS rows at most."""
        for index, file_dir in enumerate(self.file_dirs):
            path = TableFolder(file_dir).table("documents")
            if not path.exists():
                continue
            doomed = self._doomed(index)
            for docs in table_batches(path) if streamed else [pq.ParquetFile(path).read()]:
                if docs.num_rows == 0:
                    continue
                docs = docs.filter(pc.invert(_deleted_mask(docs.column("doc_id"), doomed)))
                docs = docs.select(tables.DOCUMENTS.names).cast(tables.DOCUMENTS)  # one schema for every file
                docs = docs.set_column(0, "doc_id", _remap(docs.column("doc_id"), self.remap))
                yield docs.append_column("_file", pa.array(np.full(docs.num_rows, index, np.int64)))

    def _partitioned_records(self, partitions: int) -> Iterator[pa.Table]:
        """The document records split by doc_id range into ``partitions`` files on disk, then
        read back one range at a time, in doc_id order."""
        with SpillFolder(self.spill_parent, ".merge-spill-") as folder:
            spilled = RangePartitions(folder, self._document_splits(partitions))
            for part in self._document_records(streamed=True):
                spilled.add("documents", part)
            spilled.close()
            for k in range(spilled.k):
                records = spilled.read("documents", k)
                if records is not None:
                    yield records

    def _document_splits(self, partitions: int) -> list[str]:
        """``partitions - 1`` doc_id values (after the DOI matches) splitting the records into
        ranges of similar size in bytes, from a strided sample of every documents file, each
        sampled record weighted by its file's bytes per record (a PubMed record, with its
        abstract, weighs many SemMedDB ones)."""
        values, weights = [], []
        for file_dir in self.file_dirs:
            path = TableFolder(file_dir).table("documents")
            if not path.exists():
                continue
            rows = pq.ParquetFile(path).metadata.num_rows
            per_record = _uncompressed_bytes(path) / max(rows, 1)
            for taken in strided_sample(path, "doc_id"):
                values.append(taken)
                weights.append(np.full(len(taken), sample_step(rows) * per_record))
        if not values:
            return []
        doc_ids = _remap(pa.chunked_array(values, pa.string()).combine_chunks(), self.remap)
        weight = np.concatenate(weights)
        order = pc.sort_indices(doc_ids).to_numpy()
        doc_ids, cumulative = doc_ids.take(pa.array(order)), np.cumsum(weight[order])
        # the first doc_id past each i/partitions of the bytes (a doc_id is never split: ranges
        # are [split_i, split_i+1), so one doc_id's records all fall in one range)
        at = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, partitions) / partitions, side="right")
        splits = sorted(set(doc_ids.take(pa.array(np.minimum(at, len(doc_ids) - 1))).to_pylist()))
        return splits

    def _clean(self, table: pa.Table, index: int, doc_column: str, label: str | None) -> pa.Table:
        """Rules 1-2 on the rows of file ``index``; rows removed are counted under ``label``."""
        if self._untouched(index):
            return table
        doomed = _deleted_mask(table.column(doc_column), self._doomed(index))
        removed = pc.sum(doomed).as_py() or 0
        if removed:
            if label:
                self.bump(f"{label}_removed_by_deletion", removed)
            table = table.filter(pc.invert(doomed))
        if self.remap:
            table = table.set_column(
                table.schema.get_field_index(doc_column),
                doc_column,
                _remap(table.column(doc_column), self.remap),
            )
        return table

    def write_mentions(self, path: Path) -> int:
        """The mentions table (summed per (doc_id, cui), sorted) written to ``path``; its rows.

        When the mention rows would not fit the memory budget, they are split by doc_id range
        into partitions on disk and summed one partition at a time (:class:`~pipeline.merge.partitions.RangePartitions`),
        which gives the same table in the same order. ENTITY rows reach the sum already placed
        in their papers, within the budget too (:meth:`_placed_entities`).
        """
        rows = sum(self._table_rows(name) for name in _MENTION_TABLES)
        partitions = max(1, math.ceil(rows * MERGE_BYTES_PER_MENTION / (0.5 * self.budget_bytes)))
        if partitions == 1:
            table = self._summed(self._mention_parts())
            self.bump("mentions_counted", pc.sum(table.column("count")).as_py() or 0)
            pq.write_table(table, path, use_dictionary=DICTIONARY_COLUMNS["mentions"])
            return table.num_rows
        self.bump("mention_partitions", partitions)
        with SpillFolder(self.spill_parent, ".merge-spill-") as folder:
            spilled = RangePartitions(folder, self._sampled_splits(partitions, "doc_id", _MENTION_TABLES))
            for stream, part in self._mention_stream(streamed=True):
                spilled.add(stream, part)
            spilled.close()
            written = counted = 0
            with pq.ParquetWriter(path, tables.MENTIONS, use_dictionary=DICTIONARY_COLUMNS["mentions"]) as writer:
                for k in range(spilled.k):
                    streams = {name: spilled.read(name, k) for name in spilled.names}
                    if self.mention_source == "both":
                        parts = self._union(streams.get("entities"), streams.get("arguments"))
                    else:
                        parts = [t for t in (streams.get("mentions"),) if t is not None and t.num_rows]
                    table = self._summed(parts)
                    if table.num_rows:
                        writer.write_table(table)
                        written += table.num_rows
                        counted += pc.sum(table.column("count")).as_py() or 0
            self.bump("mentions_counted", counted)
        return written

    def _summed(self, parts: list[pa.Table]) -> pa.Table:
        """The parts' counts summed per (doc_id, cui), sorted (an empty table when none)."""
        return _sum_mentions(parts).cast(tables.MENTIONS) if parts else tables.MENTIONS.empty_table()

    def _mention_parts(self) -> list[pa.Table]:
        """The (doc_id, cui, count) parts of every file, cleaned (rules 1-2), for one sum."""
        if self.mention_source == "both":
            entities, arguments = [], []
            for stream, part in self._mention_stream():
                (entities if stream == "entities" else arguments).append(part)
            return self._union(
                _concat_as(entities, _SENTENCE_MENTIONS) if entities else None,
                _concat_as(arguments, _SENTENCE_MENTIONS.remove(3)) if arguments else None,
            )
        parts: list[pa.Table] = []
        for _, part in self._mention_stream():
            parts.append(part)
            if sum(p.num_rows for p in parts) > _MENTIONS_COMPACT_ROWS and len(parts) > 1:
                parts = [_sum_mentions(parts)]  # keep memory near the output size
        return parts

    def _mention_stream(self, streamed: bool = False) -> Iterator[tuple[str, pa.Table]]:
        """(stream name, cleaned part) of every file: "mentions" parts (doc_id, cui, count), or for
        ``both`` "entities" (doc_id, sentence_id, cui, count) and "arguments" (doc_id,
        sentence_id, cui) parts, each already distinct within its file. The ENTITY parts come
        first (:meth:`_placed_entities`), then the predication parts, in file order.

        When ``streamed``, predication mentions come in parts of MERGE_STREAM_ROWS rows at most,
        so that a file is never held whole (the partitioned merge: a mentions file of a full
        release has hundreds of millions of rows).
        """
        key = ["doc_id", "sentence_id", "cui"]
        if self.mention_source in ("entities", "both"):
            for index, placed in self._placed_entities():
                if self.mention_source == "entities":
                    yield "mentions", self._clean_mentions(placed, index)
                    continue
                placed = self._clean(placed.select([*key, "count"]), index, "doc_id", "entity_mentions")
                placed = placed.group_by(key).aggregate([("count", "sum")]).rename_columns([*key, "count"])
                yield "entities", placed
        for index, file_dir in enumerate(self.file_dirs):
            if self.mention_source == "predications" and streamed:
                path = TableFolder(file_dir).table("mentions")
                for part in table_batches(path, read_dictionary=["doc_id", "cui"]) if path.exists() else ():
                    yield "mentions", self._clean_mentions(part, index)
            elif self.mention_source == "predications":
                part = _read(file_dir, "mentions", ("doc_id", "cui"))
                if part is not None:
                    yield "mentions", self._clean_mentions(part, index)
            elif self.mention_source == "both":
                slot_counts = _read(file_dir, "mentions", ("doc_id", "cui"))
                if slot_counts is not None:  # not counted as removed: the same rows are, as arguments
                    slot_counts = self._clean_mentions(slot_counts, index, label=None)
                    self.bump("predication_argument_slots", pc.sum(slot_counts.column("count")).as_py() or 0)
                arguments = self._argument_keys(index, file_dir)
                if arguments is not None:
                    yield "arguments", arguments

    def _placed_entities(self) -> Iterator[tuple[int, pa.Table]]:
        """(file index, ENTITY rows of that file placed in their papers: sentence_id, cui, count,
        doc_id) for every file with ENTITY rows; rules 1-2 not applied yet. An ENTITY row whose
        sentence is in no SENTENCE file is counted (``entity_mentions_unresolved``) and
        quarantined, one quarantine row per (file, sentence) in sentence_id order.

        In memory when the SENTENCE and ENTITY rows fit half the budget (the sum may hold its
        parts beside them); else in ``entity_join_partitions`` sentence_id ranges on disk. Why sentence_id:
        it is the join key, and an ENTITY row carries nothing else that leads to its paper, so
        the sum's doc_id ranges cannot split ENTITY rows before the join. Routing the SENTENCE
        and the ENTITY rows by the same sentence_id ranges (a batch at a time) puts every ENTITY
        row beside its sentence; each range is then joined alone, holding about 1/K of both
        tables, so the peak follows the budget and not the corpus. (Streaming ENTITY batches
        against a sentence -> doc lookup split the same way would read every lookup range once
        per batch.) The placed rows then go to the sum like any other mention part: the mentions
        table and the counts are those of the in-memory join.
        """
        need = (
            self._table_rows("sentences") * MERGE_BYTES_PER_SENTENCE
            + self._table_rows("entity_mentions") * MERGE_BYTES_PER_ENTITY
        )
        partitions = max(1, math.ceil(need / (0.5 * self.budget_bytes)))
        if partitions > 1:
            self.bump("entity_join_partitions", partitions)
        unresolved: dict[int, list[dict[str, Any]]] = {}
        for sentence_doc, index, entities in self._join_inputs(partitions):
            yield index, self._resolve_entities(entities, sentence_doc, unresolved.setdefault(index, []))
        for index in sorted(unresolved):  # in file order, whatever order the ranges found them in
            self.merge_quarantine.extend(
                {
                    "source_file": self.file_dirs[index].name,
                    "line": 0,
                    "field": "SENTENCE_ID",
                    "reason": f"ENTITY mention(s) of sentence {row['sentence_id']} not found in any SENTENCE file",
                    "raw": str(row["sentence_id"]),
                }
                for row in unresolved[index]
            )

    def _join_inputs(self, partitions: int) -> Iterator[tuple[pa.Table | None, int, pa.Table]]:
        """(sentence_id -> doc_id, file index, ENTITY rows of that file) to join: with one
        partition the whole lookup and each file's rows; else, a sentence_id range at a time, the
        lookup and rows of that range, read back from the range files the SENTENCE and ENTITY
        rows were routed to a batch at a time."""
        if partitions == 1:
            sentence_doc = _sentence_doc(
                [pq.read_table(path, columns=_SENTENCE_DOCS.names) for path in self._paths("sentences")]
            )
            for index, file_dir in enumerate(self.file_dirs):
                entities = _read(file_dir, "entity_mentions")
                if entities is not None and entities.num_rows:
                    yield sentence_doc, index, entities
            return
        with SpillFolder(self.spill_parent, ".merge-spill-") as folder:
            splits = self._sampled_splits(partitions, "sentence_id", ("sentences", "entity_mentions"))
            spilled = RangePartitions(folder, splits, key="sentence_id")
            for path in self._paths("sentences"):
                for part in table_batches(path, _SENTENCE_DOCS.names):
                    spilled.add("sentences", part.select(_SENTENCE_DOCS.names).cast(_SENTENCE_DOCS))
            for index, file_dir in enumerate(self.file_dirs):
                path = TableFolder(file_dir).table("entity_mentions")
                for part in table_batches(path) if path.exists() else ():
                    spilled.add(f"entities-{index:04d}", part)
            spilled.close()
            for k in range(spilled.k):
                sentences = spilled.read("sentences", k)
                sentence_doc = _sentence_doc([sentences] if sentences is not None else [])
                for index in range(len(self.file_dirs)):
                    entities = spilled.read(f"entities-{index:04d}", k)
                    if entities is not None and entities.num_rows:
                        yield sentence_doc, index, entities

    def _table_rows(self, name: str) -> int:
        """Rows of the per-file table ``name`` over every file (from the ingest counts)."""
        return sum(c.get("tables", {}).get(name, 0) for c in self.file_counts)

    def _paths(self, name: str) -> list[Path]:
        """The files' ``name`` tables that exist, in file order."""
        return [path for d in self.file_dirs if (path := TableFolder(d).table(name)).exists()]

    def _sampled_splits(self, partitions: int, key: str, names: tuple[str, ...]) -> list[Any]:
        """``partitions - 1`` values of ``key`` splitting the rows of the files' ``names`` tables
        into ranges of similar size (:func:`~pipeline.merge.partitions.sampled_splits`)."""
        paths = [path for d in self.file_dirs for name in names if (path := TableFolder(d).table(name)).exists()]
        return sampled_splits(paths, partitions, key)

    def _union(self, entities: pa.Table | None, arguments: pa.Table | None) -> list[pa.Table]:
        """``mention_source: both`` on the entity and argument keys of some documents: see
        :meth:`mention_union` for the rule."""
        key = ["doc_id", "sentence_id", "cui"]
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
        self.bump("entity_mentions_counted", pc.sum(entities.column("count")).as_py() or 0)
        self.bump("predication_argument_mentions", arguments.num_rows)
        self.bump("predication_argument_mentions_covered_by_entities", arguments.num_rows - added.num_rows)
        self.bump("predication_argument_mentions_added", added.num_rows)
        ones = pa.array(np.ones(added.num_rows, np.int64))
        return [
            entities.select(["doc_id", "cui", "count"]),
            added.select(["doc_id", "cui"]).append_column("count", ones),
        ]

    def mention_union(self) -> list[pa.Table]:
        """``mention_source: both``: the union of the textual mentions attested by ENTITY rows and
        by predication arguments, as (doc_id, cui, count) parts for :func:`_sum_mentions`.

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
        return self._mention_parts()

    def _argument_keys(self, index: int, file_dir: Path) -> pa.Table | None:
        """Distinct (doc_id, sentence_id, cui) of the predication arguments of one file, cleaned
        by rules 1-2; None if the file has no predications table."""
        path = TableFolder(file_dir).table("predications")
        if not path.exists():
            return None
        key = ["doc_id", "sentence_id", "cui"]
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
        return self._clean(distinct, index, "doc_id", "predication_argument_mentions")

    def _clean_mentions(self, part: pa.Table, index: int, label: str | None = "mentions") -> pa.Table:
        """doc_id, cui (dictionary or plain strings: _sum_mentions takes both) and an int64 count."""
        part = part.select(["doc_id", "cui", "count"])
        if not self._untouched(index):  # deletions and remapping work on plain strings
            part = part.set_column(0, "doc_id", part.column("doc_id").cast(pa.string()))
        part = self._clean(part, index, "doc_id", label)
        return part.set_column(2, "count", part.column("count").cast(pa.int64()))

    def _resolve_entities(
        self, entities: pa.Table, sentence_doc: pa.Table | None, unresolved: list[dict[str, Any]]
    ) -> pa.Table:
        """The ENTITY rows whose sentence ``sentence_doc`` places in a paper, with its doc_id; the
        others counted, and (sentence_id, count) per sentence added to ``unresolved``."""
        if sentence_doc is None:
            sentence_doc = _SENTENCE_DOCS.empty_table()
        joined = entities.join(sentence_doc, "sentence_id", join_type="left outer")
        missing = joined.filter(pc.is_null(joined.column("doc_id")))
        if missing.num_rows:
            self.bump("entity_mentions_unresolved", missing.num_rows)
            per_sentence = missing.group_by("sentence_id").aggregate([("count", "sum")])
            unresolved.extend(per_sentence.sort_by("sentence_id").to_pylist())
        return joined.filter(pc.is_valid(joined.column("doc_id")))

    def _untouched(self, index: int) -> bool:
        """True when rules 1-2 change nothing in the tables of file ``index``."""
        return not self.remap and all(at < index for at in self.last_deleted.values())

    def predications(self, path: Path) -> int:
        sources = [
            (index, TableFolder(file_dir).table("predications"))
            for index, file_dir in enumerate(self.file_dirs)
            if (TableFolder(file_dir).table("predications")).exists()
        ]
        if len(sources) == 1 and self._untouched(sources[0][0]):
            source = sources[0][1]
            if pq.read_schema(source).equals(tables.PREDICATIONS, check_metadata=False):
                # the usual build: one SemMedDB dump, nothing deleted -- the file is the table
                shutil.copyfile(source, path)
                return pq.ParquetFile(path).metadata.num_rows
        written = 0
        with pq.ParquetWriter(path, tables.PREDICATIONS) as writer:
            for index, source in sources:
                for batch in pq.ParquetFile(source).iter_batches(batch_size=200_000):
                    table = pa.Table.from_batches([batch])
                    if not self._untouched(index):
                        table = self._clean(table, index, "doc_id", "predications")
                    writer.write_table(table.cast(tables.PREDICATIONS))
                    written += table.num_rows
        return written

    def write_citations(self, path: Path) -> int:
        """The citations table (distinct (citing, cited) pairs, sorted) written to ``path``; its rows.

        Each file's pairs are cleaned (rules 1-2 on the citing paper, the cited one remapped,
        citations to papers that stay deleted dropped), then deduplicated and sorted. In memory
        when the pairs fit half the budget; else the cleaned pairs are routed a batch at a time
        into ``citation_partitions`` citing-range files on disk (:class:`~pipeline.merge.partitions.RangePartitions`), each
        sorted and deduplicated alone (:func:`_distinct_citations`) and appended in range order:
        both copies of a duplicate have one citing value, so one range, and the ranges follow
        the sort, so the table and the counts are those of the in-memory merge. (The Open
        Citation Collection has hundreds of millions of pairs.)
        """
        rows = self._table_rows("citations")
        partitions = max(1, math.ceil(rows * MERGE_BYTES_PER_CITATION / (0.5 * self.budget_bytes)))
        if partitions == 1:
            total: pa.Table | None = None
            for part in self._citation_parts():  # distinct after each file: memory near the output's
                total = part if total is None else pa.concat_tables([total, part])
                total = _distinct_citations(total).cast(_CITATION_PAIRS)
            if total is None:
                pq.write_table(tables.CITATIONS.empty_table(), path)
                return 0
            table = total.cast(tables.CITATIONS)
            self.bump("citations_deduplicated", self.stats.get("citation_records", 0) - table.num_rows)
            pq.write_table(table, path)
            return table.num_rows
        self.bump("citation_partitions", partitions)
        written, seen = 0, False
        with SpillFolder(self.spill_parent, ".merge-spill-") as folder:
            splits = self._sampled_splits(partitions, "citing", ("citations",))
            spilled = RangePartitions(folder, splits, key="citing")
            for part in self._citation_parts(streamed=True):
                spilled.add("citations", part)
                seen = True
            spilled.close()
            with pq.ParquetWriter(path, tables.CITATIONS) as writer:
                for k in range(spilled.k):
                    pairs = spilled.read("citations", k)
                    if pairs is None or not pairs.num_rows:
                        continue
                    table = _distinct_citations(pairs)
                    writer.write_table(table)
                    written += table.num_rows
        if seen:
            self.bump("citations_deduplicated", self.stats.get("citation_records", 0) - written)
        return written

    def _citation_parts(self, streamed: bool = False) -> Iterator[pa.Table]:
        """Every file's (citing, cited) pairs in file order, cleaned and counted: rules 1-2 on the
        citing paper, the cited paper remapped by DOI match, citations to papers deleted for good
        dropped. A file at a time, or when ``streamed`` in parts of MERGE_STREAM_ROWS rows at most
        (a file of the Open Citation Collection is never held whole)."""
        doomed_targets = pa.array(sorted(self.final_deleted), pa.string())
        for index, file_dir in enumerate(self.file_dirs):
            path = TableFolder(file_dir).table("citations")
            if not path.exists():
                continue
            for part in table_batches(path) if streamed else [pq.read_table(path)]:
                if part.num_rows == 0:
                    continue
                part = self._clean(part, index, "citing", "citations").cast(_CITATION_PAIRS)
                if self.remap:
                    part = part.set_column(1, "cited", _remap(part.column("cited"), self.remap))
                if len(doomed_targets):
                    to_deleted = _deleted_mask(part.column("cited"), doomed_targets)
                    self.bump("citations_to_deleted_removed", pc.sum(to_deleted).as_py() or 0)
                    part = part.filter(pc.invert(to_deleted))
                self.bump("citation_records", part.num_rows)
                yield part

    def concepts(self) -> pa.Table:
        by_cui: dict[str, tuple[str | None, set[str]]] = {}
        for file_dir in self.file_dirs:
            part = _read(file_dir, "concepts")
            if part is None:
                continue
            for cui, name, semtypes in zip(
                *(part.column(c).to_pylist() for c in ("cui", "name", "semtypes")), strict=True
            ):
                known = by_cui.get(cui)
                if known is None:
                    by_cui[cui] = (name, set(semtypes or ()))
                else:
                    known[1].update(semtypes or ())
                    if known[0] is None and name:
                        by_cui[cui] = (name, known[1])
        cuis = sorted(by_cui)
        return pa.table(
            {
                "cui": cuis,
                "name": [by_cui[c][0] for c in cuis],
                "semtypes": [sorted(by_cui[c][1]) for c in cuis],
            },
            schema=tables.CONCEPTS,
        )

    def quarantine(self) -> pa.Table:
        parts = [
            t.cast(tables.QUARANTINE) for d in self.file_dirs if (t := _read(d, "quarantine")) is not None
        ]
        if self.merge_quarantine:
            parts.append(pa.Table.from_pylist(self.merge_quarantine, schema=tables.QUARANTINE))
        return pa.concat_tables(parts) if parts else tables.QUARANTINE.empty_table()


_STAGE_TABLES = {
    "documents": ("documents",),
    "mentions": ("mentions", "entity_mentions"),
    "citations": ("citations",),
    "concepts": ("concepts",),
    "predications": ("predications",),
}


def merge_ingested(
    file_dirs: list[Path], out_dir: Path, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Merge per-file ingest outputs (in input order) into build-level tables in ``out_dir``.

    Writes documents, mentions, predications, citations, concepts and quarantine Parquet
    files plus ``counts.json``; returns that counts dictionary.
    """
    started = time.perf_counter()
    merger = _Merger(file_dirs, out_dir, config or {})
    out_dir = merger.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    sweep_stale_spills(merger.spill_parent)  # left by a merge that was killed
    merger.load_counts()
    merger.load_deletions()
    # Progress: the rows each stage reads, from the per-file counts (ETA at stage granularity).
    stage_rows = {
        stage: sum(sum(c.get("tables", {}).get(t, 0) for t in tables) for c in merger.file_counts)
        for stage, tables in _STAGE_TABLES.items()
    }
    progress = Progress("litpath merge", sum(stage_rows.values()), "rows")
    written: dict[str, int] = {}
    progress.stage("documents")
    written["documents"] = merger.write_documents(TableFolder(out_dir).table("documents"))
    progress.advance(stage_rows["documents"])
    progress.stage("mentions")
    written["mentions"] = merger.write_mentions(TableFolder(out_dir).table("mentions"))
    progress.advance(stage_rows["mentions"])
    progress.stage("citations")
    written["citations"] = merger.write_citations(TableFolder(out_dir).table("citations"))
    progress.advance(stage_rows["citations"])
    progress.stage("concepts")
    concepts = merger.concepts()
    pq.write_table(concepts, TableFolder(out_dir).table("concepts"))
    written["concepts"] = concepts.num_rows
    progress.advance(stage_rows["concepts"])
    progress.stage("predications")
    written["predications"] = merger.predications(TableFolder(out_dir).table("predications"))
    progress.advance(stage_rows["predications"])
    progress.finish(", ".join(f"{n:,} {name}" for name, n in written.items()))
    quarantine = merger.quarantine()
    pq.write_table(quarantine, TableFolder(out_dir).table("quarantine"))
    written["quarantine"] = quarantine.num_rows

    totals = {
        key: sum(c[key] for c in merger.file_counts)
        for key in ("rows_read", "rows_accepted", "rows_quarantined")
    }
    _check_rows_invariant(merger.file_dirs, merger.file_counts)
    counts = {
        "files": merger.file_counts,
        **totals,
        "merge": dict(sorted(merger.stats.items())),
        "merge_quarantined": len(merger.merge_quarantine),
        "mention_source": merger.mention_source,
        "mention_source_requested": merger.mention_source_requested,
        "mention_source_reason": merger.mention_source_reason,
        "tables": written,
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_atomically(TableFolder(out_dir).counts, json.dumps(counts, indent=2) + "\n")
    return counts


def _check_rows_invariant(file_dirs: list[Path], file_counts: list[dict[str, Any]]) -> None:
    """Every file's rows read = accepted + quarantined, checked always (``assert`` is gone under
    ``python -O``): IngestError naming the file whose counts break it. The ingest of each file
    checks the same before writing its counts.json, so a break means that file was changed since
    or written by something else."""
    for file_dir, counts in zip(file_dirs, file_counts, strict=True):
        read, accepted, quarantined = (counts[k] for k in ("rows_read", "rows_accepted", "rows_quarantined"))
        if read != accepted + quarantined:
            raise IngestError(
                f"{TableFolder(file_dir).counts}: rows read {read:,} != accepted {accepted:,} + quarantined "
                f"{quarantined:,}; ingest {counts.get('source_file', 'this file')} again"
            )
