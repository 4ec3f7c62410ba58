"""Rules 1-3 of the merge (:mod:`pipeline.merge`): deletions, the DOI match, and one document
per paper.

:class:`PaperIds` holds what rules 1-2 decide -- which papers each file's rows lose to a later
deletion, which doc_id a CORD-19 paper becomes -- and applies it to the rows of every table
(:meth:`PaperIds.clean`). :func:`write_documents` merges each paper's records (rule 3), in
memory or, beyond the memory budget, in doc_id ranges on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.merge.inputs import MergeInputs, StepReads
from pipeline.merge.partitions import RangePartitions, sample_step, strided_sample, table_batches
from pipeline.runtime.columnar import string_codes

SOURCE_RANK = {"pubmed": 0, "cord19": 1, "semmeddb": 2}
# Peak bytes per byte of document records (their decoded Parquet size) when the merge held them in
# pandas: 15.2 GiB for the 1.95 GiB of the 30M-predication corpus (17M records with titles and
# abstracts). The columnar merge (merged_documents) holds less -- the whole 30M merge peaked at
# 4.4 GiB with it, 4 partitions -- but has not been re-fitted, so this stays as an upper bound.
MERGE_BYTES_PER_DOCUMENT_BYTE = 8
# The share of the documents step that reads every file's records (with the DOI match before it,
# when the step makes it), in memory or spilling them into doc_id ranges beyond the budget; the
# rest merges them, a range at a time. Measured at 10M calibrated predications, the merge's steps
# one after another (AMD EPYC): in memory 3.4 s of 10.2; in 2 ranges 8.0 of 15.3, in 4 ranges
# about 9.2 of 15.4 (the spill is written, then read back range by range).
DOCUMENTS_READ_SHARE = {"in memory": 0.33, "in ranges": 0.55}


class DocIdMap(dict):
    """The DOI match's doc_id -> doc_id mapping (:meth:`PaperIds.match_dois`), read-only, with
    its keys and values as Arrow arrays and the range of its keys, built once.

    The merge remaps every file's rows (a few hundred PubMed files, the batches of the large
    tables) through this mapping. Built from the dict on each call, the lookup hashed all the
    keys (every CORD-19 paper matched, 286k at 30M predications) once per file, a cost of files x
    matches that grows with the square of the corpus; kept here, a file whose ids all fall
    outside the keys' range (every PubMed and SemMedDB file: "PMID:" sorts after "CORD:") is
    passed through without a lookup."""

    def __init__(self, mapping: dict[str, str] | None = None) -> None:
        super().__init__(mapping or {})
        self.keys_array = pa.array(list(self.keys()), pa.string())
        self.values_array = pa.array(list(self.values()), pa.string())
        self.smallest_key = min(self.keys(), default=None)
        self.largest_key = max(self.keys(), default=None)

    def __reduce__(self) -> tuple[type, tuple[dict[str, str]]]:  # copy and pickle build a new one
        return DocIdMap, (dict(self),)

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a DocIdMap is read-only (its key arrays are built once); make a new one")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _read_only  # type: ignore[assignment]


DOI_MATCHES = pa.schema([("doc_id", pa.string()), ("target", pa.string())])


def write_doi_matches(remap: dict[str, str], path: Path) -> int:
    """The DOI match a merge used (CORD-19 doc_id -> PubMed doc_id), as a table beside its tables
    (:attr:`pipeline.builds.layout.TableFolder.doi_matches`); its rows. A merge on top of this
    build reads it back instead of matching the earlier files again (``Delta.refusal``)."""
    table = pa.table({"doc_id": list(remap.keys()), "target": list(remap.values())}, schema=DOI_MATCHES)
    table = table.sort_by("doc_id")  # one order whichever files the match read, and in which order
    pq.write_table(table, path)
    return table.num_rows


def read_doi_matches(path: Path) -> DocIdMap | None:
    """The DOI match :func:`write_doi_matches` kept, or None where there is none to trust (a build
    of an older litpath, or a file of another shape): the caller matches again."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid):
        return None
    if (
        not table.schema.equals(DOI_MATCHES)
        or table.column("doc_id").null_count
        or table.column("target").null_count
    ):
        return None
    return DocIdMap(
        dict(zip(table.column("doc_id").to_pylist(), table.column("target").to_pylist(), strict=True))
    )


def remapped(column: pa.ChunkedArray | pa.Array, mapping: dict[str, str]) -> pa.ChunkedArray | pa.Array:
    """``column`` with each value that is a key of ``mapping`` replaced by its value; ``column``
    itself when none of its values can be a key (a :class:`DocIdMap` says so from its keys' range
    without hashing them)."""
    if not mapping:
        return column
    if not isinstance(mapping, DocIdMap):
        mapping = DocIdMap(mapping)
    if not isinstance(column.type, pa.DictionaryType):
        bounds = pc.min_max(column)
        smallest, largest = bounds["min"].as_py(), bounds["max"].as_py()
        if smallest is None or largest < mapping.smallest_key or smallest > mapping.largest_key:
            return column  # all null, or every value outside the keys' range: no value is a key
    position = pc.index_in(column, value_set=mapping.keys_array)
    return pc.if_else(pc.is_null(position), column, pc.take(mapping.values_array, position))


def deleted_mask(column: pa.ChunkedArray | pa.Array, doomed: pa.Array) -> pa.Array:
    """True where the row's doc_id is among ``doomed`` (:meth:`PaperIds.doomed`)."""
    if not len(doomed):
        return pa.array(np.zeros(len(column), dtype=bool))
    return pc.fill_null(pc.is_in(column, value_set=doomed), False)


def found_in(papers: pa.Array, column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """True where the paper of ``papers`` (a few thousand deleted ones) is a value of ``column``
    (a table's doc_ids, millions). The small side is hashed: a lookup of ``papers`` in
    ``column`` hashed every doc_id of the table (0.9 s for 3M papers, twice in a 10M rerun's
    merge; 0.08 s this way)."""
    if isinstance(column.type, pa.DictionaryType):
        column = column.cast(pa.string())
    present = pc.unique(column.filter(deleted_mask(column, papers)))
    return pc.fill_null(pc.is_in(papers, value_set=present), False)


class PaperIds:
    """Rules 1-2: the deletions announced by each file (:meth:`load_deletions`) and the CORD-19
    papers the DOI match makes PubMed papers (:meth:`match_dois`), applied to the rows of a file
    by :meth:`clean`. ``deleted_for_good`` (the papers no later record re-adds) is settled by
    :func:`write_documents`."""

    def __init__(self, inputs: MergeInputs) -> None:
        self.inputs = inputs
        self.last_deleted: dict[str, int] = {}  # doc_id -> the last file that deletes it
        self._doomed_by_file: dict[int, pa.Array] = {}
        self.remap: dict[str, str] = DocIdMap()
        self.dois_matched = False  # match_dois has run: the remap is settled
        self.deleted_for_good: set[str] = set()

    def load_deletions(self) -> None:
        for index, file_dir in enumerate(self.inputs.file_dirs):
            deletions = self.inputs.read(file_dir, "deletions")
            if deletions is None:
                continue
            for doc_id in deletions.column("doc_id").to_pylist():
                self.last_deleted[doc_id] = index
            self.inputs.bump("deletions_announced", deletions.num_rows)

    def doomed(self, index: int) -> pa.Array:
        """The doc_ids that file ``index`` or a later one deletes (rule 1), built once per file."""
        doomed = self._doomed_by_file.get(index)
        if doomed is None:
            doomed = pa.array([doc for doc, at in self.last_deleted.items() if at >= index], pa.string())
            self._doomed_by_file[index] = doomed
        return doomed

    def untouched(self, index: int) -> bool:
        """True when rules 1-2 change nothing in the tables of file ``index``."""
        return not self.remap and all(at < index for at in self.last_deleted.values())

    def clean(self, table: pa.Table, index: int, doc_column: str, label: str | None) -> pa.Table:
        """Rules 1-2 on the rows of file ``index``; rows removed are counted under ``label``."""
        if self.untouched(index):
            return table
        doomed = deleted_mask(table.column(doc_column), self.doomed(index))
        removed = pc.sum(doomed).as_py() or 0
        if removed:
            if label:
                self.inputs.bump(f"{label}_removed_by_deletion", removed)
            table = table.filter(pc.invert(doomed))
        if self.remap:
            table = table.set_column(
                table.schema.get_field_index(doc_column),
                doc_column,
                remapped(table.column(doc_column), self.remap),
            )
        return table

    def match_dois(self, key_columns: dict[Path, pa.Table] | None = None) -> None:
        """``self.remap``: each CORD-19 paper whose DOI a PubMed record also has -> that paper's
        doc_id (the smallest PMID with the DOI); rule 1 applied first. Reads the key columns only,
        from ``key_columns`` (a documents table's path -> its key columns) where a caller that
        matches twice over the same files keeps them, filling it as it reads."""
        pubmed, cord = [], []
        for index, file_dir in enumerate(self.inputs.file_dirs):
            path = TableFolder(file_dir).table("documents")
            if not path.exists():
                continue
            docs = key_columns.get(path) if key_columns is not None else None
            if docs is None:
                docs = pq.read_table(path, columns=["doc_id", "doi", "pmid"])
                if key_columns is not None:
                    key_columns[path] = docs
            doomed = deleted_mask(docs.column("doc_id"), self.doomed(index))
            self.inputs.bump("documents_removed_by_deletion", pc.sum(doomed).as_py() or 0)
            docs = docs.filter(pc.invert(doomed))
            self.inputs.bump("document_records", docs.num_rows)
            docs = docs.filter(pc.is_valid(docs.column("doi")))
            pubmed.append(docs.filter(pc.starts_with(docs.column("doc_id"), "PMID:")))
            cord.append(docs.filter(pc.starts_with(docs.column("doc_id"), "CORD:")).select(["doc_id", "doi"]))
        self.remap = DocIdMap()
        cord = [part for part in cord if part.num_rows]
        if not pubmed or not cord:
            self.dois_matched = True
            self.inputs.bump("cord_papers_matched_by_doi", 0)
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
        # One lookup for all CORD-19 records: index_in hashes its value set (every PubMed DOI) on
        # each call, so a call per file cost files x PubMed records, the square of the corpus
        # (39 of the documents step's 63 s at 10M predications, 101 files).
        cord_records = pa.concat_tables(cord)
        position = pc.index_in(cord_records.column("doi"), value_set=dois)
        matched = pc.is_valid(position)
        remap: dict[str, str] = {}
        for doc_id, target in zip(  # in file order: a paper listed twice takes its last record's DOI
            cord_records.column("doc_id").filter(matched).to_pylist(),
            pc.take(targets, position.filter(matched)).to_pylist(),
            strict=True,
        ):
            remap[doc_id] = target
        self.remap = DocIdMap(remap)
        self.dois_matched = True
        self.inputs.bump("cord_papers_matched_by_doi", len(self.remap))


def write_documents(inputs: MergeInputs, papers: PaperIds, path: Path) -> int:
    """The documents table (one row per paper, sorted by doc_id) written to ``path``; its rows.

    First the DOI match of CORD-19 papers to PubMed ids (:meth:`PaperIds.match_dois`, from the
    key columns only); then each paper's records merged (:func:`merged_documents`). When the
    records would not fit the memory budget (at most MERGE_BYTES_PER_DOCUMENT_BYTE times their
    size in Parquet), they are split by doc_id range
    into partitions on disk and merged one partition at a time, which gives the same table in
    the same order. Settles ``papers.deleted_for_good``.
    """
    if not papers.dois_matched:  # the merge's lanes match them before the other rules start
        papers.match_dois()
    record_bytes = sum(_uncompressed_bytes(path) for path in inputs.paths("documents"))
    partitions = inputs.partitions(record_bytes * MERGE_BYTES_PER_DOCUMENT_BYTE, "document_partitions")
    deleted = pa.array(sorted(papers.last_deleted), pa.string())
    still_there = np.zeros(len(deleted), dtype=bool)  # deleted by an earlier file, re-added by a later one
    written = 0
    told = StepReads(inputs, "documents", inputs.table_rows("documents"),
                     DOCUMENTS_READ_SHARE["in memory" if partitions == 1 else "in ranges"])  # fmt: skip
    with pq.ParquetWriter(path, tables.DOCUMENTS) as writer:
        for done, records in enumerate(_records_by_range(inputs, papers, partitions, told.read), start=1):
            merged = merged_documents(records)
            inputs.bump("documents_deduplicated", records.num_rows - merged.num_rows)
            still_there |= found_in(deleted, merged.column("doc_id")).to_numpy(zero_copy_only=False)
            if merged.num_rows:
                writer.write_table(merged)
                written += merged.num_rows
            told.ranges_done(done, partitions)
    papers.deleted_for_good = set(deleted.filter(pa.array(~still_there)).to_pylist())
    inputs.bump("documents_deleted_final", len(papers.deleted_for_good))
    return written


def _records_by_range(
    inputs: MergeInputs, papers: PaperIds, partitions: int, on_read: Callable[[int], None] | None = None
) -> Iterator[pa.Table]:
    """The document records (:func:`_document_records`) of each doc_id range, in doc_id order:
    all of them at once with one partition; else split into ``partitions`` files on disk, then
    read back one range at a time. ``on_read`` is told the rows of each file part read."""
    if partitions == 1:
        parts = list(_document_records(inputs, papers, on_read=on_read))
        if parts:
            yield pa.concat_tables(parts)
        return
    with inputs.spill() as folder:
        spilled = RangePartitions(folder, _document_splits(inputs, papers, partitions))
        for part in _document_records(inputs, papers, streamed=True, on_read=on_read):
            spilled.add("documents", part)
        spilled.close()
        for k in range(spilled.k):
            records = spilled.read("documents", k)
            if records is not None:
                yield records


def _document_records(
    inputs: MergeInputs, papers: PaperIds, streamed: bool = False, on_read: Callable[[int], None] | None = None
) -> Iterator[pa.Table]:
    """Every file's document records, rules 1-2 applied, DOI matches remapped, with the file's
    position (``_file``); a file at a time, or when ``streamed`` in parts of MERGE_STREAM_ROWS
    rows at most. ``on_read`` is told the rows of each part read."""
    for index, file_dir in enumerate(inputs.file_dirs):
        path = TableFolder(file_dir).table("documents")
        if not path.exists():
            continue
        for docs in table_batches(path) if streamed else [pq.ParquetFile(path).read()]:
            if on_read is not None:
                on_read(docs.num_rows)
            if docs.num_rows:
                yield cleaned_records(docs, index, papers)


def cleaned_records(docs: pa.Table, index: int, papers: PaperIds) -> pa.Table:
    """Document records of file ``index`` with rules 1-2 applied, in the documents schema, with
    the file's position (``_file``) that :func:`merged_documents` ranks them by."""
    docs = docs.filter(pc.invert(deleted_mask(docs.column("doc_id"), papers.doomed(index))))
    docs = docs.select(tables.DOCUMENTS.names).cast(tables.DOCUMENTS)  # one schema for every file
    docs = docs.set_column(0, "doc_id", remapped(docs.column("doc_id"), papers.remap))
    return docs.append_column("_file", pa.array(np.full(docs.num_rows, index, np.int64)))


def _document_splits(inputs: MergeInputs, papers: PaperIds, partitions: int) -> list[str]:
    """``partitions - 1`` doc_id values (after the DOI matches) splitting the records into ranges
    of similar size in bytes, from a strided sample of every documents file, each sampled record
    weighted by its file's bytes per record (a PubMed record, with its abstract, weighs many
    SemMedDB ones)."""
    values, weights = [], []
    for path in inputs.paths("documents"):
        rows = pq.ParquetFile(path).metadata.num_rows
        per_record = _uncompressed_bytes(path) / max(rows, 1)
        for taken in strided_sample(path, "doc_id"):
            values.append(taken)
            weights.append(np.full(len(taken), sample_step(rows) * per_record))
    if not values:
        return []
    doc_ids = remapped(pa.chunked_array(values, pa.string()).combine_chunks(), papers.remap)
    weight = np.concatenate(weights)
    order = pc.sort_indices(doc_ids).to_numpy()
    doc_ids, cumulative = doc_ids.take(pa.array(order)), np.cumsum(weight[order])
    # the first doc_id past each i/partitions of the bytes (a doc_id is never split: ranges are
    # [split_i, split_i+1), so one doc_id's records all fall in one range)
    at = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, partitions) / partitions, side="right")
    return sorted(set(doc_ids.take(pa.array(np.minimum(at, len(doc_ids) - 1))).to_pylist()))


def merged_documents(records: pa.Table) -> pa.Table:
    """One row per doc_id from its records (``_file`` = the file's position): per column the
    first value that is not null, taking records by source rank (PubMed, CORD-19, SemMedDB)
    and then the latest file first; ``source`` and ``source_file`` from the top record itself;
    ``pmid`` from the doc_id. Sorted by doc_id.

    Columnar: the records are ordered by (paper, rank, latest file) as integer keys, and each
    column's first valid value per paper is found by a running minimum over the ordered rows, so
    each column is copied once, by one take. (pandas' sort and ``groupby().first()`` on the
    title and abstract strings took most of the merge's documents step: 2.6 min for 18M records
    at 30M predications, nearly every paper having a PubMed and a SemMedDB record.)"""
    if records.num_rows == 0:
        return tables.DOCUMENTS.empty_table()
    n = records.num_rows
    doc, doc_ids = string_codes(records.column("doc_id").chunks)
    rank = _source_ranks(records.column("source"))
    latest_first = -records.column("_file").to_numpy()
    order = np.lexsort((latest_first, rank, doc))  # stable: records tied on all three keep their order
    ordered_doc = doc[order]
    starts = np.flatnonzero(np.r_[True, ordered_doc[1:] != ordered_doc[:-1]])
    top = pa.array(order[starts])  # each paper's top record
    columns = {"doc_id": doc_ids.take(pa.array(ordered_doc[starts]))}  # codes ascend: doc_id order
    for name in FIRST_VALUE_COLUMNS:
        column = records.column(name)
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)[order]
        first = np.minimum.reduceat(np.where(valid, np.arange(n), n), starts)  # n: none in the paper
        found = first < n
        columns[name] = column.take(pa.array(order[np.minimum(first, n - 1)], mask=~found))
    for name in ("source", "source_file"):
        columns[name] = records.column(name).take(top)
    doc_id = columns["doc_id"]
    pubmed = pc.starts_with(doc_id, "PMID:")
    digits = pc.if_else(pubmed, pc.utf8_slice_codeunits(doc_id, 5), pa.scalar(None, pa.string()))
    columns["pmid"] = pc.cast(digits, pa.int64())
    return pa.table([columns[name] for name in tables.DOCUMENTS.names], schema=tables.DOCUMENTS)


# The columns merged value by value (the first record that has one); doc_id is the key, pmid
# follows from it, source and source_file are the top record's.
FIRST_VALUE_COLUMNS = ("doi", "cord_uid", "title", "abstract", "year", "mesh")


def _source_ranks(source: pa.ChunkedArray) -> np.ndarray:
    """Each record's rank by :data:`SOURCE_RANK` (an unknown source after the known ones)."""
    unknown = len(SOURCE_RANK)
    position = pc.fill_null(pc.index_in(source, value_set=pa.array(list(SOURCE_RANK), pa.string())), unknown)
    return np.array([*SOURCE_RANK.values(), unknown], np.int64)[position.to_numpy()]


def _uncompressed_bytes(path: Path) -> int:
    """The size of a Parquet file's data once decoded (from its metadata; 0 when absent)."""
    if not path.exists():
        return 0
    metadata = pq.ParquetFile(path).metadata
    return sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
