"""The path index of a graph: its hub rows sorted by cost, in ``path_index.bp`` beside graph.bp.

On the literature graph a few thousand concepts are mentioned by most abstracts, and a plain
Dijkstra scans a vertex's whole row when it settles it: a pair query between two abstracts of
the 10M-predication corpus scanned a median of 1.2 million arcs, nearly all of them in the rows
of the four or five hubs it settled. The index holds those rows sorted by (cost, column); a
search with it relaxes a hub's arcs in cost order, as the search reaches them, and stops long
before the dear end of the row (solver/core/sssp_hub_rows.hpp: the technique, its sources --
Spira 1973; Moffat and Takaoka 1987 -- and why the answer stays exact). It was chosen over
landmarks (ALT) and hub labels by measurement on these graphs, docs/design.md §9.

The hubs (:func:`choose_hub_rows`) are the rows of at least :data:`MIN_DEGREE` arcs, largest
first, within :data:`MAX_SHARE` of the graph's bytes (graph.bp holds 12 bytes an arc and 8 a
vertex; the index 8 an indexed arc): rows below a thousand arcs cost a plain search little, and
the largest rows are where nearly all of the work was.

``path_index.bp`` (one ADIOS2 step, :func:`pipeline.store.adios.write_path_index_bp`): int64
``vertex`` [R] (the hubs, ascending) and ``start`` [R + 1], uint32 ``col`` and float32 ``cost``
[start[R]]. Attributes: ``graph_digest``, ``n`` and ``nnz`` of the graph it was built for,
``index`` (:data:`KIND`), ``version``, ``min_degree``, ``max_arcs``, ``hubs``, ``arcs``,
``build_seconds``, ``created``.

:func:`load_path_index` gives the index only when it belongs to the graph -- the same digest,
size and arcs, every hub row compared with the graph's by the compiled check -- and otherwise
``None`` with the reason, which the caller logs before searching without it: a stale, damaged
or missing index slows queries down, never changes an answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.query import sssp
from pipeline.query.paths import Adjacency

KIND = "hub-rows-by-cost"
VERSION = 1
# A row of fewer arcs is scanned whole: measured on the 10M-predication graph, indexing the rows of
# 1,024 arcs or more (3,029 rows) left a median of 1.2k-4k arcs relaxed per query, against 3k-8k
# from 4,096 (688 rows) and 10k-16k from 16,384 (156 rows).
MIN_DEGREE = 1024
# The index may take at most this share of the graph's bytes (the bound is 25 %).
MAX_SHARE = 0.20
# Rows read from graph.bp in one selection unless the gap to the next hub row is larger: few reads
# (the hubs are mostly the concepts, the first rows) without reading the abstracts between.
_SPAN_GAP_ARCS = 1 << 20


def graph_bytes(n: int, arcs: int) -> int:
    """The bytes of a graph's CSR (graph.bp): row_ptr int64, col_idx int64 and cost float32."""
    return 8 * (int(n) + 1) + 12 * int(arcs)


def index_bytes(hubs: int, arcs: int) -> int:
    """The bytes of a path index of ``hubs`` rows and ``arcs`` arcs (on disk and in memory, with
    the cheapest-hub-arc array the check derives)."""
    return 8 * int(hubs) + 8 * (int(hubs) + 1) + 8 * int(arcs) + 4 * int(hubs)


def choose_hub_rows(row_ptr: np.ndarray, min_degree: int = MIN_DEGREE, max_share: float = MAX_SHARE) -> np.ndarray:
    """The hubs of a graph's path index (ascending ids): see the module docstring."""
    n = len(row_ptr) - 1
    arcs = int(row_ptr[-1]) if n >= 0 else 0
    # 8 bytes an indexed arc plus about 28 a row: the arcs that fit the share.
    max_arcs = int(max_share * graph_bytes(n, arcs)) // 8
    return sssp.choose_hubs(row_ptr, min_degree, max_arcs)


def _spans(row_ptr: np.ndarray, hubs: np.ndarray) -> list[tuple[int, int]]:
    """Vertex ranges covering the hub rows, merged across gaps of fewer than _SPAN_GAP_ARCS arcs."""
    spans: list[list[int]] = []
    for u in hubs.tolist():
        if spans and row_ptr[u] - row_ptr[spans[-1][1]] <= _SPAN_GAP_ARCS:
            spans[-1][1] = u + 1
        else:
            spans.append([u, u + 1])
    return [(first, last) for first, last in spans]


def _hub_only_adjacency(n: int, row_ptr: np.ndarray, spans, parts) -> Adjacency:
    """A CSR of n vertices holding only the rows of ``spans`` (the others empty): what building the
    index reads, without the rest of the graph in memory."""
    keep = np.zeros(n, dtype=bool)
    for first, last in spans:
        keep[first:last] = True
    compact_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.where(keep, np.diff(row_ptr), 0), out=compact_ptr[1:])
    col_idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    cost = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.float32)
    return Adjacency(n=n, row_ptr=compact_ptr, col_idx=col_idx, cost=cost)


def build_path_index(
    graph_bp: Path,
    out: Path,
    *,
    min_degree: int = MIN_DEGREE,
    max_share: float = MAX_SHARE,
    threads: int | None = None,
) -> dict[str, Any]:
    """Build the path index of ``graph_bp`` into ``out`` (path_index.bp) and return its record:
    the attributes written, plus ``bytes`` and ``share_of_graph``. Reads graph.bp's row_ptr and
    the hub rows only."""
    from pipeline.store.adios import read_graph_rows_bp, write_path_index_bp

    started = time.perf_counter()
    chosen: dict[str, Any] = {}

    def hub_spans(row_ptr: np.ndarray) -> list[tuple[int, int]]:
        chosen["hubs"] = choose_hub_rows(row_ptr, min_degree, max_share)
        chosen["spans"] = _spans(row_ptr, chosen["hubs"])
        return chosen["spans"]

    row_ptr, parts, attributes = read_graph_rows_bp(graph_bp, hub_spans)
    n, nnz = len(row_ptr) - 1, int(row_ptr[-1])
    compact = _hub_only_adjacency(n, row_ptr, chosen["spans"], parts)
    del parts
    index = sssp.build_hub_rows(compact, chosen["hubs"], threads)
    del compact
    record = {
        "graph_digest": str(attributes.get("graph_digest") or ""),
        "n": n,
        "nnz": nnz,
        "index": KIND,
        "version": VERSION,
        "min_degree": int(min_degree),
        "max_arcs": int(max_share * graph_bytes(n, nnz)) // 8,
        "hubs": index.rows,
        "arcs": index.arcs,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_path_index_bp(
        out, {"vertex": index.vertex, "start": index.start, "col": index.col, "cost": index.cost}, record
    )
    record["build_seconds"] = round(time.perf_counter() - started, 3)
    record["bytes"] = index_bytes(index.rows, index.arcs)
    record["share_of_graph"] = round(record["bytes"] / graph_bytes(n, nnz), 4)
    return record


@dataclass(frozen=True)
class LoadedIndex:
    """What :func:`load_path_index` found: the index (None when it cannot be used), why not, and
    its attributes as written."""

    hubs: sssp.HubRows | None
    reason: str | None
    attributes: dict[str, Any]


def load_path_index(path: Path, adjacency: Adjacency, graph_digest: str | None) -> LoadedIndex:
    """The path index at ``path`` for this graph, checked; or None and the reason it cannot be
    used (missing, unreadable, built for another graph, or its rows differ from the graph's)."""
    from pipeline.store.adios import PathIndexCorrupt, read_path_index_bp

    path = Path(path)
    if not path.exists():
        return LoadedIndex(None, f"no {path.name} (the graph stage writes one; rerun it for this build)", {})
    try:
        arrays, attributes = read_path_index_bp(path)
    except (PathIndexCorrupt, OSError) as exc:
        return LoadedIndex(None, f"{path.name} cannot be read: {exc}", {})
    problems = []
    if attributes.get("index") != KIND or attributes.get("version") != VERSION:
        problems.append(f"it is a {attributes.get('index')!r} index version {attributes.get('version')}, "
                        f"this litpath reads {KIND!r} version {VERSION}")  # fmt: skip
    if not graph_digest or attributes.get("graph_digest") != graph_digest:
        problems.append(
            f"it was built for another graph (digest {str(attributes.get('graph_digest'))[:12]}... != "
            f"{str(graph_digest)[:12]}...)"
        )
    if attributes.get("n") != adjacency.n or attributes.get("nnz") != adjacency.nnz:
        problems.append(
            f"it is for {attributes.get('n')} vertices and {attributes.get('nnz')} arcs, the graph has "
            f"{adjacency.n} and {adjacency.nnz}"
        )
    if problems:
        return LoadedIndex(None, f"{path.name}: " + "; ".join(problems), attributes)
    try:
        hubs = sssp.check_hub_rows(adjacency, arrays["vertex"], arrays["start"], arrays["col"], arrays["cost"])
    except ValueError as exc:
        return LoadedIndex(None, f"{path.name} does not match the graph: {exc}", attributes)
    return LoadedIndex(hubs, None, attributes)


__all__ = [
    "KIND", "MAX_SHARE", "MIN_DEGREE", "VERSION", "LoadedIndex", "build_path_index", "choose_hub_rows",
    "graph_bytes", "index_bytes", "load_path_index",
]  # fmt: skip
