"""The evidence of a build's concept--concept edges, grouped from its predications table: for each
edge (cui_a < cui_b), the distinct documents and sentence ids of the predications that join the two
concepts, and how many distinct predications that is (:func:`evidence_tables`); and what a reader
can judge the hop by: its predicates with their counts, and up to ``sentences_per_hop`` of the
sentences they were read from, quoted (:func:`group_evidence` given :class:`ReadableSources`).

**Predicates.** Every predication joining the two concepts counts, in either direction (A TREATS B
and B TREATS A both count for TREATS on the pair; each sentence entry says which concept was the
subject), once per distinct PREDICATION_ID; ``NEG_TREATS`` is its own predicate, never folded into
``TREATS``. Listed by count, most first, then by name.

**Sentences.** One entry per distinct (sentence, predicate, subject) on the pair -- a sentence that
states two predicates of the pair is quoted for each -- chosen deterministically: the most recent
publication year first (papers without a year last), then the smallest PMID, then the smallest
sentence id, predicate and subject. Each entry has the sentence id, PMID, year, predicate, subject
and the text from the merged sentences table (capped at 500 characters there; null when the build
has no text for it).

The rows come in edge order -- the graph's (src, dst) order, which is (cui_a, cui_b) order since
vertex ids follow the sorted keys -- which is the key order the store's buckets need
(:mod:`pipeline.store.buckets`). Lists are sorted and capped at ``max_evidence`` entries so that a
hub pair stays small; ``n_documents`` counts them all and ``truncated`` says when the cap cut.

Grouping holds about :data:`EVIDENCE_BYTES_PER_ROW` per predication row on an edge (6.3 GB at 30M
predications in one piece), so beyond the memory budget the rows are spilled to Arrow IPC
partitions of contiguous edge ranges and grouped one partition at a time, which gives the same
rows in the same order. The readable evidence adds, per partition, a lookup of every paper's year
(doc_id and year of the documents table, held once for the whole load: about 40 bytes a paper)
and one scan of the sentences table for the text of the sentences chosen in that partition (at
most ``sentences_per_hop`` per edge of it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import table_path
from pipeline.config import default_of
from pipeline.runtime.columnar import distinct_sorted, positions_in, string_codes, sum_by_key
from pipeline.runtime.filtered_reads import kept_batches, rows_with_values
from pipeline.runtime.progress import PhasedWork
from pipeline.runtime.resources import SpillFolder

# Memory the grouping holds per predication row (the rows, Arrow's hash groupings and distinct
# lists, the per-statement table of the readable evidence, the texts quoted): 734 bytes measured
# on a 300k-predication calibrated build, 651 on a 1M one (bench/results/readable_evidence.md,
# one piece), rounded up. It
# predicts the 30M run: its load, partitioned by the 400 bytes fitted before, peaked at 12.4 GiB,
# about 760 bytes for each of a partition's 15M rows (bench/results/scale_runs.md). A partition
# gets half the budget (:func:`evidence_partitions`): the edge keys, the papers' years, the bucket
# being written and the memory pool's slack are held beside it.
EVIDENCE_BYTES_PER_ROW = 750
EVIDENCE_ROWS = pa.schema(
    [
        ("edge", pa.int32()),
        ("doc_id", pa.string()),
        ("sentence_id", pa.int64()),
        ("predication_id", pa.int64()),
        ("predicate", pa.string()),
        ("subject_cui", pa.string()),
    ]
)
PREDICATE_COUNT = pa.struct([("predicate", pa.string()), ("count", pa.int64())])
SENTENCE = pa.struct(
    [
        ("sentence_id", pa.int64()),
        ("pmid", pa.int64()),
        ("year", pa.int32()),
        ("predicate", pa.string()),
        ("subject", pa.string()),
        ("text", pa.string()),
    ]
)
EVIDENCE = pa.schema(
    [
        ("cui_a", pa.string()),
        ("cui_b", pa.string()),
        ("documents", pa.list_(pa.string())),
        ("sentence_ids", pa.list_(pa.int64())),
        ("n_documents", pa.int64()),
        ("n_predications", pa.int64()),
        ("truncated", pa.bool_()),
        ("predicates", pa.list_(PREDICATE_COUNT)),
        ("sentences", pa.list_(SENTENCE)),
    ]
)


def concept_edges(graph_dir: Path) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(the graph's concept keys in vid order, the src and dst vids of its concept--concept edges
    in edges.parquet's order). Concepts come first, their vids in key order (docs/design.md §5),
    and src < dst, so an edge is concept--concept when its dst is a concept: no need to read the
    kind column, which Parquet hands back as a string per edge."""
    vertices = pq.read_table(GraphFolder(graph_dir).vertices, columns=["kind", "key"])
    n_concepts = int(pc.sum(pc.equal(vertices["kind"], "concept")).as_py() or 0)
    keys = vertices["key"].combine_chunks().slice(0, n_concepts)
    edges = pq.read_table(GraphFolder(graph_dir).edges, columns=["src", "dst"])
    src, dst = edges["src"].to_numpy(), edges["dst"].to_numpy()
    concept_concept = dst < n_concepts
    return keys, src[concept_concept], dst[concept_concept]


def concept_edge_keys(graph_dir: Path) -> tuple[pa.Array, pa.Array]:
    """(cui_a, cui_b) of every concept--concept edge of the graph, in edges.parquet's order
    (vertex keys are sorted, so src < dst gives cui_a < cui_b)."""
    keys, src, dst = concept_edges(graph_dir)
    return keys.take(pa.array(src)), keys.take(pa.array(dst))


def evidence_partitions(predication_rows: int, budget_bytes: int) -> int:
    """How many partitions the evidence of ``predication_rows`` needs to be grouped within
    ``budget_bytes``, each in half of it (1: in memory, in one piece)."""
    return max(1, -(-predication_rows * EVIDENCE_BYTES_PER_ROW // max(budget_bytes // 2, 1)))


class _EdgeIndex:
    """Finds the concept--concept edge of a (subject, object) pair by integers, not strings: each
    concept of an edge gets its rank among the edges' concepts (sorted, so rank order is key
    order), each edge the code ``rank_a * n + rank_b``, and a pair's code is looked up by binary
    search in the sorted codes. Looking the pair up as a joined "cui_a|cui_b" string instead hashed
    every edge's key again for each batch of predications (Arrow's set lookups build their table
    per call): at 30M predications, 4.9M keys for each of 116 batches, about 2 of the load's 9 min."""

    def __init__(self, edge_keys: tuple[pa.Array, pa.Array]) -> None:
        concepts = pc.unique(pa.concat_arrays([_plain(edge_keys[0]), _plain(edge_keys[1])]))
        self.concepts = pc.take(concepts, pc.sort_indices(concepts))
        self.n = max(len(self.concepts), 1)
        codes = self._ranks(edge_keys[0]) * self.n + self._ranks(edge_keys[1])
        self.order = np.argsort(codes, kind="stable")
        self.sorted_codes = codes[self.order]

    def _ranks(self, cuis: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Each cui's rank among the edges' concepts, -1 for a cui on no edge."""
        # The set lookup hashes its value set on every call: looking a batch's cuis up among the
        # 293k concepts (30M build) costs 0.14 s a batch for the hashing alone; looking the
        # concepts up among the batch's few distinct cuis hashes only those.
        encoded = pc.dictionary_encode(_plain(cuis))
        rank_of_distinct = positions_in(encoded.dictionary, self.concepts)
        return rank_of_distinct[encoded.indices.to_numpy(zero_copy_only=False)]

    def edges_of(self, subjects: pa.Array, objects: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(which pairs are an edge, the edge index of each of those), pairs taken either way round."""
        s, o = self._ranks(subjects), self._ranks(objects)
        code = np.minimum(s, o) * self.n + np.maximum(s, o)
        # searched in sorted order: a binary search of 4.9M codes per pair in the batch's order
        # misses the cache at every step (0.2 s a batch at 30M), in sorted order it mostly hits
        by_code = np.argsort(code)
        position = np.empty_like(by_code)
        position[by_code] = np.searchsorted(self.sorted_codes, code[by_code])
        position[position == len(self.sorted_codes)] = 0
        keep = (s >= 0) & (o >= 0) & (len(self.sorted_codes) > 0)
        if len(self.sorted_codes):
            keep &= self.sorted_codes[position] == code
        return keep, self.order[position[keep]].astype(np.int32)


def _plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return (array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array).cast(pa.string())


# Up to this many edges (a rerun grouping the pairs a changed paper named again,
# pipeline.store.record_buckets), the scan first keeps, in Arrow, the predications whose two
# concepts are both among the edges' concepts: a row on an edge always is, and only those rows
# reach the edge index. The 10M update rerun's 134 pairs: 1.0M of the 10M rows kept, the scan
# 1.4-1.9 s against 3.1-3.9 s (alternate runs). Grouping every edge, the filter would keep all.
FILTERED_SCAN_EDGES = 50_000


def _evidence_rows(tables_dir: Path, edge_keys: tuple[pa.Array, pa.Array], batch_rows: int,
                   work: PhasedWork | None = None) -> Iterator[pa.Table]:  # fmt: skip
    """Per batch of predications: the rows on a concept--concept edge, by edge index; each batch
    read told to ``work`` (as the "read" phase's part of every predication)."""
    path = table_path(tables_dir, "predications")
    if path is None:
        raise FileNotFoundError(f"{tables_dir / 'predications.parquet'} not found (needed for evidence)")
    index = _EdgeIndex(edge_keys)
    columns = ["predication_id", "doc_id", "sentence_id", "predicate", "subject_cui", "object_cui"]

    filtered = len(edge_keys[0]) <= FILTERED_SCAN_EDGES

    def on_edge_concepts(batch: pa.RecordBatch) -> pa.Array | None:
        if not filtered:
            return None
        return pc.and_(pc.is_in(batch.column("subject_cui"), value_set=index.concepts),
                       pc.is_in(batch.column("object_cui"), value_set=index.concepts))  # fmt: skip

    predications = pq.ParquetFile(path).metadata.num_rows if work is not None else 0
    for batch in kept_batches(path, columns, on_edge_concepts, batch_rows=batch_rows):
        if work is not None:  # every batch, unfiltered where the work is told (every edge grouped)
            work.advance("read", batch.num_rows, predications)
        s = batch.column("subject_cui")
        keep, edge = index.edges_of(s, batch.column("object_cui"))
        keep = pa.array(keep)
        yield pa.table(
            [
                pa.array(edge, pa.int32()),
                pc.filter(batch.column("doc_id"), keep),
                pc.filter(batch.column("sentence_id"), keep),
                pc.filter(batch.column("predication_id"), keep),
                pc.filter(batch.column("predicate"), keep).cast(pa.string()),
                pc.filter(s, keep).cast(pa.string()),
            ],
            schema=EVIDENCE_ROWS,
        )


def _distinct_pairs(group: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (group, value) pairs of the rows (``group`` nonnegative: an edge, or an edge
    and a predicate joined), in (group, value) order: (their groups, their values). One sort of
    each pair joined into an int64 key (:func:`distinct_sorted`), where both fit in one; else a
    sort of the two."""
    if len(group) == 0:
        return group.astype(np.int64), values
    low = int(values.min())
    width = int(values.max()) - low + 1
    if (int(group.max()) + 1) * width < 2**62:
        key = distinct_sorted(group.astype(np.int64) * width + (values.astype(np.int64) - low))
        return key // width, (key % width + low).astype(values.dtype)
    order = np.lexsort((values, group))
    group, values = group[order], values[order]
    new = np.r_[True, (group[1:] != group[:-1]) | (values[1:] != values[:-1])]
    return group[new].astype(np.int64), values[new]


def _capped_lists(lengths: np.ndarray, values: np.ndarray, cap: int) -> pa.Array:
    """``values`` (grouped in runs of ``lengths``, each run sorted) as one list per run, each cut
    to its first ``cap`` values."""
    position = np.arange(len(values)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    offsets = np.r_[0, np.cumsum(np.minimum(lengths, cap))].astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[position < cap]))


def _without_nulls(column: pa.ChunkedArray, name: str) -> np.ndarray:
    """The values of a column the grouping needs whole (the predications table has no null
    there): a null is an error naming the column, never grouped as some value."""
    if column.null_count:
        raise ValueError(f"evidence rows: {column.null_count:,} null {name} values (the predications table has none)")
    return column.to_numpy()


@dataclass(frozen=True)
class ReadableSources:
    """What the readable evidence reads beside the predications: each paper's year (doc_id, year),
    the merged sentences table (None when the build has none: texts null), and how many sentences
    a hop keeps."""

    years: pa.Table
    sentences: Path | None
    sentences_per_hop: int

    @classmethod
    def of_build(cls, tables_dir: Path, sentences_per_hop: int) -> ReadableSources:
        documents = table_path(tables_dir, "documents")
        years = (
            ds.dataset(str(documents), format="parquet").to_table(columns=["doc_id", "year"])
            if documents is not None
            else pa.table({"doc_id": pa.array([], pa.string()), "year": pa.array([], pa.int32())})
        )
        return cls(years.cast(_YEARS), table_path(tables_dir, "sentences"), sentences_per_hop)


_YEARS = pa.schema([("doc_id", pa.string()), ("year", pa.int32())])


def lists_by_owner(values: pa.Table, owners: np.ndarray, n_owners: int, value_type: pa.DataType) -> pa.Array:
    """``values`` (rows sorted by owner, owners in 0..n_owners-1) as one list per owner."""
    counts = np.bincount(owners, minlength=n_owners)
    offsets = pa.array(np.r_[0, np.cumsum(counts)].astype(np.int32))
    columns = [column.combine_chunks().cast(field.type) for column, field in zip(values.columns, value_type, strict=True)]
    return pa.ListArray.from_arrays(offsets, pa.StructArray.from_arrays(columns, fields=list(value_type)))


def sorted_codes(*columns: pa.ChunkedArray | pa.Array) -> tuple[list[np.ndarray], pa.Array]:
    """The strings of ``columns`` as int32 codes into one sorted dictionary (returned with them):
    codes compare as their strings do, so grouping and sorting by codes gives the strings' order.
    Arrow groups and sorts integers several times faster than strings (a 2.4M-predication range
    of the 30M build: the statements' grouping 1.4 s on strings, 0.3 s on codes)."""
    chunks = [chunk for column in columns for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column])]
    codes, dictionary = string_codes(chunks)
    ends = np.cumsum([len(column) for column in columns])
    return [part.astype(np.int32) for part in np.split(codes, ends[:-1])], dictionary


@dataclass(frozen=True)
class _CodedRows:
    """A partition's evidence rows with doc_id, predicate and subject_cui as sorted int32 codes
    (:func:`sorted_codes`), and the three dictionaries that decode them. The grouping groups and
    sorts the codes and decodes only what it keeps: on strings, hashing and comparing doc_ids was
    most of the evidence's grouping time."""

    rows: pa.Table  # edge, doc, sentence_id, predication_id, predicate, subject
    doc_ids: pa.Array
    predicates: pa.Array
    cuis: pa.Array
    _arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def array(self, name: str) -> np.ndarray:
        """A column of :attr:`rows` as a numpy array, null-checked (:func:`_without_nulls`) and
        converted once for every grouping that sorts by it."""
        if name not in self._arrays:
            self._arrays[name] = _without_nulls(self.rows[name], "doc_id" if name == "doc" else name)
        return self._arrays[name]

    @classmethod
    def of(cls, rows: pa.Table) -> _CodedRows:
        (doc,), doc_ids = sorted_codes(rows["doc_id"])
        (predicate,), predicates = sorted_codes(rows["predicate"])
        (subject,), cuis = sorted_codes(rows["subject_cui"])
        coded = pa.table({"edge": rows["edge"], "doc": doc, "sentence_id": rows["sentence_id"],
                          "predication_id": rows["predication_id"], "predicate": predicate, "subject": subject})  # fmt: skip
        return cls(coded, doc_ids, predicates, cuis)


def _decoded_lists(codes: pa.Array, dictionary: pa.Array) -> pa.Array:
    """Lists of codes as lists of the dictionary's values."""
    return pa.ListArray.from_arrays(codes.offsets, pc.take(dictionary, codes.flatten()))


def _predicate_counts(coded: _CodedRows, edges: pa.Array) -> pa.Array:
    """Per edge of ``edges`` (ascending): [{predicate, count}] -- distinct predications per
    predicate, both directions together -- most first, then by name."""
    # (edge, predicate) joined into one group key, its distinct predications by a sort (as the
    # documents and sentences in :func:`group_evidence`; Arrow's hash aggregation and a sort of the
    # counts took 1.03 s of CPU against 0.66 on a 5M-row partition of the 10M build,
    # bench/grouped_distinct.py)
    n_predicates = max(len(coded.predicates), 1)
    group = coded.array("edge").astype(np.int64) * n_predicates + coded.array("predicate")
    group_of_pair, _ = _distinct_pairs(group, coded.array("predication_id"))
    groups, count = sum_by_key(group_of_pair)  # each group's distinct predications
    edge, predicate = groups // n_predicates, groups % n_predicates
    order = np.lexsort((predicate, -count, edge))  # by edge; most predications first, then by name (code order)
    owners = np.searchsorted(edges.to_numpy(), edge[order])
    values = pa.table({"predicate": pc.take(coded.predicates, pa.array(predicate[order].astype(np.int32))),
                       "count": pa.array(count[order])})  # fmt: skip
    return lists_by_owner(values, owners, len(edges), PREDICATE_COUNT)


def _chosen_sentences(coded: _CodedRows, edges: pa.Array, sources: ReadableSources) -> pa.Array:
    """Per edge of ``edges`` (ascending): up to ``sentences_per_hop`` sentence entries, by the
    rule of the module docstring (most recent year, then PMID, sentence id, predicate, subject)."""
    statements = coded.rows.group_by(["edge", "sentence_id", "predicate", "subject", "doc"], use_threads=False).aggregate([])
    # year and PMID once per distinct paper, then per statement by its paper's code
    doc = statements["doc"]
    statements = statements.append_column("year", pc.take(_years_of(coded.doc_ids, sources.years), doc))
    pmid = pc.cast(pc.if_else(pc.starts_with(coded.doc_ids, "PMID:"), pc.utf8_slice_codeunits(coded.doc_ids, 5), None),
                   pa.int64())  # fmt: skip
    statements = statements.append_column("pmid", pc.take(pmid, doc))
    order = pc.sort_indices(
        statements,
        sort_keys=[(name, order, "at_end") for name, order in (
            ("edge", "ascending"), ("year", "descending"), ("pmid", "ascending"), ("sentence_id", "ascending"),
            ("predicate", "ascending"), ("subject", "ascending"))],
    )  # fmt: skip
    statements = statements.take(order)
    edge = statements["edge"].to_numpy()
    first = np.r_[0, np.flatnonzero(np.diff(edge)) + 1] if len(edge) else np.zeros(0, np.int64)
    rank = np.arange(len(edge)) - np.repeat(first, np.diff(np.r_[first, len(edge)]))
    statements = statements.filter(pa.array(rank < sources.sentences_per_hop))
    texts = sentence_texts(sources.sentences, statements["sentence_id"])
    position = pc.index_in(statements["sentence_id"], value_set=texts["sentence_id"])
    values = pa.table(
        {
            "sentence_id": statements["sentence_id"],
            "pmid": statements["pmid"],
            "year": statements["year"],
            "predicate": pc.take(coded.predicates, statements["predicate"]),
            "subject": pc.take(coded.cuis, statements["subject"]),
            "text": pc.take(texts["text"], position),
        }
    )
    owners = np.searchsorted(edges.to_numpy(), statements["edge"].to_numpy())
    return lists_by_owner(values, owners, len(edges), SENTENCE)


def _years_of(doc_ids: pa.ChunkedArray, years: pa.Table) -> pa.ChunkedArray:
    """Each doc_id's year in ``years`` (doc_id, year; one row a paper), null where it has none.
    The years' doc_ids are looked up among the distinct doc_ids asked for, so only those are
    hashed: a join with ``years`` (or a lookup the other way) hashed all the build's papers, 8.9M
    at 30M, for every partition (1.8 s of a 2.4M-row partition's 6.7 s)."""
    encoded = pc.dictionary_encode(doc_ids.combine_chunks() if isinstance(doc_ids, pa.ChunkedArray) else doc_ids)
    row_of_distinct = positions_in(encoded.dictionary, years["doc_id"])
    row = row_of_distinct[encoded.indices.to_numpy(zero_copy_only=False)]
    return pc.take(years["year"], pa.array(row, mask=row < 0))


def sentence_texts(sentences: Path | None, wanted: pa.ChunkedArray) -> pa.Table:
    """sentence_id, text of the ``wanted`` sentences found in the sentences table (one scan)."""
    wanted = pc.unique(wanted.combine_chunks() if isinstance(wanted, pa.ChunkedArray) else wanted)
    if sentences is None or len(wanted) == 0:
        return pa.table({"sentence_id": pa.array([], pa.int64()), "text": pa.array([], pa.string())})
    # The row groups whose sentence ids leave no room for a wanted one are skipped. The merge
    # writes the sentences in the order it finds them, which for SemMedDB's sentence file is id
    # order: at 30M a paper range's sentences (paper_evidence) lie in a third of the table's row
    # groups, and the scan took 1.9 s, not 9.4.
    found = rows_with_values(sentences, ["sentence_id", "text"], "sentence_id", wanted)
    return found.combine_chunks()


def group_evidence(
    rows: pa.Table, edge_keys: tuple[pa.Array, pa.Array], max_evidence: int, sources: ReadableSources | None = None
) -> pa.Table:
    """Per edge of ``rows``, in edge order: distinct documents and sentence ids (sorted, capped at
    ``max_evidence``), distinct predications counted; with ``sources``, the readable evidence
    (predicates and sentences), else those two null."""
    coded = _CodedRows.of(rows)
    # Each edge's distinct documents, sentences and predications by a sort of (edge, value) keys,
    # which leaves each edge's values in order: Arrow's hash aggregation of the three (distinct,
    # distinct, count_distinct) and then a sort of each list took 4.95 s of CPU against 2.57 on a
    # 5M-row partition of the 10M build, with the same records (bench/grouped_distinct.py, AMD EPYC);
    # a first build groups two such partitions.
    edge_of_row = coded.array("edge")
    doc_edge, doc = _distinct_pairs(edge_of_row, coded.array("doc"))
    sentence_edge, sentence = _distinct_pairs(edge_of_row, coded.array("sentence_id"))
    predication_edge, _ = _distinct_pairs(edge_of_row, coded.array("predication_id"))
    # every edge of the rows has a document, a sentence and a predication (none null): the three
    # count the same edges, ascending
    edges, n_documents = sum_by_key(doc_edge)
    n_sentences, n_predications = sum_by_key(sentence_edge)[1], sum_by_key(predication_edge)[1]
    documents = _decoded_lists(_capped_lists(n_documents, doc, max_evidence), coded.doc_ids)  # code order is doc_id order
    sentences = _capped_lists(n_sentences, sentence, max_evidence)
    edge = pa.array(edges.astype(np.int32))
    if sources is None:
        predicates = pa.nulls(len(edge), EVIDENCE.field("predicates").type)
        quoted = pa.nulls(len(edge), EVIDENCE.field("sentences").type)
    else:
        predicates, quoted = _predicate_counts(coded, edge), _chosen_sentences(coded, edge, sources)
    return pa.table(
        [
            pc.take(edge_keys[0], edge),
            pc.take(edge_keys[1], edge),
            documents.cast(EVIDENCE.field("documents").type),
            sentences.cast(EVIDENCE.field("sentence_ids").type),
            pa.array(n_documents, pa.int64()),
            pa.array(n_predications, pa.int64()),
            pa.array((n_documents > max_evidence) | (n_sentences > max_evidence)),
            predicates,
            quoted,
        ],
        schema=EVIDENCE,
    )


def evidence_tables(
    tables_dir: Path,
    edge_keys: tuple[pa.Array, pa.Array],
    batch_rows: int,
    partitions: int,
    spill_parent: Path,
    max_evidence: int = 1_000,
    sentences_per_hop: int | None = None,
    work: PhasedWork | None = None,
) -> Iterator[pa.Table]:
    """The evidence of every concept--concept edge (:func:`group_evidence`), in edge order, in
    ``partitions`` pieces: with more than one, the rows are first spilled to Arrow IPC files under
    ``spill_parent``, one per contiguous range of edges, and grouped one file at a time, so the
    memory held is a partition's, not the corpus's. Each edge is in exactly one piece.
    ``sentences_per_hop`` (default: the config schema's ``evidence.sentences_per_hop``) bounds the
    sentences quoted per edge. ``work`` is told the predications read, each piece's rows once it
    is grouped, and again once the caller has taken it (written it) and asks for the next."""
    if sentences_per_hop is None:
        sentences_per_hop = int(default_of("evidence.sentences_per_hop"))
    sources = ReadableSources.of_build(tables_dir, sentences_per_hop)
    work = work if work is not None else PhasedWork.untold()
    work.stage("reading the predications")
    if partitions <= 1:
        parts = list(_evidence_rows(tables_dir, edge_keys, batch_rows, work))
        rows = pa.concat_tables(parts) if parts else EVIDENCE_ROWS.empty_table()
        work.stage("grouping")
        grouped = group_evidence(rows, edge_keys, max_evidence, sources)
        work.stage("writing")
        work.advance("group", 1, 1)
        yield grouped
        work.advance("write", 1, 1)
        return
    per_partition = max(1, -(-len(edge_keys[0]) // partitions))
    with SpillFolder(spill_parent, ".evidence-spill-") as spill:
        spilled = SpilledPartitions(spill, EVIDENCE_ROWS, partitions)
        with spilled:
            for rows in _evidence_rows(tables_dir, edge_keys, batch_rows, work):
                spilled.add(rows, rows.column("edge").to_numpy() // per_partition)
        total = spilled.rows
        for k in range(partitions):
            rows = spilled.take(k)
            taken = rows.num_rows
            work.stage(f"grouping range {k + 1} of {partitions}")
            grouped = group_evidence(rows, edge_keys, max_evidence, sources)
            del rows
            pa.default_memory_pool().release_unused()  # give the partition's memory back before the next
            work.stage(f"writing range {k + 1} of {partitions}")
            work.advance("group", taken, total)
            yield grouped
            work.advance("write", taken, total)


class SpilledPartitions:
    """Rows split by partition index into one file per partition (in ``folder``), written in one
    pass over a table and taken back a partition at a time, each file removed once taken.

    Arrow IPC files, uncompressed: a spill is written and read back once, on local disk. As Parquet
    it took a fifth of the 30M build's evidence grouping in a sampling profile; a 5M-row spill
    writes and reads back in 0.4 s as IPC against 2.5 s as Parquet. A partition's rows keep the
    order they were added in."""

    def __init__(self, folder: Path, schema: pa.Schema, partitions: int) -> None:
        self.schema = schema
        self.paths = [Path(folder) / f"part-{k:04d}.arrow" for k in range(partitions)]
        self._writers = [ipc.new_file(str(path), schema) for path in self.paths]
        self.rows = 0  # added, over every partition

    def add(self, rows: pa.Table, partition: np.ndarray) -> None:
        """Add each row of ``rows`` to its partition (``partition``: one index per row)."""
        self.rows += rows.num_rows
        for k, writer in enumerate(self._writers):
            chosen = rows.filter(pa.array(partition == k))
            if chosen.num_rows:
                writer.write_table(chosen.cast(self.schema))

    def close(self) -> None:
        for writer in self._writers:
            writer.close()
        self._writers = []

    def __enter__(self) -> SpilledPartitions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self, k: int) -> pa.Table:
        """Partition ``k``'s rows, read into memory; its file is removed."""
        with pa.memory_map(str(self.paths[k])) as source:
            rows = ipc.open_file(source).read_all()
        # one chunk per partition; a copy off the map unless the file held a single batch, whose
        # buffers stay mapped -- the unlinked file lives on until they are freed
        rows = rows.combine_chunks() if rows.num_rows else self.schema.empty_table()
        self.paths[k].unlink()
        return rows
