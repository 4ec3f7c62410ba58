"""The merge on the delta: a build whose inputs are an earlier complete build's plus some new
files (a PubMed update file, a citation file) starts from that build's tables and recomputes only
the rows the new files can change. The tables it writes equal those of a full merge of the same
inputs (tests/merge/test_merge_delta.py checks it table by table against the full merge).

What the new files change is a set of papers: those they have records of or cite from, those they
delete (D), and those whose DOI match (rule 2) differs before and after -- a CORD-19 paper whose
PubMed twin is deleted or newly added -- with the papers they were or are merged into. Why each
table's other rows stay as they were, under :meth:`Delta.refusal`'s conditions (the new files carry
only documents, deletions, citations, concepts and quarantine; every file with mentions,
predications or sentences comes before every new file that deletes, and none names a CORD-19
paper matched by DOI, so its rows are always their paper's own):

* **documents** (rule 3): a paper's row depends only on its own records, its deletions and its
  DOI match, so the papers above are merged again from every file's records of them (read by row
  group, only where a file has one); the other rows are the earlier ones.
* **mentions**, **predications**, **sentences** (rules 1, 4-6): the new files have none, so the
  only change is rule 1: a paper a new file deletes loses every row of the files before it, which
  are all the files with such rows. Those rows are dropped from the earlier tables (and sentences
  no predication names any more); a table is copied when it has none.
* **citations** (rules 1, 5): a pair changes only if its citing paper is one of the papers above,
  or its cited paper is, or changed between deleted for good and not; those pairs are recomputed
  from every file's pairs, the rest are the earlier ones.
* **concepts**: merged whole again when a new file has concepts (the table is small), else copied.
* **quarantine**: every file's quarantined rows in the new file order, then the merge's own rows,
  which come from the ENTITY and SENTENCE files the new files lack, so they are the earlier build's.

Anything else falls back to the full merge, and counts.json's ``incremental`` says why.
"""

from __future__ import annotations

import json
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.builds.reuse import link_or_copy
from pipeline.ingest.base import DICTIONARY_COLUMNS
from pipeline.merge.citations import cleaned_citations, distinct_citations
from pipeline.merge.documents import (
    FIRST_VALUE_COLUMNS,
    SOURCE_RANK,
    DocIdMap,
    PaperIds,
    cleaned_records,
    deleted_mask,
    found_in,
    merged_documents,
    read_doi_matches,
    remapped,
)
from pipeline.merge.inputs import MergeInputs
from pipeline.merge.predications import write_concepts
from pipeline.runtime.filtered_reads import row_groups_within

# The per-file tables a new file may carry for the merge to work on the delta. A file with any
# other (a SemMedDB dump's predications, mentions, entities, sentences) makes a full merge.
DELTA_FILE_TABLES = frozenset({"documents", "deletions", "citations", "concepts", "quarantine"})
# The ingest kinds whose documents have CORD-19 ids ("CORD:<cord_uid>", pipeline/ingest/cord19.py),
# and those whose have none, for the DOI match updated on the delta (Delta._match_updated).
CORD_KINDS = frozenset({"cord19_metadata"})
KINDS_WITHOUT_CORD_IDS = frozenset({"pubmed_xml", "semmeddb_citations"})
CORD_PREFIX, PUBMED_PREFIX = "CORD:", "PMID:"
# Bytes per predication row past which the sentences step works in sentence_id ranges (half the
# memory budget; pipeline.merge.sentences.BYTES_PER_CITED_SENTENCE): its row order then follows
# ranges sampled from the predications, which the delta cannot reproduce.
BYTES_PER_CITED_SENTENCE = 9
# At most this many rows of a batch dropped, the rest are written as the slices between them
# (_without); more, and a filter's copy costs less than the slices' bookkeeping.
FEW_MARKED = 4096
# Rows a rewrite (_splice) reads, filters and writes at a time; each written piece is a row group.
# A piece of the full merge's size (MERGE_STREAM_ROWS, 1M rows: 240 MB of documents decoded)
# took a 10M update rerun's merge to 2.4 GB of memory with its copies (the documents' and the
# other tables' rewrites run side by side), and on this VM fresh memory is slow to touch
# (pipeline.runtime.filtered_reads). At a quarter of that: 1.2 GB, 2.2-2.6 s of system time
# against 4.1-4.4, the same tables (AMD EPYC). The row groups are a quarter as long too.
SPLICE_ROWS = 1 << 18


class Delta:
    """The earlier build's tables (``previous``: its tables folder) and what the new files change.

    ``inputs`` and ``papers`` are the full merge's (every file, the new order); ``old`` and
    ``old_papers`` the same for the earlier build's files alone.
    """

    def __init__(self, inputs: MergeInputs, papers: PaperIds, previous: Path, config: dict[str, Any]) -> None:
        self.inputs = inputs
        self.papers = papers
        self.previous = TableFolder(previous)
        self.previous_counts = json.loads(self.previous.counts.read_text())
        self.config = config
        identity = [(c.get("kind"), c.get("sha256")) for c in inputs.file_counts]
        earlier = [(c.get("kind"), c.get("sha256")) for c in self.previous_counts.get("files", [])]
        self.old_indices = _subsequence(earlier, identity)
        self.new_indices = [i for i in range(len(identity)) if i not in set(self.old_indices or ())]
        self.old: MergeInputs | None = None
        self.old_papers: PaperIds | None = None
        self.deleted = pa.array([], pa.string())  # the papers the new files delete (D)
        self.rematched = pa.array([], pa.string())  # papers whose DOI match changed, and their targets
        # every paper whose rows may differ from the earlier build's (write_documents sets it)
        self.changed_papers = pa.array([], pa.string())
        self.doi_match: dict[str, str] = {}  # whether each DOI match was kept or matched again
        self.unchanged: list[str] = []  # the tables that are the earlier build's files (_kept)
        # the tables that are the earlier ones less every row of the deleted papers, and nothing
        # else (write_doc_rows): a stage may patch its earlier output by dropping those papers
        self.less_deleted: list[str] = []
        # the rewrites of the mentions, predications and sentences started before the DOI match
        # (:meth:`_start_rewrites`): table -> (the file being written, its future)
        self._rewrites: dict[str, tuple[Path, Future]] = {}
        # The merge's progress line (``report``, told rows as they are read) and the rows of the
        # earlier tables each rule has read so far: the rewrites report from their threads, so
        # that the line counts all the work going on, not the main thread's steps alone.
        self.report: Callable[[int], None] = lambda rows: None
        self.reported: Counter[str] = Counter()
        self._report_lock = threading.Lock()

    def refusal(self, requested: str, step_names: list[str], out_dir: Path | None = None) -> str | None:
        """Why this merge cannot work on the delta, or None when it can. Matches DOIs before and
        after (rule 2, from the documents' key columns) and reads the doc_id dictionaries of the
        files with mentions, predications or sentences. With ``out_dir``, the rewrites of those
        tables start once the checks that need no reading have passed (:meth:`_start_rewrites`),
        and are discarded if a later check refuses."""
        counts = self.previous_counts
        if self.old_indices is None or not self.new_indices:
            return "the earlier build's input files are not this build's minus some, in the same order"
        missing = sorted(set(step_names) - set(counts.get("tables", {})))
        if missing:
            return f"the earlier build has no {', '.join(missing)} table"
        if counts.get("mention_source_requested") != requested:
            return "the earlier build read mentions from another mention_source"
        if "time_slice" in counts or self.config.get("until_year") is not None:
            return "a time slice (ingest.until_year) is cut from the merged tables"
        for index in self.new_indices:
            extra = sorted(set(self.inputs.file_counts[index].get("tables", {})) - DELTA_FILE_TABLES)
            if extra:
                name = self.inputs.file_counts[index].get("source_file", self.inputs.file_dirs[index].name)
                return f"new file {name} has {', '.join(extra)} rows (only documents, deletions, citations and concepts merge on the delta)"
        deleting = [i for i in self.new_indices if self.inputs.file_counts[i].get("tables", {}).get("deletions")]
        row_files = [
            i for i, c in enumerate(self.inputs.file_counts) if set(c.get("tables", {})) - DELTA_FILE_TABLES
        ]
        if deleting and row_files and max(row_files) > min(deleting):
            return "a file with mentions or predications comes after a new file's deletions"
        deleted = sorted({doc for i in deleting for doc in self.inputs.read(self.inputs.file_dirs[i], "deletions").column("doc_id").to_pylist()})
        self.deleted = pa.array(deleted, pa.string())
        if out_dir is not None:
            self._start_rewrites(out_dir, step_names)
        refused = self._matched_refusal(row_files)
        if refused is not None:
            self._discard_rewrites()
        return refused

    def _matched_refusal(self, row_files: list[int]) -> str | None:
        """The checks of :meth:`refusal` that read the files: rule 2's matches, and whether a file
        with mentions, predications or sentences names a CORD-19 paper they match."""
        self.old = MergeInputs([self.inputs.file_dirs[i] for i in self.old_indices], self.previous.path, {})
        self.old.load_counts()
        self.old_papers = PaperIds(self.old)
        self.old_papers.load_deletions()
        before, after = self._doi_matches()
        changed = {c for c in before.keys() | after.keys() if before.get(c) != after.get(c)}
        # a paper matched otherwise, and the papers it was or is merged into, are redone wherever
        # they are a key (documents, citations); the other tables must not name it at all
        self.rematched = pa.array(sorted(changed | {before[c] for c in changed if c in before}
                                         | {after[c] for c in changed if c in after}), pa.string())  # fmt: skip
        # Nothing to check when the match is unchanged, no new file deletes and every file with
        # such rows is an earlier one (a citation file): the delta keeps those tables whole, and
        # they are what the full merge gives, from the same files and the same match. Reading
        # them to look was 0.7 of a 10M citation rerun's 2.4 s merge.
        unchanged = not changed and len(self.deleted) == 0 and set(row_files) <= set(self.old_indices or ())
        named = None if unchanged else self._row_files_naming(before.keys() | after.keys(), row_files)
        if named:
            return f"{named} names a CORD-19 paper matched by DOI (its rows are not the paper's own)"
        self.papers.remap, self.papers.dois_matched = after, True
        self.inputs.bump("cord_papers_matched_by_doi", len(after))
        return None

    def _doi_matches(self) -> tuple[DocIdMap, DocIdMap]:
        """Rule 2's match before the new files and after them. Before: the one the earlier build
        kept (``doi_matches.parquet``), else matched again on its files. After: the same when no
        new file has documents or deletions (the match reads only those: a citation file leaves
        it as it was); else updated from the one before where the new files only add PubMed
        records (:meth:`_match_updated`), else matched on every file. Matching both took 5 of a
        10M citation rerun's 8 s merge, matching after again 5 s of an update rerun's (AMD EPYC)."""
        assert self.old_papers is not None
        key_columns: dict[Path, pa.Table] = {}  # the earlier files' are read once for both matches
        before = read_doi_matches(self.previous.doi_matches)
        self.doi_match = {"before": "kept" if before is not None else "matched"}
        if before is None:
            self.old_papers.match_dois(key_columns)
            before = self.old_papers.remap
        else:
            self.old_papers.remap, self.old_papers.dois_matched = before, True
        rematch = any(
            self.inputs.file_counts[i].get("tables", {}).get(table)
            for i in self.new_indices for table in ("documents", "deletions")
        )  # fmt: skip
        self.doi_match["after"] = "matched" if rematch else "kept"
        if not rematch:
            return before, before
        updated = self._match_updated(before)
        if updated is not None:
            self.doi_match["after"] = "updated"
            return before, updated
        return before, self._matched(key_columns)

    def _matched(self, key_columns: dict[Path, pa.Table]) -> DocIdMap:
        """Rule 2's match on every file (:meth:`PaperIds.match_dois`), of the key columns in
        ``key_columns`` where a file has them there (else read); on a copy of the inputs: the
        tallies a full merge keeps must not count it twice."""
        now = MergeInputs(self.inputs.file_dirs, self.previous.path, {})
        now.file_counts = self.inputs.file_counts
        matched = PaperIds(now)
        matched.last_deleted = self.papers.last_deleted
        matched.match_dois(key_columns)
        return matched.remap

    def _match_updated(self, before: DocIdMap) -> DocIdMap | None:
        """Rule 2's match after the new files, updated from the one before; None where the new
        files may change it otherwise than by PubMed records and deletions of PubMed papers.

        A CORD-19 paper is matched to the smallest PMID among the PubMed records (rule 1 applied
        first) that have its DOI. The new files change that set only for the DOIs of their own
        records and of the papers they delete; a deleted paper that is no CORD-19 paper's target
        was not the smallest, so only the DOIs of the new records and of the CORD-19 papers whose
        target is deleted are matched again, from every file's records of them (a filtered read).
        The CORD-19 papers' DOIs are read from the earlier files whose kind writes CORD-19 ids; a
        paper with records of two DOIs (whose match is its last matched record's) makes the whole
        match again, as do new CORD-19 records."""
        deleted = set(self.deleted.to_pylist())
        if any(not doc.startswith(PUBMED_PREFIX) for doc in deleted):
            return None
        new_dois: set[str] = set()
        for index in self.new_indices:
            records = self.inputs.read(self.inputs.file_dirs[index], "documents")
            if records is None or records.num_rows == 0:
                continue
            if self.inputs.file_counts[index].get("kind") in CORD_KINDS or \
                    pc.any(pc.starts_with(records.column("doc_id"), CORD_PREFIX)).as_py():  # fmt: skip
                return None
            new_dois.update(records.column("doi").drop_null().to_pylist())
        cord_doi: dict[str, str] = {}  # CORD-19 paper -> its DOI
        for index in self.old_indices or ():
            counts = self.inputs.file_counts[index]
            if not counts.get("tables", {}).get("documents"):
                continue
            if counts.get("kind") not in CORD_KINDS | KINDS_WITHOUT_CORD_IDS:
                return None  # a kind this rule does not know: it may write CORD-19 ids
            if counts.get("kind") in CORD_KINDS:
                records = pq.read_table(TableFolder(self.inputs.file_dirs[index]).table("documents"), columns=["doc_id", "doi"])
                records = records.filter(pc.and_(pc.starts_with(records.column("doc_id"), CORD_PREFIX),
                                                 pc.is_valid(records.column("doi"))))  # fmt: skip
                # rule 1 first, as for the PubMed records: a record an earlier file deletes is none
                records = records.filter(pc.invert(deleted_mask(records.column("doc_id"), self.papers.doomed(index))))
                for doc_id, doi in zip(records.column("doc_id").to_pylist(), records.column("doi").to_pylist(), strict=True):
                    if cord_doi.setdefault(doc_id, doi) != doi:
                        return None
        redo = {doi for doc_id, doi in cord_doi.items() if doi in new_dois or before.get(doc_id) in deleted}
        matched = self._matched_for(sorted(redo))
        after = dict(before)
        for doc_id, doi in cord_doi.items():
            if doi in redo:
                after.pop(doc_id, None)
                if doc_id in matched:
                    after[doc_id] = matched[doc_id]
        return DocIdMap(after)

    def _matched_for(self, dois: list[str]) -> DocIdMap:
        """Rule 2's match (:meth:`_matched`) of the records with one of ``dois`` only: every
        file's key columns read filtered to them."""
        if not dois:
            return DocIdMap()
        wanted = pa.array(dois, pa.string())
        key_columns = {
            path: pq.read_table(path, columns=["doc_id", "doi", "pmid"], filters=pc.field("doi").isin(wanted))
            for path in (TableFolder(file_dir).table("documents") for file_dir in self.inputs.file_dirs)
            if path.exists()
        }  # fmt: skip
        return self._matched(key_columns)

    def _row_files_naming(self, cord_ids: set[str], row_files: list[int]) -> str | None:
        """The first table of a file with mentions, predications or sentences whose doc_id names
        one of ``cord_ids``, or None. A row group whose doc_id statistics (the ingest writes them,
        pipeline.ingest.base) lie outside the wanted ids' range is not read: every id of the
        SemMedDB tables ("PMID:...") sorts after the wanted ("CORD:..."), and reading the doc_ids
        of their 46M rows to see it was 1.2-1.6 CPU-s of a 10M update rerun's merge (its main
        thread's, beside the rewrites'). The others are read as dictionaries: the distinct values
        of each row group."""
        if not cord_ids:
            return None
        wanted = pa.array(sorted(cord_ids), pa.string())
        smallest, largest = wanted[0].as_py(), wanted[-1].as_py()
        for index in row_files:
            for name in sorted(set(self.inputs.file_counts[index].get("tables", {})) - DELTA_FILE_TABLES):
                path = TableFolder(self.inputs.file_dirs[index]).table(name)
                if not path.exists() or "doc_id" not in pq.read_schema(path).names:
                    continue
                with pq.ParquetFile(path, read_dictionary=["doc_id"]) as parquet:
                    groups = row_groups_within(parquet, "doc_id", wanted)
                    if not groups:
                        continue
                    column = parquet.read_row_groups(groups, columns=["doc_id"]).column("doc_id")
                for chunk in column.chunks:
                    values = chunk.dictionary if isinstance(chunk, pa.DictionaryArray) else chunk
                    # A lookup hashes the whole wanted set (every CORD-19 paper matched, 95k at 10M
                    # predications) on each call: 11 s of a 10M rerun's merge over the SemMedDB
                    # tables' chunks. Their ids ("PMID:...") all sort after the wanted ("CORD:...").
                    bounds = pc.min_max(values)
                    low, high = bounds["min"].as_py(), bounds["max"].as_py()
                    if low is None or high < smallest or low > largest:
                        continue
                    if pc.any(_is_in(values, wanted)).as_py():
                        return str(path)
        return None

    def steps(self, out_dir: Path, full_steps: tuple[Any, ...]) -> tuple[Any, ...]:
        """The full merge's ``(table, per-file tables, writer)`` steps with each writer that has a
        delta rule replaced by it; a step without one runs whole (its inputs, the deletions and
        the DOI matches, are the full merge's). Also sets the merge's own quarantined rows to the
        earlier build's (they come from ENTITY and SENTENCE files, which no new file has)."""
        rules: dict[str, Callable[[Path], int]] = {
            "documents": self.write_documents,
            "citations": self.write_citations,
            "concepts": self.write_concepts,
        }
        # the mentions, predications and sentences: their rewrites on two more threads, started
        # here unless :meth:`refusal` started them (a step without one runs whole: the sentences
        # where the full step writes in several ranges)
        if not self._rewrites:
            self._start_rewrites(out_dir, [name for name, _, _ in full_steps])
        for name, (written_to, future) in self._rewrites.items():
            rules[name] = lambda path, written_to=written_to, future=future: self._rewritten(written_to, future, path)

        def rule(name: str, whole: Callable[[Path], int]) -> Callable[[Path], int]:
            return rules.get(name, whole)

        self.inputs.quarantine = self._earlier_quarantine().to_pylist()
        return tuple((name, reads, rule(name, write)) for name, reads, write in full_steps)

    def work(self, names: list[str]) -> dict[str, int]:
        """The rows of the earlier tables each step reads, the merge's progress measure on the
        delta (the full merge's, the rows of every file's tables, would put a 10M update rerun's
        merge at 11.6 % as it ended): a table spliced or rewritten is read whole, one kept as it
        is (no paper deleted) not at all."""
        def earlier_rows(name: str) -> int:
            path = self.previous.table(name)
            return pq.ParquetFile(path).metadata.num_rows if path.exists() else 0

        return {name: 0 if name in self._rewrites and len(self.deleted) == 0 else earlier_rows(name) for name in names}

    def _read(self, name: str, rows: int) -> None:
        """``rows`` of the earlier ``name`` table read: told to the progress line."""
        with self._report_lock:
            self.reported[name] += rows
        self.report(rows)

    def _start_rewrites(self, out_dir: Path, names: list[str]) -> None:
        """Start the rewrites of the mentions, predications and sentences (of the ``names`` steps)
        on two more threads, into hidden files of ``out_dir``. They need only the earlier tables
        and the deletions, so they run while the DOI match and the documents and citations are
        done (Parquet's reads and writes, most of the work, release the GIL): started before the
        match, a 10M update rerun's merge took 22, 25 and 30 s against 25, 28 and 29 (three runs
        each, AMD EPYC). The predications and then the sentences, which read the rows the
        predications' rewrite removed (:meth:`_orphaned_sentences`), on one thread, the mentions on
        the other: on one thread, the three took as long as the documents and the rest on the
        main thread (9.7 and 9.0 s of samples), and the merge waited for the longer.
        The sentences keep the earlier order only where the full step writes in one range;
        otherwise that step runs whole, on the main thread, once the predications are written."""
        rewrites: dict[str, Callable[[Path], tuple[int, dict[str, int]]]] = {
            "predications": lambda path: self.write_doc_rows("predications", path),
            "mentions": lambda path: self.write_doc_rows("mentions", path, DICTIONARY_COLUMNS["mentions"]),
        }
        if "sentences" in names and self.sentences_fit():
            rewrites["sentences"] = self.write_sentences
        # Submitted in this order, the predications take the first thread and the mentions the
        # second; the sentences, queued, start on whichever is free first, once the predications
        # are written.
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="merge-delta")
        for name in ("predications", "mentions", "sentences"):
            if name in names and name in rewrites:
                written_to = out_dir / f".{name}.delta-rewrite"
                written_to.unlink(missing_ok=True)  # left by a merge that was killed
                rewrite = rewrites[name]
                if name == "sentences" and "predications" in self._rewrites:
                    rewrite = _after(self._rewrites["predications"][1], rewrite)
                self._rewrites[name] = (written_to, pool.submit(rewrite, written_to))
        pool.shutdown(wait=False)  # the submitted rewrites run on; each step waits for its own

    def _rewritten(self, written_to: Path, future: Future, path: Path) -> int:
        """A started rewrite's table put in place at ``path`` once done, its tallies counted; its rows."""
        written, tallies = future.result()
        written_to.replace(path)
        for key, n in tallies.items():
            self.inputs.bump(key, n)
        return written

    def _discard_rewrites(self) -> None:
        """The merge refused the delta after the rewrites started: wait for them (the full merge
        writes the same tables) and remove their files; their tallies are not counted."""
        for written_to, future in self._rewrites.values():
            future.exception()  # waits; a failed rewrite does not matter to the full merge
            written_to.unlink(missing_ok=True)
        self._rewrites.clear()
        self.unchanged.clear()
        self.less_deleted.clear()

    # -- the tables, each from the earlier one -------------------------------------------------

    def write_documents(self, path: Path) -> int:
        """Rule 3 again for the papers the new files have records of or delete, and those whose DOI
        match changed (:meth:`_documents_merged_again`); the other rows are the earlier ones (the
        earlier table copied when there are no such papers)."""
        new_files = {
            i: table for i in self.new_indices
            if (table := self.inputs.read(self.inputs.file_dirs[i], "documents")) is not None
        }  # fmt: skip
        new_ids = [remapped(table.column("doc_id"), self.papers.remap) for table in new_files.values()]
        keys = pc.unique(pa.chunked_array([*new_ids, self.deleted, self.rematched], pa.string()).combine_chunks())
        self.inputs.bump("delta_documents_recomputed", len(keys))
        # The papers merged again are every paper whose row of any table may differ from the
        # earlier build's (the other tables change only for the deleted ones, among them): what
        # the store's grouping redoes (pipeline.store.record_buckets) on top of the earlier build.
        self.changed_papers = keys.take(pc.sort_indices(keys))
        if len(keys) == 0:  # a citation file: every row is the earlier one
            self._kept("documents", path)
            written = pq.ParquetFile(path).metadata.num_rows
        else:
            written = self._documents_merged_again(keys, new_files, path)
        present = pq.read_table(path, columns=["doc_id"]).column("doc_id")
        deleted = pa.array(sorted(self.papers.last_deleted), pa.string())
        self.papers.deleted_for_good = set(deleted.filter(pc.invert(found_in(deleted, present))).to_pylist())
        self.inputs.bump("documents_deleted_final", len(self.papers.deleted_for_good))
        return written

    def _documents_merged_again(self, keys: pa.Array, new_files: dict[int, pa.Table], path: Path) -> int:
        """The earlier documents table with the rows of ``keys`` merged again (rule 3), spliced in
        doc_id order; its rows. The papers whose new records come first (:meth:`_ahead`) are merged
        from those and their earlier row; the others from every file's records of them that rule 1
        leaves (row groups without one are skipped). A PubMed update revises papers of every
        earlier file, so reading each one's records took half of a 10M rerun's documents step."""
        ahead = self._ahead(new_files)
        again = keys.filter(pc.invert(_is_in(keys, ahead)))
        parts = []
        for index, file_dir in enumerate(self.inputs.file_dirs):
            source = TableFolder(file_dir).table("documents")
            if source.exists() and len(again):
                doomed = self.papers.doomed(index)
                records = _rows_where(source, "doc_id", lambda ids, doomed=doomed: pc.and_(
                    _is_in(remapped(ids, self.papers.remap), again), pc.invert(deleted_mask(ids, doomed))))  # fmt: skip
                if records is not None:
                    parts.append(cleaned_records(records, index, self.papers))
        merged = [merged_documents(pa.concat_tables(parts))] if parts else []
        if len(ahead):
            merged.append(self._merged_ahead(ahead, new_files))
        added = pa.concat_tables(merged) if merged else tables.DOCUMENTS.empty_table()
        added = added.take(pc.sort_indices(added, [("doc_id", "ascending")]))
        self.inputs.bump("delta_documents_from_earlier_row", len(ahead))
        written, _ = _splice(
            self.previous.table("documents"), path, tables.DOCUMENTS, ["doc_id"],
            drop=lambda t: _is_in(t.column("doc_id"), keys), added=added,
            revise=lambda rows, earlier: _filled_from_earlier(rows, earlier, ahead),
            on_rows=lambda rows: self._read("documents", rows),
        )  # fmt: skip
        return written

    def _ahead(self, new_files: dict[int, pa.Table]) -> pa.Array:
        """The papers whose records in the new files come before every earlier record of theirs in
        rule 3's order (source rank, then the latest file), so that per column their first valid
        value is the new records' if they have one, else the earlier row's: when every new record
        is of the first source (PubMed) and no earlier file after the first new one has a record
        of it, the papers of the new files that no file deletes (rule 1 would drop records the
        earlier row holds) and whose DOI match is unchanged (rule 2)."""
        first_source = min(SOURCE_RANK, key=SOURCE_RANK.__getitem__)
        none = pa.array([], pa.string())
        if not new_files or any(not _only(t.column("source"), first_source) for t in new_files.values()):
            return none
        for index in self.old_indices or ():
            source = TableFolder(self.inputs.file_dirs[index]).table("documents")
            if index > min(new_files) and source.exists():
                column = pq.read_table(source, columns=["source"], read_dictionary=["source"]).column("source")
                if pc.any(pc.equal(column.cast(pa.string()), first_source)).as_py():
                    return none
        ids = pa.chunked_array([remapped(t.column("doc_id"), self.papers.remap) for t in new_files.values()], pa.string())
        ids = pc.unique(ids.combine_chunks())
        other = pa.array(sorted(self.papers.last_deleted), pa.string())
        other = pa.chunked_array([other, self.rematched], pa.string()).combine_chunks()
        return ids.filter(pc.invert(_is_in(ids, other)))

    def _merged_ahead(self, ahead: pa.Array, new_files: dict[int, pa.Table]) -> pa.Table:
        """Rule 3 over the new records alone of the papers :meth:`_ahead` found; the splice fills
        each null from the paper's earlier row (:func:`_filled_from_earlier`) as it passes it."""
        parts = [
            cleaned_records(table.filter(_is_in(remapped(table.column("doc_id"), self.papers.remap), ahead)), index, self.papers)
            for index, table in new_files.items()
        ]  # fmt: skip
        return merged_documents(pa.concat_tables(parts))

    def _kept(self, name: str, path: Path) -> None:
        """``path`` made the earlier build's table ``name``, unchanged: a hard link where the
        filesystem has them (no bytes copied, no space taken twice; a table is never written
        again once its merge is done, and the merge unlinks a shared file before it writes over
        it: ``unshare_tables``), else a copy. Listed in counts.json's ``incremental`` as
        ``tables_unchanged``, from which the later stages know which of their inputs are the
        earlier build's (pipeline.builds.reuse)."""
        link_or_copy(self.previous.table(name), path)
        self.unchanged.append(name)

    def write_changed_papers(self, path: Path) -> int:
        """The papers whose rows may differ from the earlier build's (sorted doc_ids), for the
        stages that redo only those on top of the earlier build's outputs."""
        pq.write_table(pa.table({"doc_id": self.changed_papers}), path)
        return len(self.changed_papers)

    def write_doc_rows(self, name: str, path: Path, dictionary: list[str] | bool = False) -> tuple[int, dict[str, int]]:
        """Mentions or predications: the earlier table without the rows of the papers the new
        files delete (the earlier file itself when it has none); its rows and the merge's tallies
        of it. The rows removed are kept beside the table: a later stage counts on the delta from
        them (the co-occurrence graph, pipeline.graph.earlier) instead of scanning both tables."""
        source = self.previous.table(name)
        removed = TableFolder(path.parent).removed_rows(name)
        removed.unlink(missing_ok=True)  # left by a merge into this folder before
        if len(self.deleted) == 0:  # no paper deleted (a citation file): nothing to look for
            self._kept(name, path)
            return pq.ParquetFile(path).metadata.num_rows, {}
        schema = tables.ALL_TABLES[name]
        # Rewritten without first looking whether a deleted paper has rows here: that look read
        # the 10M doc_ids once more (0.5 s a table), and an update file's deletions have rows.
        written, dropped = _splice(
            source, path, schema, [], drop=lambda t: _is_in(t.column("doc_id"), self.deleted),
            added=schema.empty_table(), use_dictionary=dictionary, removed_to=removed,
            on_rows=lambda rows: self._read(name, rows),
        )  # fmt: skip
        if dropped == 0:  # none had: the earlier file, not a copy of it
            removed.unlink()
            self._kept(name, path)
            return written, {}
        self.less_deleted.append(name)
        return written, {f"{name}_removed_by_deletion": dropped}

    def write_citations(self, path: Path) -> int:
        """The pairs whose citing paper a new file cites from or deletes, or whose cited paper
        changed between deleted for good and not, recomputed from every file; the rest are the
        earlier pairs. The citing side's DOI matches are those of the earlier build (checked)."""
        assert self.old_papers is not None
        old_deleted = pa.array(sorted(self.old_papers.last_deleted), pa.string())
        old_present = pq.read_table(self.previous.table("documents"), columns=["doc_id"]).column("doc_id")
        old_for_good = set(old_deleted.filter(pc.invert(found_in(old_deleted, old_present))).to_pylist())
        status_changed = pa.array(sorted(old_for_good ^ self.papers.deleted_for_good), pa.string())
        status_changed = pc.unique(pa.chunked_array([status_changed, self.rematched], pa.string()).combine_chunks())
        citing = [
            remapped(table.column("citing"), self.papers.remap)
            for i in self.new_indices
            if (table := self.inputs.read(self.inputs.file_dirs[i], "citations")) is not None
        ]
        keys = pc.unique(pa.chunked_array([*citing, self.deleted, self.rematched], pa.string()).combine_chunks())
        doomed_targets = pa.array(sorted(self.papers.deleted_for_good), pa.string())

        def affected(pairs: pa.Table) -> pa.Array:
            return pc.or_(
                _is_in(remapped(pairs.column("citing"), self.papers.remap), keys),
                _is_in(remapped(pairs.column("cited"), self.papers.remap), status_changed),
            )

        earlier = pq.read_table(self.previous.table("citations"))
        parts = [earlier.filter(pc.invert(affected(earlier)))]
        for index, file_dir in enumerate(self.inputs.file_dirs):
            pairs = self.inputs.read(file_dir, "citations")
            if pairs is not None and pairs.num_rows:
                pairs = pairs.filter(affected(pairs))
                parts.append(cleaned_citations(self.inputs, self.papers, pairs, index, doomed_targets).cast(tables.CITATIONS))
        self.inputs.bump("delta_citing_papers_recomputed", len(keys))
        self.inputs.bump("delta_cited_papers_recomputed", len(status_changed))
        table = distinct_citations(pa.concat_tables(parts))
        pq.write_table(table, path)
        return table.num_rows

    def write_concepts(self, path: Path) -> int:
        """Merged whole again when a new file has concepts, else the earlier table copied."""
        if any(self.inputs.file_counts[i].get("tables", {}).get("concepts") is not None for i in self.new_indices):
            return write_concepts(self.inputs, path)
        self._kept("concepts", path)
        return pq.ParquetFile(path).metadata.num_rows

    def write_sentences(self, path: Path) -> tuple[int, dict[str, int]]:
        """The earlier sentences without those of deleted papers or no longer named by a
        predication (the new files have no SENTENCE rows, so each kept row is the one the full
        step would pick, in the order it would write it, where :meth:`sentences_fit`); its rows
        and the merge's tallies of it."""
        source = self.previous.table("sentences")
        orphaned = self._orphaned_sentences(TableFolder(path.parent))
        if len(self.deleted) == 0 and len(orphaned) == 0:
            self._kept("sentences", path)  # no paper deleted: every sentence is still named
            return pq.ParquetFile(path).metadata.num_rows, {"sentences_removed_by_deletion": 0}
        schema = pq.read_schema(source)
        written, dropped = _splice(
            source, path, schema, [], added=schema.empty_table(),
            drop=lambda t: pc.or_(_is_in(t.column("doc_id"), self.deleted),
                                  pc.fill_null(pc.is_in(t.column("sentence_id"), value_set=orphaned), False)),
            on_rows=lambda rows: self._read("sentences", rows),
        )  # fmt: skip
        return written, {"sentences_removed_by_deletion": dropped}

    def sentences_fit(self) -> bool:
        """Whether the full sentences step would write in one sentence_id range (its ids fit half
        the memory budget), the order the delta keeps; otherwise the step runs whole."""
        if (self.previous_counts.get("merge") or {}).get("sentence_partitions", 1) > 1:
            return False  # the earlier table is in ranges' order (a smaller budget then)
        # the earlier predications: the merged ones are those less the deleted papers'
        cited_rows = pq.ParquetFile(self.previous.table("predications")).metadata.num_rows
        return cited_rows * BYTES_PER_CITED_SENTENCE <= 0.5 * self.inputs.budget_bytes

    def _orphaned_sentences(self, out: TableFolder) -> pa.Array:
        """The sentence ids that only the deleted papers' predications named. Every earlier
        sentence is named by an earlier predication (rule 6), and the merged predications are the
        earlier ones less the deleted papers', so these are the earlier sentences no merged
        predication names. Found with lookups in the (small) deleted and orphan-candidate sets: a
        lookup in every named id (a set of millions) hashed it for each batch, 12 s of a 10M rerun.
        Where the predications' rewrite (before, on the same thread) kept the rows it removed, a
        candidate is one of theirs, still named where the earlier table names it more often than
        they do: the earlier sentence ids alone are read, not their 10M doc_ids (0.5 s)."""
        if len(self.deleted) == 0:
            return pa.array([], pa.int64())
        if "predications" in self.less_deleted:
            removed = pq.read_table(out.removed_rows("predications"), columns=["sentence_id"]).column("sentence_id")
            return _named_only_by(removed, pq.read_table(self.previous.table("predications"), columns=["sentence_id"])
                                  .column("sentence_id"))  # fmt: skip
        earlier = pq.read_table(self.previous.table("predications"), columns=["doc_id", "sentence_id"])
        removed = _is_in(earlier.column("doc_id"), self.deleted)
        candidates = pc.unique(earlier.column("sentence_id").filter(removed).combine_chunks()).drop_null()
        if len(candidates) == 0:
            return candidates
        kept = earlier.column("sentence_id").filter(pc.invert(removed))
        still_named = pc.unique(kept.filter(pc.fill_null(pc.is_in(kept, value_set=candidates), False)).combine_chunks())
        return candidates.filter(pc.invert(pc.is_in(candidates, value_set=still_named)))

    def _earlier_quarantine(self) -> pa.Table:
        """The earlier build's own quarantined rows: those after its files' (ENTITY rows placed
        in no paper, which the new files cannot change)."""
        assert self.old is not None
        earlier = pq.read_table(self.previous.table("quarantine"))
        of_files = sum(c.get("tables", {}).get("quarantine", 0) or 0 for c in self.old.file_counts)
        return earlier.slice(of_files)


def _after(first: Future, then: Callable[[Path], Any]) -> Callable[[Path], Any]:
    """``then``, run once ``first`` is done (whether or not it failed: ``then`` checks what it
    needs of it)."""

    def run(path: Path) -> Any:
        first.exception()  # waits
        return then(path)

    return run


def _without(rows: pa.Table, marked: pa.Array | pa.ChunkedArray, n_marked: int) -> pa.Table:
    """``rows`` less the ``n_marked`` rows ``marked`` says: where they are few, the slices between
    them (no row copied: a filter copied every row of a batch, 1.2 GB of sentence text a rerun, to
    drop a few hundred), else a filter."""
    if n_marked == 0:
        return rows
    if n_marked > FEW_MARKED:
        return rows.filter(pc.invert(marked))
    flags = marked.to_numpy() if isinstance(marked, pa.ChunkedArray) else marked.to_numpy(zero_copy_only=False)
    at = np.flatnonzero(flags)
    starts, ends = np.r_[0, at + 1], np.r_[at, rows.num_rows]
    return pa.concat_tables([rows.slice(start, end - start) for start, end in zip(starts, ends, strict=True) if end > start]
                            or [rows.slice(0, 0)])  # fmt: skip


def _named_only_by(removed: pa.ChunkedArray, earlier: pa.ChunkedArray) -> pa.Array:
    """The sentence ids of ``removed`` (rows taken out of ``earlier``, the earlier predications'
    sentence ids) that no row left names: those ``earlier`` names no more often than ``removed``."""
    candidates = pc.unique(removed.combine_chunks()).drop_null()
    if len(candidates) == 0:
        return candidates
    naming = earlier.filter(pc.fill_null(pc.is_in(earlier, value_set=candidates), False)).combine_chunks()
    before, gone = (np.searchsorted(np.sort(candidates.to_numpy()), ids.to_numpy(zero_copy_only=False))
                    for ids in (naming, removed.combine_chunks().drop_null()))  # fmt: skip
    times_before, times_gone = (np.bincount(at, minlength=len(candidates)) for at in (before, gone))
    ordered = pa.array(np.sort(candidates.to_numpy()))
    return ordered.filter(pa.array(times_before <= times_gone))


def _subsequence(earlier: list[tuple[Any, Any]], files: list[tuple[Any, Any]]) -> list[int] | None:
    """The positions in ``files`` of the ``earlier`` files, if they appear there in that order."""
    positions, at = [], 0
    for ident in earlier:
        while at < len(files) and files[at] != ident:
            at += 1
        if at == len(files) or None in ident:
            return None
        positions.append(at)
        at += 1
    return positions


def _is_in(column: pa.ChunkedArray | pa.Array, keys: pa.Array) -> pa.Array:
    """True where the value is among ``keys`` (never null)."""
    if isinstance(column.type, pa.DictionaryType):
        column = column.cast(pa.string())
    return deleted_mask(column, keys)


def _filled_from_earlier(rows: pa.Table, earlier: pa.Table, ahead: pa.Array) -> pa.Table:
    """``rows`` (merged documents) with each null of a rule-3 column filled from ``earlier``'s row
    of the same doc_id, for the papers of ``ahead`` only (a paper new to the build has none)."""
    doc_id = rows.column("doc_id")
    at = pc.index_in(doc_id, value_set=earlier.column("doc_id").combine_chunks())
    at = pc.if_else(_is_in(doc_id, ahead), at, pa.scalar(None, at.type))
    columns = [
        pc.if_else(pc.is_valid(rows.column(name)), rows.column(name), earlier.column(name).take(at))
        if name in FIRST_VALUE_COLUMNS else rows.column(name)
        for name in rows.schema.names
    ]  # fmt: skip
    return pa.table(columns, schema=rows.schema)


def _only(column: pa.ChunkedArray | pa.Array, value: str) -> bool:
    """True when every value of ``column`` equals ``value`` (nulls do not)."""
    equal = pc.fill_null(pc.equal(column, value), False)
    return bool(pc.all(equal).as_py()) if len(column) else True


def _rows_where(path: Path, column: str, wanted: Callable[[pa.ChunkedArray], pa.Array]) -> pa.Table | None:
    """The rows of a Parquet file where ``wanted`` (of its ``column``) is true, reading whole only
    the row groups that have one; None when none has."""
    parquet = pq.ParquetFile(path)
    groups, masks = [], []
    for group in range(parquet.metadata.num_row_groups):
        mask = wanted(parquet.read_row_group(group, columns=[column]).column(column))
        if pc.any(mask).as_py():
            groups.append(group)
            masks.append(mask)
    if not groups:
        return None
    rows = parquet.read_row_groups(groups)
    return rows.filter(pa.chunked_array(masks).combine_chunks())


class _WriteBehind:
    """A Parquet writer's pieces encoded and compressed on a thread of their own while the caller
    reads, decodes and filters the next batch (both release the GIL), at most one piece queued.

    A rewrite (:func:`_splice`) read and wrote on one thread, so the sentences' rewrite, which
    waits for the predications' and ends last, ran on one core of two for the last 1.5 s of a
    10M update rerun's merge (py-spy): written behind, that merge took 8.3, 8.3 and 8.1 s against
    9.1, 8.8 and 8.8 (alternate runs, Intel Xeon). Starting the sentences at once instead, beside
    the predications, took 8.5, 8.4 and 8.5 s: the documents, on the main thread, then ended last.

    Used as a context manager inside the writer's own: a piece's failure is raised by the next
    ``write_table`` or at the exit; a failure of the caller's stops the thread without writing
    the pieces still queued."""

    def __init__(self, writer: pq.ParquetWriter) -> None:
        self._writer = writer
        self._pieces: queue.Queue[pa.Table | None] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="merge-write-behind", daemon=True)

    def __enter__(self) -> _WriteBehind:
        self._thread.start()
        return self

    def _run(self) -> None:
        while (piece := self._pieces.get()) is not None:
            if self._error is None:  # after a failure the queue is only drained
                try:
                    self._writer.write_table(piece)
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc

    def write_table(self, piece: pa.Table) -> None:
        if self._error is not None:
            raise self._error
        self._pieces.put(piece)

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None and self._error is None:
            self._error = RuntimeError("the rewrite failed")  # the pieces still queued are not written
        self._pieces.put(None)
        self._thread.join()
        if exc_type is None and self._error is not None:
            raise self._error


def _splice(
    source: Path,
    path: Path,
    schema: pa.Schema,
    sort_keys: list[str],
    drop: Callable[[pa.Table], pa.Array],
    added: pa.Table,
    use_dictionary: list[str] | bool = False,
    revise: Callable[[pa.Table, pa.Table], pa.Table] | None = None,
    removed_to: Path | None = None,
    on_rows: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """``source`` (sorted by ``sort_keys``, or in file order when there are none and nothing is
    ``added``) without the rows ``drop`` marks, with the ``added`` rows (sorted the same) put in
    their places, written to ``path`` a batch of SPLICE_ROWS at a time; (rows written, rows dropped).
    ``revise(added rows, dropped rows)``, with sort keys, gives the added rows of a piece as
    written, from the rows dropped so far (every dropped row of a key before the piece's end).
    ``removed_to``: the dropped rows are written there too (in table order). ``on_rows(n)`` is
    told each batch of ``source`` read, once it is done with.

    The first sort key groups the rows: each written piece holds whole groups (the last group
    of a batch is carried into the next piece), so sorting a piece with the added rows of its
    groups orders it as a sort of the whole table would.
    """
    group_key = sort_keys[0] if sort_keys else None
    added_keys = added.column(group_key).combine_chunks() if group_key else None
    written = dropped = taken = 0
    carry = schema.empty_table()
    dropped_rows: list[pa.Table] = [schema.empty_table()]  # kept for ``revise``

    def added_rows(start: int, length: int | None = None) -> pa.Table:
        rows = added.slice(start, length).cast(schema)
        if revise is None or rows.num_rows == 0:
            return rows
        return revise(rows, pa.concat_tables(dropped_rows))
    with pq.ParquetFile(source) as parquet, pq.ParquetWriter(path, schema, use_dictionary=use_dictionary) as parquet_writer, \
            _WriteBehind(parquet_writer) as writer:  # fmt: skip

        def emit(piece: pa.Table, sort: bool) -> None:
            nonlocal written
            if sort and piece.num_rows:
                piece = piece.take(pc.sort_indices(piece, [(k, "ascending") for k in sort_keys]))
            if piece.num_rows:
                writer.write_table(piece)
                written += piece.num_rows

        def batches_read() -> Iterator[pa.RecordBatch]:
            for batch in parquet.iter_batches(batch_size=SPLICE_ROWS):
                yield batch
                if on_rows is not None:  # the loop is done with it
                    on_rows(batch.num_rows)

        for batch in batches_read():
            rows = pa.Table.from_batches([batch]).cast(schema)
            marked = drop(rows)
            dropped_now = pc.sum(marked).as_py() or 0
            if (revise is not None or removed_to is not None) and dropped_now:
                dropped_rows.append(rows.filter(marked))
            dropped += dropped_now
            if group_key is None:
                rows = _without(rows, marked, dropped_now)
                if rows.num_rows:
                    emit(rows, sort=False)
                continue
            kept = np.flatnonzero(~np.asarray(marked.to_numpy(zero_copy_only=False), dtype=bool))
            if len(kept) == 0:
                continue
            last = rows.column(group_key)[int(kept[-1])]
            # the kept rows of the last group (the end of the batch, which is sorted) go on to the next piece
            in_tail = pc.equal(rows.column(group_key).take(pa.array(kept)), last).to_numpy(zero_copy_only=False)
            before = pc.sum(pc.less(added_keys.slice(taken), last)).as_py() or 0
            new = added_rows(taken, before)
            # The piece is taken once from the carried rows, the batch's and the added ones, in
            # order: filtering the batch twice and then sorting the piece copied every row three
            # times (2.1 of a 10M update rerun's 5 s documents rewrite, 30k papers spliced).
            joined = pa.concat_tables([carry, rows, new])
            chosen = np.concatenate([np.arange(carry.num_rows), carry.num_rows + kept[~in_tail],
                                     carry.num_rows + rows.num_rows + np.arange(new.num_rows)])  # fmt: skip
            if new.num_rows:  # a stable sort of the piece's keys, as a sort of the piece would order it
                order = pc.sort_indices(joined.select(sort_keys).take(pa.array(chosen)),
                                        [(k, "ascending") for k in sort_keys])  # fmt: skip
                chosen = chosen[order.to_numpy()]
            emit(joined.take(pa.array(chosen)), sort=False)
            taken += before
            carry = rows.take(pa.array(kept[in_tail]))
        rest = added_rows(taken)
        emit(pa.concat_tables([carry, rest]), sort=rest.num_rows > 0)
    if removed_to is not None:
        pq.write_table(pa.concat_tables(dropped_rows), removed_to)
    return written, dropped
