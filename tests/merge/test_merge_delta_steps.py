"""Two steps of the merge on the delta (pipeline.merge.delta), each held to a plain reading on
fresh random tables: the sentences only the deleted papers' predications named
(``_named_only_by``, from the removed rows' sentence ids and the earlier ones alone: ids named
several times, by kept and removed rows, nulls), and a batch less its dropped rows (``_without``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipeline.merge.delta import _named_only_by


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
