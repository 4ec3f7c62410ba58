"""Assembling a graph bigger than the memory budget: edges in vertex-range partitions on disk.

The in-memory assembly (:mod:`pipeline.graph.assemble`) holds every edge, their sort and the CSR
at once (about :data:`~pipeline.graph.assemble.IN_MEMORY_BYTES_PER_EDGE` bytes an edge). When that
does not fit ``resources.memory_gib``, :func:`write_graph_partitioned` writes the same files, bit
for bit, with the edges on disk instead, in K partitions of the vertex range, each small enough
to sort in the budget:

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

``value`` is the edge's weight, except for concept--abstract edges, which are streamed from the
mentions table (:class:`pipeline.graph.edges.MentionTotals`) and may repeat a (doc, cui) pair:
there it is the mention count, summed over equal edges when the partition is sorted and divided
by the abstract's total only then (``weigh``).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import EDGE_KINDS
from pipeline.graph import weights
from pipeline.graph.assemble import EdgeFileWriter, GraphScope, GraphVertices, count_graph, graph_vertices
from pipeline.graph.csr import DIGEST_VERSION, hash_vertex_keys
from pipeline.graph.edges import CodedEdges, MentionTotals
from pipeline.runtime.columnar import argsort_keys
from pipeline.runtime.resources import SpillFolder, resident_bytes, room_left
from pipeline.store.adios import GraphBpWriter

log = logging.getLogger(__name__)
# The kinds' codes in the edge columns: their positions in EDGE_KINDS.
_CONCEPT_CONCEPT_CODE, _CONCEPT_ABSTRACT_CODE, _ABSTRACT_ABSTRACT_CODE = range(len(EDGE_KINDS))
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
    partitions: EdgePartitions, weigh: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
) -> Iterator[FinishedPartition]:
    """Each partition's sorted forward edges with weights and costs, and its CSR rows.

    ``weigh(src, dst, kind, value)`` turns the summed values into weights (the caller knows
    which kinds carry counts).
    """
    n = int(partitions.bounds[-1])
    for part in range(partitions.k):
        lo, hi = int(partitions.bounds[part]), int(partitions.bounds[part + 1])
        forward = _merge_repeats(_sorted_entries(partitions.load(part, "fwd"), n, "src", "dst"))
        backward = _merge_repeats(_sorted_entries(partitions.load(part, "bwd"), n, "dst", "src"))
        weight = weigh(forward["src"], forward["dst"], forward["kind"], forward["value"])
        cost = weights.cost_from_weight(weight)
        back_weight = weigh(backward["src"], backward["dst"], backward["kind"], backward["value"])
        back_cost = weights.cost_from_weight(back_weight)
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


def _entries_per_vertex(
    vertices: GraphVertices, cc: CodedEdges, mentions: MentionTotals | None, aa: CodedEdges,
    cui_used: np.ndarray, doc_used: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Forward plus backward entries each vertex will have (an upper bound for the mentions:
    repeats merge later)."""
    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    degree = np.zeros(vertices.n, np.int64)
    for ends in (vid_of_concept[cc.u], vid_of_concept[cc.v], vid_of_abstract[aa.u], vid_of_abstract[aa.v]):
        degree += np.bincount(ends, minlength=vertices.n)
    if mentions is not None:
        degree[vid_of_concept[cui_used]] += mentions.cui_degree[cui_used]
        degree[vid_of_abstract[doc_used]] += mentions.doc_degree[doc_used]
    return degree


def _entries_per_partition(budget_bytes: int) -> int:
    """Each partition may use half of what is left of the budget once the arrays held for the
    whole stage are counted (they grow with the corpus: 2.4 GiB of 4 at 30M predications)."""
    held = resident_bytes()
    if held > 0.75 * budget_bytes:
        log.warning(
            "graph stage: %.1f GiB already held (vertex keys, per-vertex arrays, concept pairs) of a "
            "%.1f GiB budget; the partitions get a quarter of it, and the peak will exceed the budget: "
            "raise resources.memory_gib",
            held / 2**30,
            budget_bytes / 2**30,
        )
    return max(1, int(0.5 * room_left(budget_bytes)) // FINISH_BYTES_PER_EDGE)


def _spill_edges(
    partitions: EdgePartitions, vertices: GraphVertices, cc: CodedEdges, mentions: MentionTotals | None,
    aa: CodedEdges,
) -> None:  # fmt: skip
    """Every edge of the graph into the partitions, in vid space."""
    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    cc_src, cc_dst = vid_of_concept[cc.u], vid_of_concept[cc.v]
    partitions.add(np.minimum(cc_src, cc_dst), np.maximum(cc_src, cc_dst), _CONCEPT_CONCEPT_CODE, cc.weight)
    aa_src, aa_dst = vid_of_abstract[aa.u], vid_of_abstract[aa.v]
    partitions.add(np.minimum(aa_src, aa_dst), np.maximum(aa_src, aa_dst), _ABSTRACT_ABSTRACT_CODE, aa.weight)
    if mentions is not None:
        for cui, doc, count in mentions.edges():
            partitions.add(vid_of_concept[cui], vid_of_abstract[doc], _CONCEPT_ABSTRACT_CODE, count)


def _write_graph_bp(path: Path, row_counts: np.ndarray, csr_files: tuple[Path, Path], attributes: dict) -> None:
    """graph.bp from the CSR blocks written one after another to ``csr_files`` (col_idx, cost)."""
    row_ptr = np.zeros(len(row_counts) + 1, np.int64)
    np.cumsum(row_counts, out=row_ptr[1:])
    writer = GraphBpWriter(path, len(row_counts), row_ptr)
    try:
        chunk = 1 << 23
        with open(csr_files[0], "rb") as col_in, open(csr_files[1], "rb") as cost_in:
            while True:
                col_idx = np.fromfile(col_in, dtype=np.int64, count=chunk)
                if not len(col_idx):
                    break
                writer.write_rows(col_idx, np.fromfile(cost_in, dtype=np.float32, count=len(col_idx)))
        writer.close(attributes)
    except BaseException:
        writer.abort()
        raise


def write_graph_partitioned(
    scope: GraphScope, cc: CodedEdges, mentions: MentionTotals | None, aa: CodedEdges, budget_bytes: int,
    spill_dir: Path,
) -> str:  # fmt: skip
    """The same files as :func:`pipeline.graph.assemble.write_graph`, the edges assembled in
    vertex-range partitions spilled to a folder in ``spill_dir``, so that memory holds one
    partition at a time. The concept--abstract edges are read again from the mentions table
    (``mentions``' second pass) rather than held; ``mentions`` is None for a graph without them.

    Adds the graph's sizes and its number of partitions to ``scope.counts`` and returns the
    graph digest.
    """
    scope.out_dir.mkdir(parents=True, exist_ok=True)
    out = GraphFolder(scope.out_dir)
    no_codes = np.zeros(0, np.int64)
    cui_used = no_codes if mentions is None else np.flatnonzero(mentions.cui_degree[: len(scope.concepts)] > 0)
    doc_used = no_codes if mentions is None else np.flatnonzero(mentions.doc_degree[: len(scope.documents)] > 0)
    vertices = graph_vertices(scope, (cc.u, cc.v, cui_used), (doc_used, aa.u, aa.v))
    n = vertices.n
    pq.write_table(vertices.table, out.vertices)
    scope.lap("vertices")

    degree = _entries_per_vertex(vertices, cc, mentions, aa, cui_used, doc_used)
    totals_by_vid = np.zeros(n, np.float64)
    if mentions is not None:
        totals_by_vid[vertices.vid_of_abstract[doc_used]] = mentions.totals[doc_used]
    bounds = partition_bounds(degree, _entries_per_partition(budget_bytes))
    del degree

    def weigh(src, dst, kind, value):
        weight = np.asarray(value, dtype=np.float64).copy()
        occurrence = kind == _CONCEPT_ABSTRACT_CODE
        if occurrence.any():  # mention counts summed over repeats; the abstract is the larger id
            weight[occurrence] = weights.occurrence_weight(value[occurrence], totals_by_vid[dst[occurrence]])
        return weight

    edges_by_kind = np.zeros(len(EDGE_KINDS), np.int64)
    row_counts = np.zeros(n, np.int64)
    with SpillFolder(spill_dir, ".graph-spill-") as folder:
        partitions = EdgePartitions(folder / "edges", bounds)
        _spill_edges(partitions, vertices, cc, mentions, aa)
        scope.lap("partitions")
        digest = StreamingDigest(vertices.keys_in_vid_order(), folder / "digest")
        csr_files = (folder / "csr-col.bin", folder / "csr-cost.bin")
        with EdgeFileWriter(out.edges) as edge_writer, open(csr_files[0], "wb") as col_out, \
                open(csr_files[1], "wb") as cost_out:  # fmt: skip
            for done in finish_partitions(partitions, weigh):
                edge_writer.write(done.src, done.dst, done.kind, done.weight, done.cost)
                digest.add(done.src, done.dst, done.kind, done.cost)
                edges_by_kind += np.bincount(done.kind, minlength=len(EDGE_KINDS))
                row_counts[done.lo : done.hi] = done.row_counts
                done.col_idx.tofile(col_out)
                done.csr_cost.tofile(cost_out)
        graph_digest_hex = digest.hexdigest()
        scope.lap("edges")
        _write_graph_bp(out.graph_bp, row_counts, csr_files, scope.graph_bp_attributes(graph_digest_hex))
    scope.lap("write")
    if mentions is not None:
        scope.counts["concept_abstract_pairs"] = int(edges_by_kind[_CONCEPT_ABSTRACT_CODE])
    scope.counts["graph_partitions"] = int(partitions.k)
    count_graph(scope, vertices, edges_by_kind)
    return graph_digest_hex


__all__ = [
    "ENTRY_BYTES", "EdgePartitions", "FinishedPartition", "StreamingDigest", "budget_partitions",
    "finish_partitions", "partition_bounds", "write_graph_partitioned",
]  # fmt: skip
