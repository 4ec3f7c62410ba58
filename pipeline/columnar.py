"""Sorting and summing of int64 keys, shared by the ingest, the merge and the graph build.

Plain numpy, no litpath imports: the stages below the graph (ingest) and the graph itself
use these without importing one another.
"""

from __future__ import annotations

import numpy as np


def argsort_keys(keys: np.ndarray, unique: bool = False) -> np.ndarray:
    """Stable argsort of int64 keys (any order among equal keys if ``unique`` says there are none).

    When the key range and the row index fit together in 63 bits, (key, index) are packed into
    one int64 and the values sorted, which is several times faster than ``np.argsort``; the
    index in the low bits breaks ties, so equal keys keep their order. Keys made of two packed
    codes (``high << 32 | low``) are first squeezed to the bits their codes use.
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    index_bits = max(int(n - 1).bit_length(), 1)
    low, high = int(keys.min()), int(keys.max())
    if low >= 0 and high.bit_length() + index_bits > 63:
        low_bits = int((keys & 0xFFFFFFFF).max()).bit_length()
        if (high >> 32).bit_length() + low_bits + index_bits <= 63:
            keys = ((keys >> 32) << low_bits) | (keys & 0xFFFFFFFF)  # same order, fewer bits
            high = int(keys.max())
    if low >= 0 and high.bit_length() + index_bits <= 63:
        packed = keys.astype(np.int64) << index_bits
        packed |= np.arange(n, dtype=np.int64)
        packed.sort()
        packed &= (1 << index_bits) - 1
        return packed
    return np.argsort(keys) if unique else np.argsort(keys, kind="stable")


def sum_by_key(keys: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys ascending, sum of counts per key); counts default to 1 per row.

    A sort of the int64 keys and a segmented sum: on one core this is several times faster
    than a hash aggregation, and it needs no threads.
    """
    if counts is None:
        keys = np.sort(keys)
        if not len(keys):
            return keys, np.zeros(0, np.int64)
        start = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        return keys[start], np.diff(np.r_[start, len(keys)]).astype(np.int64)
    order = argsort_keys(keys)
    keys, counts = keys[order], counts[order]
    if not len(keys):
        return keys, counts.astype(np.int64)
    start = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[start], np.add.reduceat(counts, start).astype(np.int64, copy=False)
