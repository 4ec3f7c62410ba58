"""The int64 sorting helpers of pipeline.columnar and the symmetric CSR of pipeline.graph.csr against
plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.columnar import TWO_THREAD_SORT_MIN, _mostly_ascending, argsort_keys, sort_in_place, sum_by_key
from pipeline.graph.csr import symmetric_csr


@pytest.mark.parametrize("high", [1, 7, 1 << 20, 1 << 40, 1 << 62])
def test_argsort_keys_is_a_stable_argsort(high):
    keys = np.random.default_rng(high % 1000).integers(0, high, 5000, dtype=np.int64)
    assert np.array_equal(argsort_keys(keys), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("high", [3, 1000, 1 << 62])
@pytest.mark.parametrize("layout", ["random", "ascending runs"])
def test_large_sorts_are_sorts_and_argsort_stays_stable(high, layout):
    """Past TWO_THREAD_SORT_MIN the sort is chosen by the data: timsort for long ascending runs,
    else a split at a partition over two threads. Either way the result must be np.sort's, and
    argsort_keys still stable, with few distinct keys (many equal to the partition's middle
    value) and with many."""
    n = TWO_THREAD_SORT_MIN + 12345
    keys = np.random.default_rng(high % 997).integers(0, high, n, dtype=np.int64)
    if layout == "ascending runs":  # 40 sorted runs, as the destinations of edges sorted by source
        keys = np.concatenate([np.sort(part) for part in np.array_split(keys, 40)])
    assert _mostly_ascending(keys) == (layout == "ascending runs")
    values = keys.copy()
    sort_in_place(values)
    assert np.array_equal(values, np.sort(keys))
    assert np.array_equal(argsort_keys(keys), np.argsort(keys, kind="stable"))


def test_argsort_keys_negative_and_empty():
    keys = np.array([3, -1, 3, -5, 0], dtype=np.int64)
    assert np.array_equal(argsort_keys(keys), np.argsort(keys, kind="stable"))
    assert len(argsort_keys(np.zeros(0, np.int64))) == 0


@pytest.mark.parametrize("with_counts", [False, True])
def test_sum_by_key(with_counts):
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 50, 1000).astype(np.int64) << 33
    counts = rng.integers(1, 5, 1000).astype(np.int64) if with_counts else None
    distinct, sums = sum_by_key(keys, counts)
    expected = np.unique(keys)
    assert np.array_equal(distinct, expected)
    weights = counts if with_counts else np.ones(len(keys), np.int64)
    assert np.array_equal(sums, [weights[keys == k].sum() for k in expected])
    empty_keys, empty_sums = sum_by_key(
        np.zeros(0, np.int64), None if not with_counts else np.zeros(0, np.int64)
    )
    assert len(empty_keys) == len(empty_sums) == 0


def test_argsort_keys_of_two_packed_codes():
    rng = np.random.default_rng(5)
    keys = (rng.integers(0, 1 << 21, 20000, dtype=np.int64) << 32) | rng.integers(
        0, 3000, 20000, dtype=np.int64
    )
    assert np.array_equal(argsort_keys(keys), np.argsort(keys, kind="stable"))
    distinct = np.unique(keys)
    assert np.array_equal(distinct[::-1][argsort_keys(distinct[::-1].copy(), unique=True)], distinct)


@pytest.mark.parametrize("n", [0, 1, 2, 50, 3000])
def test_symmetric_csr_against_a_lexsort_of_both_directions(n):
    """Random undirected edges (zero costs included) against an independent construction."""
    rng = np.random.default_rng()
    pairs = rng.integers(0, max(n, 1), size=(4 * n, 2))
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    src, dst = pairs[:, 0], pairs[:, 1]
    cost = rng.choice([0.0, 0.5, 1.25, 7.0], size=len(src)).astype(np.float32)
    csr = symmetric_csr(n, src, dst, cost)

    rows, cols = np.r_[src, dst], np.r_[dst, src]
    both_costs = np.r_[cost, cost]
    order = np.lexsort((cols, rows))
    assert csr.row_ptr.tolist() == np.r_[0, np.cumsum(np.bincount(rows, minlength=n))].astype(int).tolist()
    assert np.array_equal(csr.col_idx, cols[order])
    assert np.array_equal(csr.cost.view(np.uint32), both_costs[order].view(np.uint32))
    assert csr.col_idx.dtype == np.int64 and csr.cost.dtype == np.float32
