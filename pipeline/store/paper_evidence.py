"""The readable evidence of concept--abstract hops: for each paper with predications, what it says
about each concept it names, so that a hop between a concept and a paper can show the predicates
and sentences of that paper that name the concept (the ``papers`` kind of the store).

One record per paper (doc_id order, the key order buckets need), with the paper's PMID and year and:

* ``predicates``: per (concept, predicate), the distinct predications of the paper with that
  predicate and the concept as subject or object (``NEG_`` predicates their own);
* ``sentences``: the paper's statements (sentence, predicate, subject, object, text) that some
  concept of the paper quotes: each concept quotes its first ``sentences_per_hop`` statements
  naming it, in sentence id order (then predicate, subject, object) -- one paper has one year
  and PMID, so the concept--concept rule's first keys are all equal here;
* ``sentences_per_hop``, the k the load used, so that a reader takes a concept's first k of
  ``sentences`` again (the union may hold more for it: another concept's quote can name it too).

Memory: grouped in doc_id ranges of the documents table (sorted by doc_id), as many as
:data:`PAPER_BYTES_PER_ROW` per predication row over the budget need; the predications are read
once and spilled to a file per range, and each range reads the sentences table once (the texts
it quotes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pipeline.builds import tables
from pipeline.builds.tables import table_path
from pipeline.runtime.columnar import distinct_sorted
from pipeline.runtime.progress import PhasedWork
from pipeline.runtime.resources import SpillFolder
from pipeline.store.evidence_rows import (
    ReadableSources,
    SpilledPartitions,
    lists_by_owner,
    sentence_texts,
    sorted_codes,
)

# Memory per predication row of a paper range: the rows, both argument slots, the statements and
# their ranking, and the texts quoted: 929 bytes measured on a 300k-predication calibrated build,
# 1,019 on a 1M one (bench/results/readable_evidence.md, one range), rounded up; like
# EVIDENCE_BYTES_PER_ROW, a range gets half the budget.
PAPER_BYTES_PER_ROW = 1100
CONCEPT_PREDICATE = pa.struct([("cui", pa.string()), ("predicate", pa.string()), ("count", pa.int64())])
STATEMENT = pa.struct(
    [
        ("sentence_id", pa.int64()),
        ("predicate", pa.string()),
        ("subject", pa.string()),
        ("object", pa.string()),
        ("text", pa.string()),
    ]
)
PAPERS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("pmid", pa.int64()),
        ("year", pa.int32()),
        ("sentences_per_hop", pa.int32()),
        ("predicates", pa.list_(CONCEPT_PREDICATE)),
        ("sentences", pa.list_(STATEMENT)),
    ]
)
PREDICATION_COLUMNS = ["predication_id", "doc_id", "sentence_id", "predicate", "subject_cui", "object_cui"]


def paper_partitions(predication_rows: int, budget_bytes: int) -> int:
    """How many doc_id ranges the papers' evidence needs to be grouped within ``budget_bytes``,
    each in half of it."""
    return max(1, -(-predication_rows * PAPER_BYTES_PER_ROW // max(budget_bytes // 2, 1)))


def paper_tables(
    tables_dir: Path, partitions: int, sources: ReadableSources, spill_parent: Path | None = None,
    work: PhasedWork | None = None,
) -> Iterator[pa.Table]:
    """The papers' evidence (:data:`PAPERS`), in doc_id order, one doc_id range at a time: with
    more than one range, the predications are read once and spilled to a file per range (under
    ``spill_parent``), then grouped a range at a time. (A filtered scan per range read the whole
    predications table each time: at 30M, 8 ranges and about 5 s a scan.) ``work`` is told the
    predications read, each range's once it is grouped, and again once the caller has taken its
    papers (written them) and asks for the next."""
    work = work if work is not None else PhasedWork.untold()
    path = table_path(tables_dir, "predications")
    if path is None:
        return
    predications = ds.dataset(str(path), format="parquet")
    work.stage("reading the predications")
    if partitions <= 1:
        rows = as_strings(predications.to_table(columns=PREDICATION_COLUMNS))
        work.advance("read", 1, 1)
        if rows.num_rows:
            work.stage("grouping")
            papers = group_papers(rows, sources)
            work.stage("writing")
            work.advance("group", 1, 1)
            yield papers
        work.advance("write", 1, 1)
        return
    doc_ids = pc.unique(sources.years["doc_id"].combine_chunks())
    doc_ids = pc.take(doc_ids, pc.sort_indices(doc_ids))
    # range bounds at doc_ids of the documents table (every paper with predications has a record
    # there: the merge's documents come from CITATIONS and PubMed; one without is in the last range)
    cuts = [doc_ids[(k * len(doc_ids)) // partitions].as_py() for k in range(1, partitions)] if len(doc_ids) else []
    ranges = len(cuts) + 1
    with SpillFolder(spill_parent, ".papers-spill-") as spill:
        spilled = SpilledPartitions(spill, SPILLED_PREDICATIONS, ranges)
        with spilled:
            total = predications.count_rows()
            for batch in predications.to_batches(columns=PREDICATION_COLUMNS, batch_size=1 << 18):
                rows = as_strings(pa.Table.from_batches([batch]))
                # the range of each row: how many cuts its doc_id is at or past ([low, high) ranges)
                spilled.add(rows, _range_of(rows.column("doc_id"), cuts))
                work.advance("read", rows.num_rows, total)
        for k in range(ranges):
            rows = spilled.take(k)
            taken = rows.num_rows
            if taken:
                work.stage(f"grouping range {k + 1} of {ranges}")
                papers = group_papers(rows, sources)
                del rows
                pa.default_memory_pool().release_unused()  # give the range's memory back before the next
                work.stage(f"writing range {k + 1} of {ranges}")
                work.advance("group", taken, total)
                yield papers
            work.advance("write", taken, total)


# The predications' columns the grouping reads, as as_strings gives them.
SPILLED_PREDICATIONS = pa.schema([(name, tables.PREDICATIONS.field(name).type) for name in PREDICATION_COLUMNS])


def _range_of(doc_id: pa.ChunkedArray | pa.Array, cuts: list[str]) -> np.ndarray:
    """Each doc_id's range among the ranges [cut_k-1, cut_k) that ``cuts`` (sorted) bound."""
    at = np.zeros(len(doc_id), np.int64)
    for cut in cuts:
        at += pc.fill_null(pc.greater_equal(doc_id, cut), False).to_numpy(zero_copy_only=False)
    return at


def as_strings(rows: pa.Table) -> pa.Table:
    for name in ("doc_id", "predicate", "subject_cui", "object_cui"):
        column = rows.column(name)
        if column.type != pa.string():
            rows = rows.set_column(rows.schema.get_field_index(name), name, column.cast(pa.string()))
    return rows


def _distinct_predications(doc: np.ndarray, cui: np.ndarray, predicate: np.ndarray, predication_id: np.ndarray) -> pa.Table:
    """Per (doc_id, cui, predicate) code triple, in code order: the distinct predication ids
    (``predication_id_count_distinct``), by one sort of the codes joined into an int64 key and
    the ids. Arrow's hash aggregation with count_distinct took 21 s of the papers' 117-s
    grouping at 10M calibrated predications; this takes about a quarter of that."""
    doc, cui, predicate = (np.asarray(a, np.int64) for a in (doc, cui, predicate))
    if len(doc) == 0:
        return pa.table({"doc_id": doc, "cui": cui, "predicate": predicate,
                         "predication_id_count_distinct": np.zeros(0, np.int64)})  # fmt: skip
    n_cui, n_predicate = int(cui.max()) + 1, int(predicate.max()) + 1
    if (int(doc.max()) + 1) * n_cui * n_predicate >= 2**62:  # the joined key would overflow: sort the three
        order = np.lexsort((predication_id, predicate, cui, doc))
        doc, cui, predicate, ids = doc[order], cui[order], predicate[order], predication_id[order]
        new_group = np.r_[True, (doc[1:] != doc[:-1]) | (cui[1:] != cui[:-1]) | (predicate[1:] != predicate[:-1])]
    else:
        key = (doc * n_cui + cui) * n_predicate + predicate
        order = np.lexsort((predication_id, key))
        key, ids = key[order], predication_id[order]
        doc, cui, predicate = doc[order], cui[order], predicate[order]
        new_group = np.r_[True, key[1:] != key[:-1]]
    new_id = new_group | np.r_[True, ids[1:] != ids[:-1]]
    starts = np.flatnonzero(new_group)
    return pa.table({"doc_id": doc[starts], "cui": cui[starts], "predicate": predicate[starts],
                     "predication_id_count_distinct": np.add.reduceat(new_id.astype(np.int64), starts)})  # fmt: skip


def group_papers(rows: pa.Table, sources: ReadableSources) -> pa.Table:
    """Per paper of ``rows`` (predications), in doc_id order: its concepts' predicates and quoted statements."""
    # grouped and ordered by codes of the strings (same order), decoded at the end
    (doc,), doc_ids = sorted_codes(rows["doc_id"])
    (subject, object_), cuis = sorted_codes(rows["subject_cui"], rows["object_cui"])
    (predicate,), predicate_names = sorted_codes(rows["predicate"])
    predication_id = rows["predication_id"].combine_chunks().to_numpy()
    # every concept of a predication, whichever argument it is
    counts = _distinct_predications(np.r_[doc, doc], np.r_[subject, object_], np.r_[predicate, predicate],
                                    np.r_[predication_id, predication_id])  # fmt: skip
    counts = counts.sort_by([("doc_id", "ascending"), ("cui", "ascending"), ("predication_id_count_distinct", "descending"),
                             ("predicate", "ascending")])  # fmt: skip
    coded = pa.table({"doc_id": doc, "sentence_id": rows["sentence_id"], "predicate": predicate,
                      "subject_cui": subject, "object_cui": object_})  # fmt: skip
    statements = coded.group_by(["doc_id", "sentence_id", "predicate", "subject_cui", "object_cui"], use_threads=False).aggregate([])
    quoted = _quoted_statements(statements, sources.sentences_per_hop)
    texts = sentence_texts(sources.sentences, quoted["sentence_id"])
    paper_codes = distinct_sorted(counts["doc_id"].to_numpy())
    papers = pc.take(doc_ids, pa.array(paper_codes))
    years = sources.years.filter(pc.is_in(sources.years["doc_id"], value_set=papers))
    year = pc.take(years["year"], pc.index_in(papers, value_set=years["doc_id"].combine_chunks()))
    pmid = pc.cast(pc.if_else(pc.starts_with(papers, "PMID:"), pc.utf8_slice_codeunits(papers, 5), None), pa.int64())
    predicates = pa.table({"cui": pc.take(cuis, counts["cui"]), "predicate": pc.take(predicate_names, counts["predicate"]),
                           "count": counts["predication_id_count_distinct"].cast(pa.int64())})  # fmt: skip
    sentences = pa.table(
        {
            "sentence_id": quoted["sentence_id"],
            "predicate": pc.take(predicate_names, quoted["predicate"]),
            "subject": pc.take(cuis, quoted["subject_cui"]),
            "object": pc.take(cuis, quoted["object_cui"]),
            "text": pc.take(texts["text"], pc.index_in(quoted["sentence_id"], value_set=texts["sentence_id"])),
        }
    )
    return pa.table(
        [
            papers,
            pmid,
            year.cast(pa.int32()),
            pa.array(np.full(len(papers), sources.sentences_per_hop, np.int32)),
            lists_by_owner(predicates, _owners(paper_codes, counts["doc_id"]), len(papers), CONCEPT_PREDICATE),
            lists_by_owner(sentences, _owners(paper_codes, quoted["doc_id"]), len(papers), STATEMENT),
        ],
        schema=PAPERS,
    )


def _owners(paper_codes: np.ndarray, doc_codes: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The position in ``paper_codes`` (sorted) of each row's doc_id code."""
    doc_codes = doc_codes.combine_chunks() if isinstance(doc_codes, pa.ChunkedArray) else doc_codes
    return np.searchsorted(paper_codes, doc_codes.to_numpy(zero_copy_only=False)).astype(np.int64)


def _rank_within_runs(table: pa.Table, keys: list[str]) -> np.ndarray:
    """Each row's position within its run of equal ``keys`` (``table`` sorted by them), compared
    column by column in Arrow (no Python string per row: at 30M predications that held gigabytes)."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, np.int64)
    starts = np.zeros(n, bool)
    starts[0] = True
    for key in keys:
        column = table[key].combine_chunks()
        starts[1:] |= pc.not_equal(column.slice(1), column.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    first = np.flatnonzero(starts)
    return np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))


def _quoted_statements(statements: pa.Table, per_hop: int) -> pa.Table:
    """The statements some concept of their paper quotes: each (paper, concept) its first
    ``per_hop`` naming it, by (sentence_id, predicate, subject, object); distinct, in that order
    within each paper."""
    keys = ["doc_id", "sentence_id", "predicate", "subject_cui", "object_cui"]
    if per_hop <= 0 or statements.num_rows == 0:
        return statements.select(keys).slice(0, 0)
    named = pa.concat_tables(
        [statements.select(keys).append_column("cui", statements[column]) for column in ("subject_cui", "object_cui")]
    )
    order = [("doc_id", "ascending"), ("cui", "ascending"), *((key, "ascending") for key in keys[1:])]
    named = named.sort_by(order)
    rank = _rank_within_runs(named, ["doc_id", "cui"])
    chosen = named.filter(pa.array(rank < per_hop)).select(keys)
    chosen = chosen.group_by(keys, use_threads=False).aggregate([])
    return chosen.sort_by([(key, "ascending") for key in keys])
