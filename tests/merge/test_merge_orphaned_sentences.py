"""The sentences only the deleted papers' predications named (pipeline.merge.delta._named_only_by),
found from the removed rows' sentence ids and the earlier ones alone: held to a plain reading of
the rule on fresh random tables -- ids named several times, by kept and removed rows, nulls."""

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
