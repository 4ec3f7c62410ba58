"""Exact shortest paths on the sparse graph, in compiled code, without the dense matrix.

A ctypes wrapper of ``liblitpath_sssp.so`` (solver/core/sssp_c_api.h, built by ``make
setup`` into ``solver/build``; ``$LITPATH_SSSP_LIB`` points elsewhere). Dijkstra on the CSR
of a :class:`pipeline.query.paths.Adjacency`, distances accumulated in double:

``rows(adjacency, sources, threads=None)``
    float32[m, n] distance rows of m sources (OpenMP threads over the sources).
``shortest_path(adjacency, source, target, reverse=None, *, deadline=None, hubs=None)``
    ``(distance, vertices)`` of one pair by bidirectional Dijkstra; ``(inf, [])`` when
    unreachable. The graph is taken as symmetric unless ``reverse`` (its transpose, see
    :func:`reverse_adjacency`) is given.
``nearest(adjacency, source, candidate_mask, k, *, deadline=None, hubs=None)``
    the k candidates nearest to ``source`` (ties by vertex id), with their distances.
``k_shortest_paths(adjacency, source, target, k, *, allowed=None, deadline=None, hubs=None)``
    the k shortest loopless paths, cheapest first (Yen's algorithm over the same search), with
    an optional filter on the intermediate vertices.
``count_shortest_paths(adjacency, source, target, *, allowed=None, deadline=None, hubs=None)``
    how many distinct loopless paths share the shortest distance (saturating).
``symmetric_csr_arrays(n, src, dst, cost)``
    the graph stage's symmetric CSR of edges sorted by (src, dst), by one counting pass.

The path index. ``hubs`` is a :class:`HubRows`, the rows of the highest-degree vertices
sorted by cost (:func:`choose_hubs`, :func:`build_hub_rows`; stored beside graph.bp by
:mod:`pipeline.query.path_index`). With it a search relaxes a hub's arcs in cost order, as
far as it needs to, instead of all of them when it settles the hub: the same distance, to
the last bit, for far fewer arcs (solver/core/sssp_hub_rows.hpp says why it stays exact).
:func:`check_hub_rows` compares an index with its graph before it is used.

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

Memory. ``shortest_path`` and ``nearest`` search in workspaces of O(n) bytes that the library
keeps between calls (a query then costs no O(n) allocation and clearing) in one pool shared
by every thread: 48 bytes a vertex for a workspace whose search reached the whole graph,
plus 16 bytes a queued heap entry. :func:`set_workspace_limit` bounds how many exist at once
(a call that finds them all busy waits, until its deadline at most);
:func:`release_idle_workspaces` frees those unused for a while; :func:`workspace_stats`
says what is held.
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
ABI_VERSION = 5  # LITPATH_SSSP_ABI_VERSION of solver/core/sssp_c_api.h

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
_u32p = ctypes.POINTER(ctypes.c_uint32)


class _HubRowsArgument(ctypes.Structure):
    """struct litpath_sssp_hub_rows of sssp_c_api.h."""

    _fields_ = [
        ("rows", ctypes.c_int64),
        ("vertex", _i64p),
        ("start", _i64p),
        ("col", _u32p),
        ("cost", _f32p),
        ("min_hub_cost", _f32p),
    ]


_hubs_p = ctypes.POINTER(_HubRowsArgument)
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
    # ..., reverse row_ptr/col_idx/cost, hubs, source, target, distance_out, path_out, capacity,
    # length_out, deadline
    "litpath_sssp_shortest_path": (
        ctypes.c_int,
        [*_CSR, _i64p, _i64p, _f32p, _hubs_p, ctypes.c_int64, ctypes.c_int64, _f64p, _i64p, ctypes.c_int64,
         _i64p, ctypes.c_double],
    ),  # fmt: skip
    # ..., hubs, source, candidate_mask, k, vertices_out, distances_out, found_out, deadline
    "litpath_sssp_nearest": (
        ctypes.c_int,
        [*_CSR, _hubs_p, ctypes.c_int64, _u8p, ctypes.c_int64, _i64p, _f64p, _i64p, ctypes.c_double],
    ),
    # ..., hubs, source, target, k, allowed, costs_out, offsets_out, vertices_out, capacity,
    # vertices_needed_out, found_out, deadline
    "litpath_sssp_k_shortest_paths": (
        ctypes.c_int,
        [*_CSR, _hubs_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, _u8p, _f64p, _i64p, _i64p,
         ctypes.c_int64, _i64p, _i64p, ctypes.c_double],
    ),  # fmt: skip
    # ..., hubs, source, target, allowed, distance_out, paths_out, saturated_out, deadline
    "litpath_sssp_count_shortest_paths": (
        ctypes.c_int,
        [*_CSR, _hubs_p, ctypes.c_int64, ctypes.c_int64, _u8p, _f64p, _i64p, ctypes.POINTER(ctypes.c_int),
         ctypes.c_double],
    ),  # fmt: skip
    # n, row_ptr, min_degree, max_arcs, vertex_out, capacity, rows_out
    "litpath_sssp_hub_rows_choose": (
        ctypes.c_int,
        [ctypes.c_int64, _i64p, ctypes.c_int64, ctypes.c_int64, _i64p, ctypes.c_int64, _i64p],
    ),
    # ..., rows, vertex, start_out, col_out, cost_out, threads
    "litpath_sssp_hub_rows_build": (
        ctypes.c_int,
        [*_CSR, ctypes.c_int64, _i64p, _i64p, _u32p, _f32p, ctypes.c_int],
    ),
    # ..., hubs, min_hub_cost_out, threads
    "litpath_sssp_hub_rows_check": (ctypes.c_int, [*_CSR, _hubs_p, _f32p, ctypes.c_int]),
    "litpath_sssp_set_workspace_limit": (None, [ctypes.c_int64]),
    "litpath_sssp_release_idle_workspaces": (ctypes.c_int64, [ctypes.c_double]),
    "litpath_sssp_workspace_stats": (None, [_i64p, _i64p, _i64p]),
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


class HubRows:
    """A path index's arrays for one graph, checked against it (:func:`check_hub_rows` or
    :func:`build_hub_rows` make one): hub ``r`` is vertex ``vertex[r]`` (ascending), its arcs are
    ``col[e], cost[e]`` for ``e`` in ``start[r]:start[r + 1]``, sorted by (cost, column), and
    ``min_hub_cost[r]`` is its cheapest arc to another hub (+inf when none)."""

    def __init__(
        self, n: int, vertex: np.ndarray, start: np.ndarray, col: np.ndarray, cost: np.ndarray,
        min_hub_cost: np.ndarray,
    ):  # fmt: skip
        self.n = int(n)
        self.vertex = np.ascontiguousarray(vertex, dtype=np.int64)
        self.start = np.ascontiguousarray(start, dtype=np.int64)
        self.col = np.ascontiguousarray(col, dtype=np.uint32)
        self.cost = np.ascontiguousarray(cost, dtype=np.float32)
        self.min_hub_cost = np.ascontiguousarray(min_hub_cost, dtype=np.float32)
        rows = len(self.vertex)
        if self.start.shape != (rows + 1,) or len(self.min_hub_cost) != rows:
            raise ValueError(
                f"path index: {rows} hubs need {rows + 1} start offsets and {rows} cheapest hub arcs, "
                f"got {len(self.start)} and {len(self.min_hub_cost)}"
            )
        arcs = int(self.start[-1]) if rows else 0
        if len(self.col) != arcs or len(self.cost) != arcs:
            raise ValueError(f"path index: start says {arcs} arcs, col has {len(self.col)} and cost {len(self.cost)}")
        self._argument = _HubRowsArgument(
            rows, _pointer(self.vertex, _i64p), _pointer(self.start, _i64p), _pointer(self.col, _u32p),
            _pointer(self.cost, _f32p), _pointer(self.min_hub_cost, _f32p),
        )  # fmt: skip

    @property
    def rows(self) -> int:
        return len(self.vertex)

    @property
    def arcs(self) -> int:
        return len(self.col)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.vertex, self.start, self.col, self.cost, self.min_hub_cost))

    def argument(self, n: int):
        """The pointer the library takes; ValueError when the index is of a graph of another size."""
        if n != self.n:
            raise ValueError(f"the path index is for a graph of {self.n} vertices, this one has {n}")
        return ctypes.byref(self._argument)


def choose_hubs(row_ptr: np.ndarray, min_degree: int, max_arcs: int) -> np.ndarray:
    """int64 ids, ascending, of the hubs of a path index over the CSR with this ``row_ptr``: the
    rows of at least ``min_degree`` arcs, largest first (ties: smaller id first), as many as fit
    in ``max_arcs`` arcs in all."""
    row_ptr = np.ascontiguousarray(row_ptr, dtype=np.int64)
    if row_ptr.ndim != 1 or len(row_ptr) < 1:
        raise ValueError("row_ptr must be one-dimensional with n + 1 entries")
    n = len(row_ptr) - 1
    lib = library()
    count = ctypes.c_int64()
    status = lib.litpath_sssp_hub_rows_choose(
        n, _pointer(row_ptr, _i64p), int(min_degree), int(max_arcs), None, 0, ctypes.byref(count)
    )
    if status != _BUFFER_TOO_SMALL:
        _raise_for(status, lib)
        return np.zeros(0, dtype=np.int64)
    vertex = np.empty(count.value, dtype=np.int64)
    status = lib.litpath_sssp_hub_rows_choose(
        n, _pointer(row_ptr, _i64p), int(min_degree), int(max_arcs), _pointer(vertex, _i64p), len(vertex),
        ctypes.byref(count),
    )  # fmt: skip
    _raise_for(status, lib)
    return vertex


def build_hub_rows(adjacency: Adjacency, vertex: np.ndarray, threads: int | None = None) -> HubRows:
    """The path index of the hubs ``vertex`` (strictly ascending): each hub's row sorted by
    (cost, column), checked (:func:`check_hub_rows`). ``threads``: OpenMP's default when None."""
    csr = _prepared(adjacency)
    vertex = np.ascontiguousarray(vertex, dtype=np.int64)
    degree = np.diff(csr.row_ptr)
    if len(vertex) and (vertex.min() < 0 or vertex.max() >= csr.n):
        raise IndexError(f"hub ids must lie in 0..{csr.n - 1}")
    arcs = int(degree[vertex].sum())
    start = np.empty(len(vertex) + 1, dtype=np.int64)
    col = np.empty(arcs, dtype=np.uint32)
    cost = np.empty(arcs, dtype=np.float32)
    lib = library()
    status = lib.litpath_sssp_hub_rows_build(
        *csr.arguments(), len(vertex), _pointer(vertex, _i64p), _pointer(start, _i64p), _pointer(col, _u32p),
        _pointer(cost, _f32p), int(threads or 0),
    )  # fmt: skip
    _raise_for(status, lib)
    return check_hub_rows(adjacency, vertex, start, col, cost, threads)


def check_hub_rows(
    adjacency: Adjacency, vertex: np.ndarray, start: np.ndarray, col: np.ndarray, cost: np.ndarray,
    threads: int | None = None,
) -> HubRows:  # fmt: skip
    """A :class:`HubRows` of these arrays once they are checked against the graph: hub ids
    ascending and in range, each row the graph row's arcs sorted by (cost, column), each hub's
    graph row sorted by column. ValueError naming the first problem otherwise."""
    csr = _prepared(adjacency)
    vertex = np.ascontiguousarray(vertex, dtype=np.int64)
    hubs = HubRows(csr.n, vertex, start, col, cost, np.zeros(len(vertex), dtype=np.float32))
    lib = library()
    status = lib.litpath_sssp_hub_rows_check(
        *csr.arguments(), ctypes.byref(hubs._argument), _pointer(hubs.min_hub_cost, _f32p), int(threads or 0)
    )
    _raise_for(status, lib)
    return hubs


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
    adjacency: Adjacency,
    source: int,
    target: int,
    reverse: Adjacency | None = None,
    *,
    deadline: float | None = None,
    hubs: HubRows | None = None,
) -> tuple[float, list[int]]:
    """``(distance, [source, ..., target])`` of a shortest path; ``(inf, [])`` when unreachable.

    ``reverse`` is the transpose of a directed graph (:func:`reverse_adjacency`); without
    it the graph must be symmetric (the pipeline's graphs are). The distance is the sum in
    double, in path order, of the path's edge costs (the cheapest of parallel edges).
    ``hubs``: this graph's path index (symmetric graphs only): the same distance, far fewer
    arcs relaxed; when several paths tie, the one returned may differ from the plain search's.
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
    hub_argument = None if hubs is None else hubs.argument(csr.n)
    lib = library()
    distance = ctypes.c_double()
    length = ctypes.c_int64()
    capacity = min(_PATH_CAPACITY, csr.n)
    while True:
        path = np.empty(capacity, dtype=np.int64)
        status = lib.litpath_sssp_shortest_path(
            *csr.arguments(),
            *reverse_args,
            hub_argument,
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
    adjacency: Adjacency,
    source: int,
    candidate_mask: np.ndarray,
    k: int,
    *,
    deadline: float | None = None,
    hubs: HubRows | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices int64[k'], distances float64[k'])``: the k candidates nearest to ``source``.

    Candidates are the v != source with ``candidate_mask[v]`` true, reachable from source.
    The result is exactly the first k' = min(k, reachable candidates) of them in
    (distance, vertex id) order, sorted that way, with or without ``hubs`` (this graph's path
    index). :class:`DeadlineExceeded` past ``deadline`` or the scoped one (see the module
    docstring).
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
        None if hubs is None else hubs.argument(csr.n),
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


def _allowed_mask(allowed: np.ndarray | None, n: int):
    """The library's ``allowed`` argument: n bytes (1: may be an intermediate vertex), or None."""
    if allowed is None:
        return None, None
    mask = np.asarray(allowed)
    if mask.shape != (n,):
        raise ValueError(f"allowed has shape {mask.shape}, expected ({n},)")
    mask = np.ascontiguousarray(mask.view(np.uint8) if mask.dtype == np.bool_ else mask != 0, dtype=np.uint8)
    return mask, _pointer(mask, _u8p)


def k_shortest_paths(
    adjacency: Adjacency,
    source: int,
    target: int,
    k: int,
    *,
    allowed: np.ndarray | None = None,
    deadline: float | None = None,
    hubs: HubRows | None = None,
) -> list[tuple[float, list[int]]]:
    """The k shortest loopless ``source`` -> ``target`` paths of a symmetric graph, cheapest
    first: ``[(cost, [source, ..., target]), ...]``, fewer than k when fewer exist, ``[]`` when
    unreachable. Yen's algorithm in compiled code (``solver/core/sssp_k_paths.hpp``); each cost is
    the path's edge costs summed in double in path order, as :func:`shortest_path` sums.

    ``allowed``: n booleans, False for a vertex that may not be an intermediate vertex of a path
    (the two endpoints are never filtered); None: no filter. ``hubs``: this graph's path index.
    :class:`DeadlineExceeded` past ``deadline`` or the scoped one.
    """
    until = _deadline(deadline)
    csr = _prepared(adjacency)
    s = _vertex(source, csr.n, "source")
    t = _vertex(target, csr.n, "target")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    k = int(k)
    _keep, allowed_argument = _allowed_mask(allowed, csr.n)
    hub_argument = None if hubs is None else hubs.argument(csr.n)
    costs = np.empty(max(k, 1), dtype=np.float64)
    offsets = np.empty(k + 1, dtype=np.int64)
    needed = ctypes.c_int64()
    found = ctypes.c_int64()
    capacity = min(k * 16, k * csr.n)
    lib = library()
    while True:
        vertices = np.empty(max(capacity, 1), dtype=np.int64)
        status = lib.litpath_sssp_k_shortest_paths(
            *csr.arguments(), hub_argument, s, t, k, allowed_argument,
            _pointer(costs, _f64p), _pointer(offsets, _i64p), _pointer(vertices, _i64p), capacity,
            ctypes.byref(needed), ctypes.byref(found), until,
        )  # fmt: skip
        if status != _BUFFER_TOO_SMALL:
            break
        capacity = int(needed.value)
    _raise_for(status, lib)
    return [
        (float(costs[i]), vertices[offsets[i] : offsets[i + 1]].tolist()) for i in range(int(found.value))
    ]


def count_shortest_paths(
    adjacency: Adjacency,
    source: int,
    target: int,
    *,
    allowed: np.ndarray | None = None,
    deadline: float | None = None,
    hubs: HubRows | None = None,
) -> tuple[float, int, bool]:
    """``(distance, paths, saturated)``: how many distinct loopless shortest ``source`` ->
    ``target`` paths there are (``(inf, 0, False)`` when unreachable). A path is counted when
    each of its edges is tight in double (``dist(u) + cost == dist(v)``, summed as the search
    sums); paths across zero-cost edges are enumerated. ``saturated``: the count is a lower
    bound (it reached 2**63 - 1, or the zero-cost enumeration its work bound;
    ``solver/core/sssp_k_paths.hpp``). ``allowed``, ``hubs`` and the deadline as for
    :func:`k_shortest_paths`."""
    until = _deadline(deadline)
    csr = _prepared(adjacency)
    s = _vertex(source, csr.n, "source")
    t = _vertex(target, csr.n, "target")
    _keep, allowed_argument = _allowed_mask(allowed, csr.n)
    distance = ctypes.c_double()
    paths = ctypes.c_int64()
    saturated = ctypes.c_int()
    lib = library()
    status = lib.litpath_sssp_count_shortest_paths(
        *csr.arguments(), None if hubs is None else hubs.argument(csr.n), s, t, allowed_argument,
        ctypes.byref(distance), ctypes.byref(paths), ctypes.byref(saturated), until,
    )  # fmt: skip
    _raise_for(status, lib)
    return float(distance.value), int(paths.value), bool(saturated.value)


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


def set_workspace_limit(limit: int) -> None:
    """At most ``limit`` search workspaces exist at once in this process (0: no limit, the
    library's default); a search that finds them all busy waits for one, until its deadline at
    most (then :class:`DeadlineExceeded`)."""
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise ValueError(f"the workspace limit must be a non-negative integer, got {limit!r}")
    library().litpath_sssp_set_workspace_limit(int(limit))


def release_idle_workspaces(idle_seconds: float = 0.0) -> int:
    """Free the search workspaces unused for at least ``idle_seconds`` (0: every idle one);
    returns the bytes freed. Nothing to do, and the library is not loaded, when no search has
    run in this process."""
    with _library_lock:
        lib = _library
    if lib is None:
        return 0
    return int(lib.litpath_sssp_release_idle_workspaces(float(idle_seconds)))


def workspace_stats() -> dict[str, int]:
    """``busy`` and ``idle`` workspaces, and ``idle_bytes`` held by the idle ones."""
    busy, idle, idle_bytes = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    library().litpath_sssp_workspace_stats(ctypes.byref(busy), ctypes.byref(idle), ctypes.byref(idle_bytes))
    return {"busy": busy.value, "idle": idle.value, "idle_bytes": idle_bytes.value}


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
