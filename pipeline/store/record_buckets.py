"""A build's store records, grouped and cut into record buckets ahead of the load, one kind at a time.

What MongoDB holds of a build (store format 2, :mod:`pipeline.store.store_format`) is four kinds of
records -- papers (``documents``), concepts with their vertex ids (``concepts``), the evidence of
each concept--concept edge (``evidence``) and what each paper says of its concepts (``papers``) --
each cut into content-addressed record buckets (:mod:`pipeline.store.buckets`). Producing them is
the work: at 30M predications, grouping the evidence and the papers' statements took 6.3 of the
load's 6.8 minutes (bench/results/mongo_load.md); writing the buckets a store lacks is the rest.

So the grouping is a stage of its own (``litpath bucket-records``, the workflow's
``bucket_records`` rule, one job per kind) that writes a **bucket file** per kind into the build
folder, and ``litpath load-mongo`` only sends the buckets the store lacks, at the store's speed:

* the kinds are independent of each other, and documents and papers need no graph: under
  Snakemake their jobs run beside the graph build and beside each other, on cores the single-threaded
  grouping left idle;
* a load that failed halfway (the server went away), a second store (the user's own MongoDB
  beside the local one) or a store restored from an older backup is sent the bucket files
  again instead of grouping again; and a rebuild on top of this build reuses them
  (:func:`rebuilt_records`).

A bucket file is an Arrow IPC file (:func:`write_bucket_file`): one row per bucket, in key order
-- ``bucket_id``, ``first`` (the key of its first row, as strings), ``rows``, ``data`` (the
bucket's own IPC bytes, lz4 inside, so the file itself is uncompressed; null for a rerun's reused
bucket whose bytes are left in the file's *base*, the earlier build's complete file hard-linked
beside it: :data:`LAYERED_MIN_SHARE`) -- and beside it a JSON
record (:func:`pipeline.builds.layout.bucket_file_record`) of the kind, the store format and the grouping's counts, written last:
a file without its record is incomplete. The load checks the kind and format before it trusts a
file, and each bucket's bytes against its id as it reads them; the bytes are the buckets
themselves, so a load from bucket files stores exactly what the in-process load would (tested).
"""

from __future__ import annotations

import bisect
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from pipeline.builds.layout import BuildLayout, GraphFolder, TableFolder, bucket_file_base, bucket_file_record
from pipeline.builds.reuse import earlier_tables, link_or_copy
from pipeline.builds.tables import ALL_TABLES, table_path
from pipeline.config import default_of
from pipeline.runtime.columnar import distinct_sorted
from pipeline.runtime.files import write_atomically
from pipeline.runtime.filtered_reads import kept_batches, rows_with_values
from pipeline.runtime.progress import PERCENT, PhasedWork, Progress
from pipeline.store.bucket_reuse import ReuseMismatch, ReuseTally, rebuilt_buckets, reuse_plan
from pipeline.store.buckets import MEAN_ROWS, Bucket, ListedBucket, bucketed, decode, joined_keys
from pipeline.store.evidence_patch import gone_rows_by_pair, pair_keys, records_without_papers
from pipeline.store.evidence_rows import (
    EVIDENCE,
    ReadableSources,
    concept_edge_keys,
    concept_edges,
    evidence_partitions,
    evidence_tables,
)
from pipeline.store.paper_evidence import (
    PAPERS,
    PREDICATION_COLUMNS,
    as_strings,
    group_papers,
    paper_partitions,
    paper_tables,
)
from pipeline.store.store_format import KEYS, KINDS, STORE_FORMAT

DOCUMENTS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("pmid", pa.int64()),
        ("doi", pa.string()),
        ("cord_uid", pa.string()),
        ("title", pa.string()),
        ("year", pa.int32()),
        ("source", pa.string()),
    ]
)
CONCEPTS = pa.schema(
    [("cui", pa.string()), ("name", pa.string()), ("semtypes", pa.list_(pa.string())), ("vid", pa.int64())]
)
RECORDS = {"documents": DOCUMENTS, "concepts": CONCEPTS, "evidence": EVIDENCE, "papers": PAPERS}
# The kinds whose records need the graph (vertex ids, concept--concept edges); the others are
# grouped from the merged tables alone, so their jobs need not wait for build-graph.
NEEDS_GRAPH = frozenset({"concepts", "evidence"})

log = logging.getLogger(__name__)

BUCKET_FILE = pa.schema(
    [("bucket_id", pa.string()), ("first", pa.list_(pa.string())), ("rows", pa.int64()), ("data", pa.large_binary())]
)
_BATCH_BUCKETS = 256
# A first build's evidence and papers groupings, as shares of their time: reading the predications
# (spilling them into ranges), grouping the ranges, writing the ranges' buckets -- what their
# progress lines count (PhasedWork). Measured at 10M calibrated predications with the 8 GiB budget
# (AMD EPYC, one run each, the phases timed apart): the evidence 6.1 s reading, 29.7 s grouping
# its 2 ranges and 5.1 s writing them, of 41.1 s; the papers 3.3, 35.7 (3 ranges) and 10.4 s, of
# 49.4 s.
GROUPING_SHARES = {
    "evidence": {"read": 0.15, "group": 0.72, "write": 0.13},
    "papers": {"read": 0.07, "group": 0.72, "write": 0.21},
}


def row_count(tables_dir: Path, name: str) -> int | None:
    """Rows of a table from its Parquet metadata (None when it is absent): the progress total."""
    path = table_path(tables_dir, name)
    return None if path is None else ds.dataset(str(path), format="parquet").count_rows()


def document_parts(tables_dir: Path, batch_rows: int) -> Iterator[pa.Table]:
    """The build's papers (the documents table, sorted by doc_id), a batch at a time (read a
    batch at a time too: pipeline.runtime.filtered_reads)."""
    path = table_path(tables_dir, "documents")
    if path is None:
        return
    for batch in kept_batches(path, DOCUMENTS.names, lambda batch: None, batch_rows=batch_rows):
        yield pa.Table.from_batches([batch]).cast(DOCUMENTS)


def concept_rows(tables_dir: Path, graph_dir: Path) -> pa.Table:
    """cui, name, semtypes, vid: the concepts table joined (full outer) with the concept vertices."""
    vertices = pq.read_table(GraphFolder(graph_dir).vertices, columns=["vid", "kind", "key", "name"])
    vertices = vertices.filter(pc.equal(vertices["kind"], "concept"))
    vertices = pa.table({"cui": vertices["key"], "vid": vertices["vid"], "vertex_name": vertices["name"]})
    path = table_path(tables_dir, "concepts")
    if path is None:
        concepts = CONCEPTS.remove(3).empty_table()
    else:
        concepts = ds.dataset(str(path), format="parquet").to_table(columns=["cui", "name", "semtypes"])
    # Joined by lookup: Arrow's hash join cannot carry the list column semtypes.
    position = pc.index_in(concepts["cui"], value_set=vertices["cui"].combine_chunks())
    known = pa.table(
        {
            "cui": concepts["cui"],
            "name": concepts["name"],
            "semtypes": concepts["semtypes"],
            "vid": pc.take(vertices["vid"], position),
        }
    )
    unknown = vertices.filter(pc.invert(pc.is_in(vertices["cui"], value_set=concepts["cui"].combine_chunks())))
    only_vertices = pa.table(
        {
            "cui": unknown["cui"],
            "name": unknown["vertex_name"],
            "semtypes": pa.nulls(unknown.num_rows, pa.list_(pa.string())),
            "vid": unknown["vid"],
        }
    )
    return pa.concat_tables([known.cast(CONCEPTS), only_vertices.cast(CONCEPTS)]).sort_by("cui")


@dataclass(frozen=True)
class GroupingSettings:
    """What the grouping of the readable evidence is told: the memory budget it partitions within,
    where it spills, the cap on documents per hop and the sentences quoted per hop (None: the
    config schema's ``evidence.sentences_per_hop``)."""

    budget_bytes: int
    spill_dir: Path
    max_evidence: int = 1_000
    sentences_per_hop: int | None = None

    @property
    def per_hop(self) -> int:
        value = default_of("evidence.sentences_per_hop") if self.sentences_per_hop is None else self.sentences_per_hop
        return int(value)


@dataclass
class KindRecords:
    """One kind's records as table parts in key order (``parts()``, to be consumed once), the row
    total for the progress line (None when unknown up front), and ``notes``: the counts the
    grouping records beside the rows (partitions, hops truncated), complete once the parts are."""

    kind: str
    parts: Callable[[], Iterable[pa.Table]]
    total: int | None
    notes: dict[str, int | str] = field(default_factory=dict)
    # Where the parts are grouped from a table in phases (the evidence and the papers), the
    # progress measure while they are: the rows written come in bursts after each range.
    work: PhasedWork | None = None
    # On top of an earlier build: the buckets, most of them the earlier build's (rebuilt_records),
    # and the complete bucket file that holds the bytes of those yielded ``in_base``
    rebuilt: Callable[[], Iterator[Bucket]] | None = None
    base: Path | None = None

    def buckets(self) -> Iterator[Bucket]:
        """The kind's record buckets, in key order (:func:`record_buckets_of`)."""
        if self.rebuilt is not None:
            yield from self.rebuilt()
            return
        yield from record_buckets_of(self.kind, self.parts())


def record_buckets_of(kind: str, parts: Iterable[pa.Table]) -> Iterator[Bucket]:
    """The record buckets of ``parts`` (tables of ``kind``'s rows, with :data:`RECORDS`' columns,
    in key order): :func:`pipeline.store.buckets.bucketed` on the kind's key and mean."""
    schema = RECORDS[kind]
    return bucketed((part.select(schema.names).cast(schema) for part in parts), KEYS[kind], MEAN_ROWS[kind])


def kind_records(kind: str, tables_dir: Path, graph_dir: Path | None, settings: GroupingSettings) -> KindRecords:
    """The records of ``kind`` of the build whose merged tables are in ``tables_dir`` (and whose
    graph is in ``graph_dir``, which the kinds of :data:`NEEDS_GRAPH` read)."""
    tables_dir = Path(tables_dir)
    if kind in NEEDS_GRAPH:
        if graph_dir is None:
            raise ValueError(f"the {kind} records need the build's graph folder (--graph-dir)")
        graph_dir = Path(graph_dir)
        for needed in (GraphFolder(graph_dir).vertices, GraphFolder(graph_dir).edges):
            if not needed.exists():
                raise FileNotFoundError(f"{needed} not found (run build-graph first)")
    if kind == "documents":
        return KindRecords(kind, lambda: document_parts(tables_dir, 1 << 18), row_count(tables_dir, "documents"))
    if kind == "concepts":
        return KindRecords(kind, lambda: [concept_rows(tables_dir, graph_dir)], None)
    predications = row_count(tables_dir, "predications") or 0
    if kind == "evidence":
        edge_keys = concept_edge_keys(graph_dir)
        partitions = evidence_partitions(predications, settings.budget_bytes)
        records = KindRecords(kind, lambda: [], len(edge_keys[0]),
                              {"evidence_partitions": partitions, "evidence_truncated": 0,
                               "sentences_per_hop": settings.per_hop, "max_evidence": settings.max_evidence},
                              PhasedWork(GROUPING_SHARES[kind]))  # fmt: skip

        def evidence_parts() -> Iterator[pa.Table]:
            for part in evidence_tables(tables_dir, edge_keys, 1 << 18, partitions, settings.spill_dir,
                                        max_evidence=settings.max_evidence, sentences_per_hop=settings.per_hop,
                                        work=records.work):  # fmt: skip
                records.notes["evidence_truncated"] += pc.sum(part.column("truncated")).as_py() or 0
                yield part

        records.parts = evidence_parts
        return records
    if kind == "papers":
        # what each paper says of its concepts: the concept-abstract hops' readable evidence
        ranges = paper_partitions(predications, settings.budget_bytes)
        per_hop = settings.per_hop
        work = PhasedWork(GROUPING_SHARES[kind])
        return KindRecords(
            kind,
            lambda: paper_tables(tables_dir, ranges, ReadableSources.of_build(tables_dir, per_hop), settings.spill_dir,
                                 work),  # fmt: skip
            None,
            {"paper_partitions": ranges, "sentences_per_hop": per_hop},
            work,
        )
    raise ValueError(f"unknown record kind {kind!r}: expected one of {', '.join(KINDS)}")


# -- on top of an earlier build


# Above this share of the earlier build's buckets to decode and cut again, grouping everything
# afresh costs about as much and holds less at once. A document's record is its own row, cheap to
# group again: at 10M calibrated predications an update file's 30k changed papers cut 36 % of the
# documents' buckets again. Cut one stretch at a time, that rebuild took 11.6 and 12.3 s alone
# against 9.6 and 11.3 s grouping all 3M afresh (alternate runs, AMD EPYC), and later 5.4-5.7 s
# against 3.6 (Intel Xeon), so the documents were reused only where a quarter or less was cut
# again; with the stretches cut in passes (pipeline.store.bucket_reuse.PASS_BYTES) it takes
# 4.2-4.5 s against 4.0-4.4 (three alternate runs each, the same tables, the same peak memory)
# and writes 95 MB instead of 181 (the reused buckets' bytes stay in the base), so up to 40 % is
# now reused. The evidence and the papers are grouped from the predications, which costs far
# more a record than decoding it.
MAX_REBUILT_SHARE = {"documents": 0.4, "evidence": 0.5, "papers": 0.5}
# The concepts are cheap to group whole. The documents are not (13 of a 10M citation rerun's 77 s,
# the same 166 MB again), and are reused where few papers changed: the papers merged again are
# their changed keys; a citation file has none.
REUSED_KINDS = ("documents", "evidence", "papers")
# A rebuild's bucket file leaves the bytes of the buckets it reuses in the complete bucket file
# they are in (the earlier build's, or the one that build's file leaves them in), hard-linked beside
# it as its base: at 10M calibrated predications an update file's rerun reused 22.8k of the papers'
# 23.1k buckets and 7.7k of the evidence's 8.3k, and copying them wrote 1.6 GB again (the whole
# file, 1.17 and 0.50 GB) to change 56 MB. Below this share of the new file's buckets in that
# base, the file is written complete instead, so a chain of reruns never keeps more than one
# base per file, nor a base mostly of buckets no build uses.
LAYERED_MIN_SHARE = 0.5


@dataclass(frozen=True)
class EarlierBuild:
    """The build a merge on the delta started from (``root``, its folder), and ``changed``: the
    papers whose rows may differ between the two (the merge's ``changed_papers.parquet``)."""

    root: Path
    changed: pa.Array
    # the predications the merge removed, which it kept beside the table (the table is the earlier
    # one less the deleted papers' rows): the changed papers' rows before are those now and these
    removed_predications: Path | None = None
    # the predications table is the earlier one itself (a citation file: no paper deleted)
    predications_unchanged: bool = False

    @classmethod
    def of(cls, tables_dir: Path) -> tuple[EarlierBuild | None, str]:
        """The earlier build of the merge that wrote ``tables_dir`` (:func:`earlier_tables`), or None
        and why there is none."""
        earlier, why = earlier_tables(tables_dir)
        if earlier is None:
            return None, why
        folder = TableFolder(tables_dir)
        if not folder.changed_papers.exists():
            return None, f"{folder.changed_papers} is missing"
        changed = pq.read_table(folder.changed_papers, columns=["doc_id"]).column("doc_id").combine_chunks()
        if len(changed) != earlier.changed_papers:
            return None, f"{folder.changed_papers} does not hold the {earlier.changed_papers} papers counts.json names"
        removed = folder.removed_rows("predications")
        kept_removed = "predications" in earlier.less_deleted and removed.exists()
        return cls(earlier.root, changed, removed if kept_removed else None, earlier.same(["predications"])), ""

    @property
    def predications_known(self) -> bool:
        """Whether the merge says what became of the earlier predications: the table as it was, or
        less the deleted papers' rows, which it kept beside the table. Then a changed paper's rows
        now are its rows before less the removed ones, and nothing else."""
        return self.predications_unchanged or self.removed_predications is not None

    def changed_rows(self, tables_dir: Path, columns: list[str], papers: pa.Array | None = None,
                     read: pa.Array | None = None) -> tuple[pa.Table, pa.Table]:  # fmt: skip
        """The predications (``columns``, with doc_id) of ``papers`` (default: the changed papers)
        before and now, each in its table's order among those papers' rows; ``read``: those of
        them that can have rows now (default: all), the only ones looked for in the table. Where
        the merge kept the rows it removed, those before are the ones now and the removed ones
        (whole papers, in the earlier order): one filtered scan of 10M predications, not two;
        where the table is the earlier one, the same rows."""
        papers = (self.changed if papers is None else papers).cast(pa.string())
        now = _rows_of_papers(tables_dir, papers if read is None else read.cast(pa.string()), columns)
        if self.predications_unchanged:
            return now, now
        if self.removed_predications is None:
            return _rows_of_papers(self.tables, papers, columns), now
        removed = pq.read_table(self.removed_predications, columns=columns).cast(now.schema)
        return pa.concat_tables([now, removed.filter(pc.is_in(removed["doc_id"], value_set=papers))]), now

    def papers_with_removed_rows(self) -> pa.Array:
        """The changed papers the merge removed predications of (the deleted papers that had
        some), sorted; none where the table is the earlier one."""
        if self.removed_predications is None:
            return pa.array([], pa.string())
        gone = pc.unique(pq.read_table(self.removed_predications, columns=["doc_id"]).column("doc_id").combine_chunks())
        gone = gone.cast(pa.string()).filter(pc.is_in(gone.cast(pa.string()), value_set=self.changed.cast(pa.string())))
        return gone.take(pc.sort_indices(gone))

    @property
    def tables(self) -> Path:
        return BuildLayout(self.root).tables.path

    def bucket_file(self, kind: str) -> BucketFile | None:
        try:
            return BucketFile.open(BuildLayout(self.root).bucket_file(kind), kind)
        except BucketFileError:
            return None


class _PairCodes:
    """Concept pairs (cui_a < cui_b) as int64 codes ``rank(cui_a) * n + rank(cui_b)``, ranks in the
    sorted union of two graphs' ``n`` concepts: code order is the pairs' order, and membership
    between the graphs' 2M edges and the pairs the changed papers name is an integer lookup. As
    "cui_a|cui_b" strings each lookup hashed millions of strings: 2.7 of a 10M update rerun's
    13.2 s evidence grouping (AMD EPYC)."""

    def __init__(self, *concept_keys: pa.Array) -> None:
        vocabulary = pc.unique(pa.chunked_array([k.cast(pa.string()) for k in concept_keys], pa.string()).combine_chunks())
        self.cuis = vocabulary.take(pc.sort_indices(vocabulary))
        self.n = max(len(self.cuis), 1)

    def ranks(self, cuis: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Each CUI's rank in the vocabulary, -1 where it is not in it."""
        found = pc.fill_null(pc.index_in(cuis.cast(pa.string()), value_set=self.cuis), -1)
        if isinstance(found, pa.ChunkedArray):
            found = found.combine_chunks()
        return found.to_numpy(zero_copy_only=False).astype(np.int64)

    def of_edges(self, keys: pa.Array, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The codes of a graph's concept--concept edges (:func:`concept_edges`)."""
        rank = self.ranks(keys)
        return rank[src] * self.n + rank[dst]

    def named(self, rows: pa.Table) -> np.ndarray:
        """The pairs that predications join (a concept with itself joins none), once each, sorted;
        a pair with a CUI in neither graph is on no edge of them and is left out."""
        s, o = self.ranks(rows["subject_cui"]), self.ranks(rows["object_cui"])
        keep = (s >= 0) & (o >= 0) & (s != o)
        s, o = s[keep], o[keep]
        return distinct_sorted(np.minimum(s, o) * self.n + np.maximum(s, o))

    def of_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The codes of ``pairs`` (cui_a < cui_b, both in the vocabulary: pairs of an edge)."""
        a = self.ranks(pa.array([a for a, _ in pairs], pa.string()))
        b = self.ranks(pa.array([b for _, b in pairs], pa.string()))
        return a * self.n + b

    def pairs(self, codes: np.ndarray) -> list[tuple[str, str]]:
        """``codes`` as (cui_a, cui_b) tuples, in code order: the pairs' sorted order."""
        codes = np.sort(codes)
        a = self.cuis.take(pa.array(codes // self.n)).to_pylist()
        b = self.cuis.take(pa.array(codes % self.n)).to_pylist()
        return list(zip(a, b, strict=True))


def _pairs_to_redo(now: np.ndarray, before: np.ndarray, named_by_others: np.ndarray,
                   named_by_gone: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Which evidence records an update changes, from pair codes (:class:`_PairCodes`): the edges
    of the graph ``now`` and of the earlier one (``before``, each pair once), and the pairs the
    changed papers' predications name, by papers that still have predications and by papers that
    went. Returns (the changed pairs, sorted: those named on an edge of either graph, and the
    edges added or removed; which of ``now``'s edges are grouped again from the tables: named by a
    paper still there, or added; which are patched from the earlier record instead: named only by
    papers that went, and an edge before too)."""
    added = now[~np.isin(now, before, assume_unique=True)]
    removed = before[~np.isin(before, now, assume_unique=True)]
    named = distinct_sorted(named_by_others, named_by_gone)
    on_an_edge = named[np.isin(named, now, assume_unique=True) | np.isin(named, before, assume_unique=True)]
    changed = distinct_sorted(on_an_edge, added, removed)
    grouped_again = np.isin(now, distinct_sorted(named_by_others, added))
    patched_here = np.isin(now, named_by_gone) & ~grouped_again & np.isin(now, before, assume_unique=True)
    return changed, grouped_again, patched_here


# The columns of a gone paper's predications that its evidence patch reads (pipeline.store.evidence_patch).
GONE_ROW_COLUMNS = ["doc_id", "sentence_id", "predication_id", "predicate", "subject_cui", "object_cui"]


def _earlier_records(bucket_file: BucketFile, keys: list[tuple]) -> pa.Table:
    """The earlier bucket file's records of ``keys`` (sorted tuples) that it holds, in key order:
    only the buckets whose key range holds one are read."""
    if not keys:
        return RECORDS[bucket_file.kind].empty_table()
    mapped = bucket_file.mapped()
    try:
        indices = sorted({mapped.index_for(key) for key in keys} - {None})
        found = [decode(mapped.bucket(index).data) for index in indices]
    finally:
        mapped.close()
    key = KEYS[bucket_file.kind]
    wanted = pa.array(["|".join(k) for k in keys], pa.string())
    rows = pa.concat_tables(found) if found else RECORDS[bucket_file.kind].empty_table()
    return rows.filter(pc.is_in(joined_keys(rows, key), value_set=wanted))


def _rows_of_papers(tables_dir: Path, doc_ids: pa.Array, columns: list[str]) -> pa.Table:
    """The predications of these papers (read a batch at a time: pipeline.runtime.filtered_reads)."""
    path = table_path(tables_dir, "predications")
    if path is None:
        return ALL_TABLES["predications"].empty_table().select(columns)
    return rows_with_values(path, columns, "doc_id", doc_ids)


def redone_papers(tables_dir: Path, earlier: EarlierBuild, columns: list[str]) -> tuple[pa.Array, tuple[pa.Table, pa.Table]]:
    """Of the papers the merge changed, those whose store records may differ -- a predication
    removed or added (the merge on the delta only removes: a deleted paper's), or another year (a
    revised record); a title or DOI changes the documents only, which are grouped whole -- sorted,
    and their predications (``columns``, with doc_id and predication_id) before and now, each in
    its table's order among those papers' rows.

    Where the merge says what became of the predications (:attr:`EarlierBuild.predications_known`),
    a changed paper's rows differ only where it removed some (a deleted paper's, every one), so
    the papers redone are found before any predication is read, and only the rows of those that
    can still have some are looked for: not the papers whose rows were removed, nor those the
    earlier documents have and these have not (deleted, or a CORD-19 paper merged into its PubMed
    twin: under the delta's rules, pipeline.merge.delta, neither has predications now). An
    update file's new papers come after every earlier one in the predications' doc_id order, so
    their rows lie in the last row group (one of 39 at 10M); its revised and deleted papers,
    whose rows were read to compare them, lie in every row group: a scan of the 10M predications
    in both the papers' grouping and the evidence's. Else the changed papers' rows are read and
    compared."""
    changed = earlier.changed.cast(pa.string())

    def years(folder: Path) -> pa.Table:
        table = rows_with_values(table_path(folder, "documents"), ["doc_id", "year"], "doc_id", changed)
        return table.cast(pa.schema([("doc_id", pa.string()), ("year", pa.int32())]))

    def statements(predications: pa.Table) -> pa.Table:
        return predications.select(["doc_id", "predication_id"]).group_by("doc_id").aggregate(
            [("predication_id", "count_distinct"), ("predication_id", "sum")])  # fmt: skip

    def differing(before: pa.Table, now: pa.Table) -> set[str]:
        rows_before, rows_now = ({tuple(row.values()) for row in table.to_pylist()} for table in (before, now))
        return {row[0] for row in rows_before ^ rows_now}

    years_before, years_now = years(earlier.tables), years(tables_dir)
    redone = differing(years_before, years_now)
    if earlier.predications_known:
        removed = set(earlier.papers_with_removed_rows().to_pylist())
        vanished = set(years_before["doc_id"].to_pylist()) - set(years_now["doc_id"].to_pylist())
        redone |= removed
        papers = pa.array(sorted(redone), pa.string())
        return papers, earlier.changed_rows(tables_dir, columns, papers, read=pa.array(sorted(redone - removed - vanished), pa.string()))
    rows = earlier.changed_rows(tables_dir, columns)
    redone |= differing(statements(rows[0]), statements(rows[1]))
    papers = pa.array(sorted(redone), pa.string())
    before, now = (table.filter(pc.is_in(table["doc_id"].cast(pa.string()), value_set=papers)) for table in rows)
    return papers, (before, now)


def _rebuilt(kind: str, earlier_file: BucketFile, changed: list[tuple], regroup: Callable[[], pa.Table],
             expected_rows: int, notes: dict) -> tuple[Callable[[], Iterator[Bucket]] | None, Path | None]:  # fmt: skip
    """The rebuild of ``kind``'s buckets on the earlier file (None when too much changed), and the
    complete bucket file the new one leaves its reused buckets' bytes in (None: it copies them;
    :data:`LAYERED_MIN_SHARE`)."""
    mapped = earlier_file.mapped()
    plan = reuse_plan(mapped.firsts, changed, MEAN_ROWS[kind])
    share = 1 - sum(plan) / max(len(plan), 1)
    notes.update({f"{kind}_changed_keys": len(changed), f"{kind}_earlier_buckets": len(plan)})
    if share > MAX_REBUILT_SHARE[kind]:
        mapped.close()
        notes[f"{kind}_reuse"] = f"none: {share:.0%} of the earlier buckets would be cut again"
        return None, None
    in_base = sum(1 for index, reused in enumerate(plan) if reused and mapped.bytes_in_next_base(index))
    mapped.leave_in_base = bool(plan) and in_base >= LAYERED_MIN_SHARE * len(plan)

    def buckets() -> Iterator[Bucket]:
        tally = ReuseTally()
        try:
            yield from rebuilt_buckets(mapped, changed, regroup(), KEYS[kind], MEAN_ROWS[kind], expected_rows, tally)
        finally:
            mapped.close()
        notes.update({f"{kind}_reused_buckets": tally.reused, f"{kind}_decoded_buckets": tally.decoded,
                      f"{kind}_reuse": f"on build {earlier_file.path.parents[1].name}"})  # fmt: skip
        if kind == "evidence":
            dropped = sum(pc.sum(t.column("truncated")).as_py() or 0 for t in tally.dropped)
            earlier_truncated = int(earlier_file.counts.get("evidence_truncated", 0))
            notes["evidence_truncated"] = earlier_truncated - dropped + int(notes.get("evidence_truncated", 0))

    return buckets, mapped.next_base if mapped.leave_in_base else None


def _other_settings(kind: str, earlier_file: BucketFile, settings: GroupingSettings) -> str:
    """How the earlier build's grouping of ``kind`` was told otherwise than this one ("" when it
    was not): the sentences quoted per hop (evidence, papers) and the documents per hop (evidence)."""
    earlier_settings = {key: earlier_file.counts.get(key) for key in ("sentences_per_hop", "max_evidence")}
    settings_now = {"sentences_per_hop": settings.per_hop, "max_evidence": settings.max_evidence}
    if kind == "papers":
        del earlier_settings["max_evidence"], settings_now["max_evidence"]
    if kind in ("documents", "concepts"):  # a paper's or concept's own row: no setting changes it
        earlier_settings = settings_now = {}
    if earlier_settings == settings_now:
        return ""
    return f"the earlier build grouped with {earlier_settings}, this one {settings_now}"


# The tables each kind's records are grouped from (the evidence also from the concept--concept
# edges of a graph, the concepts from its vertex ids). Where all of them are the earlier build's,
# unchanged (a citation file), and so are the settings and that part of the graph
# (:func:`_other_graph`), the earlier bucket file is this build's: taken as it is
# (linked), instead of rebuilt bucket by bucket, which still read, checked and wrote every
# bucket (6-7 s each for the evidence and the papers of a 10M citation rerun).
RECORD_TABLES = {
    "documents": ("documents",),
    "concepts": ("concepts",),
    "evidence": ("predications", "documents", "sentences"),
    "papers": ("predications", "documents", "sentences"),
}
# The notes of a grouping about its own reuse, which a taken file's record does not repeat.
_REUSE_NOTES = ("_reuse", "_changed_keys", "_earlier_buckets", "_reused_buckets", "_decoded_buckets")


def _other_graph(kind: str, graph_dir: Path | None, earlier_root: Path) -> str:
    """How the part of the graph ``kind``'s records read differs from the earlier build's ("" when
    it does not): the evidence reads the concept--concept edges (the same graph: its digest), the
    concepts their vertex ids (the same concept vertices: concepts come first in vid order, so the
    same keys have the same ids, whatever the citations did to the abstracts after them)."""
    if kind not in NEEDS_GRAPH:
        return ""
    if graph_dir is None:
        return "no graph folder"
    try:
        record = json.loads(GraphFolder(graph_dir).counts.read_text())
        earlier_graph = GraphFolder(BuildLayout(earlier_root).graph(record.get("scope", "full")).graph_dir)
        if kind == "evidence":
            same = json.loads(earlier_graph.counts.read_text()).get("graph_digest") == record.get("graph_digest")
        else:
            same = _concept_vertices(GraphFolder(graph_dir)).equals(_concept_vertices(earlier_graph))
    except (OSError, ValueError, pa.ArrowInvalid):
        same = False
    return "" if same else "the graph's concept vertices or edges are not the earlier build's"


def _concept_vertices(graph: GraphFolder) -> pa.Array:
    """The keys of a graph's concept vertices, in vid order."""
    vertices = pq.read_table(graph.vertices, columns=["vid", "kind", "key"], filters=[("kind", "=", "concept")])
    return vertices.sort_by("vid").column("key").combine_chunks()


def taken_bucket_file(kind: str, tables_dir: Path, graph_dir: Path | None, settings: GroupingSettings,
                      out_path: Path) -> tuple[dict | None, str]:  # fmt: skip
    """The earlier build's bucket file of ``kind`` made ``out_path`` (a hard link, else a copy,
    put in place by a rename: a later grouping into this build never writes through it) when the
    records cannot differ: every table of :data:`RECORD_TABLES` is the earlier build's, the
    settings are the same and so is the part of the graph the kind reads (:func:`_other_graph`).
    Returns the file's counts, or None and why not."""
    if kind not in RECORD_TABLES:
        return None, "grouped whole"
    earlier, why = earlier_tables(tables_dir)
    if earlier is None:
        return None, why
    if not earlier.same(RECORD_TABLES[kind]):
        return None, f"the {', '.join(RECORD_TABLES[kind])} tables are not all the earlier build's"
    try:
        earlier_file = BucketFile.open(BuildLayout(earlier.root).bucket_file(kind), kind)
    except BucketFileError as error:
        return None, str(error)
    other_settings = _other_settings(kind, earlier_file, settings)
    if other_settings:
        return None, other_settings
    other_graph = _other_graph(kind, Path(graph_dir) if graph_dir is not None else None, earlier.root)
    if other_graph:
        return None, other_graph
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    bucket_file_record(out_path).unlink(missing_ok=True)  # incomplete until the record is written again
    _put_base(earlier_file.base, out_path)
    link_or_copy(earlier_file.path, out_path)
    counts = {key: value for key, value in earlier_file.counts.items() if not key.endswith(_REUSE_NOTES)}
    counts[f"{kind}_reuse"] = f"taken: build {earlier.name}'s file, whose tables and settings are this build's"
    _write_record(out_path, kind, counts, earlier_file.base is not None)
    return counts, ""


def rebuilt_records(records: KindRecords, tables_dir: Path, graph_dir: Path | None, settings: GroupingSettings,
                    earlier: EarlierBuild) -> KindRecords:  # fmt: skip
    """``records`` of ``kind`` (:func:`kind_records`), set to reuse the earlier build's buckets of
    the records that did not change (:mod:`pipeline.store.bucket_reuse`); as they were when the
    earlier build has no bucket file of the kind or too much changed (``notes`` says which)."""
    kind = records.kind
    earlier_file = earlier.bucket_file(kind) if kind in REUSED_KINDS else None
    if earlier_file is None:
        records.notes[f"{kind}_reuse"] = "none: " + ("grouped whole" if kind not in REUSED_KINDS
                                                     else "the earlier build has no bucket file of it")  # fmt: skip
        return records
    other_settings = _other_settings(kind, earlier_file, settings)
    if other_settings:  # the earlier records quote other numbers of sentences or documents
        records.notes[f"{kind}_reuse"] = f"none: {other_settings}"
        return records
    if kind == "documents":  # a paper's record is its own row: the papers merged again are the changed keys
        changed_papers = earlier.changed.cast(pa.string())
        changed = [(doc,) for doc in changed_papers.to_pylist()]

        def regroup_documents() -> pa.Table:
            rows = rows_with_values(table_path(tables_dir, "documents"), DOCUMENTS.names, "doc_id", changed_papers)
            return rows.cast(DOCUMENTS).sort_by("doc_id")

        expected = row_count(tables_dir, "documents") or 0
        records.rebuilt, records.base = _rebuilt(kind, earlier_file, changed, regroup_documents, expected, records.notes)
        return records
    # the papers redone and their predications before and now, read once: for the evidence's
    # pairs those name and the rows of the papers that went, or the papers' regrouping
    papers, changed_rows = redone_papers(tables_dir, earlier, GONE_ROW_COLUMNS if kind == "evidence" else PREDICATION_COLUMNS)
    if kind == "papers":
        changed = [(doc,) for doc in papers.to_pylist()]
        sources = ReadableSources.of_build(tables_dir, settings.per_hop)

        def regroup() -> pa.Table:
            # their rows now, in the table's order (what a scan of the table for them reads)
            rows = changed_rows[1].filter(pc.is_in(changed_rows[1]["doc_id"], value_set=papers))
            return group_papers(as_strings(rows), sources) if rows.num_rows else PAPERS.empty_table()

        path = table_path(tables_dir, "predications")
        expected = pc.count_distinct(ds.dataset(str(path), format="parquet").to_table(columns=["doc_id"])["doc_id"]).as_py() \
            if path is not None else 0
    else:  # evidence: the pairs those papers' predications join, and the edges added or removed
        keys, src, dst = concept_edges(graph_dir)
        edge_keys = (keys.take(pa.array(src)), keys.take(pa.array(dst)))  # concept_edge_keys(graph_dir)
        # the earlier build's graph of the same scope (the workflow groups the evidence from the
        # co-occurrence graph, whose edges are the full graph's concept-concept edges)
        scope = json.loads(GraphFolder(graph_dir).counts.read_text()).get("scope", "full")
        earlier_edges = concept_edges(BuildLayout(earlier.root).graph(scope).graph_dir)
        codes = _PairCodes(keys, earlier_edges[0])
        now, before = codes.of_edges(keys, src, dst), codes.of_edges(*earlier_edges)  # edges in file order
        rows_before, rows_now = (rows.filter(pc.is_in(rows["doc_id"].cast(pa.string()), value_set=papers))
                                 for rows in changed_rows)  # fmt: skip
        # papers with predications before and none now (an update file's deletions): the pairs
        # only they named are patched from the earlier records (pipeline.store.evidence_patch)
        doc_before = rows_before["doc_id"].combine_chunks().cast(pa.string())
        had_rows = pc.unique(doc_before)
        gone = had_rows.filter(pc.invert(pc.is_in(had_rows, value_set=rows_now["doc_id"].combine_chunks().cast(pa.string()))))
        of_gone = pc.is_in(doc_before, value_set=gone)
        gone_rows = rows_before.filter(of_gone)
        named_by_others = distinct_sorted(codes.named(rows_before.filter(pc.invert(of_gone))), codes.named(rows_now))
        named_by_gone = codes.named(gone_rows)
        changed_codes, grouped_again, patched_here = _pairs_to_redo(now, before, named_by_others, named_by_gone)
        changed = codes.pairs(changed_codes)

        def regroup() -> pa.Table:
            patch = codes.pairs(now[patched_here])
            found = _earlier_records(earlier_file, patch)
            patched, unpatched = records_without_papers(found, gone_rows_by_pair(as_strings(gone_rows)),
                                                        settings.max_evidence, settings.per_hop)  # fmt: skip
            missing = sorted(set(patch) - set(pair_keys(found["cui_a"], found["cui_b"])))
            again = pa.array(grouped_again | np.isin(now, codes.of_pairs(unpatched + missing)))
            subset = (edge_keys[0].filter(again), edge_keys[1].filter(again))
            grouped = list(evidence_tables(tables_dir, subset, 1 << 18, 1, settings.spill_dir,
                                           max_evidence=settings.max_evidence, sentences_per_hop=settings.per_hop)) \
                if len(subset[0]) else []  # fmt: skip
            table = pa.concat_tables([patched, *grouped]).sort_by([("cui_a", "ascending"), ("cui_b", "ascending")])
            records.notes.update({"evidence_partitions": 1, "evidence_patched": patched.num_rows,
                                  "evidence_truncated": pc.sum(table.column("truncated")).as_py() or 0})  # fmt: skip
            return table

        expected = len(edge_keys[0])
    records.rebuilt, records.base = _rebuilt(kind, earlier_file, changed, regroup, expected, records.notes)
    return records


def group_kind(kind: str, tables_dir: Path, graph_dir: Path | None, settings: GroupingSettings, out_path: Path,
               reuse: bool = True, progress_for: Callable[[int | None, str], Progress] | None = None,
               ) -> dict:  # fmt: skip
    """``litpath bucket-records``: group ``kind``'s records into the bucket file ``out_path``; with
    ``reuse``, on top of the earlier build of a merge on the delta where there is one
    (:class:`EarlierBuild`, :func:`rebuilt_records`), else afresh. Returns the file's counts; its
    ``<kind>_reuse`` says which it was and why. ``progress_for(total, unit)`` gives the progress
    line of a grouping (:func:`_told`)."""
    if reuse:
        taken, _ = taken_bucket_file(kind, tables_dir, graph_dir, settings, out_path)
        if taken is not None:
            return taken
    earlier, why = EarlierBuild.of(tables_dir) if reuse else (None, "reuse turned off (--no-reuse)")
    records = kind_records(kind, tables_dir, graph_dir, settings)
    if earlier is None:
        records.notes[f"{kind}_reuse"] = f"none: {why}"
        return write_bucket_file(out_path, kind, records, _told(records, progress_for))
    # On an earlier build the line counts the rows written, and starts before the rebuild's
    # regrouping of the changed records, whose time it includes; the reused buckets stream after
    # it. Where too much changed, the records are grouped afresh under the same line.
    line = progress_for(records.total, "rows") if progress_for is not None else None
    tell = line.update if line is not None else None
    records = rebuilt_records(records, tables_dir, graph_dir, settings, earlier)
    records.work = None
    try:
        return write_bucket_file(out_path, kind, records, tell)
    except (ReuseMismatch, BucketFileError) as error:
        # the check of the rebuild failed: the earlier build is no base for this one; group afresh
        log.warning("%s: %s; grouping every record afresh", kind, error)
        records = kind_records(kind, tables_dir, graph_dir, settings)
        records.notes[f"{kind}_reuse"] = f"none: {error}"
        records.work = None
        return write_bucket_file(out_path, kind, records, tell)


def _told(records: KindRecords, progress_for: Callable[[int | None, str], Progress] | None,
          ) -> Callable[[int], None] | None:  # fmt: skip
    """The progress line of records grouped afresh, and what :func:`write_bucket_file` tells it:
    the rows written, or nothing where the records are grouped in phases, whose work
    (``records.work``, in percent) the line counts instead."""
    if progress_for is None:
        return None
    if records.work is not None:
        records.work.line = progress_for(100, PERCENT)
        return None
    return progress_for(records.total, "rows").update


# -- bucket files


def write_bucket_file(path: Path, kind: str, records: KindRecords,
                      progress: Callable[[int], None] | None = None) -> dict[str, int]:  # fmt: skip
    """Group ``records`` into buckets and write them to ``path`` (atomically: a temporary file
    renamed over it once complete); return the counts (rows and buckets, and the grouping's notes),
    which also go into the file's metadata. ``progress`` gets the rows bucketed so far."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    bucket_file_record(path).unlink(missing_ok=True)  # incomplete until the record is written again
    _put_base(records.base, path)
    tmp = path.with_name(f".{path.name}.tmp")
    rows = buckets = in_base = 0
    batch: list[Bucket] = []
    with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, BUCKET_FILE) as writer:

        def flush() -> None:
            if batch:
                writer.write_table(_bucket_table(batch))
                batch.clear()

        for bucket in records.buckets():
            if bucket.in_base and records.base is None:
                raise BucketFileError(f"{path}: bucket {bucket.bucket_id} left in a base file, but none was named")
            batch.append(bucket)
            rows += bucket.rows
            buckets += 1
            in_base += bucket.in_base
            if len(batch) >= _BATCH_BUCKETS:
                flush()
                if progress is not None:
                    progress(rows)
        flush()
    counts = {f"{kind}_in_build": rows, f"{kind}_buckets": buckets, **records.notes}
    if records.base is not None:
        counts[f"{kind}_base_buckets"] = in_base
    tmp.replace(path)
    _write_record(path, kind, counts, records.base is not None)
    return counts


def _put_base(base: Path | None, path: Path) -> None:
    """The base file of the bucket file ``path`` made ``base`` (hard-linked, else copied), or
    removed when it has none; before the file itself, whose record is written last."""
    target = bucket_file_base(path)
    if base is None:
        target.unlink(missing_ok=True)
    elif not (target.exists() and target.samefile(base)):
        link_or_copy(base, target)


def _write_record(path: Path, kind: str, counts: dict, with_base: bool) -> None:
    # The counts are known only once every bucket is written, after the IPC file's schema: they go
    # into a JSON record beside it, written last, so that a file without its record is incomplete.
    record = {"kind": kind, "store_format": STORE_FORMAT, "counts": counts}
    if with_base:
        record["base"] = bucket_file_base(path).name
    write_atomically(bucket_file_record(path), json.dumps(record, indent=1, sort_keys=True))


def _bucket_table(buckets: list[Bucket]) -> pa.Table:
    return pa.table(
        {
            "bucket_id": [b.bucket_id for b in buckets],
            "first": [[None if v is None else str(v) for v in b.first] for b in buckets],
            "rows": [b.rows for b in buckets],
            "data": pa.array([None if b.in_base else b.data for b in buckets], pa.large_binary()),
        },
        schema=BUCKET_FILE,
    )


class BucketFileError(ValueError):
    """A bucket file that cannot be used: missing its record, of another kind or store format."""


@dataclass(frozen=True)
class BucketFile:
    """A bucket file written by :func:`write_bucket_file`, checked for its kind and store format;
    ``base``: the complete bucket file beside it that holds the bytes of the buckets it lists
    without them (a rerun's reused buckets), None when it holds every bucket's bytes itself."""

    path: Path
    kind: str
    counts: dict[str, int]
    base: Path | None = None

    @classmethod
    def open(cls, path: Path, kind: str) -> BucketFile:
        path = Path(path)
        record = bucket_file_record(path)
        if not path.exists() or not record.exists():
            raise BucketFileError(f"{path}: no complete bucket file (run `litpath bucket-records --kind {kind}`)")
        try:
            meta = json.loads(record.read_text())
        except (OSError, ValueError) as error:
            raise BucketFileError(f"{record}: unreadable ({error})") from error
        if meta.get("kind") != kind:
            raise BucketFileError(f"{path}: holds {meta.get('kind')!r} buckets, not {kind!r}")
        if meta.get("store_format") != STORE_FORMAT:
            raise BucketFileError(
                f"{path}: store format {meta.get('store_format')!r}, this litpath writes {STORE_FORMAT}: "
                "group the records again"
            )
        base = None
        if meta.get("base"):
            base = path.with_name(str(meta["base"]))
            if base.name != bucket_file_base(path).name or not base.exists():
                raise BucketFileError(f"{path}: the bytes of its reused buckets are in {base}, which is missing "
                                      f"(run `litpath bucket-records --kind {kind} --no-reuse`)")  # fmt: skip
        return cls(path, kind, dict(meta.get("counts") or {}), base)

    def buckets(self, listed_only: set[str] | frozenset[str] = frozenset()) -> Iterator[Bucket | ListedBucket]:
        """The file's buckets, in key order, each read (and checked) as it is yielded; those whose
        id is in ``listed_only`` (the store holds them) as :class:`ListedBucket`, unread: a load on
        top of an earlier build reads only what it sends (at 10M predications the evidence's
        400 MB were read and hashed to send none of it)."""
        mapped = self.mapped()
        try:
            for index in range(len(mapped.firsts)):
                yield mapped.listed(index) if mapped.ids[index] in listed_only else mapped.bucket(index)
        finally:
            mapped.close()

    def mapped(self) -> MappedBuckets:
        """The file's buckets for random access: first keys and rows read now, bytes on demand."""
        return MappedBuckets(self)


class MappedBuckets:
    """A bucket file memory-mapped: ``firsts`` and ``rows`` of every bucket, in key order, and
    ``bucket(i)``, which reads (and checks) one bucket's bytes only when asked, from the file or
    from its base. Set ``leave_in_base`` and :meth:`reused` leaves the bytes that are in
    :attr:`next_base` there, for a rebuild whose new file has that base."""

    def __init__(self, file: BucketFile) -> None:
        self.file = file
        self.leave_in_base = False
        self._base: tuple[pa.MemoryMappedFile, pa.ChunkedArray, dict[str, int]] | None = None
        self._source = pa.memory_map(str(file.path), "r")
        table = ipc.open_file(self._source).read_all()  # the bytes stay on disk until a bucket is read
        self.firsts = [tuple(first) for first in table.column("first").to_pylist()]
        key_columns = len(KEYS[file.kind])
        for index, first in enumerate(self.firsts):
            if len(first) != key_columns:
                self._source.close()
                raise BucketFileError(f"{file.path}: bucket {index} has a key of {len(first)} columns, "
                                      f"{file.kind} has {key_columns}")  # fmt: skip
        self.rows = table.column("rows").to_pylist()
        self.ids = table.column("bucket_id").to_pylist()
        self._data = table.column("data")
        # which buckets' bytes are in the base file (a complete file: none of its own are)
        self._in_base = pc.is_null(self._data).to_numpy(zero_copy_only=False) if file.base is not None \
            else np.zeros(len(self.ids), dtype=bool)  # fmt: skip

    @property
    def next_base(self) -> Path:
        """The complete bucket file a rebuild on this one leaves reused bytes in: its base, or the
        file itself when it has none."""
        return self.file.base if self.file.base is not None else self.file.path

    def bytes_in_next_base(self, index: int) -> bool:
        return self.file.base is None or bool(self._in_base[index])

    def _bytes(self, index: int) -> bytes:
        if not self._in_base[index]:
            return self._data[index].as_py()
        if self._base is None:
            source = pa.memory_map(str(self.file.base), "r")
            table = ipc.open_file(source).read_all()
            self._base = (source, table.column("data"), {bid: i for i, bid in enumerate(table.column("bucket_id").to_pylist())})
        _, data, where = self._base
        at = where.get(self.ids[index])
        if at is None or not data[at].is_valid:
            raise BucketFileError(f"{self.file.path}: bucket {self.ids[index]} is in neither the file nor its base "
                                  f"{self.file.base}")  # fmt: skip
        return data[at].as_py()

    def bucket(self, index: int) -> Bucket:
        bucket = Bucket(first=self.firsts[index], rows=self.rows[index], data=self._bytes(index))
        if bucket.bucket_id != self.ids[index]:
            where = f"its base {self.file.base}" if self._in_base[index] else "the file"
            raise BucketFileError(f"{self.file.path}: bucket {self.ids[index]} does not match its bytes in {where}")
        return bucket

    def index_for(self, key: tuple) -> int | None:
        """The index of the bucket that would hold ``key`` (the last one whose first key is not
        greater), or None before the first bucket (as a store listing's ``bucket_for``)."""
        at = bisect.bisect_right(self.firsts, key) - 1
        return at if at >= 0 else None

    def reused(self, index: int) -> Bucket:
        """Bucket ``index`` for a rebuild that takes it as it is, with the id the file lists, not
        hashed again (1.1 GB of the 10M papers' buckets: 1.75 s); a load checks the bytes of every
        bucket it reads (:meth:`bucket`). Its bytes, or none when ``leave_in_base`` and they are in
        :attr:`next_base` (``in_base``)."""
        if self.leave_in_base and self.bytes_in_next_base(index):
            return Bucket(first=self.firsts[index], rows=self.rows[index], data=b"", listed_id=self.ids[index],
                          in_base=True)  # fmt: skip
        return Bucket(first=self.firsts[index], rows=self.rows[index], data=self._bytes(index),
                      listed_id=self.ids[index])  # fmt: skip

    def listed(self, index: int) -> ListedBucket:
        """Bucket ``index`` as the file lists it, its bytes left unread."""
        return ListedBucket(first=self.firsts[index], rows=self.rows[index], bucket_id=self.ids[index])

    def close(self) -> None:
        self._source.close()
        if self._base is not None:
            self._base[0].close()
