"""Record buckets of a rebuild on top of an earlier build: its buckets whose rows did not change are
reused as they are, and only the stretches around the changed keys are grouped and cut again.

The records of a kind are a function of a few papers' rows each (a paper's record of its own; a
concept pair's of the papers whose predications join the pair), and a merge on the delta
(:mod:`pipeline.merge.delta`) says which papers' rows may differ from the earlier build's
(``changed_papers.parquet``). From that the kind's *changed keys* K follow
(:mod:`pipeline.store.record_buckets`): every key whose record may differ, was added or was
removed. The new buckets then equal those of bucketing the whole new table afresh
(:func:`pipeline.store.buckets.bucketed`, content-defined cuts), because:

* a bucket restarts wherever a key's hash is 0 modulo the mean (an *anchor*), and otherwise only
  after 4 x mean rows, counted from its start; so from a point where both the earlier and the new
  bucketing start a bucket, identical rows give identical cuts;
* an earlier bucket with no key of K in its key range (from its first key up to the next
  bucket's) holds exactly the rows the new table has there; it is reused when the new bucketing
  starts a bucket at its first key too -- it is the table's first, its first key is an anchor, or
  the bucket before it was reused and so ended at the same row -- and its end is the same: the
  next bucket's first key is not in K (still there, nothing inserted before it);
* every other stretch, between two such points, is bucketed afresh from its rows: the earlier
  buckets' rows without the keys of K, plus K's records grouped anew (those that still exist).

A run of the rebuild checks itself: the rows of the new buckets must add up to the rows the new
table has (the caller's ``expected_rows``), else it raises and the caller groups everything.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.store.buckets import Bucket, bucketed, bucketed_hashed, decode, joined_keys, key_hashes


class ReuseMismatch(RuntimeError):
    """The reused and regrouped buckets do not add up to the new table: group everything instead."""


@dataclass
class ReuseTally:
    """What a rebuild reused and redid: buckets reused, earlier buckets decoded, keys grouped anew,
    and the rows of each that a caller wants counted (``dropped``: earlier rows of K, decoded)."""

    reused: int = 0
    decoded: int = 0
    regrouped_keys: int = 0
    dropped: list[pa.Table] = field(default_factory=list)


def _anchored(firsts: list[tuple], mean: int) -> np.ndarray:
    """Whether a row with each of these keys starts a bucket wherever it is (its hash is 0 modulo
    ``mean``; joined as :func:`pipeline.store.buckets.joined_keys` joins them)."""
    joined = pa.array(["|".join(first) for first in firsts], pa.string())
    return key_hashes(joined) % np.uint64(mean) == 0


class EarlierBuckets(Protocol):
    """The earlier build's buckets of a kind, in key order: their first keys and rows up front, a
    bucket's bytes when asked (:class:`pipeline.store.record_buckets.BucketFile`)."""

    firsts: list[tuple]
    rows: list[int]

    def bucket(self, index: int) -> Bucket: ...

    def reused(self, index: int) -> Bucket:
        """Bucket ``index`` taken as it is (its bytes need not be checked again)."""
        ...


# Bytes of the earlier buckets around the changed keys, decoded, that one pass holds (a stretch
# is never split, and a pass ends once it has this much): the stretches are cut again together,
# one filter, sort and key hash per pass, where one per stretch cost more than grouping every
# record afresh (a 10M update rerun's documents: 36 % of their 23.5k buckets, in thousands of
# stretches, cut again in 5.4 s, all 3M grouped afresh in 3.6). Larger passes sort longer tables
# and hold more: the same rebuild took 4.2-4.5 s in passes of 2 MB, 4.3-4.8 in 8 MB and
# 4.4-5.0 in 32 MB (671 MB at its peak against 420), grouping afresh 4.0-4.4 (three alternate
# runs each, Intel Xeon). Bytes, not rows: an evidence or papers record (document and sentence
# lists, quoted text) is tens of times a document's.
PASS_BYTES = 2 << 20


@dataclass(frozen=True)
class _Stretch:
    """Earlier buckets ``first``..``last`` (indices), to be cut again: they hold the keys in
    [``lo``, ``hi``) (None: unbounded)."""

    first: int
    last: int
    lo: tuple | None
    hi: tuple | None


def rebuilt_buckets(
    earlier: EarlierBuckets,
    changed: list[tuple],
    regrouped: pa.Table,
    key: list[str],
    mean: int,
    expected_rows: int,
    tally: ReuseTally | None = None,
    pass_bytes: int = PASS_BYTES,
) -> Iterator[Bucket]:
    """The new table's buckets, in key order, from the ``earlier`` build's buckets (in key order),
    the ``changed`` keys K (sorted tuples) and ``regrouped``: the new records of K's keys that
    exist (sorted by ``key``). Raises :class:`ReuseMismatch` when the rows do not add up to
    ``expected_rows``. The stretches to cut again are taken in passes of about ``pass_bytes``
    decoded (:data:`PASS_BYTES`; the buckets are the same for any)."""
    tally = tally if tally is not None else ReuseTally()
    tally.regrouped_keys = len(changed)
    regrouped_keys = list(zip(*[regrouped.column(k).to_pylist() for k in key], strict=True)) if regrouped.num_rows else []
    n = len(earlier.firsts)
    written = 0
    if n == 0:  # nothing to reuse: the new table is K's records
        for bucket in bucketed([regrouped], key, mean):
            written += bucket.rows
            yield bucket
    reusable = reuse_plan(earlier.firsts, changed, mean)
    if n and reusable[0]:
        # the first bucket starts at an anchor: keys added before it are cut on their own
        before_first = bisect.bisect_left(regrouped_keys, earlier.firsts[0])
        for bucket in bucketed([regrouped.slice(0, before_first)], key, mean):
            written += bucket.rows
            yield bucket
    # the plan in key order: an earlier bucket reused (its index), or a stretch cut again
    segments: list[int | _Stretch] = []
    i = 0
    while i < n:
        if reusable[i]:
            segments.append(i)
            i += 1
            continue
        j = i
        while j + 1 < n and not reusable[j + 1]:
            j += 1
        segments.append(_Stretch(i, j, None if i == 0 else earlier.firsts[i], earlier.firsts[j + 1] if j + 1 < n else None))
        i = j + 1
    at = 0
    while at < len(segments):
        # one pass: stretches decoded up to about pass_bytes, with the reused buckets between them
        end, decoded, bytes_in_pass = at, [], 0
        while end < len(segments) and (not decoded or bytes_in_pass < pass_bytes):
            segment = segments[end]
            if isinstance(segment, _Stretch):
                decoded.append([decode(earlier.bucket(index).data) for index in range(segment.first, segment.last + 1)])
                bytes_in_pass += sum(table.nbytes for table in decoded[-1])
            end += 1
        stretches = [s for s in segments[at:end] if isinstance(s, _Stretch)]
        cut = _cut_again(stretches, decoded, changed, regrouped, regrouped_keys, key, mean, tally)
        del decoded
        for segment in segments[at:end]:
            if isinstance(segment, _Stretch):
                for bucket in cut[segment.first]:
                    written += bucket.rows
                    yield bucket
            else:
                tally.reused += 1
                written += earlier.rows[segment]
                yield earlier.reused(segment)
        at = end
    if written != expected_rows:
        raise ReuseMismatch(f"the reused and regrouped buckets hold {written:,} rows, the new table {expected_rows:,}")


def _cut_again(stretches: list[_Stretch], decoded: list[list[pa.Table]], changed: list[tuple], regrouped: pa.Table,
               regrouped_keys: list[tuple], key: list[str], mean: int, tally: ReuseTally) -> dict[int, list[Bucket]]:  # fmt: skip
    """The buckets of each stretch (by its first earlier bucket's index), cut afresh from its rows:
    its earlier buckets' rows (``decoded``, per stretch) without the keys of K, plus K's regrouped
    records in its range. The stretches are in key order, and their key ranges do not overlap, so
    all of them are filtered, sorted and hashed at once; only the cuts restart at each stretch's
    first row."""
    if not stretches:
        return {}
    tally.decoded += sum(len(tables) for tables in decoded)
    # which stretch each decoded row is of
    rows_per_stretch = [sum(table.num_rows for table in tables) for tables in decoded]
    of_stretch = np.repeat(np.arange(len(stretches)), rows_per_stretch)
    schema = decoded[0][0].schema
    rows = pa.concat_tables([t if t.schema.equals(schema) else t.cast(schema) for tables in decoded for t in tables])
    # the keys of K in the pass's range (a lookup among those alone, not all of K)
    changed_here = pa.array(["|".join(k) for k in changed[_between(changed, stretches[0].lo, stretches[-1].hi)]], pa.string())
    # (a bucket has rows, so a pass has some)
    is_changed = pc.is_in(joined_keys(rows, key), value_set=changed_here)
    if pc.any(is_changed).as_py():
        tally.dropped.append(rows.filter(is_changed))
    flags = np.asarray(is_changed.to_numpy(zero_copy_only=False), dtype=bool)
    kept_per_stretch = np.bincount(of_stretch[~flags], minlength=len(stretches))
    added_per_stretch = np.array([within.stop - within.start for within in
                                  (_between(regrouped_keys, s.lo, s.hi) for s in stretches)], dtype=np.int64)  # fmt: skip
    pieces = [rows.filter(pc.invert(is_changed))]
    added = _between(regrouped_keys, stretches[0].lo, stretches[-1].hi)
    if added.stop > added.start:
        pieces.append(regrouped.slice(added.start, added.stop - added.start).select(schema.names).cast(schema))
    table = pa.concat_tables(pieces).sort_by([(k, "ascending") for k in key])
    hashes = key_hashes(joined_keys(table, key))
    sizes = kept_per_stretch + added_per_stretch
    if int(sizes.sum()) != table.num_rows:  # a regrouped key outside every stretch: K was not what the plan took
        raise ReuseMismatch(f"{table.num_rows - int(sizes.sum()):,} regrouped rows lie in no stretch cut again")
    out: dict[int, list[Bucket]] = {}
    start = 0
    for stretch, size in zip(stretches, sizes.tolist(), strict=True):
        out[stretch.first] = [] if size == 0 else \
            list(bucketed_hashed(table.slice(start, size), hashes[start : start + size], key, mean))  # fmt: skip
        start += size
    return out


def _between(keys: list[tuple], lo: tuple | None, hi: tuple | None) -> slice:
    """The positions of the sorted ``keys`` in [lo, hi) (None: unbounded)."""
    start = 0 if lo is None else bisect.bisect_left(keys, lo)
    stop = len(keys) if hi is None else bisect.bisect_left(keys, hi)
    return slice(start, stop)


def reuse_plan(firsts: list[tuple], changed: list[tuple], mean: int) -> list[bool]:
    """Which of the earlier buckets (their ``firsts``, in key order) the new table has as they
    are, given the changed keys (sorted): see the module docstring."""
    n = len(firsts)
    changed_set = set(changed)
    anchored = _anchored(firsts, mean) if n else np.zeros(0, bool)

    def has_changed(lo: tuple | None, hi: tuple | None) -> bool:
        """Whether some key of K lies in [lo, hi) (None: unbounded)."""
        within = _between(changed, lo, hi)
        return within.stop > within.start

    reusable = [False] * n
    for i, first in enumerate(firsts):
        nxt = firsts[i + 1] if i + 1 < n else None
        clean = not has_changed(first, nxt) and (nxt is None or nxt not in changed_set)
        # where the new bucketing starts a bucket at this one's first key
        starts_here = (i == 0 and not has_changed(None, first)) or (i > 0 and reusable[i - 1]) or bool(anchored[i])
        reusable[i] = clean and starts_here
    return reusable


def changed_tuples(keys: pa.Table) -> list[tuple]:
    """A table of key columns as the sorted distinct tuples :func:`rebuilt_buckets` takes."""
    return sorted(set(zip(*[keys.column(name).to_pylist() for name in keys.column_names], strict=True)))
