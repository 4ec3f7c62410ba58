"""Assembling a graph bigger than the memory budget: edges in vertex-range partitions on disk.

The graph stage's in-memory assembly holds every edge, their sort and the CSR at once (about
140 bytes an edge). When that does not fit ``resources.memory_gib``, the edges go to disk
instead, into K partitions of the vertex range, each small enough to sort in the budget:

* every undirected edge (src < dst, kind, value) is appended to partition(src) as a
  *forward* entry and to partition(dst) as a *backward* entry (:class:`EdgePartitions`);
* partitions are then finished one at a time, in vertex order (:func:`finish_partitions`):
  the forward entries sorted by (src, dst) are the partition's rows of ``edges.parquet``
  (so the table comes out globally sorted), and forward plus backward entries give the
  partition's rows of the symmetric CSR (row r: its backward neighbours, then its forward
  ones, both ascending -- the same placement as :func:`pipeline.graph.csr.symmetric_csr`),
  written to graph.bp as one block and flushed (:class:`pipeline.store.adios.GraphBpWriter`);
* the graph digest hashes the edge columns in the same byte order as
  :func:`pipeline.graph.csr.graph_digest` from column files written along the way
  (:class:`StreamingDigest`), so both assemblies give the same digest.

``value`` is the edge's weight, except for concept--abstract edges when the mentions may
repeat a (doc, cui) pair: then it is the mention count, summed over equal edges when the
partition is sorted and divided by the abstract's total only then (``weigh``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.graph.csr import DIGEST_VERSION, hash_vertex_keys
from pipeline.runtime.columnar import argsort_keys

_COLUMNS = (("src", np.int64), ("dst", np.int64), ("kind", np.uint8), ("value", np.float64))
ENTRY_BYTES = sum(np.dtype(t).itemsize for _, t in _COLUMNS)
# Bytes a partition's edge costs while it is finished: its forward and backward entries, the
# sort keys and permutations, weights, costs and the CSR block (measured with tracemalloc
# on the synth corpus: about 90; rounded up).
FINISH_BYTES_PER_EDGE = 120


class EdgePartitions:
    """Undirected edges appended to K vertex-range partitions on disk, forward and backward.

    ``bounds`` are K+1 increasing vertex ids (0 first, n last): partition k holds the rows
    ``bounds[k] .. bounds[k+1] - 1``.
    """

    def __init__(self, folder: Path, bounds: np.ndarray):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.k = len(self.bounds) - 1
        self.edges = 0
        self.out_degree = np.zeros(int(self.bounds[-1]), dtype=np.int64)
        self.in_degree = np.zeros(int(self.bounds[-1]), dtype=np.int64)

    def _file(self, part: int, direction: str, column: str) -> Path:
        return self.folder / f"part-{part:05d}-{direction}-{column}.bin"

    def add(self, src: np.ndarray, dst: np.ndarray, kind: int, value: np.ndarray) -> None:
        """Append edges (src < dst) of one kind."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if not len(src):
            return
        self.edges += len(src)
        self.out_degree += np.bincount(src, minlength=len(self.out_degree))
        self.in_degree += np.bincount(dst, minlength=len(self.in_degree))
        kinds = np.full(len(src), kind, dtype=np.uint8)
        value = np.asarray(value, dtype=np.float64)
        for direction, key in (("fwd", src), ("bwd", dst)):
            part = np.searchsorted(self.bounds, key, side="right") - 1
            order = np.argsort(part, kind="stable")
            cuts = np.searchsorted(part[order], np.arange(self.k + 1))
            for p in np.flatnonzero(np.diff(cuts)):
                chosen = order[cuts[p] : cuts[p + 1]]
                for (name, dtype), column in zip(_COLUMNS, (src, dst, kinds, value), strict=True):
                    with open(self._file(int(p), direction, name), "ab") as handle:
                        np.ascontiguousarray(column[chosen], dtype=dtype).tofile(handle)

    def load(self, part: int, direction: str) -> dict[str, np.ndarray]:
        out = {}
        for name, dtype in _COLUMNS:
            path = self._file(part, direction, name)
            out[name] = np.fromfile(path, dtype=dtype) if path.exists() else np.zeros(0, dtype)
            path.unlink(missing_ok=True)
        return out


def partition_bounds(degree: np.ndarray, max_edges: int) -> np.ndarray:
    """Vertex ranges whose forward plus backward entries stay under ``max_edges`` (a vertex whose
    own degree is larger gets a range of its own)."""
    n = len(degree)
    if n == 0:
        return np.array([0, 0], dtype=np.int64)
    cumulative = np.cumsum(degree, dtype=np.int64)
    bounds = [0]
    while bounds[-1] < n:
        start = bounds[-1]
        base = cumulative[start - 1] if start else 0
        end = int(np.searchsorted(cumulative, base + max_edges, side="right"))
        bounds.append(max(end, start + 1))
    return np.minimum(np.asarray(bounds, dtype=np.int64), n)


@dataclass
class FinishedPartition:
    lo: int
    hi: int
    src: np.ndarray  # forward edges of the partition, sorted by (src, dst)
    dst: np.ndarray
    kind: np.ndarray
    weight: np.ndarray
    cost: np.ndarray
    row_counts: np.ndarray  # CSR entries per row lo..hi-1
    col_idx: np.ndarray  # CSR block of rows lo..hi-1
    csr_cost: np.ndarray


def _sorted_entries(entries: dict[str, np.ndarray], n: int, major: str, minor: str) -> dict[str, np.ndarray]:
    keys = entries[major] * np.int64(n) + entries[minor] if n < (1 << 31) else None
    order = argsort_keys(keys) if keys is not None else np.lexsort((entries[minor], entries[major]))
    return {name: column[order] for name, column in entries.items()}


def _merge_repeats(entries: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sum the values of equal (src, dst) entries (sorted): repeated concept--abstract mentions."""
    src, dst = entries["src"], entries["dst"]
    if len(src) < 2:
        return entries
    first = np.r_[True, (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])]
    if first.all():
        return entries
    starts = np.flatnonzero(first)
    merged = {name: column[starts] for name, column in entries.items() if name != "value"}
    merged["value"] = np.add.reduceat(entries["value"], starts)
    return merged


def finish_partitions(
    partitions: EdgePartitions,
    weigh: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    cost_of: Callable[[np.ndarray], np.ndarray],
) -> Iterator[FinishedPartition]:
    """Each partition's sorted forward edges with weights and costs, and its CSR rows.

    ``weigh(src, dst, kind, value)`` turns the summed values into weights (the caller knows
    which kinds carry counts); ``cost_of`` is :func:`pipeline.graph.weights.cost_from_weight`.
    """
    n = int(partitions.bounds[-1])
    for part in range(partitions.k):
        lo, hi = int(partitions.bounds[part]), int(partitions.bounds[part + 1])
        forward = _merge_repeats(_sorted_entries(partitions.load(part, "fwd"), n, "src", "dst"))
        backward = _merge_repeats(_sorted_entries(partitions.load(part, "bwd"), n, "dst", "src"))
        weight = weigh(forward["src"], forward["dst"], forward["kind"], forward["value"])
        cost = cost_of(weight)
        back_weight = weigh(backward["src"], backward["dst"], backward["kind"], backward["value"])
        back_cost = cost_of(back_weight)
        width = hi - lo
        out_degree = np.bincount(forward["src"] - lo, minlength=width)
        in_degree = np.bincount(backward["dst"] - lo, minlength=width)
        row_counts = out_degree + in_degree
        row_start = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(row_counts, out=row_start[1:])
        col_idx = np.empty(int(row_start[-1]), dtype=np.int64)
        csr_cost = np.empty(int(row_start[-1]), dtype=np.float32)
        # Row r: its backward neighbours (src < r, ascending), then its forward ones (dst > r).
        rows = backward["dst"] - lo
        slot = row_start[rows] + (np.arange(len(rows)) - (np.cumsum(in_degree) - in_degree)[rows])
        col_idx[slot], csr_cost[slot] = backward["src"], back_cost
        rows = forward["src"] - lo
        slot = row_start[rows] + in_degree[rows] + (np.arange(len(rows)) - (np.cumsum(out_degree) - out_degree)[rows])
        col_idx[slot], csr_cost[slot] = forward["dst"], cost
        yield FinishedPartition(
            lo, hi, forward["src"], forward["dst"], forward["kind"], weight, cost, row_counts, col_idx, csr_cost
        )


class StreamingDigest:
    """:func:`pipeline.graph.csr.graph_digest` of edges given in (src, dst) order, chunk by chunk.

    The digest hashes all sources, then all destinations, kinds and costs; the chunks are kept
    in four column files until :meth:`hexdigest`, so memory stays at one chunk.
    """

    def __init__(self, vertex_keys: pa.Array, folder: Path):
        self._key_hash = hashlib.sha256(DIGEST_VERSION)
        hash_vertex_keys(self._key_hash, vertex_keys)
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.edges = 0
        self._files = {name: open(self.folder / f"digest-{name}.bin", "wb") for name in ("src", "dst", "kind", "cost")}  # noqa: SIM115

    def add(self, src, dst, kind, cost) -> None:
        self.edges += len(src)
        for name, column, dtype in (("src", src, "<i8"), ("dst", dst, "<i8"), ("kind", kind, "u1"), ("cost", cost, "<f4")):
            self._files[name].write(np.ascontiguousarray(column, dtype=dtype).tobytes())

    def hexdigest(self) -> str:
        h = self._key_hash.copy()
        h.update(np.int64(self.edges).astype("<i8").tobytes())
        for name in ("src", "dst", "kind", "cost"):
            self._files[name].close()
            with open(self.folder / f"digest-{name}.bin", "rb") as handle:
                while chunk := handle.read(1 << 24):
                    h.update(chunk)
        return h.hexdigest()


def budget_partitions(edges: int, budget_bytes: int) -> int:
    """How many partitions the edges need so that one finishes within half the budget (1: none)."""
    per_partition = max(1, int(0.5 * budget_bytes) // FINISH_BYTES_PER_EDGE)
    return max(1, math.ceil(2 * edges / per_partition))


__all__ = [
    "ENTRY_BYTES", "EdgePartitions", "FinishedPartition", "StreamingDigest", "budget_partitions",
    "finish_partitions", "partition_bounds",
]  # fmt: skip
