"""The three edge kinds, counted from the build's tables, in code space.

Each kind's edges come back as :class:`CodedEdges`: two arrays of codes (of the concepts' and
documents' :class:`pipeline.graph.counting.KeyEncoder`) and the weight. Every function fills
``counts`` (graph_counts.json) with its input rows and the effect of every filter.

Counting rules (the formulas themselves live in :mod:`pipeline.graph.weights`):

* A *predication* is one ``predication_id``. The ingest may split one SemMedDB
  predication into several argument-pair rows; those rows are adjacent in the table, and a
  concept or a pair is counted once per predication. Rows whose ids are out of order are
  counted in ``predication_rows_out_of_order`` (each such run is treated as its own
  predication).
* Row filters run first, in this order, each counted: self pairs (subject == object),
  ``novelty_only`` (both arguments flagged novel; a missing flag counts as not novel),
  ``exclude_semtypes`` (either argument has an excluded semantic type). Removed rows count
  nowhere -- neither in pair counts nor in a concept's predication count. Then
  ``min_support`` drops concept pairs seen in fewer predications; it does not change any
  other edge's weight.
* A mention row counts when its count is positive (a missing count is 0) and its concept has no
  excluded semantic type (:class:`MentionFilter`); the mentions of one (doc, cui) pair are summed.
* A citation is undirected: self-citations are dropped and both directions are one relation.

The concept--abstract edges have two forms: :func:`concept_abstract_edges` holds the (doc, cui)
pairs, for the in-memory assembly; :class:`MentionTotals` keeps only per-abstract totals and
streams the pairs again later, for the partitioned assembly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.graph import weights
from pipeline.graph.counting import (
    CooccurrenceCounter,
    KeyEncoder,
    PairCounter,
    SortedMentions,
    grow,
    pack,
    to_numpy,
    unpack,
)
from pipeline.graph.inputs import batches, require_table
from pipeline.runtime.progress import Advances


class CodedEdges(NamedTuple):
    """The edges of one kind in code space: endpoint codes ``u`` and ``v`` and the weight."""

    u: np.ndarray
    v: np.ndarray
    weight: np.ndarray

    @classmethod
    def none(cls) -> CodedEdges:
        """No edges (a kind the graph does not have)."""
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


class EdgesInOrder(NamedTuple):
    """An earlier graph's concept--concept and concept--abstract edges, in its (src, dst) order
    (:meth:`pipeline.graph.earlier.EarlierEdges.edges`, when only the citations changed): ``src``
    is a concept code, ``dst`` a concept code below ``n_concepts`` or ``n_concepts`` plus the rank
    of an abstract among the earlier graph's (doc_id order); ``abstract_of`` holds the document
    code of each edge with an abstract end, in order. Concept codes are the earlier vids, and the
    abstracts' codes ascend with their ranks, so any vid assignment (sorted keys, docs/design.md
    §5) keeps these edges in order: :func:`pipeline.graph.assemble.write_graph` sorts only the
    citation edges after them."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    n_concepts: int
    abstract_of: np.ndarray


def concept_concept_edges(
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    counts: dict,
    progress: Advances | None = None,
    kept_counts: dict | None = None,
) -> CodedEdges:
    """Co-occurrence edges from the predications: Jaccard over predication sets. With
    ``kept_counts`` (a dict), the counts the weights come from go there too (:class:`PredicationCounts`),
    for a later build to count on the delta (:mod:`pipeline.graph.earlier`)."""
    path = require_table(tables_dir, "predications", "concept_concept edges")
    columns = PREDICATION_COLUMNS + (["subject_novelty", "object_novelty"] if cfg["novelty_only"] else [])
    batched = batches(path, columns, cfg["batch_rows"], ("subject_cui", "object_cui"), progress)
    counted = count_predications(batched, cfg, concepts)
    counts.update(counted.tallies(), predication_rows_out_of_order=counted.out_of_order)
    if kept_counts is not None:
        kept_counts["counts"] = counted
    return cooccurrence_from_counts(counted.pair_keys, counted.together, counted.concept_predications, cfg, counts)


# The predications' columns the co-occurrence count reads (and, with novelty_only, the two flags).
PREDICATION_COLUMNS = ["predication_id", "subject_cui", "object_cui"]
# The row filters' tallies, in graph_counts.json's names (predication_rows_used follows from them).
ROW_TALLIES = ("predication_rows", "predication_rows_self_pair_removed", "predication_rows_not_novel_removed",
               "predication_rows_novelty_unknown_removed", "predication_rows_excluded_semtype_removed")  # fmt: skip


class PredicationCounts(NamedTuple):
    """What counting predications gives: each concept's predications (by concept code), the rows
    that name it (any row, before the filters: a concept the count has seen), each pair's
    predications (packed codes, once each, in no order), the distinct predications used, and the
    rows each filter removed (:data:`ROW_TALLIES`, in order)."""

    concept_predications: np.ndarray
    concept_rows: np.ndarray
    pair_keys: np.ndarray
    together: np.ndarray
    predications_used: int
    rows: tuple[int, ...]
    out_of_order: int

    def tallies(self) -> dict[str, int]:
        """graph_counts.json's tallies of the count (``predication_rows_out_of_order`` aside)."""
        rows, *removed = self.rows
        return {**dict(zip(ROW_TALLIES, self.rows, strict=True)), "predication_rows_used": rows - sum(removed),
                "predications_used": self.predications_used}  # fmt: skip


def count_predications(batched: Iterable[pa.RecordBatch], cfg: dict, concepts: KeyEncoder) -> PredicationCounts:
    """Count predications and concept pairs of predication rows (``batched``, in table order:
    the rows of one predication are adjacent), after the row filters, coding the concepts into
    ``concepts`` (every row's, the filtered ones too)."""
    counter = CooccurrenceCounter()
    rows = self_pairs = not_novel = novelty_unknown = excluded_rows = 0
    concept_rows = np.zeros(0, np.int64)
    for batch in batched:
        rows += batch.num_rows
        pid = to_numpy(batch.column("predication_id"), np.int64)
        subj, subj_excluded = concepts.encode(batch.column("subject_cui"))
        obj, obj_excluded = concepts.encode(batch.column("object_cui"))
        concept_rows = grow(concept_rows, len(concepts))
        concept_rows[: len(concepts)] += np.bincount(subj, minlength=len(concepts)) + np.bincount(obj, minlength=len(concepts))
        keep = subj != obj
        self_pairs += int(np.count_nonzero(~keep))
        if cfg["novelty_only"]:
            s_nov, o_nov = batch.column("subject_novelty"), batch.column("object_novelty")
            unknown = to_numpy(pc.or_(pc.is_null(s_nov), pc.is_null(o_nov)), bool)
            novel = to_numpy(pc.fill_null(pc.and_(s_nov, o_nov), False), bool)
            novelty_unknown += int(np.count_nonzero(keep & unknown))
            not_novel += int(np.count_nonzero(keep & ~novel & ~unknown))
            keep &= novel
        if subj_excluded is not None:
            excluded = keep & (subj_excluded | obj_excluded)
            excluded_rows += int(np.count_nonzero(excluded))
            keep &= ~excluded
        counter.feed(pid[keep], subj[keep], obj[keep], len(concepts))
    counter.feed(
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), len(concepts), final=True
    )
    keys, together = counter.pairs.result()
    n = len(concepts)
    return PredicationCounts(
        grow(counter.concept_predications, n)[:n], grow(concept_rows, n)[:n], keys, together, counter.predications,
        (rows, self_pairs, not_novel, novelty_unknown, excluded_rows), counter.out_of_order,
    )  # fmt: skip


def cooccurrence_from_counts(pair_keys: np.ndarray, together: np.ndarray, concept_predications: np.ndarray,
                             cfg: dict, counts: dict) -> CodedEdges:  # fmt: skip
    """The co-occurrence edges of counted pairs (packed concept codes, each once) and concepts:
    ``min_support`` first (counted into ``counts``), then the Jaccard weight."""
    supported = together >= cfg["min_support"]
    counts.update(
        concept_pairs=int(len(pair_keys)),
        concept_pairs_below_min_support_removed=int(np.count_nonzero(~supported)),
    )
    a, b = unpack(pair_keys[supported])
    weight = weights.cooccurrence_weight(together[supported], concept_predications[a], concept_predications[b])
    return CodedEdges(a, b, weight)


class MentionFilter:
    """The mention rows' filters, in order and counted: a count that is not positive, then a
    concept with an excluded semantic type."""

    def __init__(self) -> None:
        self.rows = self.nonpositive = self.excluded = 0

    def keep(self, batch: pa.RecordBatch, cui_excluded: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(which rows of the batch are kept, the mention count of every row)."""
        self.rows += batch.num_rows
        mention_count = to_numpy(pc.fill_null(batch.column("count"), 0), np.int64)
        keep = mention_count > 0
        self.nonpositive += int(np.count_nonzero(~keep))
        if cui_excluded is not None:
            excluded = keep & cui_excluded
            self.excluded += int(np.count_nonzero(excluded))
            keep &= ~excluded
        return keep, mention_count

    def counts(self) -> dict[str, int]:
        return {
            "mention_rows": self.rows,
            "mention_rows_nonpositive_removed": self.nonpositive,
            "mention_rows_excluded_semtype_removed": self.excluded,
            "mention_rows_used": self.rows - self.nonpositive - self.excluded,
        }


def _mention_batches(path: Path, batch_rows: int, progress: Advances | None = None) -> Iterator[pa.RecordBatch]:
    return batches(path, ["doc_id", "cui", "count"], batch_rows, ("cui",), progress)


def concept_abstract_edges(
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    documents: KeyEncoder,
    counts: dict,
    progress: Advances | None = None,
) -> CodedEdges:
    """Occurrence edges from the mentions: a concept's mentions in an abstract over all of the
    abstract's mentions (``u``: concept codes, ``v``: document codes)."""
    path = require_table(tables_dir, "mentions", "concept_abstract edges")
    # With no documents coded yet, codes can follow the table's own order (see SortedMentions).
    in_order = SortedMentions(documents) if len(documents) == 0 else None
    pairs: PairCounter | None = None if in_order is not None else PairCounter()
    kept = MentionFilter()
    for batch in _mention_batches(path, cfg["batch_rows"], progress):
        doc = None
        if in_order is not None:
            doc = in_order.take(batch.column("doc_id"), batch.column("cui").cast(pa.string()))
            if doc is None:  # not sorted and distinct after all: count the general way from here
                pairs, in_order = in_order.pairs(), None
        if doc is None:
            doc, _ = documents.encode(batch.column("doc_id"))
        cui, cui_excluded = concepts.encode(batch.column("cui"))
        keep, mention_count = kept.keep(batch, cui_excluded)
        if in_order is not None:
            in_order.add(doc[keep], cui[keep], mention_count[keep])
        else:
            pairs.add(pack(doc[keep], cui[keep]), mention_count[keep])
    if in_order is not None:
        doc, cui, mentions = in_order.result()
    else:
        keys, mentions = pairs.result()
        doc, cui = unpack(keys)
    all_mentions = np.bincount(doc, weights=mentions, minlength=len(documents)) if len(doc) else np.zeros(0)
    counts.update(kept.counts(), concept_abstract_pairs=int(len(doc)))
    weight = weights.occurrence_weight(mentions, all_mentions[doc]) if len(doc) else np.zeros(0)
    return CodedEdges(cui, doc, weight)


class MentionTotals:
    """The concept--abstract edges of the partitioned assembly. A first pass over the mentions
    (:meth:`count`) keeps per-abstract totals and which concepts and abstracts have a kept
    mention, not the (doc, cui) pairs: :meth:`edges` reads them again, batch by batch, into the
    partitions, where repeated pairs are summed."""

    def __init__(self, tables_dir: Path, cfg: dict, concepts: KeyEncoder, documents: KeyEncoder):
        self.path = require_table(tables_dir, "mentions", "concept_abstract edges")
        self.cfg, self.concepts, self.documents = cfg, concepts, documents
        self.totals = np.zeros(0, np.float64)  # by doc code: all kept mentions of the abstract
        self.doc_degree = np.zeros(0, np.int64)  # by doc code: kept rows (at least its edges)
        self.cui_degree = np.zeros(0, np.int64)  # by concept code

    def _kept(
        self, batch: pa.RecordBatch, kept: MentionFilter
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        doc, _ = self.documents.encode(batch.column("doc_id"))
        cui, cui_excluded = self.concepts.encode(batch.column("cui"))
        keep, mention_count = kept.keep(batch, cui_excluded)
        return doc[keep], cui[keep], mention_count[keep]

    def count(self, counts: dict, progress: Advances | None) -> None:
        kept = MentionFilter()
        for batch in _mention_batches(self.path, self.cfg["batch_rows"], progress):
            doc, cui, mentions = self._kept(batch, kept)
            n_docs, n_concepts = len(self.documents), len(self.concepts)  # after this batch's new keys
            self.totals = grow(self.totals, n_docs)
            self.doc_degree = grow(self.doc_degree, n_docs)
            self.cui_degree = grow(self.cui_degree, n_concepts)
            self.totals[:n_docs] += np.bincount(doc, weights=mentions, minlength=n_docs)
            self.doc_degree[:n_docs] += np.bincount(doc, minlength=n_docs)
            self.cui_degree[:n_concepts] += np.bincount(cui, minlength=n_concepts)
        counts.update(kept.counts())

    def edges(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(cui codes, doc codes, mention counts) of the kept mention rows, batch by batch."""
        for batch in _mention_batches(self.path, self.cfg["batch_rows"]):
            doc, cui, mentions = self._kept(batch, MentionFilter())
            yield cui, doc, mentions


def abstract_abstract_edges(
    tables_dir: Path, cfg: dict, documents: KeyEncoder, counts: dict, progress: Advances | None = None
) -> CodedEdges:
    """Citation edges: 1 over the sum of the two abstracts' citation relations."""
    path = require_table(tables_dir, "citations", "abstract_abstract edges")
    pairs = PairCounter()
    rows = self_citations = 0
    for batch in batches(path, ["citing", "cited"], cfg["batch_rows"], ("citing", "cited"), progress):
        rows += batch.num_rows
        citing, _ = documents.encode(batch.column("citing"))
        cited, _ = documents.encode(batch.column("cited"))
        keep = citing != cited
        self_citations += int(np.count_nonzero(~keep))
        citing, cited = citing[keep], cited[keep]
        pairs.add(pack(np.minimum(citing, cited), np.maximum(citing, cited)))
    keys, _ = pairs.result()
    a, b = unpack(keys)
    relations = np.bincount(np.concatenate([a, b]), minlength=len(documents))
    counts.update(
        citation_rows=rows,
        citation_rows_self_removed=self_citations,
        citation_rows_duplicate_merged=rows - self_citations - int(len(keys)),
        citation_relations=int(len(keys)),
    )
    weight = weights.citation_weight(relations[a], relations[b]) if len(a) else np.zeros(0)
    return CodedEdges(a, b, weight)


__all__ = [
    "CodedEdges", "MentionFilter", "MentionTotals", "abstract_abstract_edges", "concept_abstract_edges",
    "concept_concept_edges",
]  # fmt: skip
