"""The counting structures of the graph build, fed one record batch at a time.

Memory scales with the graph, not the raw input: CUIs and doc_ids are coded to dense integers
once per distinct value (:class:`KeyEncoder`), and only per-concept counts and per-pair counts
(keyed by two packed 32-bit codes, :func:`pack`; :class:`PairCounter`) are kept between
batches. What is counted, and which rows are left out, is decided in :mod:`pipeline.graph.edges`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.runtime.columnar import distinct_sorted, positions_in, sum_by_key

_LOW32 = np.int64(0xFFFFFFFF)


def to_numpy(column: pa.Array, dtype) -> np.ndarray:
    """An Arrow column as a numpy array of ``dtype`` (copied only where Arrow must)."""
    return column.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def pack(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """One int64 key per pair of 32-bit codes."""
    return (high.astype(np.int64) << 32) | low.astype(np.int64)


def unpack(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two codes of each key made by :func:`pack`."""
    return keys >> 32, keys & _LOW32


def grow(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` zero-padded to at least ``size`` (doubling, so that growing by batches is cheap)."""
    if len(array) >= size:
        return array
    grown = np.zeros(max(size, 2 * len(array)), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class KeyEncoder:
    """Dense int64 codes for string keys, in first-seen order.

    Each batch arrives dictionary-encoded, so only its distinct keys are looked up: in C++
    (``index_in`` of all keys so far among the batch's) when the batch's dictionary is large
    next to them, else in a Python dict. The dict is filled lazily, only once a lookup needs it, so
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
            lookup = positions_in(distinct, self.keys())  # hashes the batch's keys, not all so far
        else:
            codes_of = self._dict()
            lookup = np.fromiter(
                (codes_of.get(key, -1) for key in distinct.to_pylist()), np.int64, len(distinct)
            )
        unseen = lookup < 0
        if unseen.any():
            lookup[unseen] = self.append_new(pc.filter(distinct, pa.array(unseen)))
        indices = to_numpy(encoded.indices, np.int64)
        flags = None
        if self._flagged is not None:
            flags = to_numpy(pc.is_in(distinct, value_set=self._flagged), bool)[indices]
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


class CooccurrenceCounter:
    """Per-concept predication counts and per-pair predication counts, fed in batches.

    A predication is one ``predication_id``, whose rows are adjacent: a concept or a pair is
    counted once per predication however many of its rows name it.
    """

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
        pair_keys = pack(np.minimum(subj, obj), np.maximum(subj, obj))
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
            _, multi_concepts = unpack(
                distinct_sorted(pack(np.concatenate([group, group]), np.concatenate([s_multi, o_multi])))
            )
            concepts = np.concatenate([subj[single], obj[single], multi_concepts])
        self.concept_predications = grow(self.concept_predications, n_codes)
        counted = np.bincount(concepts, minlength=n_codes)
        self.concept_predications[: len(counted)] += counted
        self.pairs.add(pair_keys)


class SortedMentions:
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
            np.logical_not(to_numpy(same_doc, bool), out=new_doc[1:])
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
            pairs.add(pack(doc, cui), count)
        self.doc, self.cui, self.count = [], [], []
        return pairs

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        join = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
        return join(self.doc), join(self.cui), join(self.count)


__all__ = [
    "CooccurrenceCounter", "KeyEncoder", "PairCounter", "SortedMentions", "grow", "pack", "to_numpy",
    "unpack",
]  # fmt: skip
