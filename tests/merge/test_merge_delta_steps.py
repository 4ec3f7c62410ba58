"""Two steps of the merge on the delta (pipeline.merge.delta), each held to a plain reading on
fresh random tables: the sentences only the deleted papers' predications named
(``_named_only_by``, from the removed rows' sentence ids and the earlier ones alone: ids named
several times, by kept and removed rows, nulls), a batch less its dropped rows (``_without``),
and the row groups whose doc_id statistics may hold a wanted id (``_row_groups_within``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.merge.delta import _named_only_by, _row_groups_within


@pytest.mark.parametrize("seed", range(6))
def test_named_only_by_the_removed_rows(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    ids = rng.integers(0, max(2, n // 3), n)  # repeats: a sentence named by several predications
    valid = rng.random(n) > 0.05
    earlier = [int(i) if ok else None for i, ok in zip(ids, valid, strict=True)]
    gone = rng.random(n) < rng.random()  # the deleted papers' rows
    removed = [sid for sid, g in zip(earlier, gone, strict=True) if g]
    kept = {sid for sid, g in zip(earlier, gone, strict=True) if not g and sid is not None}
    want = {sid for sid in removed if sid is not None} - kept
    got = _named_only_by(pa.chunked_array([pa.array(removed, pa.int64())]),
                         pa.chunked_array([pa.array(earlier[: n // 2], pa.int64()), pa.array(earlier[n // 2 :], pa.int64())]))  # fmt: skip
    assert sorted(got.to_pylist()) == sorted(want)
    assert len(got) == len(set(got.to_pylist()))


def test_nothing_removed_names_nothing():
    assert _named_only_by(pa.chunked_array([pa.array([], pa.int64())]), pa.chunked_array([pa.array([1, 2], pa.int64())])).to_pylist() == []


@pytest.mark.parametrize("seed", range(5))
def test_rows_without_the_marked_ones_are_a_filter(seed):
    """A rewrite drops a few rows of a batch as the slices between them (_without): the same
    rows, in the same order, as a filter -- none marked, the first and last, adjacent ones, and
    more than FEW_MARKED (a filter then)."""
    from pipeline.merge import delta

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3 * delta.FEW_MARKED))
    rows = pa.table({"id": pa.array(np.arange(n)), "text": pa.array([f"s{i}" * int(i % 7) for i in range(n)])})
    for share in (0.0, 0.001, 0.05, 1.0):
        flags = rng.random(n) < share
        if share and n > 2:
            flags[[0, n - 1]] = True  # the batch's ends
        marked = pa.chunked_array([pa.array(flags[: n // 2]), pa.array(flags[n // 2 :])])
        got = delta._without(rows, marked, int(flags.sum()))
        assert got.equals(rows.filter(pa.array(~flags))), (n, share)


@pytest.mark.parametrize("seed", range(4))
def test_row_groups_whose_statistics_may_hold_the_wanted_ids(seed, tmp_path):
    """A file of doc_ids in row groups of random lengths, a few CORD-19 ids among PubMed ones:
    the row groups kept are those with an id in the wanted range, and every one where the file
    has no statistics of the column."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    ids = [f"PMID:{i:08d}" for i in rng.integers(0, 10**8, n)]
    for at in rng.choice(n, int(rng.integers(0, 4)), replace=False):
        ids[at] = f"CORD:{rng.integers(0, 10**6):06d}"
    table = pa.table({"doc_id": ids, "n": np.arange(n)})
    size = int(rng.integers(5, 60))
    low, high = "CORD:000000", "CORD:999999"
    want = [g for g in range(-(-n // size)) if any(low <= d <= high for d in ids[g * size:(g + 1) * size])]
    for statistics, expected in ((["doc_id"], want), (True, want), (False, list(range(-(-n // size))))):
        path = tmp_path / f"{statistics}.parquet"
        pq.write_table(table, path, row_group_size=size, write_statistics=statistics)
        with pq.ParquetFile(path) as parquet:
            assert _row_groups_within(parquet, "doc_id", low, high) == expected, statistics
