"""Combine per-file ingest outputs into the build-level tables.

``file_dirs`` are the ``out_dir`` s of :func:`pipeline.ingest.common.ingest_file`, in input
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
4. **Mentions** summed per (doc_id, cui). ``config["mention_source"]`` picks where they come
   from: ``"predications"`` (default; subject/object of each predication, see
   :mod:`pipeline.ingest.semmeddb`), ``"entities"`` (SemMedDB ENTITY joined to SENTENCE for
   the paper; an entity whose sentence is unknown is quarantined here) or ``"both"``.
5. **Predications** streamed through (filtered and remapped), **citations** deduplicated,
   **concepts** deduplicated: first non-null name in file order, union of semantic types.

Memory is proportional to the output tables (documents, aggregated mentions, citations,
concepts); predications are streamed batch by batch.
"""

from __future__ import annotations

import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import tables
from pipeline.graph.csr import sum_by_key
from pipeline.ingest.common import IngestError

SOURCE_RANK = {"pubmed": 0, "cord19": 1, "semmeddb": 2}
MENTION_SOURCES = ("predications", "entities", "both")
_MENTION_SUMS = pa.schema([("doc_id", pa.string()), ("cui", pa.string()), ("count", pa.int64())])
_CITATION_PAIRS = pa.schema([("citing", pa.string()), ("cited", pa.string())])


_MENTIONS_COMPACT_ROWS = 1 << 24


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
    key = doc * max(len(cuis), 1) + cui
    key, summed = sum_by_key(key, count)
    return pa.table(
        {
            "doc_id": docs.take(pa.array(key // max(len(cuis), 1))),
            "cui": cuis.take(pa.array(key % max(len(cuis), 1))),
            "count": pa.array(summed, pa.int64()),
        },
        schema=_MENTION_SUMS,
    )


def _read(file_dir: Path, name: str, dictionary_columns: tuple[str, ...] = ()) -> pa.Table | None:
    path = file_dir / f"{name}.parquet"
    return pq.read_table(path, read_dictionary=list(dictionary_columns) or None) if path.exists() else None


def _remap(column: pa.ChunkedArray | pa.Array, mapping: dict[str, str]) -> pa.Array:
    if not mapping:
        return column
    keys = pa.array(list(mapping.keys()), pa.string())
    values = pa.array(list(mapping.values()), pa.string())
    position = pc.index_in(column, value_set=keys)
    return pc.if_else(pc.is_null(position), column, pc.take(values, position))


def _deleted_mask(
    column: pa.ChunkedArray | pa.Array, file_index: int, last_deleted: dict[str, int]
) -> pa.Array:
    """True where the row's doc was deleted by this file or a later one."""
    doomed = [doc for doc, at in last_deleted.items() if at >= file_index]
    if not doomed:
        return pa.array(np.zeros(len(column), dtype=bool))
    return pc.fill_null(pc.is_in(column, value_set=pa.array(doomed, pa.string())), False)


class _Merger:
    def __init__(self, file_dirs: list[Path], out_dir: Path, config: dict[str, Any]) -> None:
        self.file_dirs = [Path(d) for d in file_dirs]
        self.out_dir = Path(out_dir)
        self.mention_source = config.get("mention_source", "predications")
        if self.mention_source not in MENTION_SOURCES:
            raise ValueError(f"mention_source must be one of {MENTION_SOURCES}, got {self.mention_source!r}")
        self.stats: dict[str, int] = {}
        self.file_counts: list[dict[str, Any]] = []
        self.last_deleted: dict[str, int] = {}
        self.remap: dict[str, str] = {}
        self.final_deleted: set[str] = set()
        self.merge_quarantine: list[dict[str, Any]] = []

    def bump(self, key: str, n: int) -> None:
        self.stats[key] = self.stats.get(key, 0) + int(n)

    def load_counts(self) -> None:
        for file_dir in self.file_dirs:
            counts_path = file_dir / "counts.json"
            if not counts_path.exists():
                raise IngestError(f"{file_dir}: no counts.json; the ingest of this file did not finish")
            self.file_counts.append(json.loads(counts_path.read_text()))

    def load_deletions(self) -> None:
        for index, file_dir in enumerate(self.file_dirs):
            deletions = _read(file_dir, "deletions")
            if deletions is None:
                continue
            for doc_id in deletions.column("doc_id").to_pylist():
                self.last_deleted[doc_id] = index
            self.bump("deletions_announced", deletions.num_rows)

    def documents(self) -> pa.Table:
        frames = []
        for index, file_dir in enumerate(self.file_dirs):
            docs = _read(file_dir, "documents")
            if docs is None or docs.num_rows == 0:
                continue
            doomed = _deleted_mask(docs.column("doc_id"), index, self.last_deleted)
            self.bump("documents_removed_by_deletion", pc.sum(doomed).as_py() or 0)
            docs = docs.filter(pc.invert(doomed))
            frame = docs.to_pandas()
            frame["_file"] = index
            frames.append(frame)
        if not frames:
            self.final_deleted = set(self.last_deleted)
            return tables.DOCUMENTS.empty_table()
        frame = pd.concat(frames, ignore_index=True)
        self.bump("document_records", len(frame))

        pubmed_doi = frame[frame["doc_id"].str.startswith("PMID:") & frame["doi"].notna()]
        doi_to_pmid = (
            pubmed_doi.sort_values("pmid").drop_duplicates("doi").set_index("doi")["doc_id"].to_dict()
            if len(pubmed_doi)
            else {}
        )
        cord = frame[frame["doc_id"].str.startswith("CORD:") & frame["doi"].isin(doi_to_pmid.keys())]
        self.remap = {doc: doi_to_pmid[doi] for doc, doi in zip(cord["doc_id"], cord["doi"], strict=True)}
        self.bump("cord_papers_matched_by_doi", len(self.remap))
        if self.remap:
            frame["doc_id"] = frame["doc_id"].map(lambda d: self.remap.get(d, d))

        frame["_rank"] = frame["source"].map(SOURCE_RANK).fillna(len(SOURCE_RANK))
        frame = frame.sort_values(["doc_id", "_rank", "_file"], ascending=[True, True, False], kind="stable")
        merged = frame.groupby("doc_id", sort=True, as_index=False).first()
        # first() skips nulls per column; source/source_file must come from the top record
        top = frame.drop_duplicates("doc_id").set_index("doc_id")
        merged["source"] = merged["doc_id"].map(top["source"])
        merged["source_file"] = merged["doc_id"].map(top["source_file"])
        merged["pmid"] = merged["doc_id"].map(lambda d: int(d[5:]) if d.startswith("PMID:") else None)
        self.bump("documents_deduplicated", len(frame) - len(merged))
        self.final_deleted = set(self.last_deleted) - set(merged["doc_id"])
        self.bump("documents_deleted_final", len(self.final_deleted))
        merged = merged.astype({"pmid": "Int64", "year": "Int32"})
        return pa.Table.from_pandas(
            merged[tables.DOCUMENTS.names], schema=tables.DOCUMENTS, preserve_index=False
        )

    def _clean(self, table: pa.Table, index: int, doc_column: str, label: str) -> pa.Table:
        if self._untouched(index):
            return table
        doomed = _deleted_mask(table.column(doc_column), index, self.last_deleted)
        removed = pc.sum(doomed).as_py() or 0
        if removed:
            self.bump(f"{label}_removed_by_deletion", removed)
            table = table.filter(pc.invert(doomed))
        if self.remap:
            table = table.set_column(
                table.schema.get_field_index(doc_column),
                doc_column,
                _remap(table.column(doc_column), self.remap),
            )
        return table

    def mentions(self) -> pa.Table:
        parts: list[pa.Table] = []
        sentence_doc: pa.Table | None = None
        if self.mention_source in ("entities", "both"):
            sentences = [t for d in self.file_dirs if (t := _read(d, "sentences")) is not None]
            if sentences:
                sentence_doc = pa.concat_tables(sentences).select(["sentence_id", "doc_id"])
                sentence_doc = (
                    sentence_doc.group_by("sentence_id")
                    .aggregate([("doc_id", "min")])
                    .rename_columns(["sentence_id", "doc_id"])
                )
        for index, file_dir in enumerate(self.file_dirs):
            if self.mention_source in ("predications", "both"):
                mentions = _read(file_dir, "mentions", ("doc_id", "cui"))
                if mentions is not None:
                    parts.append(self._clean_mentions(mentions, index))
            if self.mention_source in ("entities", "both"):
                entities = _read(file_dir, "entity_mentions")
                if entities is not None and entities.num_rows:
                    parts.append(
                        self._clean_mentions(self._resolve_entities(entities, sentence_doc, file_dir), index)
                    )
            if sum(part.num_rows for part in parts) > _MENTIONS_COMPACT_ROWS and len(parts) > 1:
                parts = [_sum_mentions(parts)]  # keep memory near the output size
        if not parts:
            return tables.MENTIONS.empty_table()
        return _sum_mentions(parts).cast(tables.MENTIONS)

    def _clean_mentions(self, part: pa.Table, index: int) -> pa.Table:
        """doc_id, cui (dictionary or plain strings: _sum_mentions takes both) and an int64 count."""
        part = part.select(["doc_id", "cui", "count"])
        if not self._untouched(index):  # deletions and remapping work on plain strings
            part = part.set_column(0, "doc_id", part.column("doc_id").cast(pa.string()))
        part = self._clean(part, index, "doc_id", "mentions")
        return part.set_column(2, "count", part.column("count").cast(pa.int64()))

    def _resolve_entities(
        self, entities: pa.Table, sentence_doc: pa.Table | None, file_dir: Path
    ) -> pa.Table:
        if sentence_doc is None:
            sentence_doc = pa.table(
                {"sentence_id": pa.array([], pa.int64()), "doc_id": pa.array([], pa.string())}
            )
        joined = entities.join(sentence_doc, "sentence_id", join_type="left outer")
        unresolved = joined.filter(pc.is_null(joined.column("doc_id")))
        if unresolved.num_rows:
            self.bump("entity_mentions_unresolved", unresolved.num_rows)
            for row in unresolved.group_by("sentence_id").aggregate([("count", "sum")]).to_pylist():
                self.merge_quarantine.append(
                    {
                        "source_file": file_dir.name,
                        "line": 0,
                        "field": "SENTENCE_ID",
                        "reason": f"ENTITY mention(s) of sentence {row['sentence_id']} not found in any SENTENCE file",
                        "raw": str(row["sentence_id"]),
                    }
                )
        return joined.filter(pc.is_valid(joined.column("doc_id")))

    def _untouched(self, index: int) -> bool:
        """True when rules 1-2 change nothing in the tables of file ``index``."""
        return not self.remap and all(at < index for at in self.last_deleted.values())

    def predications(self, path: Path) -> int:
        sources = [
            (index, file_dir / "predications.parquet")
            for index, file_dir in enumerate(self.file_dirs)
            if (file_dir / "predications.parquet").exists()
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

    def citations(self) -> pa.Table:
        total: pa.Table | None = None
        doomed_targets = pa.array(sorted(self.final_deleted), pa.string())
        for index, file_dir in enumerate(self.file_dirs):
            part = _read(file_dir, "citations")
            if part is None or part.num_rows == 0:
                continue
            part = self._clean(part, index, "citing", "citations").cast(_CITATION_PAIRS)
            if self.remap:
                part = part.set_column(1, "cited", _remap(part.column("cited"), self.remap))
            if len(doomed_targets):
                to_deleted = pc.fill_null(pc.is_in(part.column("cited"), value_set=doomed_targets), False)
                self.bump("citations_to_deleted_removed", pc.sum(to_deleted).as_py() or 0)
                part = part.filter(pc.invert(to_deleted))
            self.bump("citation_records", part.num_rows)
            total = part if total is None else pa.concat_tables([total, part])
            total = total.group_by(["citing", "cited"]).aggregate([]).select(["citing", "cited"])
        if total is None:
            return tables.CITATIONS.empty_table()
        self.bump("citations_deduplicated", self.stats.get("citation_records", 0) - total.num_rows)
        return total.sort_by([("citing", "ascending"), ("cited", "ascending")]).cast(tables.CITATIONS)

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
    merger.load_counts()
    merger.load_deletions()
    written: dict[str, int] = {}
    documents = merger.documents()
    pq.write_table(documents, out_dir / "documents.parquet")
    written["documents"] = documents.num_rows
    for name, table in (
        ("mentions", merger.mentions()),
        ("citations", merger.citations()),
        ("concepts", merger.concepts()),
    ):
        pq.write_table(table, out_dir / f"{name}.parquet")
        written[name] = table.num_rows
    written["predications"] = merger.predications(out_dir / "predications.parquet")
    quarantine = merger.quarantine()
    pq.write_table(quarantine, out_dir / "quarantine.parquet")
    written["quarantine"] = quarantine.num_rows

    totals = {
        key: sum(c[key] for c in merger.file_counts)
        for key in ("rows_read", "rows_accepted", "rows_quarantined")
    }
    assert totals["rows_read"] == totals["rows_accepted"] + totals["rows_quarantined"]
    counts = {
        "files": merger.file_counts,
        **totals,
        "merge": dict(sorted(merger.stats.items())),
        "merge_quarantined": len(merger.merge_quarantine),
        "mention_source": merger.mention_source,
        "tables": written,
        "seconds": round(time.perf_counter() - started, 3),
    }
    (out_dir / "counts.json").write_text(json.dumps(counts, indent=2) + "\n")
    return counts
