"""The int64 sorting helpers of pipeline.runtime.columnar and the symmetric CSR of pipeline.graph.csr against
plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.graph.csr import CSR, symmetric_csr, symmetric_csr_numpy
from pipeline.query.sssp import symmetric_csr_arrays
from pipeline.runtime.columnar import (
    TWO_THREAD_SORT_MIN,
    _mostly_ascending,
    _ordered_at_large,
    argsort_keys,
    distinct_sorted,
    sort_in_place,
    sort_keys,
    split_keys,
    sum_by_key,
)


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


@pytest.mark.parametrize("layout", ["random", "ascending at large", "short"])
def test_smaller_sorts_choose_timsort_only_for_keys_ascending_at_large(layout):
    """Below TWO_THREAD_SORT_MIN: timsort for keys ascending at large with local disorder (an
    ingest block's mention keys: ascending papers, their concepts in any order), else introsort;
    the result is np.sort's either way."""
    rng = np.random.default_rng(7)
    n = 100 if layout == "short" else 130_000
    keys = rng.integers(0, 1 << 40, n, dtype=np.int64)
    if layout == "ascending at large":
        papers = np.sort(rng.integers(10_000_000, 10_013_000, n // 2))
        keys = np.concatenate([papers, papers]) * 20_000 + rng.integers(0, 20_000, n)
    assert _ordered_at_large(keys) == (layout == "ascending at large")
    values = keys.copy()
    sort_in_place(values)
    assert np.array_equal(values, np.sort(keys))


@pytest.mark.parametrize(
    "keys_of",
    [
        "small",  # packed with the row index as they are
        "two codes",  # high << 32 | low past 63 bits with the index: squeezed, then unsqueezed
        "two codes, low all zero",  # the squeeze keeps one low bit
        "wide",  # too wide to pack: np.argsort and a gather
        "negative",
    ],
)
def test_sort_keys_gives_np_sort_and_the_stable_order(keys_of):
    rng = np.random.default_rng()
    n = 30000
    keys = {
        "small": lambda: rng.integers(0, 1000, n, dtype=np.int64),
        "two codes": lambda: (rng.integers(0, 1 << 30, n, dtype=np.int64) << 32) | rng.integers(0, 3000, n),
        "two codes, low all zero": lambda: rng.integers(0, 1 << 30, n, dtype=np.int64) << 32,
        "wide": lambda: rng.integers(0, 1 << 62, n, dtype=np.int64),
        "negative": lambda: rng.integers(-500, 500, n, dtype=np.int64),
    }[keys_of]()
    before = keys.copy()
    ordered, order = sort_keys(keys)
    assert np.array_equal(keys, before)  # the caller's keys are not touched
    assert np.array_equal(ordered, np.sort(keys)) and ordered.dtype == np.int64
    assert np.array_equal(order, np.argsort(keys, kind="stable"))
    empty, no_order = sort_keys(np.zeros(0, np.int64))
    assert len(empty) == len(no_order) == 0


@pytest.mark.parametrize("layout", ["random", "ascending runs"])
def test_wide_distinct_keys_sort_whatever_their_runs(layout):
    """Keys too wide to pack with the row index (a graph's src * n + dst past 2^38 with 2^25
    edges) are argsorted by numpy: by timsort when they are long ascending runs (a patched
    graph's earlier edges, then its new ones), else by introsort. Either way the keys come out
    sorted and the order is the one that sorts them (distinct keys: only one)."""
    rng = np.random.default_rng()
    n = TWO_THREAD_SORT_MIN + 4321
    keys = np.unique(rng.integers(0, 1 << 61, n + 1000, dtype=np.int64))[:n]
    rng.shuffle(keys)
    if layout == "ascending runs":
        keys = np.concatenate([np.sort(part) for part in np.array_split(keys, 22)])
    assert _mostly_ascending(keys) == (layout == "ascending runs")
    ordered, order = sort_keys(keys, unique=True)
    assert np.array_equal(ordered, np.sort(keys))
    assert np.array_equal(keys[order], ordered)


def test_sum_by_key_of_distinct_keys_is_a_sort():
    rng = np.random.default_rng()
    keys = rng.permutation(np.arange(0, 40000, 3, dtype=np.int64) << 20)
    counts = rng.integers(1, 9, len(keys)).astype(np.int64)
    distinct, sums = sum_by_key(keys, counts)
    order = np.argsort(keys)
    assert np.array_equal(distinct, keys[order]) and np.array_equal(sums, counts[order])
    keys[7] = keys[8]  # one repeat: the segmented sum again
    distinct, sums = sum_by_key(keys, counts)
    assert len(distinct) == len(keys) - 1 and sums.sum() == counts.sum()
    assert sums[np.searchsorted(distinct, keys[8])] == counts[7] + counts[8]


@pytest.mark.parametrize(
    ("high", "n"),
    [*((high, n) for high in (1, 5, 1000, 1 << 40) for n in (0, 1, 2, 777)), (5, TWO_THREAD_SORT_MIN + 3),
     (1 << 40, TWO_THREAD_SORT_MIN + 3)],
)
def test_distinct_sorted_is_np_unique_of_the_concatenation(high, n):
    """np.unique's distinct values, ascending, one array or several (negative values, repeats
    across the arrays, sorted input, one that would sort on two threads), leaving the input as
    it was."""
    def unique(values: np.ndarray) -> np.ndarray:  # np.unique by its sort (its hash table is slow here)
        return np.unique(values, return_index=True)[0]

    rng = np.random.default_rng(n + high % 991)
    parts = [rng.integers(-high, high, size, dtype=np.int64) for size in (n, n // 3, 0)]
    kept = [part.copy() for part in parts]
    assert np.array_equal(distinct_sorted(parts[0]), unique(parts[0]))
    got = distinct_sorted(*parts)
    assert got.dtype == np.int64 and np.array_equal(got, unique(np.concatenate(parts)))
    assert np.array_equal(distinct_sorted(np.sort(parts[0])), unique(parts[0]))
    assert all(np.array_equal(part, before) for part, before in zip(parts, kept, strict=True))


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


@pytest.mark.parametrize("n", [0, 1, 2, 50, 3000, 100_000])
@pytest.mark.parametrize("build", ["library", "numpy", "numpy, edges shuffled"])
def test_symmetric_csr_against_a_lexsort_of_both_directions(n, build):
    """Random undirected edges (zero costs included) against an independent construction: the
    compiled counting pass (edges sorted, as the graph stage has them) and the numpy one."""
    rng = np.random.default_rng()
    pairs = rng.integers(0, max(n, 1), size=(4 * n, 2))
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)  # sorted by (src, dst)
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    if build == "numpy, edges shuffled":
        pairs = rng.permutation(pairs)
    src, dst = pairs[:, 0], pairs[:, 1]
    cost = rng.choice([0.0, 0.5, 1.25, 7.0], size=len(src)).astype(np.float32)
    if build == "library":
        row_ptr, col_idx, costs = symmetric_csr_arrays(n, src, dst, cost)
        csr = CSR(n, row_ptr, col_idx, costs)
    else:
        csr = symmetric_csr_numpy(n, src, dst, cost)

    rows, cols = np.r_[src, dst], np.r_[dst, src]
    both_costs = np.r_[cost, cost]
    order = np.lexsort((cols, rows))
    assert csr.row_ptr.tolist() == np.r_[0, np.cumsum(np.bincount(rows, minlength=n))].astype(int).tolist()
    assert np.array_equal(csr.col_idx, cols[order])
    assert np.array_equal(csr.cost.view(np.uint32), both_costs[order].view(np.uint32))
    assert csr.col_idx.dtype == np.int64 and csr.cost.dtype == np.float32


@pytest.mark.parametrize(
    ("src", "dst", "message"),
    [
        ([0, 2, 1], [1, 3, 2], r"edge 2 \(1, 2\): not after the edge before it"),
        ([0, 0], [1, 1], r"edge 1 \(0, 1\): .*a repeat of it"),
        ([0, 3], [1, 2], r"edge 1 \(3, 2\): needs 0 <= src < dst < n"),
        ([0, 1], [1, 9], r"edge 1 \(1, 9\): needs 0 <= src < dst < n"),
    ],
)
def test_the_library_csr_names_the_first_bad_edge(src, dst, message):
    with pytest.raises(ValueError, match=message):
        symmetric_csr_arrays(5, np.array(src), np.array(dst), np.ones(len(src), np.float32))


def test_the_graph_stage_csr_of_sorted_edges_comes_from_the_library(monkeypatch):
    import pipeline.graph.csr as csr_module

    def numpy_used(*_args):
        raise AssertionError("the numpy CSR was used for sorted edges")

    monkeypatch.setattr(csr_module, "symmetric_csr_numpy", numpy_used)
    csr = symmetric_csr(4, np.array([0, 0, 1, 2]), np.array([1, 3, 3, 3]), np.arange(4, dtype=np.float32))
    assert csr.row_ptr.tolist() == [0, 2, 4, 5, 8]
    assert csr.col_idx.tolist() == [1, 3, 0, 3, 3, 0, 1, 2]
    assert csr.cost.tolist() == [0, 1, 0, 2, 3, 1, 2, 3]


def test_unsorted_edges_are_sorted_by_numpy_and_repeats_refused():
    """The library takes edges sorted by (src, dst) only; symmetric_csr gives unsorted ones to
    numpy, which sorts them (same CSR) and refuses a repeated edge."""
    rng = np.random.default_rng()
    pairs = np.unique(np.sort(rng.integers(0, 500, size=(3000, 2)), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    cost = rng.random(len(pairs)).astype(np.float32)
    expected = symmetric_csr(500, pairs[:, 0], pairs[:, 1], cost)
    shuffle = rng.permutation(len(pairs))
    got = symmetric_csr(500, pairs[shuffle, 0], pairs[shuffle, 1], cost[shuffle])
    assert np.array_equal(got.row_ptr, expected.row_ptr) and np.array_equal(got.col_idx, expected.col_idx)
    assert np.array_equal(got.cost, expected.cost)
    with pytest.raises(ValueError, match="duplicate edge"):
        symmetric_csr(500, np.r_[pairs[:, 0], pairs[0, 0]], np.r_[pairs[:, 1], pairs[0, 1]], np.r_[cost, cost[0]])


def test_out_of_range_edges_are_refused_by_name():
    with pytest.raises(ValueError, match=r"edges must satisfy 0 <= src < dst < n"):
        symmetric_csr(5, np.array([0, 3]), np.array([1, 2]), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"edges must satisfy 0 <= src < dst < n"):
        symmetric_csr(5, np.array([0, 1]), np.array([1, 9]), np.ones(2, np.float32))


@pytest.mark.parametrize("width", [1, 7, 3000, 1 << 31])
def test_split_keys_is_floor_division_and_remainder(width):
    rng = np.random.default_rng()
    keys = rng.integers(0, (1 << 62) // width, 10000, dtype=np.int64) * width + rng.integers(0, width, 10000)
    high, low = split_keys(keys, width)
    assert np.array_equal(high, keys // width) and np.array_equal(low, keys % width)
