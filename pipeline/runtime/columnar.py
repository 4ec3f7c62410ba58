"""Sorting and summing of int64 keys, shared by the ingest, the merge and the graph build, and
strings turned into such keys (:func:`string_codes`).

Plain numpy and pyarrow, no litpath imports: the stages below the graph (ingest) and the graph
itself use these without importing one another.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_CODES = pa.dictionary(pa.int32(), pa.string())

# From this many values a sort is split over two threads (below it, the split costs about
# what it saves).
TWO_THREAD_SORT_MIN = 1 << 22


def sort_in_place(values: np.ndarray) -> None:
    """Sort ``values`` ascending in place, choosing the sort by the data, on two cores when it helps.

    numpy sorts on one core (releasing the GIL), and the build stages spend much of their time
    in sorts of tens of millions of int64 keys. Below :data:`TWO_THREAD_SORT_MIN` values, timsort
    when the values are ascending at large (:func:`_ordered_at_large`), else introsort; from it,
    two cases, measured on 22M keys (AMD EPYC, 2 cores):

    * keys made of long ascending runs (the keys of rows already sorted by another column,
      such as the destinations of edges sorted by source): timsort (``kind="stable"``) merges
      the runs, 0.8 s against 2.0 s for numpy's default introsort;
    * other keys: an in-place ``partition`` at the middle (one O(n) pass) leaves every value
      of the lower half <= every value of the upper half, and the halves are sorted in two
      threads, 1.5 s -> 1.0 s, with no extra memory.
    """
    n = len(values)
    if n < TWO_THREAD_SORT_MIN:
        values.sort(kind="stable" if _ordered_at_large(values) else None)
    elif _mostly_ascending(values):
        values.sort(kind="stable")
    elif (os.cpu_count() or 1) < 2:
        values.sort()
    else:
        middle = n // 2
        values.partition(middle)
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="sort") as pool:
            for done in [pool.submit(half.sort) for half in (values[:middle], values[middle:])]:
                done.result()


def _ordered_at_large(values: np.ndarray, samples: int = 1 << 12) -> bool:
    """True when ``values`` taken every len/``samples`` steps descend at fewer than 5% of
    neighbouring pairs: ascending at large, disordered at most locally, which timsort sorts
    several times faster than introsort (one ingest block's mention keys, ascending papers with
    their concepts in any order: 1.7 ms against 6.3 ms for 130k keys)."""
    if len(values) < samples:
        return False
    sample = values[:: len(values) // samples]
    return int(np.count_nonzero(sample[1:] < sample[:-1])) < 0.05 * (len(sample) - 1)


def _mostly_ascending(values: np.ndarray, windows: int = 16, width: int = 1 << 14) -> bool:
    """True when fewer than 5% of neighbouring pairs descend, in ``windows`` evenly spaced
    samples of ``width`` values: the array is long ascending runs, which timsort merges."""
    starts = np.linspace(0, len(values) - width, windows).astype(np.int64)
    descents = sum(
        int(np.count_nonzero(values[start + 1 : start + width] < values[start : start + width - 1]))
        for start in starts
    )
    return descents < 0.05 * windows * (width - 1)


def argsort_keys(keys: np.ndarray, unique: bool = False) -> np.ndarray:
    """Stable argsort of int64 keys (any order among equal keys if ``unique`` says there are none).

    When the key range and the row index fit together in 63 bits, (key, index) are packed into
    one int64 and the values sorted, which is several times faster than ``np.argsort``; the
    index in the low bits breaks ties, so equal keys keep their order. Keys made of two packed
    codes (``high << 32 | low``) are first squeezed to the bits their codes use.
    """
    return sort_keys(keys, unique)[1]


def sort_keys(keys: np.ndarray, unique: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(``keys`` sorted, the stable order that sorts them), as :func:`argsort_keys` computes it.

    On the packed path the sorted keys come out of the packed values themselves (a shift), not
    from a gather ``keys[order]``: a gather of tens of millions of rows in random order misses
    the cache on nearly every row.
    """
    n = len(keys)
    if n == 0:
        return keys[:0].astype(np.int64), np.zeros(0, np.int64)
    index_bits = max(int(n - 1).bit_length(), 1)
    low, high = int(keys.min()), int(keys.max())
    low_bits = 0  # > 0: the keys were squeezed, their low code kept in this many bits
    if low >= 0 and high.bit_length() + index_bits > 63:
        code_bits = max(int((keys & 0xFFFFFFFF).max()).bit_length(), 1)
        if (high >> 32).bit_length() + code_bits + index_bits <= 63:
            low_bits = code_bits
            keys = ((keys >> 32) << low_bits) | (keys & 0xFFFFFFFF)  # same order, fewer bits
            high = int(keys.max())
    if low < 0 or high.bit_length() + index_bits > 63:
        # Too wide to pack. Keys made of long ascending runs (a patched graph's edges: the
        # earlier graph's, still in order, then the new ones) go to timsort, which merges the
        # runs: 18M edge keys of 22 runs in 0.06 s against 1.7 s for introsort (AMD EPYC).
        runs = n >= TWO_THREAD_SORT_MIN and _mostly_ascending(keys)
        order = np.argsort(keys) if unique and not runs else np.argsort(keys, kind="stable")
        return keys[order], order
    packed = keys.astype(np.int64) << index_bits  # a new array: the caller's keys stay as they are
    packed |= np.arange(n, dtype=np.int64)
    sort_in_place(packed)
    order = packed & ((1 << index_bits) - 1)
    packed >>= index_bits  # now the sorted keys
    if low_bits:
        packed = ((packed >> low_bits) << 32) | (packed & ((1 << low_bits) - 1))
    return packed, order


def split_keys(keys: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys // width, keys % width) of keys made as ``high * width + low`` (all >= 0).

    The remainder as a multiply-subtract: numpy's ``//`` by a constant is fast, its ``%`` several
    times slower.
    """
    high = keys // width
    low = high * width
    np.subtract(keys, low, out=low)
    return high, low


def distinct_sorted(*values: np.ndarray) -> np.ndarray:
    """The distinct values of one or more 1-D integer arrays, ascending: ``np.unique`` of their
    concatenation, by a sort (:func:`sort_in_place`) and a comparison of neighbours.

    From numpy 2.3, ``np.unique`` of integers without ``return_*`` finds the distinct values in a
    hash table, then sorts them: fast where few values are distinct (0.2 s against 0.4 s for 10M
    values of 1,000), slow where most are, as the keys litpath takes them of (ids, pair codes):
    8.3 s against 0.69 s for 10M int64 of 8M distinct values, 6 s even when they come sorted
    (numpy 2.4, AMD EPYC). The merge's cited sentences took 17 s of a 10M first build's merge so.
    """
    keys = np.concatenate(values) if len(values) != 1 else values[0].copy()
    sort_in_place(keys)
    if len(keys) < 2:
        return keys
    return keys[np.r_[True, keys[1:] != keys[:-1]]]


def sum_by_key(keys: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys ascending, sum of counts per key); counts default to 1 per row.

    A sort of the int64 keys and a segmented sum: on one core this is several times faster
    than a hash aggregation, and it needs no threads. Keys that are already distinct (one
    ingest file's mentions, for one) skip the segmented sum.
    """
    if counts is None:
        keys = keys.copy()
        sort_in_place(keys)
        if not len(keys):
            return keys, np.zeros(0, np.int64)
        start = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        return keys[start], np.diff(np.r_[start, len(keys)]).astype(np.int64)
    keys, order = sort_keys(keys)
    counts = counts[order]
    del order
    if not len(keys):
        return keys, counts.astype(np.int64)
    repeats = keys[1:] == keys[:-1]
    if not repeats.any():
        return keys, counts.astype(np.int64, copy=False)
    start = np.flatnonzero(~np.r_[False, repeats])
    return keys[start], np.add.reduceat(counts, start).astype(np.int64, copy=False)


def positions_in(distinct: pa.Array, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The position in ``keys`` of each of the ``distinct`` values (-1 where absent), by looking
    ``keys`` up among ``distinct``: Arrow's set lookup hashes its value set on every call, so
    hashing the few distinct values of a batch and probing the many keys costs a fraction of the
    other way round (the citations' 229k cited papers among 1.44M documents at 10M: 0.13-0.19 s
    against 0.35-0.57). ``distinct`` must hold each value once; a key found twice in ``keys``
    gives its last position."""
    where = pc.fill_null(pc.index_in(keys, value_set=distinct), -1)
    where = (where.combine_chunks() if isinstance(where, pa.ChunkedArray) else where).to_numpy(zero_copy_only=False)
    found = where >= 0
    positions = np.full(len(distinct), -1, np.int64)
    positions[where[found]] = np.flatnonzero(found)
    return positions


def string_codes(chunks: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """(code per row, distinct values) of a string column's chunks: codes number the distinct
    values in sorted order, so sorting or grouping by code is sorting or grouping by the string,
    and Arrow and numpy do either several times faster on int64 than on strings."""
    unified = _dictionary_column(chunks)
    if not unified.num_chunks:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    dictionary = unified.chunk(0).dictionary
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    indices = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in unified.chunks])
    return rank[indices], dictionary.take(pa.array(order))


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
