"""Reusing an earlier build's record buckets (pipeline.store.bucket_reuse): on fresh random tables
and random changes -- rows removed, changed and added, at the ends and in runs -- the rebuilt
buckets equal, bucket for bucket, those of cutting the whole new table afresh; and a change the
caller failed to name is caught by the row check."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from pipeline.store.bucket_reuse import PASS_BYTES, ReuseMismatch, ReuseTally, rebuilt_buckets, reuse_plan
from pipeline.store.buckets import bucketed


class _Listed:
    """Earlier buckets held in a list (the bucket file's MappedBuckets in production)."""

    def __init__(self, buckets) -> None:
        self.buckets = buckets
        self.firsts = [b.first for b in buckets]
        self.rows = [b.rows for b in buckets]

    def bucket(self, index):
        return self.buckets[index]

    reused = bucket


def _table(records: dict[tuple, int], two_keys: bool) -> pa.Table:
    keys = sorted(records)
    columns = {"a": [k[0] for k in keys]}
    if two_keys:
        columns["b"] = [k[1] for k in keys]
    return pa.table({**columns, "value": [records[k] for k in keys]})


def _key(rng: random.Random, two_keys: bool) -> tuple:
    a = f"C{rng.randrange(10**7):07d}"
    return (a, f"C{rng.randrange(10**7):07d}") if two_keys else (a,)


def _bucket_tuples(buckets) -> list:
    return [(b.bucket_id, b.first, b.rows) for b in buckets]


@pytest.mark.parametrize("seed", range(24))
def test_rebuilt_buckets_equal_a_fresh_cut_on_random_changes(seed):
    rng = random.Random(seed)
    two_keys = seed % 2 == 1
    key = ["a", "b"] if two_keys else ["a"]
    mean = rng.choice([4, 8, 16])
    n = rng.choice([0, 1, 50, 800, 3000])
    before = {_key(rng, two_keys): rng.randrange(100) for _ in range(n)}
    after = dict(before)
    changed: set[tuple] = set()
    keys = sorted(before)
    for _ in range(rng.choice([0, 1, 3, 20, 200])):
        what = rng.random()
        if what < 0.3 and keys:  # removed
            k = rng.choice(keys)
            after.pop(k, None)
        elif what < 0.6 and keys:  # changed
            k = rng.choice(keys)
            if k in after:
                after[k] += 1000
        elif what < 0.7 and keys:  # a run of removals (a stretch of buckets gone)
            start = rng.randrange(len(keys))
            for k in keys[start : start + 5 * mean]:
                after.pop(k, None)
                changed.add(k)
            continue
        else:  # added, also before the first key and after the last
            k = rng.choice([_key(rng, two_keys), ("A",) * len(key), ("Z",) * len(key)])
            after[k] = -1
        changed.add(k)
    earlier = list(bucketed([_table(before, two_keys)], key, mean))
    fresh = list(bucketed([_table(after, two_keys)], key, mean))
    regrouped = _table({k: v for k, v in after.items() if k in changed}, two_keys)
    # the stretches cut again one at a time, a few at a time, or all in one pass: the same buckets
    for pass_bytes in (1, 2_000, PASS_BYTES):
        tally = ReuseTally()
        rebuilt = list(rebuilt_buckets(_Listed(earlier), sorted(changed), regrouped, key, mean, len(after), tally,
                                       pass_bytes=pass_bytes))  # fmt: skip
        assert _bucket_tuples(rebuilt) == _bucket_tuples(fresh)
        assert [b.data for b in rebuilt] == [b.data for b in fresh]
        # every bucket reused is one of the earlier build's, and reuse happens when little changed
        assert tally.reused == sum(reuse_plan([b.first for b in earlier], sorted(changed), mean))
        assert tally.decoded == len(earlier) - tally.reused
        if earlier and len(changed) <= 3:
            assert tally.reused >= len(earlier) - 2 * (len(changed) + 1) - 2


def test_a_change_left_out_of_the_changed_keys_fails_the_row_check():
    rng = random.Random(7)
    before = {_key(rng, False): i for i in range(500)}
    after = dict(before)
    gone = sorted(before)[100]
    del after[gone]  # removed, but not named as changed
    earlier = list(bucketed([_table(before, False)], ["a"], 8))
    with pytest.raises(ReuseMismatch, match="499"):
        list(rebuilt_buckets(_Listed(earlier), [], _table({}, False), ["a"], 8, len(after)))
