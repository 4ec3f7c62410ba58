"""Exact shortest paths on the sparse graph, in compiled code, without the dense matrix.

A ctypes wrapper of ``liblitpath_sssp.so`` (solver/core/sssp_c_api.h, built by ``make
setup`` into ``solver/build``; ``$LITPATH_SSSP_LIB`` points elsewhere). Dijkstra on the CSR
of a :class:`pipeline.query.paths.Adjacency`, distances accumulated in double:

``rows(adjacency, sources, threads=None)``
    float32[m, n] distance rows of m sources (OpenMP threads over the sources).
``shortest_path(adjacency, source, target, reverse=None, *, deadline=None)``
    ``(distance, vertices)`` of one pair by bidirectional Dijkstra; ``(inf, [])`` when
    unreachable. The graph is taken as symmetric unless ``reverse`` (its transpose, see
    :func:`reverse_adjacency`) is given.
``nearest(adjacency, source, candidate_mask, k, *, deadline=None)``
    the k candidates nearest to ``source`` (ties by vertex id), with their distances.
``symmetric_csr_arrays(n, src, dst, cost)``
    the graph stage's symmetric CSR of edges sorted by (src, dst), by one counting pass.

The arrays are handed to the library as they are (no copy) when they already have the
dtypes ``row_ptr`` int64, ``col_idx`` int64, ``cost`` float32 and are contiguous. ctypes
releases the GIL during each call, so queries from several Python threads run in parallel.
Each graph is checked completely once (row_ptr, column range, costs finite and >= 0) the
first time it is used; arrays changed in place afterwards are not checked again.

Deadlines. One unreachable pair, or ``nearest`` with more candidates than are reachable,
explores a whole component: seconds on a graph of millions of vertices. ``shortest_path``
and ``nearest`` stop at a deadline, a ``time.monotonic()`` value, and raise
:class:`DeadlineExceeded`: the earlier of their ``deadline`` argument and the one of the
innermost :func:`search_deadline` block around the call (the path service sets one per
request around its worker's whole job, so searches deep in the graph and comparison code
need no argument). The library reads the clock about every millisecond of work.

Memory. The library keeps each calling thread's search workspaces between queries (a query
then costs no O(n) clearing): up to about 64 bytes a vertex per thread that has run both
``shortest_path`` and ``nearest``, plus 16 bytes a heap entry (about one per vertex reached).
:func:`release_workspace` frees the calling thread's.
"""

from __future__ import annotations

import contextvars
import ctypes
import math
import os
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from pipeline.config import REPO_ROOT
from pipeline.query.paths import Adjacency
from pipeline.runtime.errors import LitpathError

REPO = REPO_ROOT  # the checkout: the solver's sources and build, the shipped files
LIBRARY_ENV = "LITPATH_SSSP_LIB"
DEFAULT_LIBRARY = REPO / "solver" / "build" / "liblitpath_sssp.so"
ABI_VERSION = 3  # LITPATH_SSSP_ABI_VERSION of solver/core/sssp_c_api.h

# Status codes of the C ABI.
_OK, _INVALID_ARGUMENT, _OUT_OF_MEMORY, _BUFFER_TOO_SMALL = 0, 1, 2, 3
_DEADLINE_EXCEEDED = 5
# First path buffer: paths are rarely longer; a longer one costs a second search.
_PATH_CAPACITY = 1024


class SsspError(LitpathError, RuntimeError):
    """The library is missing or a call failed for a reason other than bad input."""


class DeadlineExceeded(RuntimeError):
    """A search reached its deadline and stopped without an answer (the message says how far
    it got). Not a :class:`TimeoutError`: that is an ``OSError``, which callers catch for files."""


# The deadline of the innermost search_deadline block (a time.monotonic() value; inf: none).
_scoped_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("litpath_sssp_deadline", default=math.inf)


@contextmanager
def search_deadline(at: float | None) -> Iterator[None]:
    """Searches started in this block (in this thread, or this task) stop at ``time.monotonic()``
    ``at`` with :class:`DeadlineExceeded`; None: no deadline of its own. Blocks nest: the
    earliest deadline wins."""
    if at is not None and math.isnan(at):
        raise ValueError("the search deadline is NaN")
    outer = _scoped_deadline.get()
    token = _scoped_deadline.set(outer if at is None else min(outer, float(at)))
    try:
        yield
    finally:
        _scoped_deadline.reset(token)


def _deadline(explicit: float | None) -> float:
    """The deadline a search gets: the earlier of ``explicit`` and the scoped one."""
    scoped = _scoped_deadline.get()
    if explicit is None:
        return scoped
    if math.isnan(explicit):
        raise ValueError("deadline is NaN")
    return min(scoped, float(explicit))


_i64p = ctypes.POINTER(ctypes.c_int64)
_f32p = ctypes.POINTER(ctypes.c_float)
_f64p = ctypes.POINTER(ctypes.c_double)
_u8p = ctypes.POINTER(ctypes.c_uint8)
_CSR = [ctypes.c_int64, _i64p, _i64p, _f32p]  # n, row_ptr, col_idx, cost
_SIGNATURES = {
    "litpath_sssp_abi_version": (ctypes.c_int, []),
    "litpath_sssp_last_error": (ctypes.c_char_p, []),
    "litpath_sssp_check_csr": (ctypes.c_int, _CSR),
    # ..., sources, count, threads, rows_out
    "litpath_sssp_rows": (ctypes.c_int, [*_CSR, _i64p, ctypes.c_int64, ctypes.c_int, _f32p]),
    # n, edges, rows, threads
    "litpath_sssp_rows_workspace_bytes": (
        ctypes.c_int64,
        [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int],
    ),
    # ..., reverse row_ptr/col_idx/cost, source, target, distance_out, path_out, capacity, length_out,
    # deadline
    "litpath_sssp_shortest_path": (
        ctypes.c_int,
        [*_CSR, _i64p, _i64p, _f32p, ctypes.c_int64, ctypes.c_int64, _f64p, _i64p, ctypes.c_int64, _i64p,
         ctypes.c_double],
    ),  # fmt: skip
    # ..., source, candidate_mask, k, vertices_out, distances_out, found_out, deadline
    "litpath_sssp_nearest": (
        ctypes.c_int,
        [*_CSR, ctypes.c_int64, _u8p, ctypes.c_int64, _i64p, _f64p, _i64p, ctypes.c_double],
    ),
    "litpath_sssp_release_workspace": (None, []),
    # n, m, src, dst, cost, row_ptr_out, col_idx_out, cost_out
    "litpath_sssp_symmetric_csr": (
        ctypes.c_int,
        [ctypes.c_int64, ctypes.c_int64, _i64p, _i64p, _f32p, _i64p, _i64p, _f32p],
    ),
}

_library: ctypes.CDLL | None = None
_library_lock = threading.Lock()


def library_path() -> Path:
    """``$LITPATH_SSSP_LIB`` if set, else ``solver/build/liblitpath_sssp.so``."""
    env = os.environ.get(LIBRARY_ENV)
    return Path(env) if env else DEFAULT_LIBRARY


def library() -> ctypes.CDLL:
    """The loaded library (loaded once per process); :class:`SsspError` when missing."""
    global _library
    with _library_lock:
        if _library is not None:
            return _library
        path = library_path()
        if not path.exists():
            hint = f"fix ${LIBRARY_ENV}" if os.environ.get(LIBRARY_ENV) else "run `make setup` to build it"
            raise SsspError(f"shortest-path library not found at {path}; {hint}")
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as exc:
            raise SsspError(f"cannot load {path}: {exc}") from exc
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        version = lib.litpath_sssp_abi_version()
        if version != ABI_VERSION:
            raise SsspError(
                f"{path} has ABI version {version}, this module needs {ABI_VERSION}: rebuild it (`make setup`)"
            )
        _library = lib
        return lib


def _raise_for(status: int, lib: ctypes.CDLL) -> None:
    if status == _OK:
        return
    message = (lib.litpath_sssp_last_error() or b"").decode("utf-8", "replace")
    if status == _INVALID_ARGUMENT:
        raise ValueError(message)
    if status == _OUT_OF_MEMORY:
        raise MemoryError(message or "out of memory in liblitpath_sssp")
    if status == _DEADLINE_EXCEEDED:
        raise DeadlineExceeded(message)
    raise SsspError(f"liblitpath_sssp failed (status {status}): {message}")


def _pointer(array: np.ndarray, kind):
    return array.ctypes.data_as(kind)


class _Csr:
    """The three CSR arrays of an Adjacency as the library takes them (no copy when possible)."""

    def __init__(self, adjacency: Adjacency, what: str):
        n = int(adjacency.n)
        self.n = n
        self.row_ptr = np.ascontiguousarray(adjacency.row_ptr, dtype=np.int64)
        self.col_idx = np.ascontiguousarray(adjacency.col_idx, dtype=np.int64)
        self.cost = np.ascontiguousarray(adjacency.cost, dtype=np.float32)
        if self.row_ptr.shape != (n + 1,):
            raise ValueError(
                f"{what}: row_ptr has shape {self.row_ptr.shape}, expected ({n + 1},) for n = {n}"
            )
        edges = int(self.row_ptr[-1])
        if self.col_idx.shape != (edges,) or self.cost.shape != (edges,):
            raise ValueError(
                f"{what}: col_idx has {self.col_idx.size} and cost {self.cost.size} entries, "
                f"row_ptr[n] = {edges} says {edges}"
            )

    def arguments(self) -> tuple:
        return (
            self.n,
            _pointer(self.row_ptr, _i64p),
            _pointer(self.col_idx, _i64p),
            _pointer(self.cost, _f32p),
        )


# Adjacency objects already checked completely, by id (dropped when the object goes).
_checked: set[int] = set()
_checked_lock = threading.Lock()


def _prepared(adjacency: Adjacency, what: str = "adjacency") -> _Csr:
    """The adjacency's CSR for the library, checked completely on first use."""
    csr = _Csr(adjacency, what)
    key = id(adjacency)
    with _checked_lock:
        if key in _checked:
            return csr
    lib = library()
    _raise_for(lib.litpath_sssp_check_csr(*csr.arguments()), lib)
    try:
        weakref.finalize(adjacency, _checked.discard, key)
    except TypeError:  # cannot be watched: check it again next time
        return csr
    with _checked_lock:
        _checked.add(key)
    return csr


def _vertex(value, n: int, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer vertex id, got {value!r}")
    vertex = int(value)
    if not 0 <= vertex < n:
        raise IndexError(f"{what} {vertex} is outside 0..{n - 1}")
    return vertex


def rows(adjacency: Adjacency, sources: Iterable[int], threads: int | None = None) -> np.ndarray:
    """float32[m, n]: row i holds the distances from ``sources[i]`` (+inf where unreachable)."""
    csr = _prepared(adjacency)
    ids = np.ascontiguousarray(np.asarray(list(sources) if not isinstance(sources, np.ndarray) else sources))
    if ids.ndim != 1:
        raise ValueError(f"sources must be one-dimensional, has shape {ids.shape}")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"sources must be integer vertex ids, got dtype {ids.dtype}")
    ids = ids.astype(np.int64, copy=False)
    bad = np.flatnonzero((ids < 0) | (ids >= csr.n))
    if bad.size:
        raise IndexError(f"sources[{bad[0]}] = {ids[bad[0]]} is outside 0..{csr.n - 1}")
    if threads is not None and int(threads) < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    out = np.empty((ids.size, csr.n), dtype=np.float32)
    if ids.size == 0:
        return out
    lib = library()
    status = lib.litpath_sssp_rows(
        *csr.arguments(), _pointer(ids, _i64p), ids.size, int(threads or 0), _pointer(out, _f32p)
    )
    _raise_for(status, lib)
    return out


def shortest_path(
    adjacency: Adjacency, source: int, target: int, reverse: Adjacency | None = None, *, deadline: float | None = None
) -> tuple[float, list[int]]:
    """``(distance, [source, ..., target])`` of a shortest path; ``(inf, [])`` when unreachable.

    ``reverse`` is the transpose of a directed graph (:func:`reverse_adjacency`); without
    it the graph must be symmetric (the pipeline's graphs are). The distance is the sum in
    double, in path order, of the path's edge costs (the cheapest of parallel edges).
    :class:`DeadlineExceeded` past ``deadline`` or the scoped one (see the module docstring).
    """
    until = _deadline(deadline)
    csr = _prepared(adjacency)
    s = _vertex(source, csr.n, "source")
    t = _vertex(target, csr.n, "target")
    if reverse is not None:
        rev = _prepared(reverse, "reverse adjacency")
        if rev.n != csr.n:
            raise ValueError(f"reverse adjacency has n = {rev.n}, the adjacency n = {csr.n}")
        reverse_args = rev.arguments()[1:]
    else:
        reverse_args = (None, None, None)
    lib = library()
    distance = ctypes.c_double()
    length = ctypes.c_int64()
    capacity = min(_PATH_CAPACITY, csr.n)
    while True:
        path = np.empty(capacity, dtype=np.int64)
        status = lib.litpath_sssp_shortest_path(
            *csr.arguments(),
            *reverse_args,
            s,
            t,
            ctypes.byref(distance),
            _pointer(path, _i64p),
            capacity,
            ctypes.byref(length),
            until,
        )
        if status != _BUFFER_TOO_SMALL:
            break
        capacity = int(length.value)
    _raise_for(status, lib)
    if not math.isfinite(distance.value):
        return math.inf, []
    return float(distance.value), path[: length.value].tolist()


def nearest(
    adjacency: Adjacency, source: int, candidate_mask: np.ndarray, k: int, *, deadline: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices int64[k'], distances float64[k'])``: the k candidates nearest to ``source``.

    Candidates are the v != source with ``candidate_mask[v]`` true, reachable from source.
    The result is exactly the first k' = min(k, reachable candidates) of them in
    (distance, vertex id) order, sorted that way. :class:`DeadlineExceeded` past ``deadline``
    or the scoped one (see the module docstring).
    """
    until = _deadline(deadline)
    csr = _prepared(adjacency)
    s = _vertex(source, csr.n, "source")
    mask = np.asarray(candidate_mask)
    if mask.shape != (csr.n,):
        raise ValueError(f"candidate_mask has shape {mask.shape}, expected ({csr.n},)")
    mask = np.ascontiguousarray(mask.view(np.uint8) if mask.dtype == np.bool_ else mask != 0, dtype=np.uint8)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    k = int(k)
    vertices = np.empty(k, dtype=np.int64)
    distances = np.empty(k, dtype=np.float64)
    found = ctypes.c_int64()
    lib = library()
    status = lib.litpath_sssp_nearest(
        *csr.arguments(),
        s,
        _pointer(mask, _u8p),
        k,
        _pointer(vertices, _i64p),
        _pointer(distances, _f64p),
        ctypes.byref(found),
        until,
    )
    _raise_for(status, lib)
    return vertices[: found.value].copy(), distances[: found.value].copy()


def reverse_adjacency(adjacency: Adjacency) -> Adjacency:
    """The transpose of a directed graph's CSR (row v lists the u with an edge u -> v),
    rows sorted by column: the ``reverse`` argument of :func:`shortest_path`."""
    n = int(adjacency.n)
    row_ptr = np.asarray(adjacency.row_ptr, dtype=np.int64)
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(row_ptr))
    dst = np.asarray(adjacency.col_idx, dtype=np.int64)
    order = np.lexsort((src, dst))
    reverse_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=reverse_ptr[1:])
    cost = np.asarray(adjacency.cost, dtype=np.float32)[order]
    return Adjacency(n=n, row_ptr=reverse_ptr, col_idx=src[order], cost=cost)


def release_workspace() -> None:
    """Free this thread's search workspaces in the library (O(n) each; kept between queries).

    Nothing to do, and the library is not loaded, when no search has run in this process.
    """
    with _library_lock:
        lib = _library
    if lib is not None:
        lib.litpath_sssp_release_workspace()


def symmetric_csr_arrays(
    n: int, src: np.ndarray, dst: np.ndarray, cost: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_ptr, col_idx, cost) of both directions of the undirected edges ``src[i] < dst[i] < n``,
    given sorted by (src, dst) and distinct; rows sorted by column. :class:`ValueError` names
    the first edge out of range or out of order."""
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    cost = np.ascontiguousarray(cost, dtype=np.float32)
    m = len(src)
    if len(dst) != m or len(cost) != m:
        raise ValueError(f"src, dst and cost differ in length: {m}, {len(dst)}, {len(cost)}")
    row_ptr = np.empty(n + 1, dtype=np.int64)
    col_idx = np.empty(2 * m, dtype=np.int64)
    costs = np.empty(2 * m, dtype=np.float32)
    lib = library()
    status = lib.litpath_sssp_symmetric_csr(
        int(n), m, _pointer(src, _i64p), _pointer(dst, _i64p), _pointer(cost, _f32p),
        _pointer(row_ptr, _i64p), _pointer(col_idx, _i64p), _pointer(costs, _f32p),
    )  # fmt: skip
    _raise_for(status, lib)
    return row_ptr, col_idx, costs
