"""Build the weighted concept--abstract graph from a build's Parquet tables.

Reads ``predications``, ``mentions``, ``citations`` (only those the selected edge kinds
need), ``concepts`` and ``documents`` from ``tables_dir`` -- each either ``<name>.parquet``
or a folder ``<name>/`` of Parquet parts -- and writes to ``out_dir``:

* ``vertices.parquet`` and ``edges.parquet`` (schemas in :mod:`pipeline.builds.tables`; edges once,
  ``src < dst``, sorted by (src, dst));
* ``graph.bp`` -- the symmetric CSR of costs (:func:`pipeline.store.adios.write_graph_bp`);
* ``graph_counts.json`` -- input rows, the effect of every filter, graph sizes per edge
  kind, the graph digest and stage timings.

Memory scales with the graph, not the raw input: tables are streamed in record batches,
CUIs and doc_ids are coded to integers once per distinct value, and only per-concept
counts and per-pair counts (keyed by two packed 32-bit codes) are kept between batches.

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
"""

from __future__ import annotations

import json
import logging
import resource
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import EDGE_KINDS, EDGES, table_path
from pipeline.config import load_schema, validate_config
from pipeline.graph import assemble_spilled, weights
from pipeline.graph.csr import graph_digest, sort_edges, symmetric_csr
from pipeline.graph.vertices import assign_vertex_ids, keys_in_vid_order, vertex_table
from pipeline.runtime.columnar import sort_keys, split_keys, sum_by_key
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import Progress
from pipeline.runtime.resources import (
    SpillFolder,
    memory_budget_bytes,
    resident_bytes,
    room_left,
    spill_parent,
    sweep_stale_spills,
)
from pipeline.store.adios import GraphBpWriter, write_graph_bp

log = logging.getLogger(__name__)
CONCEPT_CONCEPT, CONCEPT_ABSTRACT, ABSTRACT_ABSTRACT = EDGE_KINDS
# Peak bytes per edge of the in-memory assembly (edge arrays, their sort, the CSR, the writers):
# 3.9 GiB for 28 M edges at 10 M predications, measured with all three edge kinds.
IN_MEMORY_BYTES_PER_EDGE = 140
_LOW32 = np.int64(0xFFFFFFFF)
# Rows per streamed record batch: memory against per-batch overhead, never the result.
BATCH_ROWS = 1 << 19


def graph_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """The graph section of a config, with the schema's defaults filled in and its rules checked
    (schemas/config.schema.yaml is the one definition; a violation is a ConfigError, a
    ValueError, naming the key).

    Accepts the whole workflow config, a partial one (``{"graph": {...}, "resources": {...}}``),
    or the graph section itself (``{"edge_kinds": [...]}``). Edge kinds come back in canonical
    order and excluded semantic types sorted, so equal settings give equal records.
    """
    config = dict(config or {})
    if isinstance(config.get("graph"), dict):
        section = config["graph"]
    elif config.keys() & load_schema()["properties"].keys():
        section = {}  # a config without a graph section: the defaults
    else:
        section = config
    graph = validate_config({"graph": section})["graph"]
    graph["edge_kinds"] = [k for k in EDGE_KINDS if k in graph["edge_kinds"]]
    graph["exclude_semtypes"] = sorted({str(s) for s in graph["exclude_semtypes"]})
    return graph


def _require_table(tables_dir: Path, name: str, why: str) -> Path:
    path = table_path(tables_dir, name)
    if path is None:
        raise FileNotFoundError(f"{tables_dir / (name + '.parquet')} not found (needed for {why})")
    return path


def _batches(
    path: Path,
    columns: list[str],
    batch_rows: int,
    dictionary_columns: tuple[str, ...] = (),
    progress: Progress | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of ``columns``; ``dictionary_columns`` come dictionary-encoded straight from
    Parquet's own dictionary pages, so string keys are not hashed once per row."""
    parquet = ds.ParquetFileFormat(
        read_options=ds.ParquetReadOptions(dictionary_columns=list(dictionary_columns))
    )
    dataset = ds.dataset(str(path), format=parquet)
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    for batch in dataset.to_batches(columns=columns, batch_size=batch_rows):
        if progress is not None:
            progress.advance(batch.num_rows)
        yield batch


def _numpy(column: pa.Array, dtype) -> np.ndarray:
    return column.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


class KeyEncoder:
    """Dense int64 codes for string keys, in first-seen order.

    Each batch arrives dictionary-encoded, so only its distinct keys are looked up: in C++
    (``index_in`` against all keys so far) when the batch's dictionary is large next to
    them, else in a Python dict. The dict is filled lazily, only once a lookup needs it, so
    keys that only ever go through ``index_in`` or :meth:`append_new` never cost a Python
    step. ``flagged`` (optional) is a set of keys to mark: :meth:`encode` also returns, per
    row, whether its key is in that set (used for excluded semantic types).
    """

    def __init__(self, flagged: pa.Array | None = None):
        self._size = 0
        self._codes: dict[str, int] = {}  # the first len(self._codes) keys
        self._new_keys: list[pa.Array] = []
        self._all_keys: pa.Array = pa.array([], pa.string())
        self._flagged = flagged if flagged is not None and len(flagged) else None

    def __len__(self) -> int:
        return self._size

    def append_new(self, keys: pa.Array) -> np.ndarray:
        """Codes for ``keys``, which the caller guarantees are distinct and not seen before."""
        start = self._size
        self._size += len(keys)
        self._new_keys.append(keys)
        return np.arange(start, self._size, dtype=np.int64)

    def keys(self) -> pa.Array:
        """The keys in code order."""
        if self._new_keys:
            self._all_keys = pa.concat_arrays(
                [self._all_keys, *[k.cast(pa.string()) for k in self._new_keys]]
            )
            self._new_keys = []
        return self._all_keys

    def _dict(self) -> dict[str, int]:
        if len(self._codes) < self._size:
            done = len(self._codes)
            later = self.keys().slice(done).to_pylist()
            self._codes.update(zip(later, range(done, self._size), strict=True))
        return self._codes

    def encode(self, column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray | None]:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        distinct = encoded.dictionary
        if encoded is column and pc.count_distinct(distinct).as_py() != len(distinct):
            # a dictionary with repeated values would give one key two codes: re-encode
            encoded = pc.dictionary_encode(column.cast(column.type.value_type))
            distinct = encoded.dictionary
        if len(distinct) * 8 >= self._size:
            position = pc.index_in(distinct, value_set=self.keys())
            lookup = _numpy(pc.fill_null(position, -1), np.int64)
        else:
            codes_of = self._dict()
            lookup = np.fromiter(
                (codes_of.get(key, -1) for key in distinct.to_pylist()), np.int64, len(distinct)
            )
        unseen = lookup < 0
        if unseen.any():
            lookup[unseen] = self.append_new(pc.filter(distinct, pa.array(unseen)))
        indices = _numpy(encoded.indices, np.int64)
        flags = None
        if self._flagged is not None:
            flags = _numpy(pc.is_in(distinct, value_set=self._flagged), bool)[indices]
        return lookup[indices], flags


class PairCounter:
    """Sums of counts per int64 key (two packed 32-bit codes), bounded pending buffer."""

    def __init__(self, flush_rows: int = 1 << 23):
        self._keys = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_rows = 0
        self._flush_rows = flush_rows

    def add(self, keys: np.ndarray, counts: np.ndarray | None = None) -> None:
        if not len(keys):
            return
        if counts is None:
            counts = np.ones(len(keys), np.int64)
        self._pending.append((keys.astype(np.int64, copy=False), counts.astype(np.int64, copy=False)))
        self._pending_rows += len(keys)
        if self._pending_rows > max(self._flush_rows, 2 * len(self._keys)):  # amortized: few re-sorts
            self._compact()

    def _compact(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate([self._keys] + [k for k, _ in self._pending])
        counts = np.concatenate([self._counts] + [c for _, c in self._pending])
        self._pending, self._pending_rows = [], 0
        self._keys, self._counts = sum_by_key(keys, counts)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, counts), each key once, in no particular order."""
        self._compact()
        return self._keys, self._counts


def _pack(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    return (high.astype(np.int64) << 32) | low.astype(np.int64)


def _unpack(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return keys >> 32, keys & _LOW32


def _used_codes(n_codes: int, *endpoints: np.ndarray) -> np.ndarray:
    """Sorted distinct codes among the edge endpoints."""
    used = np.zeros(n_codes, dtype=bool)
    for codes in endpoints:
        used[codes] = True
    return np.flatnonzero(used)


def _grow(array: np.ndarray, size: int) -> np.ndarray:
    if len(array) >= size:
        return array
    grown = np.zeros(max(size, 2 * len(array)), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class _CooccurrenceCounter:
    """Per-concept predication counts and per-pair predication counts, fed in batches."""

    def __init__(self) -> None:
        self.concept_predications = np.zeros(0, np.int64)
        self.pairs = PairCounter()
        self.predications = 0
        self.out_of_order = 0
        self._last_pid: int | None = None
        self._carry: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def feed(
        self, pid: np.ndarray, subj: np.ndarray, obj: np.ndarray, n_codes: int, final: bool = False
    ) -> None:
        if self._carry is not None:
            pid, subj, obj = (
                np.concatenate([c, x]) for c, x in zip(self._carry, (pid, subj, obj), strict=True)
            )
            self._carry = None
        if not len(pid):
            return
        if not final:
            # The last predication may continue in the next batch: hold its rows back.
            tail = len(pid) - int(np.argmax(pid[::-1] != pid[-1])) if np.any(pid != pid[-1]) else 0
            if tail == 0:
                self._carry = (pid, subj, obj)
                return
            self._carry = (pid[tail:], subj[tail:], obj[tail:])
            pid, subj, obj = pid[:tail], subj[:tail], obj[:tail]
        self._count(pid, subj, obj, n_codes)

    def _count(self, pid: np.ndarray, subj: np.ndarray, obj: np.ndarray, n_codes: int) -> None:
        previous = self._last_pid
        self.out_of_order += int(np.count_nonzero(pid[1:] < pid[:-1])) + int(
            previous is not None and pid[0] < previous
        )
        self._last_pid = int(pid[-1])
        pair_keys = _pack(np.minimum(subj, obj), np.maximum(subj, obj))
        new_predication = np.empty(len(pid), dtype=bool)
        new_predication[0] = True
        np.not_equal(pid[1:], pid[:-1], out=new_predication[1:])
        self.predications += int(np.count_nonzero(new_predication))
        last_of_predication = np.empty(len(pid), dtype=bool)
        last_of_predication[-1] = True
        last_of_predication[:-1] = new_predication[1:]
        single = new_predication & last_of_predication  # predications with one row: nothing to deduplicate
        if single.all():
            concepts = np.concatenate([subj, obj])
        else:
            multi = ~single
            group = (np.cumsum(new_predication) - 1)[multi]
            keys, s_multi, o_multi = pair_keys[multi], subj[multi], obj[multi]
            order = np.lexsort((keys, group))
            sorted_keys, sorted_group = keys[order], group[order]
            first = np.ones(len(order), dtype=bool)
            first[1:] = (sorted_keys[1:] != sorted_keys[:-1]) | (sorted_group[1:] != sorted_group[:-1])
            pair_keys = np.concatenate([pair_keys[single], sorted_keys[first]])
            _, multi_concepts = _unpack(
                np.unique(_pack(np.concatenate([group, group]), np.concatenate([s_multi, o_multi])))
            )
            concepts = np.concatenate([subj[single], obj[single], multi_concepts])
        self.concept_predications = _grow(self.concept_predications, n_codes)
        counted = np.bincount(concepts, minlength=n_codes)
        self.concept_predications[: len(counted)] += counted
        self.pairs.add(pair_keys)


def _concept_concept_edges(
    tables_dir: Path, cfg: dict, concepts: KeyEncoder, counts: dict, progress: Progress | None = None
) -> tuple:
    path = _require_table(tables_dir, "predications", "concept_concept edges")
    columns = ["predication_id", "subject_cui", "object_cui"]
    if cfg["novelty_only"]:
        columns += ["subject_novelty", "object_novelty"]
    counter = _CooccurrenceCounter()
    rows = self_pairs = not_novel = novelty_unknown = excluded_rows = 0
    for batch in _batches(path, columns, cfg["batch_rows"], ("subject_cui", "object_cui"), progress):
        rows += batch.num_rows
        pid = _numpy(batch.column("predication_id"), np.int64)
        subj, subj_excluded = concepts.encode(batch.column("subject_cui"))
        obj, obj_excluded = concepts.encode(batch.column("object_cui"))
        keep = subj != obj
        self_pairs += int(np.count_nonzero(~keep))
        if cfg["novelty_only"]:
            s_nov, o_nov = batch.column("subject_novelty"), batch.column("object_novelty")
            unknown = _numpy(pc.or_(pc.is_null(s_nov), pc.is_null(o_nov)), bool)
            novel = _numpy(pc.fill_null(pc.and_(s_nov, o_nov), False), bool)
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
    supported = together >= cfg["min_support"]
    counts.update(
        predication_rows=rows,
        predication_rows_self_pair_removed=self_pairs,
        predication_rows_not_novel_removed=not_novel,
        predication_rows_novelty_unknown_removed=novelty_unknown,
        predication_rows_excluded_semtype_removed=excluded_rows,
        predication_rows_used=rows - self_pairs - not_novel - novelty_unknown - excluded_rows,
        predications_used=counter.predications,
        predication_rows_out_of_order=counter.out_of_order,
        concept_pairs=int(len(keys)),
        concept_pairs_below_min_support_removed=int(np.count_nonzero(~supported)),
    )
    keys, together = keys[supported], together[supported]
    a, b = _unpack(keys)
    npred = counter.concept_predications
    weight = weights.cooccurrence_weight(together, npred[a], npred[b])
    return a, b, weight


class _SortedMentions:
    """The mentions of a table sorted by (doc_id, cui) with each pair once -- what the merge
    writes -- collected without a re-sort: doc codes follow from where doc_id changes, and
    no pair needs summing.

    :meth:`take` checks the order batch by batch (string comparisons in Arrow) and returns
    None, taking nothing, at the first batch that breaks it; :meth:`pairs` then hands what
    it has to the general path, which sorts and sums.
    """

    def __init__(self, documents: KeyEncoder) -> None:
        self.documents = documents
        self.doc: list[np.ndarray] = []
        self.cui: list[np.ndarray] = []
        self.count: list[np.ndarray] = []
        self._last: tuple[str, str] | None = None

    def take(self, doc_id: pa.Array, cui_id: pa.Array) -> np.ndarray | None:
        """Doc codes of the batch, or None when it is not in (doc_id, cui) order after the last."""
        n = len(doc_id)
        if not n:
            return np.zeros(0, np.int64)
        if doc_id.null_count or cui_id.null_count:
            return None
        first = (doc_id[0].as_py(), cui_id[0].as_py())
        if self._last is not None and not first > self._last:
            return None
        if n > 1:
            later, earlier = doc_id.slice(1), doc_id.slice(0, n - 1)
            same_doc = pc.equal(later, earlier)
            in_order = pc.or_(
                pc.greater(later, earlier),
                pc.and_(same_doc, pc.greater(cui_id.slice(1), cui_id.slice(0, n - 1))),
            )
            if not pc.all(in_order).as_py():
                return None
        new_doc = np.empty(n, dtype=bool)
        new_doc[0] = self._last is None or first[0] != self._last[0]
        if n > 1:
            np.logical_not(_numpy(same_doc, bool), out=new_doc[1:])
        self.documents.append_new(pc.filter(doc_id, pa.array(new_doc)))
        self._last = (doc_id[n - 1].as_py(), cui_id[n - 1].as_py())
        return len(self.documents) - 1 - int(np.count_nonzero(new_doc)) + np.cumsum(new_doc)

    def add(self, doc: np.ndarray, cui: np.ndarray, count: np.ndarray) -> None:
        self.doc.append(doc)
        self.cui.append(cui)
        self.count.append(count)

    def pairs(self) -> PairCounter:
        pairs = PairCounter()
        for doc, cui, count in zip(self.doc, self.cui, self.count, strict=True):
            pairs.add(_pack(doc, cui), count)
        self.doc, self.cui, self.count = [], [], []
        return pairs

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        join = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
        return join(self.doc), join(self.cui), join(self.count)


def _concept_abstract_edges(
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    documents: KeyEncoder,
    counts: dict,
    progress: Progress | None = None,
) -> tuple:
    path = _require_table(tables_dir, "mentions", "concept_abstract edges")
    # With no documents coded yet, codes can follow the table's own order (see _SortedMentions).
    in_order = _SortedMentions(documents) if len(documents) == 0 else None
    pairs: PairCounter | None = None if in_order is not None else PairCounter()
    rows = nonpositive = excluded_rows = 0
    for batch in _batches(path, ["doc_id", "cui", "count"], cfg["batch_rows"], ("cui",), progress):
        rows += batch.num_rows
        doc = None
        if in_order is not None:
            doc = in_order.take(batch.column("doc_id"), batch.column("cui").cast(pa.string()))
            if doc is None:  # not sorted and distinct after all: count the general way from here
                pairs, in_order = in_order.pairs(), None
        if doc is None:
            doc, _ = documents.encode(batch.column("doc_id"))
        cui, cui_excluded = concepts.encode(batch.column("cui"))
        mention_count = _numpy(pc.fill_null(batch.column("count"), 0), np.int64)
        keep = mention_count > 0
        nonpositive += int(np.count_nonzero(~keep))
        if cui_excluded is not None:
            excluded = keep & cui_excluded
            excluded_rows += int(np.count_nonzero(excluded))
            keep &= ~excluded
        if in_order is not None:
            in_order.add(doc[keep], cui[keep], mention_count[keep])
        else:
            pairs.add(_pack(doc[keep], cui[keep]), mention_count[keep])
    if in_order is not None:
        doc, cui, mentions = in_order.result()
    else:
        keys, mentions = pairs.result()
        doc, cui = _unpack(keys)
    all_mentions = np.bincount(doc, weights=mentions, minlength=len(documents)) if len(doc) else np.zeros(0)
    counts.update(
        mention_rows=rows,
        mention_rows_nonpositive_removed=nonpositive,
        mention_rows_excluded_semtype_removed=excluded_rows,
        mention_rows_used=rows - nonpositive - excluded_rows,
        concept_abstract_pairs=int(len(doc)),
    )
    weight = weights.occurrence_weight(mentions, all_mentions[doc]) if len(doc) else np.zeros(0)
    return cui, doc, weight


class _MentionTotals:
    """The spill path's first pass over the mentions: per-abstract totals and which concepts and
    abstracts have a kept mention, without holding the (doc, cui) pairs (they are read again,
    batch by batch, into the partitions: :meth:`edges`)."""

    def __init__(self, tables_dir: Path, cfg: dict, concepts: KeyEncoder, documents: KeyEncoder):
        self.path = _require_table(tables_dir, "mentions", "concept_abstract edges")
        self.cfg, self.concepts, self.documents = cfg, concepts, documents
        self.totals = np.zeros(0, np.float64)  # by doc code: all kept mentions of the abstract
        self.doc_degree = np.zeros(0, np.int64)  # by doc code: kept rows (at least its edges)
        self.cui_degree = np.zeros(0, np.int64)  # by concept code

    def _kept(self, batch: pa.RecordBatch, counts: dict | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        doc, _ = self.documents.encode(batch.column("doc_id"))
        cui, cui_excluded = self.concepts.encode(batch.column("cui"))
        mention_count = _numpy(pc.fill_null(batch.column("count"), 0), np.int64)
        keep = mention_count > 0
        if counts is not None:
            counts["mention_rows"] += batch.num_rows
            counts["mention_rows_nonpositive_removed"] += int(np.count_nonzero(~keep))
        if cui_excluded is not None:
            excluded = keep & cui_excluded
            if counts is not None:
                counts["mention_rows_excluded_semtype_removed"] += int(np.count_nonzero(excluded))
            keep &= ~excluded
        return doc[keep], cui[keep], mention_count[keep]

    def count(self, counts: dict, progress: Progress | None) -> None:
        tally = {"mention_rows": 0, "mention_rows_nonpositive_removed": 0, "mention_rows_excluded_semtype_removed": 0}
        for batch in _batches(self.path, ["doc_id", "cui", "count"], self.cfg["batch_rows"], ("cui",), progress):
            doc, cui, mentions = self._kept(batch, tally)
            self.totals = _grow(self.totals, len(self.documents))
            self.doc_degree = _grow(self.doc_degree, len(self.documents))
            self.cui_degree = _grow(self.cui_degree, len(self.concepts))
            self.totals[: len(self.documents)] += np.bincount(doc, weights=mentions, minlength=len(self.documents))
            self.doc_degree[: len(self.documents)] += np.bincount(doc, minlength=len(self.documents))
            self.cui_degree[: len(self.concepts)] += np.bincount(cui, minlength=len(self.concepts))
        used = tally["mention_rows"] - tally["mention_rows_nonpositive_removed"]
        counts.update(tally, mention_rows_used=used - tally["mention_rows_excluded_semtype_removed"])

    def edges(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(cui codes, doc codes, mention counts) of the kept mention rows, batch by batch."""
        for batch in _batches(self.path, ["doc_id", "cui", "count"], self.cfg["batch_rows"], ("cui",)):
            doc, cui, mentions = self._kept(batch, None)
            yield cui, doc, mentions


def _abstract_abstract_edges(
    tables_dir: Path, cfg: dict, documents: KeyEncoder, counts: dict, progress: Progress | None = None
) -> tuple:
    path = _require_table(tables_dir, "citations", "abstract_abstract edges")
    pairs = PairCounter()
    rows = self_citations = 0
    for batch in _batches(path, ["citing", "cited"], cfg["batch_rows"], ("citing", "cited"), progress):
        rows += batch.num_rows
        citing, _ = documents.encode(batch.column("citing"))
        cited, _ = documents.encode(batch.column("cited"))
        keep = citing != cited
        self_citations += int(np.count_nonzero(~keep))
        citing, cited = citing[keep], cited[keep]
        pairs.add(_pack(np.minimum(citing, cited), np.maximum(citing, cited)))
    keys, _ = pairs.result()
    a, b = _unpack(keys)
    relations = np.bincount(np.concatenate([a, b]), minlength=len(documents))
    counts.update(
        citation_rows=rows,
        citation_rows_self_removed=self_citations,
        citation_rows_duplicate_merged=rows - self_citations - int(len(keys)),
        citation_relations=int(len(keys)),
    )
    weight = weights.citation_weight(relations[a], relations[b]) if len(a) else np.zeros(0)
    return a, b, weight


def _load_concepts(tables_dir: Path, exclude_semtypes: list[str]) -> tuple[pa.Table | None, pa.Array]:
    """The concepts table (cui, name, semtypes) if present, and the CUIs with excluded semtypes."""
    path = table_path(tables_dir, "concepts")
    if path is None:
        if exclude_semtypes:
            raise FileNotFoundError(
                f"{tables_dir / 'concepts.parquet'} not found (needed for exclude_semtypes)"
            )
        return None, pa.array([], pa.string())
    table = ds.dataset(str(path), format="parquet").to_table(columns=["cui", "name", "semtypes"])
    if not exclude_semtypes:
        return table, pa.array([], pa.string())
    semtypes = table.column("semtypes").combine_chunks()
    flat = pc.list_flatten(semtypes)
    hit = pc.is_in(flat, value_set=pa.array(exclude_semtypes, pa.string()))
    rows = pc.unique(pc.filter(pc.list_parent_indices(semtypes), hit))
    return table, pc.unique(pc.take(table.column("cui"), rows).combine_chunks())


def _names_for(keys: pa.Array, table: pa.Table | None, key_column: str, name_column: str) -> pa.Array:
    if table is None or not len(keys):
        return pa.nulls(len(keys), pa.string())
    position = pc.index_in(keys, value_set=table.column(key_column).combine_chunks())
    return pc.take(table.column(name_column).combine_chunks(), position)


def _document_titles(tables_dir: Path, keys: pa.Array, batch_rows: int) -> tuple[pa.Array, int]:
    """Titles of the abstract vertices, and the number of documents that are not vertices.

    Two passes over the documents table: the doc_id column alone, in batches at least as long as
    ``keys`` (index_in hashes all of ``keys`` on every call: with the PubMed baseline's 36M
    documents in batches of :data:`BATCH_ROWS` that was 69 hashings of every abstract key), then
    the titles of the rows found, batch by batch.
    """
    path = table_path(tables_dir, "documents")
    if path is None:
        return pa.nulls(len(keys), pa.string()), 0
    # Both passes scan the table in the same order (a dataset scan yields its batches in order).
    # A scan's batches end at row groups, so doc_ids are gathered up to len(keys) rows for each
    # index_in call (one hashing of the keys per call, whatever the number of chunks).
    positions, pending, pending_rows = [], [], 0
    for batch in _batches(path, ["doc_id"], batch_rows):
        pending.append(batch.column("doc_id"))
        pending_rows += batch.num_rows
        if pending_rows >= max(batch_rows, len(keys)):
            positions.append(pc.index_in(pa.chunked_array(pending), value_set=keys))
            pending, pending_rows = [], 0
    if pending_rows:
        positions.append(pc.index_in(pa.chunked_array(pending), value_set=keys))
    position = pa.chunked_array([c for part in positions for c in part.chunks], pa.int32()).combine_chunks()
    found = pc.is_valid(position)
    not_vertices = len(position) - int(pc.sum(found).as_py() or 0)
    if not_vertices == len(position):
        return pa.nulls(len(keys), pa.string()), not_vertices
    titles, start = [], 0
    for batch in _batches(path, ["title"], batch_rows):
        titles.append(pc.filter(batch.column("title"), found.slice(start, batch.num_rows)))
        start += batch.num_rows
    found_titles = pa.chunked_array(titles, pa.string()).combine_chunks()
    # scatter: title of vertex i is the found title whose position is i
    where = pc.index_in(pa.array(np.arange(len(keys), dtype=np.int32)), value_set=pc.filter(position, found))
    return pc.take(found_titles, where), not_vertices


def _edge_keys(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """min(u, v) * n + max(u, v): the key of each edge in (src, dst) order (vertex ids < n)."""
    key = np.minimum(u, v)
    key *= n
    key += np.maximum(u, v)
    return key


def _assemble_edges(n: int, *parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple:
    """One edge list (src < dst, sorted by (src, dst)) from per-kind (u, v, weight) in vid space.

    Parts are in :data:`EDGE_KINDS` order; arrays are built and permuted one at a time to keep
    the peak near one copy of the edge list.
    """
    if n < (1 << 31):
        # One int64 key per edge, src * n + dst, built part by part: no full-length src and dst
        # columns exist before the sort (on this VM every fresh array costs its first touch).
        key = np.concatenate([_edge_keys(u, v, n) for u, v, _ in parts])
        key, order = sort_keys(key, unique=True)
        # Both columns from the sorted keys: split_keys streams through memory, where gathering
        # them in the new order would miss the cache.
        src, dst = split_keys(key, n)
        del key
    else:
        src = np.concatenate([np.minimum(u, v) for u, v, _ in parts])
        dst = np.concatenate([np.maximum(u, v) for u, v, _ in parts])
        order = sort_edges(src, dst)
        src = src[order]
        dst = dst[order]
    weight = np.concatenate([w for _, _, w in parts])[order]
    kind = np.concatenate([np.full(len(w), code, np.uint8) for code, (_, _, w) in enumerate(parts)])[order]
    return src, dst, weight, kind


# edges.parquet as written: ``kind`` handed over as codes into the kinds' names (no per-row
# strings to build and hash again), dictionary encoding where values repeat (``kind``, ``src``,
# the weights and costs) but not on ``dst`` (millions of distinct values overflow the dictionary
# page and fall back to plain after paying for the attempt). The Arrow schema is not stored, so
# readers get ``kind`` as plain strings, the EDGES schema. Writing the 22M edges at 10M
# predications: 1.8-2.1 s -> 1.5-1.6 s on one core, 163 -> 158 MiB (AMD EPYC).
_EDGES_AS_WRITTEN = pa.schema(
    [field.with_type(pa.dictionary(pa.int8(), pa.string())) if field.name == "kind" else field for field in EDGES]
)
_EDGE_KIND_NAMES = pa.array(EDGE_KINDS)


class EdgeFileWriter:
    """edges.parquet written in parts: each :meth:`write` appends edges (kind as uint8 codes)."""

    def __init__(self, path: Path) -> None:
        self._writer = pq.ParquetWriter(
            path, _EDGES_AS_WRITTEN, store_schema=False, use_dictionary=["src", "kind", "weight", "cost"]
        )

    def write(self, src: np.ndarray, dst: np.ndarray, kind: np.ndarray, weight: np.ndarray, cost: np.ndarray) -> None:
        kind_names = pa.DictionaryArray.from_arrays(pa.array(kind.astype(np.int8)), _EDGE_KIND_NAMES)
        columns = [pa.array(src), pa.array(dst), kind_names, pa.array(weight), pa.array(cost)]
        self._writer.write_table(pa.table(columns, schema=_EDGES_AS_WRITTEN))

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> EdgeFileWriter:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _write_edges(path: Path, src, dst, kind, weight, cost, rows_per_group: int = 1 << 20) -> None:
    """edges.parquet in row groups of ``rows_per_group`` edges."""
    with EdgeFileWriter(path) as writer:
        for start in range(0, len(src), rows_per_group):
            part = slice(start, start + rows_per_group)
            writer.write(src[part], dst[part], kind[part], weight[part], cost[part])


def _write_tables(out_dir: Path, vertices: pa.Table, src, dst, kind, weight, cost) -> None:
    pq.write_table(vertices, GraphFolder(out_dir).vertices)
    _write_edges(GraphFolder(out_dir).edges, src, dst, kind, weight, cost)


def build_graph(
    tables_dir: Path,
    out_dir: Path,
    config: dict,
    cooccurrence_dir: Path | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
) -> dict:
    """Build vertices, edges, graph.bp and graph_counts.json in ``out_dir``; return the counts record.

    ``config`` is read through :func:`graph_config` (the graph section) and for ``resources``
    (the memory budget and the spill folder). ``batch_rows`` sets the rows per streamed batch.
    The returned dict (also written as ``graph_counts.json``) holds ``scope`` ("full"),
    ``config`` (the graph section with defaults), ``counts`` (input rows, filter effects,
    sizes), ``graph_digest``, ``weight_scheme`` and ``timings`` (seconds per stage).

    With ``cooccurrence_dir``, the same files are also written there for the *co-occurrence
    graph*: concept vertices and concept--concept edges only, whatever ``edge_kinds`` says
    (the graph the paper compares with SPOKE, section VIII: "SPOKE does not have any
    paper-related information. Hence, we use only co-occurrences"). The co-occurrence counts
    are made once and shared by both graphs; the co-occurrence graph is exactly the graph a
    build with ``edge_kinds: [concept_concept]`` would have (same vertices, edges and digest).
    Its record (``scope: "cooccurrence"``) is returned under ``"cooccurrence"``.
    """
    tables_dir, out_dir = Path(tables_dir), Path(out_dir)
    if not tables_dir.is_dir():
        raise FileNotFoundError(f"tables folder not found: {tables_dir}")
    if not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    cfg = {**graph_config(config), "batch_rows": batch_rows}
    # Spill folders of an earlier build-graph that was killed (their owner is gone) go first.
    for scope_dir in (out_dir, cooccurrence_dir):
        if scope_dir is not None:
            sweep_stale_spills(spill_parent(config, Path(scope_dir)))
    timings: dict[str, float] = {}
    counts: dict[str, int] = {}
    clock = time.perf_counter()

    peak_rss_mib: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(now - clock, 4)
        peak_rss_mib[stage] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        clock = now

    concept_table, excluded_cuis = _load_concepts(tables_dir, cfg["exclude_semtypes"])
    counts["concepts_in_table"] = 0 if concept_table is None else concept_table.num_rows
    counts["concepts_with_excluded_semtype"] = len(excluded_cuis)
    concepts = KeyEncoder(flagged=excluded_cuis)
    documents = KeyEncoder()
    lap("read_concepts")

    kinds = cfg["edge_kinds"]
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    need_cooccurrence = CONCEPT_CONCEPT in kinds or cooccurrence_dir is not None
    tables_read = [
        name
        for name, needed in (
            ("predications", need_cooccurrence),
            ("mentions", CONCEPT_ABSTRACT in kinds),
            ("citations", ABSTRACT_ABSTRACT in kinds),
        )
        if needed
    ]
    progress = Progress("litpath build-graph", sum(_row_count(tables_dir, t) for t in tables_read), "rows")
    progress.stage("concept_concept (predications)")
    cc = _concept_concept_edges(tables_dir, cfg, concepts, counts, progress) if need_cooccurrence else empty
    lap("concept_concept")
    # In memory, the assembly costs about IN_MEMORY_BYTES_PER_EDGE an edge; beyond the budget
    # the edges go to disk partitions instead (same files, bit for bit; pipeline.graph.assemble_spilled).
    budget = memory_budget_bytes(config)
    edges_bound = len(cc[0]) + sum(
        _row_count(tables_dir, t) for t, kind in (("mentions", CONCEPT_ABSTRACT), ("citations", ABSTRACT_ABSTRACT))
        if kind in kinds
    )  # fmt: skip
    partitioned = edges_bound * IN_MEMORY_BYTES_PER_EDGE > budget
    progress.stage("concept_abstract (mentions)")
    mentions = None
    ca = empty
    if CONCEPT_ABSTRACT in kinds and partitioned:
        mentions = _MentionTotals(tables_dir, cfg, concepts, documents)
        mentions.count(counts, progress)
    elif CONCEPT_ABSTRACT in kinds:
        ca = _concept_abstract_edges(tables_dir, cfg, concepts, documents, counts, progress)
    lap("concept_abstract")
    progress.stage("abstract_abstract (citations)")
    aa = (
        _abstract_abstract_edges(tables_dir, cfg, documents, counts, progress)
        if ABSTRACT_ABSTRACT in kinds
        else empty
    )
    lap("abstract_abstract")
    progress.stage("writing the graph")
    cooccurrence_record = None
    if cooccurrence_dir is not None:
        # First, while the full graph's parts are still needed: the co-occurrence graph is small.
        scope_counts, scope_timings = {}, {}
        cooccurrence_cfg = {**cfg, "edge_kinds": [CONCEPT_CONCEPT]}
        if len(cc[0]) * IN_MEMORY_BYTES_PER_EDGE > budget:
            digest = _write_graph_scope_partitioned(
                Path(cooccurrence_dir), tables_dir, cooccurrence_cfg, concepts, KeyEncoder(), concept_table,
                cc, None, empty, scope_counts, scope_timings, budget, spill_parent(config, Path(cooccurrence_dir)),
            )  # fmt: skip
        else:
            digest = _write_graph_scope(
                Path(cooccurrence_dir), tables_dir, cooccurrence_cfg, concepts, KeyEncoder(), concept_table,
                (cc, empty, empty), scope_counts, scope_timings,
            )  # fmt: skip
        cooccurrence_record = _graph_record(
            "cooccurrence", cooccurrence_cfg, scope_counts, digest, scope_timings, {}
        )
        _save_record(Path(cooccurrence_dir), cooccurrence_record)
        lap("cooccurrence_graph")
    parts = (cc if CONCEPT_CONCEPT in kinds else empty, ca, aa)
    del cc, ca, aa
    if partitioned:
        digest = _write_graph_scope_partitioned(
            out_dir, tables_dir, cfg, concepts, documents, concept_table, parts[0], mentions, parts[2],
            counts, timings, budget, spill_parent(config, out_dir), lap,
        )  # fmt: skip
    else:
        digest = _write_graph_scope(
            out_dir, tables_dir, cfg, concepts, documents, concept_table, parts, counts, timings, lap
        )
    progress.finish(f"{counts['vertices']:,} vertices, {counts['edges']:,} edges")
    record = _graph_record("full", cfg, counts, digest, timings, peak_rss_mib)
    if cooccurrence_record is not None:
        record["cooccurrence"] = {
            "dir": str(cooccurrence_dir),
            "graph_digest": cooccurrence_record["graph_digest"],
            "vertices": cooccurrence_record["counts"]["vertices"],
            "edges": cooccurrence_record["counts"]["edges"],
        }
    _save_record(out_dir, record)
    if cooccurrence_record is not None:
        record["cooccurrence"] = cooccurrence_record
    return record


def _row_count(tables_dir: Path, name: str) -> int:
    """Rows of a table from its Parquet metadata (0 when the table is absent)."""
    path = table_path(tables_dir, name)
    return 0 if path is None else ds.dataset(str(path), format="parquet").count_rows()


def _graph_record(scope: str, cfg: dict, counts: dict, digest: str, timings: dict, peak_rss_mib: dict) -> dict:
    timings["total"] = round(sum(timings.values()), 4)
    return {
        "scope": scope,
        "config": cfg,
        "counts": counts,
        "graph_digest": digest,
        "weight_scheme": weights.WEIGHT_SCHEME,
        "timings": timings,
        "peak_rss_mib": peak_rss_mib,  # process high-water mark after each stage
    }


def _save_record(out_dir: Path, record: dict) -> None:
    write_atomically(GraphFolder(out_dir).counts, json.dumps(record, indent=2, sort_keys=True) + "\n")


@dataclass
class _Vertices:
    """The vertex set of one graph: keys, ids and names, and the code -> vid maps."""

    concept_keys: pa.Array
    concept_vid: np.ndarray
    abstract_keys: pa.Array
    abstract_vid: np.ndarray
    vid_of_concept: np.ndarray  # by concept code, -1: not a vertex
    vid_of_abstract: np.ndarray  # by document code
    documents_not_vertices: int
    table: pa.Table  # the vertices table (pipeline.builds.tables.VERTICES) in vid order

    @property
    def n(self) -> int:
        return len(self.concept_keys) + len(self.abstract_keys)

    def keys_in_vid_order(self) -> pa.Array:
        return keys_in_vid_order(self.concept_keys, self.concept_vid, self.abstract_keys, self.abstract_vid)


def _vertices(
    tables_dir: Path, cfg: dict, concepts: KeyEncoder, documents: KeyEncoder, concept_table: pa.Table | None,
    concept_codes: np.ndarray, abstract_codes: np.ndarray,
) -> _Vertices:  # fmt: skip
    """Every endpoint of a kept edge (sorted, distinct codes given) -> dense sorted ids and names."""
    concept_keys = concepts.keys().take(pa.array(concept_codes))
    abstract_keys = documents.keys().take(pa.array(abstract_codes))
    concept_vid, abstract_vid = assign_vertex_ids(concept_keys, abstract_keys)
    vid_of_concept = np.full(len(concepts), -1, np.int64)
    vid_of_concept[concept_codes] = concept_vid
    vid_of_abstract = np.full(len(documents), -1, np.int64)
    vid_of_abstract[abstract_codes] = abstract_vid
    concept_names = _names_for(concept_keys, concept_table, "cui", "name")
    if len(abstract_keys):
        abstract_names, documents_not_vertices = _document_titles(tables_dir, abstract_keys, cfg["batch_rows"])
    else:  # a concept-only graph: no titles to look up, and every document is off the graph
        abstract_names, documents_not_vertices = pa.nulls(0, pa.string()), _row_count(tables_dir, "documents")
    table = vertex_table(concept_keys, concept_names, concept_vid, abstract_keys, abstract_names, abstract_vid)
    return _Vertices(
        concept_keys, concept_vid, abstract_keys, abstract_vid, vid_of_concept, vid_of_abstract,
        documents_not_vertices, table,
    )  # fmt: skip


def _graph_counts(
    counts: dict, vertices: _Vertices, edges_by_kind: np.ndarray, concept_table: pa.Table | None,
    concepts: KeyEncoder, documents: KeyEncoder,
) -> None:  # fmt: skip
    known_concepts, isolated_concepts = 0, 0
    if concept_table is not None:
        in_table = pc.unique(concept_table.column("cui").combine_chunks())
        is_known = pc.is_in(vertices.concept_keys, value_set=in_table)
        known_concepts = int(pc.sum(is_known).as_py() or 0)
        isolated_concepts = len(in_table) - known_concepts
    edges = int(edges_by_kind.sum())
    counts.update(
        vertices=vertices.n,
        concept_vertices=len(vertices.concept_keys),
        abstract_vertices=len(vertices.abstract_keys),
        edges=edges,
        csr_nnz=2 * edges,
        **{f"edges_{name}": int(edges_by_kind[i]) for i, name in enumerate(EDGE_KINDS)},
        concepts_seen=len(concepts),
        concept_vertices_without_metadata=len(vertices.concept_keys) - known_concepts,
        isolated_concepts=isolated_concepts,  # in the concepts table but on no kept edge
        documents_seen=len(documents),
        isolated_documents=vertices.documents_not_vertices,  # in the documents table but on no kept edge
    )


def _stepper(timings: dict, lap):
    clock = time.perf_counter()

    def step(stage: str) -> None:
        nonlocal clock
        if lap is not None:
            lap(stage)
        else:
            now = time.perf_counter()
            timings[stage] = round(now - clock, 4)
            clock = now

    return step


def _write_graph_scope(
    out_dir: Path,
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    documents: KeyEncoder,
    concept_table: pa.Table | None,
    parts: tuple,
    counts: dict,
    timings: dict,
    lap=None,
) -> str:
    """Vertices, edges, graph.bp of one graph from its per-kind (u, v, weight) parts in code space,
    assembled in memory.

    ``parts`` are (concept_concept, concept_abstract, abstract_abstract), each (u codes, v codes,
    weight); a kind the graph does not have is empty. Fills ``counts`` with the graph's sizes
    and returns the graph digest.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    step = _stepper(timings, lap)
    cc, ca, aa = parts
    vertices = _vertices(
        tables_dir, cfg, concepts, documents, concept_table,
        _used_codes(len(concepts), cc[0], cc[1], ca[0]), _used_codes(len(documents), ca[1], aa[0], aa[1]),
    )  # fmt: skip
    n = vertices.n
    step("vertices")

    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    src, dst, weight, kind = _assemble_edges(
        n,
        (vid_of_concept[cc[0]], vid_of_concept[cc[1]], cc[2]),
        (vid_of_concept[ca[0]], vid_of_abstract[ca[1]], ca[2]),
        (vid_of_abstract[aa[0]], vid_of_abstract[aa[1]], aa[2]),
    )
    del cc, ca, aa, parts, vid_of_concept, vid_of_abstract
    cost = weights.cost_from_weight(weight)
    step("edges")

    # Three jobs that release the GIL run side by side: the digest, the Parquet encoding of
    # vertices and edges, and (here) the CSR build; graph.bp needs the digest, so it comes last.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="graph-write") as pool:
        digesting = pool.submit(graph_digest, vertices.keys_in_vid_order(), src, dst, kind, cost)
        writing = pool.submit(_write_tables, out_dir, vertices.table, src, dst, kind, weight, cost)
        del weight
        csr = symmetric_csr(n, src, dst, cost)
        digest = digesting.result()
        write_graph_bp(
            GraphFolder(out_dir).graph_bp,
            n,
            csr.row_ptr,
            csr.col_idx,
            csr.cost,
            {"graph_digest": digest, "weight_scheme": weights.WEIGHT_SCHEME, "edge_kinds": cfg["edge_kinds"]},
        )
        del csr
        writing.result()
    step("write")
    _graph_counts(counts, vertices, np.bincount(kind, minlength=len(EDGE_KINDS)), concept_table, concepts, documents)
    return digest


def _write_graph_scope_partitioned(
    out_dir: Path,
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    documents: KeyEncoder,
    concept_table: pa.Table | None,
    cc: tuple,
    mentions: _MentionTotals | None,
    aa: tuple,
    counts: dict,
    timings: dict,
    budget_bytes: int,
    spill_dir: Path,
    lap=None,
) -> str:
    """The same files as :func:`_write_graph_scope`, the edges assembled in vertex-range
    partitions spilled to disk (:mod:`pipeline.graph.assemble_spilled`), so that memory holds one
    partition at a time. The concept--abstract edges are read again from the mentions table
    (``mentions``' second pass) rather than held."""
    out_dir.mkdir(parents=True, exist_ok=True)
    step = _stepper(timings, lap)
    empty = np.zeros(0, np.int64)
    cui_used = empty if mentions is None else np.flatnonzero(mentions.cui_degree[: len(concepts)] > 0)
    doc_used = empty if mentions is None else np.flatnonzero(mentions.doc_degree[: len(documents)] > 0)
    vertices = _vertices(
        tables_dir, cfg, concepts, documents, concept_table,
        _used_codes(len(concepts), cc[0], cc[1], cui_used), _used_codes(len(documents), doc_used, aa[0], aa[1]),
    )  # fmt: skip
    n = vertices.n
    pq.write_table(vertices.table, GraphFolder(out_dir).vertices)
    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    step("vertices")

    # Entries a vertex will have (an upper bound for the mentions: repeats merge later).
    degree = np.zeros(n, np.int64)
    for ends in (vid_of_concept[cc[0]], vid_of_concept[cc[1]], vid_of_abstract[aa[0]], vid_of_abstract[aa[1]]):
        degree += np.bincount(ends, minlength=n)
    totals_by_vid = np.zeros(n, np.float64)
    if mentions is not None:
        degree[vid_of_concept[cui_used]] += mentions.cui_degree[cui_used]
        degree[vid_of_abstract[doc_used]] += mentions.doc_degree[doc_used]
        totals_by_vid[vid_of_abstract[doc_used]] = mentions.totals[doc_used]
    # Each partition may use half of what is left of the budget once the arrays held for the whole
    # stage are counted (they grow with the corpus: 2.4 GiB of 4 at 30M predications).
    held = resident_bytes()
    if held > 0.75 * budget_bytes:
        log.warning(
            "graph stage: %.1f GiB already held (vertex keys, per-vertex arrays, concept pairs) of a "
            "%.1f GiB budget; the partitions get a quarter of it, and the peak will exceed the budget: "
            "raise resources.memory_gib",
            held / 2**30,
            budget_bytes / 2**30,
        )
    per_partition = max(1, int(0.5 * room_left(budget_bytes)) // assemble_spilled.FINISH_BYTES_PER_EDGE)
    bounds = assemble_spilled.partition_bounds(degree, per_partition)
    del degree

    def weigh(src, dst, kind, value):
        weight = np.asarray(value, dtype=np.float64).copy()
        occurrence = kind == EDGE_KINDS.index(CONCEPT_ABSTRACT)
        if occurrence.any():  # mention counts summed over repeats; the abstract is the larger id
            weight[occurrence] = weights.occurrence_weight(value[occurrence], totals_by_vid[dst[occurrence]])
        return weight

    edges_by_kind = np.zeros(len(EDGE_KINDS), np.int64)
    row_counts = np.zeros(n, np.int64)
    with SpillFolder(spill_dir, ".graph-spill-") as folder:
        partitions = assemble_spilled.EdgePartitions(folder / "edges", bounds)
        cc_src, cc_dst = vid_of_concept[cc[0]], vid_of_concept[cc[1]]
        partitions.add(np.minimum(cc_src, cc_dst), np.maximum(cc_src, cc_dst), 0, cc[2])
        aa_src, aa_dst = vid_of_abstract[aa[0]], vid_of_abstract[aa[1]]
        partitions.add(np.minimum(aa_src, aa_dst), np.maximum(aa_src, aa_dst), 2, aa[2])
        if mentions is not None:
            for cui, doc, count in mentions.edges():
                partitions.add(vid_of_concept[cui], vid_of_abstract[doc], 1, count)
        step("partitions")
        digest = assemble_spilled.StreamingDigest(vertices.keys_in_vid_order(), folder / "digest")
        csr_files = (folder / "csr-col.bin", folder / "csr-cost.bin")
        with EdgeFileWriter(GraphFolder(out_dir).edges) as edge_writer, open(csr_files[0], "wb") as col_out, \
                open(csr_files[1], "wb") as cost_out:  # fmt: skip
            for done in assemble_spilled.finish_partitions(partitions, weigh, weights.cost_from_weight):
                edge_writer.write(done.src, done.dst, done.kind, done.weight, done.cost)
                digest.add(done.src, done.dst, done.kind, done.cost)
                edges_by_kind += np.bincount(done.kind, minlength=len(EDGE_KINDS))
                row_counts[done.lo : done.hi] = done.row_counts
                done.col_idx.tofile(col_out)
                done.csr_cost.tofile(cost_out)
        graph_digest_hex = digest.hexdigest()
        step("edges")
        row_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(row_counts, out=row_ptr[1:])
        writer = GraphBpWriter(GraphFolder(out_dir).graph_bp, n, row_ptr)
        try:
            chunk = 1 << 23
            with open(csr_files[0], "rb") as col_in, open(csr_files[1], "rb") as cost_in:
                while True:
                    col_idx = np.fromfile(col_in, dtype=np.int64, count=chunk)
                    if not len(col_idx):
                        break
                    writer.write_rows(col_idx, np.fromfile(cost_in, dtype=np.float32, count=len(col_idx)))
            writer.close(
                {"graph_digest": graph_digest_hex, "weight_scheme": weights.WEIGHT_SCHEME, "edge_kinds": cfg["edge_kinds"]}
            )
        except BaseException:
            writer.abort()
            raise
    step("write")
    if mentions is not None:
        counts["concept_abstract_pairs"] = int(edges_by_kind[EDGE_KINDS.index(CONCEPT_ABSTRACT)])
    counts["graph_partitions"] = int(partitions.k)
    _graph_counts(counts, vertices, edges_by_kind, concept_table, concepts, documents)
    return graph_digest_hex
