"""Record buckets: how a build's rows (documents, concepts, evidence) are packed for MongoDB.

A table sorted by its key is cut into *buckets* of about ``mean`` rows at content-defined
boundaries: a row starts a new bucket when a hash of its key is 0 modulo ``mean`` (or the bucket
has reached ``4 * mean`` rows). A boundary depends only on the key at it, so a row added, changed or
removed changes its own bucket only, and the buckets of two builds that share most of their rows
are mostly the same. Each bucket is stored once, as one MongoDB document whose ``_id`` is a digest
of its bytes (:class:`Bucket`): a build that reuses a bucket writes nothing for it.

Why buckets at all: a MongoDB-wire server stores documents one by one, and the local one
(mongo-java-server on H2) spends about 0.1 ms per document whatever its size (Java serialisation of
every field), so per-row documents load at 5-10k rows/s; a bucket is one document holding its rows
as an Arrow IPC stream (lz4), which the same server takes at hundreds of thousands of rows/s
(bench/results/mongo_load.md). Readers decode a bucket with :func:`decode`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

# Rows per bucket on average, per kind: a paper changed by an update file rewrites its bucket, so
# documents' are small (a PubMed update file revises papers all over the key range); evidence
# and concepts are read and written whole more often than changed.
MEAN_ROWS = {"documents": 128, "concepts": 1024, "evidence": 256, "papers": 64}
# A bucket's buffers are compressed (and decompressed) one after another on the calling thread:
# by default Arrow hands each buffer of a message to its CPU thread pool and waits for them, which
# for a bucket of some kB cost more than the compression itself. A 128-row documents bucket
# encoded in 51-53 us against 149-209 us and decoded in 48-53 us against 126-155 us (AMD EPYC,
# 2,000 buckets, three rounds); the bytes are the same.
_IPC = ipc.IpcWriteOptions(compression="lz4", use_threads=False)
_IPC_READ = ipc.IpcReadOptions(use_threads=False)
_PRIME = np.uint64(0x100000001B3)  # FNV-1a's 64-bit prime, as the polynomial's base
_MAX_POWERS = 1 << 12


@dataclass(frozen=True)
class Bucket:
    """One bucket: its rows' first key (as the table's key columns give it, a tuple), how many rows,
    its bytes (an Arrow IPC stream) and ``bucket_id``, a digest of those bytes."""

    first: tuple
    rows: int
    data: bytes
    # The id a bucket file lists for these bytes, for a bucket a rebuild takes as it is
    # (pipeline.store.bucket_reuse): not hashed again, since a load checks every bucket it reads.
    listed_id: str | None = field(default=None, compare=False, repr=False)
    # A reused bucket whose bytes the new bucket file leaves in its base file (the earlier build's,
    # hard-linked beside it: pipeline.store.record_buckets.write_bucket_file); ``data`` is then
    # empty and the id the listed one.
    in_base: bool = field(default=False, compare=False, repr=False)

    @cached_property  # a bucket read from a file is checked against its id, then written with it
    def bucket_id(self) -> str:
        return self.listed_id or hashlib.sha256(self.data).hexdigest()[:32]


@dataclass(frozen=True)
class ListedBucket:
    """A bucket the store already holds, as a build's listing names it: first key, rows and id,
    without its bytes (:meth:`pipeline.store.record_buckets.BucketFile.buckets`), which a load
    would neither send nor need to read."""

    first: tuple
    rows: int
    bucket_id: str


def _powers(n: int) -> np.ndarray:
    powers = np.ones(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(1, n):
            powers[i] = powers[i - 1] * _PRIME
    return powers


_POWERS = _powers(_MAX_POWERS)


def key_hashes(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each string (its bytes as a polynomial, then SplitMix64's finaliser),
    computed column-wise: the same string always gives the same hash, in any table or process."""
    keys = pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys
    array = keys.combine_chunks().cast(pa.large_binary()) if len(keys) else pa.array([], pa.large_binary())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64, count=n + 1, offset=array.offset * 8)
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]].astype(np.uint64)
    starts = offsets[:-1] - offsets[0]
    lengths = np.diff(offsets)
    if len(data) and lengths.max() > _MAX_POWERS:
        raise ValueError(f"a key longer than {_MAX_POWERS} bytes")
    position = np.arange(len(data)) - np.repeat(starts, lengths)
    with np.errstate(over="ignore"):
        contribution = data * _POWERS[position]
        sums = np.zeros(n, dtype=np.uint64)
        nonempty = lengths > 0
        if nonempty.any():
            sums[nonempty] = np.add.reduceat(contribution, starts[nonempty])
        z = sums + lengths.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def boundaries(hashes: np.ndarray, mean: int, carried: int = 0) -> np.ndarray:
    """Row positions that start a bucket, for rows whose keys hash to ``hashes`` (in key order),
    given ``carried`` rows already in the open bucket before them: every row whose hash is 0 modulo
    ``mean``, and wherever the open bucket would pass ``4 * mean`` rows."""
    cap = 4 * mean
    starts: list[int] = []
    open_rows, previous = carried, 0
    for mark in [*np.flatnonzero(hashes % np.uint64(mean) == 0).tolist(), len(hashes)]:
        while open_rows + (mark - previous) > cap:  # the open bucket is full before this mark
            previous += cap - open_rows
            starts.append(previous)
            open_rows = 0
        if mark == len(hashes):
            break
        starts.append(mark)
        open_rows, previous = 0, mark
    return np.unique(np.asarray(starts, dtype=np.int64))


def encode(rows: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, rows.schema, options=_IPC) as writer:
        writer.write_table(rows)
    return sink.getvalue().to_pybytes()


def decode(data: bytes) -> pa.Table:
    return ipc.open_stream(pa.py_buffer(data), options=_IPC_READ).read_all()


def joined_keys(table: pa.Table, key: list[str]) -> pa.Array:
    """Each row's ``key`` columns joined by "|" (a single key column as it is), one array: the
    strings whose :func:`key_hashes` place the bucket boundaries."""
    column = table.column(key[0]) if len(key) == 1 else \
        pc.binary_join_element_wise(*[table.column(k).cast(pa.string()) for k in key], "|")  # fmt: skip
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def bucketed(parts: Iterable[pa.Table], key: list[str], mean: int) -> Iterator[Bucket]:
    """The buckets of a table given as ``parts`` in key order (``key``: its key columns, whose
    values joined by "|" are hashed for the boundaries); rows of a bucket may come from several parts."""
    pending: list[pa.Table] = []
    pending_rows = 0
    for part in parts:
        if not part.num_rows:
            continue
        starts = boundaries(key_hashes(joined_keys(part, key)), mean, pending_rows)
        previous = 0
        for start in starts.tolist():
            if start > previous:
                pending.append(part.slice(previous, start - previous))
                pending_rows += start - previous
            if pending_rows:
                yield _bucket(pending, key)
            pending, pending_rows, previous = [], 0, start
        pending.append(part.slice(previous))
        pending_rows += part.num_rows - previous
    if pending_rows:
        yield _bucket(pending, key)


def bucketed_hashed(table: pa.Table, hashes: np.ndarray, key: list[str], mean: int) -> Iterator[Bucket]:
    """The buckets of one table in key order whose keys' hashes (:func:`key_hashes` of its
    :func:`joined_keys`) are already known: what :func:`bucketed` gives for it."""
    previous = 0
    for start in [*boundaries(hashes, mean).tolist(), table.num_rows]:
        if start > previous:
            yield _bucket([table.slice(previous, start - previous)], key)
        previous = start


def _bucket(pieces: list[pa.Table], key: list[str]) -> Bucket:
    # Copied into fresh buffers: a slice of a bigger array encodes to other bytes than the same
    # rows on their own, and the bucket's id must depend on its rows only.
    # A take of every row, not a concatenation of the pieces: a concatenation keeps a piece's
    # layout (a validity buffer on a column without nulls, say), so equal rows read from tables
    # written differently (a merge on the delta, a full merge) gave other bytes.
    rows = pa.concat_tables(pieces)
    rows = rows.take(pa.array(np.arange(rows.num_rows)))
    first = tuple(rows.column(k)[0].as_py() for k in key)
    return Bucket(first=first, rows=rows.num_rows, data=encode(rows))
