# Over 600 lines: one reader and one writer per ADIOS2 layout (graph.bp, dense and rows distances.bp), kept together because the C++ solver shares each layout.
"""ADIOS2 artifacts: ``graph.bp`` (CSR of the cost matrix) and ``distances.bp`` readers.

Layouts (docs/design.md §6.2-6.3), shared with the C++ solver:

graph.bp, one step
    ``n`` int64 scalar; ``row_ptr`` int64[n+1]; ``col_idx`` int64[nnz]; ``cost`` float32[nnz]
    (both directions of every undirected edge, rows sorted by column). Attributes:
    ``graph_digest``, ``weight_scheme``, ``edge_kinds`` (string array), ``created`` (ISO 8601
    UTC), ``n_vertices``, ``n_edges`` (undirected edges, ``nnz == 2 * n_edges``).

distances.bp, written by the solver, in one of two layouts (attribute ``layout``):

``dense`` (the default when the attribute is absent: ``apsp-fw`` Floyd-Warshall)
    one global float32 variable ``distance`` of shape n x n (unreachable = +inf) with
    attributes ``graph_digest``, ``n``, ``block_size``, ``process_grid``, ``algorithm``,
    ``solver_version``, ``semiring``.
``rows`` (``apsp-fw --sources``: Dijkstra rows of a source set, for graphs too large for n x n)
    float32 ``distance`` of shape m x n, row i = distances from ``sources[i]``; int64
    ``sources`` [m], strictly ascending vertex ids in 0..n-1; attributes ``graph_digest``,
    ``n``, ``rows`` (= m), ``layout`` = "rows", ``algorithm`` = "dijkstra-rows",
    ``solver_version``, ``semiring``.

:class:`DistanceMatrix` reads row and tile selections only; the whole matrix is never
loaded. Opening one checks it is whole (see :class:`DistancesCorrupt`), so a truncated or
damaged file is never served.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import adios2
import numpy as np

from pipeline.runtime.errors import LitpathError
from pipeline.runtime.process import CommandFailed, run_command
from pipeline.store.bpfiles import bp_reader, close_bp_reader

GRAPH_ATTRIBUTES = ("graph_digest", "weight_scheme", "edge_kinds", "created", "n_vertices", "n_edges")
DISTANCE_ATTRIBUTES = ("graph_digest", "n")


class DistancesCorrupt(LitpathError, ValueError):
    """distances.bp is truncated, damaged or incomplete; the message names the file and the check."""


class RowNotStored(KeyError):
    """A rows-layout distances.bp holds the rows of its sources only, and not the one asked for."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _attribute_value(value: Any) -> Any:
    """Attributes as plain Python values: one-element numeric arrays become scalars."""
    if isinstance(value, np.ndarray):
        return value.item() if value.size == 1 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read_attributes(reader: adios2.FileReader) -> dict[str, Any]:
    return {name: _attribute_value(reader.read_attribute(name)) for name in reader.available_attributes()}


def _write_attribute(stream: adios2.Stream, name: str, value: Any) -> None:
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        stream.write_attribute(name, list(value))
    elif isinstance(value, (list, tuple)):
        stream.write_attribute(name, np.asarray(value))
    elif isinstance(value, (int, np.integer)):
        stream.write_attribute(name, np.asarray([value], dtype=np.int64))
    elif isinstance(value, (float, np.floating)):
        stream.write_attribute(name, np.asarray([value], dtype=np.float64))
    else:
        stream.write_attribute(name, str(value))


def _write_1d(stream: adios2.Stream, name: str, array: np.ndarray) -> None:
    array = np.ascontiguousarray(array)
    stream.write(name, array, [len(array)], [0], [len(array)])


def _put_deferred(stream: adios2.Stream, name: str, array: np.ndarray) -> None:
    """A whole 1-D array put without a copy: ADIOS2 writes it from ``array`` at ``end_step``,
    which must come before ``array`` is freed or changed. ``stream.write`` puts in sync mode,
    which first copies the array into the engine's buffer: for the 44M-entry CSR of the 10M
    predication graph, 1.7 s against 0.3 s deferred (AMD EPYC)."""
    if not array.flags.c_contiguous:
        raise ValueError(f"{name}: a deferred put needs a contiguous array")
    variable = stream.io.define_variable(name, array, [len(array)], [0], [len(array)])
    stream.engine.put(variable, array, adios2.bindings.Mode.Deferred)


# ADIOS2 type names -> bytes per value, for the size check of a BP file's data files
_TYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
               "int64_t": 8, "uint64_t": 8, "float": 4, "double": 8}  # fmt: skip


def _check_data_bytes(path: Path, reader: adios2.FileReader, error: type[ValueError]) -> None:
    """``error`` unless the BP directory's data files hold at least its array variables' values:
    ADIOS2 waits forever, instead of failing, on a read beyond the end of a truncated data file
    (graph.bp and path_index.bp are never compressed, so their values take their full size)."""
    if not path.is_dir():
        return
    need = 0
    for variable in reader.available_variables().values():
        shape = variable.get("Shape", "").strip()
        if shape and variable.get("Type") in _TYPE_BYTES:
            need += int(np.prod([int(extent) for extent in shape.split(",")])) * _TYPE_BYTES[variable["Type"]]
    held = sum(data.stat().st_size for data in path.glob("data.*"))
    if held < need:
        raise error(f"{path}: data files hold {held:,} bytes but its arrays need {need:,}: truncated")


def _read_1d(reader: adios2.FileReader, name: str, dtype) -> np.ndarray:
    variables = reader.available_variables()
    if name not in variables:
        raise KeyError(f"{name!r} missing from {reader}")
    if variables[name]["Shape"].strip() == "0":  # the Python reader cannot read empty arrays
        return np.zeros(0, dtype=dtype)
    return np.asarray(reader.read(name), dtype=dtype)


def write_graph_bp(
    path: Path | str,
    n: int,
    row_ptr: np.ndarray,
    col_idx: np.ndarray,
    cost: np.ndarray,
    attributes: dict[str, Any],
) -> None:
    """Write the CSR cost matrix to ``path`` (a BP directory) with its attributes.

    ``attributes`` must hold ``graph_digest``, ``weight_scheme`` and ``edge_kinds``;
    ``created`` (now, UTC), ``n_vertices`` (n) and ``n_edges`` (nnz / 2) are filled in when
    absent. Extra attributes are written as given.
    """
    row_ptr = np.asarray(row_ptr, dtype=np.int64)
    col_idx = np.ascontiguousarray(col_idx, dtype=np.int64)
    cost = np.ascontiguousarray(cost, dtype=np.float32)
    if (
        row_ptr.shape != (n + 1,)
        or row_ptr[0] != 0
        or row_ptr[-1] != len(col_idx)
        or len(cost) != len(col_idx)
    ):
        raise ValueError("inconsistent CSR: need row_ptr[n+1] from 0 to nnz, col_idx[nnz], cost[nnz]")
    missing = {"graph_digest", "weight_scheme", "edge_kinds"} - attributes.keys()
    if missing:
        raise ValueError(f"graph.bp attributes missing: {sorted(missing)}")
    attrs = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "n_vertices": int(n),
        "n_edges": int(len(col_idx) // 2),
        **attributes,
    }
    with _bp_stream(path) as stream:
        stream.begin_step()
        stream.write("n", int(n))
        _write_1d(stream, "row_ptr", row_ptr)
        if len(col_idx):  # row_ptr, col_idx and cost stay alive until end_step, as deferred puts need
            _put_deferred(stream, "col_idx", col_idx)
            _put_deferred(stream, "cost", cost)
        else:  # the Python reader needs the variables even when empty
            _write_1d(stream, "col_idx", col_idx)
            _write_1d(stream, "cost", cost)
        for name, value in attrs.items():
            _write_attribute(stream, name, value)
        stream.end_step()


class GraphBpWriter:
    """graph.bp written a block of rows at a time, for graphs whose CSR does not fit in memory.

    The same layout as :func:`write_graph_bp` (one step; ``n``, ``row_ptr``, ``col_idx``,
    ``cost``; the same attributes): ``row_ptr`` is given up front, then :meth:`write_rows`
    puts consecutive blocks of ``col_idx``/``cost`` and asks ADIOS2 to write them out
    (``PerformDataWrite``) so they do not accumulate in its buffer; the attributes, which
    hold the digest known only at the end, are written by :meth:`close`.
    """

    def __init__(self, path: Path | str, n: int, row_ptr: np.ndarray):
        self.path = Path(path)
        self.n = int(n)
        self.row_ptr = np.asarray(row_ptr, dtype=np.int64)
        if self.row_ptr.shape != (self.n + 1,) or self.row_ptr[0] != 0:
            raise ValueError("row_ptr must have n + 1 entries starting at 0")
        self.nnz = int(self.row_ptr[-1])
        self.written = 0
        self._stream = adios2.Stream(str(self.path), "w")
        self._stream.begin_step()
        self._stream.write("n", self.n)
        _write_1d(self._stream, "row_ptr", self.row_ptr)

    def write_rows(self, col_idx: np.ndarray, cost: np.ndarray) -> None:
        """The CSR entries of the next rows, in row order."""
        col_idx = np.ascontiguousarray(col_idx, dtype=np.int64)
        cost = np.ascontiguousarray(cost, dtype=np.float32)
        if len(col_idx) != len(cost) or self.written + len(col_idx) > self.nnz:
            raise ValueError("CSR block does not fit the row_ptr given")
        if len(col_idx):
            self._stream.write("col_idx", col_idx, [self.nnz], [self.written], [len(col_idx)])
            self._stream.write("cost", cost, [self.nnz], [self.written], [len(cost)])
            self._stream.engine.perform_data_write()
        self.written += len(col_idx)

    def close(self, attributes: dict[str, Any]) -> None:
        if self.written != self.nnz:
            raise ValueError(f"graph.bp: {self.written} of {self.nnz} CSR entries written")
        missing = {"graph_digest", "weight_scheme", "edge_kinds"} - attributes.keys()
        if missing:
            raise ValueError(f"graph.bp attributes missing: {sorted(missing)}")
        if self.nnz == 0:  # readers expect the variables even when empty
            _write_1d(self._stream, "col_idx", np.zeros(0, np.int64))
            _write_1d(self._stream, "cost", np.zeros(0, np.float32))
        attrs = {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "n_vertices": self.n,
            "n_edges": self.nnz // 2,
            **attributes,
        }
        for name, value in attrs.items():
            _write_attribute(self._stream, name, value)
        self._stream.end_step()
        self._stream.close()
        _written_here(self.path)

    def abort(self) -> None:
        try:
            self._stream.close()
        except Exception:  # noqa: BLE001 -- closing a half-written file; the caller raises the cause
            pass


def read_graph_bp(path: Path | str) -> tuple[tuple[int, np.ndarray, np.ndarray, np.ndarray], dict[str, Any]]:
    """``((n, row_ptr, col_idx, cost), attributes)`` of a graph.bp written by :func:`write_graph_bp`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"graph file not found: {path}")
    probe_opens(path, GraphCorrupt)
    with bp_reader(path) as reader:
        _check_data_bytes(path, reader, GraphCorrupt)
        n = int(np.asarray(reader.read("n")).item())
        row_ptr = _read_1d(reader, "row_ptr", np.int64)
        col_idx = _read_1d(reader, "col_idx", np.int64)
        cost = _read_1d(reader, "cost", np.float32)
        attrs = _read_attributes(reader)
    if isinstance(attrs.get("edge_kinds"), str):
        attrs["edge_kinds"] = [attrs["edge_kinds"]]
    return (n, row_ptr, col_idx, cost), attrs


def read_graph_rows_bp(
    path: Path | str, spans_of: Callable[[np.ndarray], list[tuple[int, int]]]
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]], dict[str, Any]]:
    """``(row_ptr, parts, attributes)`` of a graph.bp, reading the CSR entries of chosen rows only
    (ADIOS2 selections): ``spans_of(row_ptr)`` names vertex ranges (first, last), and ``parts``
    holds ``(col_idx, cost)`` of rows first..last-1 for each. What the path index needs."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"graph file not found: {path}")
    probe_opens(path, GraphCorrupt)
    with bp_reader(path) as reader:
        _check_data_bytes(path, reader, GraphCorrupt)
        row_ptr = _read_1d(reader, "row_ptr", np.int64)
        parts = []
        for first, last in spans_of(row_ptr):
            begin, end = int(row_ptr[first]), int(row_ptr[last])
            if end == begin:
                parts.append((np.zeros(0, np.int64), np.zeros(0, np.float32)))
                continue
            parts.append((
                np.asarray(reader.read("col_idx", [begin], [end - begin]), dtype=np.int64),
                np.asarray(reader.read("cost", [begin], [end - begin]), dtype=np.float32),
            ))  # fmt: skip
        attributes = _read_attributes(reader)
    return row_ptr, parts, attributes


# path_index.bp (pipeline.query.path_index): the hub rows of a graph sorted by cost, one step.
PATH_INDEX_VARIABLES = {"vertex": np.int64, "start": np.int64, "col": np.uint32, "cost": np.float32}


class PathIndexCorrupt(LitpathError, ValueError):
    """path_index.bp is truncated or damaged; the message names the file."""


def write_path_index_bp(path: Path | str, arrays: dict[str, np.ndarray], attributes: dict[str, Any]) -> None:
    """Write a path index: int64 ``vertex`` [R] and ``start`` [R + 1], uint32 ``col`` and float32
    ``cost`` [start[R]], and its attributes (the graph digest among them)."""
    with _bp_stream(path) as stream:
        stream.begin_step()
        for name, dtype in PATH_INDEX_VARIABLES.items():
            array = np.ascontiguousarray(arrays[name], dtype=dtype)
            if len(array):
                _put_deferred(stream, name, array)  # alive until end_step, as deferred puts need
            else:  # the Python reader needs the variables even when empty
                _write_1d(stream, name, array)
        for name, value in attributes.items():
            _write_attribute(stream, name, value)
        stream.end_step()


def read_path_index_bp(path: Path | str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``(arrays, attributes)`` of a path_index.bp; :class:`PathIndexCorrupt` when it cannot be read."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"path index not found: {path}")
    probe_opens(path, PathIndexCorrupt)
    try:
        with bp_reader(path) as reader:
            _check_data_bytes(path, reader, PathIndexCorrupt)
            arrays = {name: _read_1d(reader, name, dtype) for name, dtype in PATH_INDEX_VARIABLES.items()}
            attributes = _read_attributes(reader)
    except PathIndexCorrupt:
        raise
    except (KeyError, ValueError, RuntimeError) as exc:
        raise PathIndexCorrupt(f"{path}: {exc}") from exc
    return arrays, attributes


def write_distances_bp(
    path: Path | str, distance: np.ndarray, attributes: dict[str, Any], block_size: int = 256
) -> None:
    """Write a dense distance matrix in the solver's layout, one ``block_size`` tile per Put.

    For tests and small reference runs: the C++ solver is the production writer. Tiles are
    put with selections into the one global variable, as the MPI ranks do.
    """
    distance = np.asarray(distance, dtype=np.float32)
    n = distance.shape[0]
    if distance.shape != (n, n):
        raise ValueError(f"distance must be square, has shape {distance.shape}")
    attrs = {"n": n, "block_size": block_size, "semiring": "min-plus", **attributes}
    with _bp_stream(path) as stream:
        stream.begin_step()
        tiles = []  # keep every tile alive until end_step
        for r0 in range(0, n, block_size):
            for c0 in range(0, n, block_size):
                tile = np.ascontiguousarray(distance[r0 : r0 + block_size, c0 : c0 + block_size])
                tiles.append(tile)
                stream.write("distance", tile, [n, n], [r0, c0], list(tile.shape))
        for name, value in attrs.items():
            _write_attribute(stream, name, value)
        stream.end_step()


def write_distance_rows_bp(
    path: Path | str,
    rows: np.ndarray,
    sources,
    attributes: dict[str, Any],
    blocks: int = 2,
) -> None:
    """Write distance rows in the solver's "rows" layout (``apsp-fw --sources``).

    For tests and small reference runs. ``rows[i]`` holds the distances from
    ``sources[i]``; rows are stored sorted by source, as the solver stores them, and put
    in ``blocks`` contiguous row blocks, as its ranks do.
    """
    rows = np.asarray(rows, dtype=np.float32)
    sources = np.asarray(sources, dtype=np.int64)
    if rows.ndim != 2 or sources.shape != (rows.shape[0],):
        raise ValueError(f"rows must be m x n with m = len(sources); got {rows.shape} and {sources.shape}")
    m, n = rows.shape
    if m == 0:
        raise ValueError("no rows to write")
    if len(np.unique(sources)) != m or sources.min() < 0 or sources.max() >= n:
        raise ValueError(f"sources must be distinct vertex ids in 0..{n - 1}")
    order = np.argsort(sources)
    rows, sources = np.ascontiguousarray(rows[order]), sources[order]
    attrs = {
        "n": n,
        "rows": m,
        "layout": "rows",
        "algorithm": "dijkstra-rows",
        "semiring": "min-plus",
        **attributes,
    }
    bounds = np.linspace(0, m, max(1, min(blocks, m)) + 1).astype(int)
    with _bp_stream(path) as stream:
        stream.begin_step()
        pieces = []  # keep every block alive until end_step
        for first, last in zip(bounds[:-1], bounds[1:], strict=True):
            piece = np.ascontiguousarray(rows[first:last])
            pieces.append(piece)
            stream.write("distance", piece, [m, n], [int(first), 0], [int(last - first), n])
        _write_1d(stream, "sources", sources)
        for name, value in attrs.items():
            _write_attribute(stream, name, value)
        stream.end_step()


class GraphCorrupt(LitpathError, ValueError):
    """graph.bp is truncated or damaged; the message names the file."""


# Run in a child process before a BP file is opened here: ADIOS2 (2.12) segfaults on some
# damaged BP5 metadata (a truncated mmd.0, for one) instead of raising, and a crash there
# must not take the service or the pipeline down with it.
_PROBE = """
import os, sys, adios2
try:
    with adios2.FileReader(sys.argv[1]) as reader:
        for name in reader.available_attributes():
            reader.read_attribute(name)
        for name in reader.available_variables():
            reader.all_blocks_info(name)
finally:  # what reader_profile_path names, for this process
    profile = f"/tmp/{os.path.basename(sys.argv[1])}_{os.getpid():x}_profiling.json"
    if os.path.exists(profile):
        os.remove(profile)
"""


# The BP files this process wrote and closed, each with its files' (name, size, mtime, inode)
# then: probe_opens opens none of them again in a child while they are as written -- the write
# that ended without an error is the check. The graph stage reads back the graph.bp and path
# index it has just written (three children, 0.4 s of the 10M citation rerun's critical path).
_WRITTEN_HERE: dict[str, tuple] = {}


def _bp_state(path: Path | str) -> tuple:
    path = Path(path)
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    return tuple((f.name, st.st_size, st.st_mtime_ns, st.st_ino) for f in files for st in (f.stat(),))


@contextmanager
def _bp_stream(path: Path | str) -> Iterator[adios2.Stream]:
    """ADIOS2's write stream of ``path``; the file, once closed without an error, noted as
    written by this process (:func:`_written_here`)."""
    with adios2.Stream(str(path), "w") as stream:
        yield stream
    _written_here(path)


def _written_here(path: Path | str) -> None:
    """Note ``path`` as written by this process, as it is now (after its writer closed it)."""
    try:
        _WRITTEN_HERE[str(Path(path).resolve())] = _bp_state(path)
    except OSError:  # gone already: probe_opens will look at whatever is there then
        pass


def _unchanged_since_written_here(path: Path | str) -> bool:
    written = _WRITTEN_HERE.get(str(Path(path).resolve()))
    try:
        return written is not None and _bp_state(path) == written
    except OSError:
        return False


def probe_opens(path: Path, error: type[ValueError] = DistancesCorrupt, timeout_s: float = 300.0) -> None:
    """Open ``path`` with ADIOS2 in a child process; ``error`` if that crashes or raises
    (with ADIOS2's last message line). Not for a file this process wrote and that is as it
    wrote it (:data:`_WRITTEN_HERE`)."""
    if _unchanged_since_written_here(path):
        return
    try:  # errors="replace" there: ADIOS2 prints raw bytes of damaged metadata
        proc = run_command([sys.executable, "-c", _PROBE, str(path)], what="ADIOS2's open", timeout=timeout_s,
                           check=False)  # fmt: skip
    except CommandFailed as exc:
        raise error(f"{path}: ADIOS2 did not finish opening it in {timeout_s:.0f} s") from exc
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        raise error(f"{path}: ADIOS2 crashed ({name}) reading its metadata: truncated or damaged, not used")
    if proc.returncode > 0:  # ADIOS2 raised: report it now rather than open (and wait) again
        plain = re.sub(r"\x1b\[[0-9;]*m", "", proc.stderr)  # ADIOS2 colours its messages
        lines = [line.strip() for line in plain.splitlines() if line.strip()]
        raise error(f"{path}: cannot be opened (truncated or damaged?): {lines[-1] if lines else ''}")


class DistanceMatrix:
    """Row and tile reader of a solver's ``distances.bp``, opened once and shared.

    ``row(i)`` is the distances from vertex i to every vertex (the graph is undirected, so
    it is also column i). Reads are serialized by a lock so one instance can serve a
    threaded web service.

    A "rows" layout file (``apsp-fw --sources``) holds the rows of its ``sources`` only:
    ``has_row(v)`` says whether v's row is there, and ``row``/``tile`` of any other vertex
    raise :class:`RowNotStored`. ``value(i, j)`` reads D[i, j] from row i, or, when only row
    j is stored, D[j, i] from row j: that equals D[i, j] only on undirected graphs (the
    pipeline's are), so ``symmetric=False`` turns the fallback off for directed ones.
    ``layout`` is "dense" or "rows"; ``sources`` is the int64 array of stored rows (None
    for dense files).
    """

    def __init__(self, path: Path | str, verify: bool = True, symmetric: bool = True):
        self.path = Path(path)
        self.symmetric = bool(symmetric)
        if not self.path.exists():
            raise FileNotFoundError(f"distances file not found: {self.path}")
        partial = self.path.with_name(self.path.name + ".partial")
        if verify and self.path.is_dir():
            # ADIOS2 can crash the process on a BP5 directory with metadata files missing or
            # emptied, so these are checked before it opens one.
            for name in ("md.idx", "md.0", "mmd.0", "data.0"):
                part = self.path / name
                if not part.is_file() or part.stat().st_size == 0:
                    raise DistancesCorrupt(
                        f"{self.path}: BP5 file {name} is missing or empty (incomplete write?)"
                    )
            probe_opens(self.path)
        try:
            self._reader = adios2.FileReader(str(self.path))
        except Exception as exc:  # noqa: BLE001 -- ADIOS2 raises plain RuntimeErrors
            raise DistancesCorrupt(f"{self.path}: cannot be opened (truncated or damaged?): {exc}") from exc
        self._lock = threading.Lock()
        try:
            self._open_layout()
            if verify:
                if partial.exists():
                    raise DistancesCorrupt(
                        f"{self.path}: {partial.name} exists beside it (a solve did not finish)"
                    )
                self.verify()
            else:
                self._load_sources()
        except BaseException:
            close_bp_reader(self._reader, self.path)
            raise

    def _open_layout(self) -> None:
        """Shape, attributes and (rows layout) the stored sources."""
        variables = self._reader.available_variables()
        if "distance" not in variables:
            raise DistancesCorrupt(
                f"{self.path}: no 'distance' variable (found {sorted(variables)}; incomplete write?)"
            )
        shape = [int(s) for s in variables["distance"]["Shape"].split(",")]
        self.attributes: dict[str, Any] = _read_attributes(self._reader)
        self.layout: str = str(self.attributes.get("layout", "dense"))
        self.sources: np.ndarray | None = None
        if self.layout == "dense":
            if len(shape) != 2 or shape[0] != shape[1]:
                raise ValueError(f"{self.path}: 'distance' must be square, has shape {shape}")
            self.n: int = shape[0]
            return
        if self.layout != "rows":
            raise DistancesCorrupt(
                f"{self.path}: unknown layout {self.layout!r} (expected 'dense' or 'rows')"
            )
        if len(shape) != 2:
            raise DistancesCorrupt(f"{self.path}: 'distance' must be rows x n, has shape {shape}")
        if "sources" not in variables:
            raise DistancesCorrupt(
                f"{self.path}: rows layout without a 'sources' variable (incomplete write?)"
            )
        self.n = shape[1]
        self._rows_in_file = shape[0]
        if variables["sources"]["Shape"].strip() != str(shape[0]):
            raise DistancesCorrupt(
                f"{self.path}: 'sources' has shape {variables['sources']['Shape']} but 'distance' has "
                f"{shape[0]} rows"
            )

    def _load_sources(self) -> None:
        """Reads a rows file's ``sources`` (after the data files were checked: ADIOS2 waits,
        instead of failing, on a read beyond the end of a truncated data file)."""
        if self.layout != "rows" or self.sources is not None:
            return
        self.sources = _read_1d(self._reader, "sources", np.int64)
        # Lookup of a vertex's stored row; argsort keeps it right even for a file whose
        # sources are not sorted (verify() reports that).
        self._source_order = np.argsort(self.sources, kind="stable")
        self._sorted_sources = self.sources[self._source_order]

    @property
    def stored_rows(self) -> int:
        """Rows in the file: n for a dense file, the number of sources for a rows file."""
        return self.n if self.layout == "dense" else self._rows_in_file

    def verify(self) -> None:
        """Cheap whole-file checks; raises :class:`DistancesCorrupt` naming the failed one.

        Attributes present and agreeing with the shape; the written blocks cover exactly
        the variable; the BP5 data files hold at least its float32 values (no operator ever
        compresses distances); the first and last rows read back without NaN and with a zero
        diagonal. For a rows file also: ``sources`` strictly ascending within 0..n-1, and the
        diagonal entry D[s, s] of every stored row is 0 (one small read per row).
        """
        required = DISTANCE_ATTRIBUTES + (("rows",) if self.layout == "rows" else ())
        missing = [a for a in required if a not in self.attributes]
        if missing:
            raise DistancesCorrupt(f"{self.path}: attributes {missing} missing (incomplete write?)")
        if int(self.attributes["n"]) != self.n:
            raise DistancesCorrupt(
                f"{self.path}: attribute n = {self.attributes['n']} but 'distance' has {self.n} columns"
            )
        m = self.stored_rows
        rows_layout = self.layout == "rows"
        if rows_layout and int(self.attributes["rows"]) != m:
            raise DistancesCorrupt(
                f"{self.path}: attribute rows = {self.attributes['rows']} but 'distance' has {m} rows"
            )
        if self.n == 0 or m == 0:
            self._load_sources()
            return
        blocks = self._reader.all_blocks_info("distance")
        area = sum(
            int(np.prod([int(c) for c in str(b["Count"]).split(",")])) for step in blocks for b in step
        )
        if area != m * self.n:
            raise DistancesCorrupt(f"{self.path}: written blocks cover {area} of {m * self.n} elements")
        # the m x n float32 distances and, in a rows file, the m int64 sources
        _check_data_bytes(self.path, self._reader, DistancesCorrupt)
        self._load_sources()
        if self.sources is not None:
            if self.sources.min() < 0 or self.sources.max() >= self.n:
                raise DistancesCorrupt(f"{self.path}: 'sources' holds vertex ids outside 0..{self.n - 1}")
            if np.any(np.diff(self.sources) <= 0):
                raise DistancesCorrupt(
                    f"{self.path}: 'sources' is not strictly ascending (unsorted or repeated)"
                )
        rows_to_read = (
            [0, self.n - 1] if self.sources is None else [int(self.sources[0]), int(self.sources[-1])]
        )
        for i in sorted(set(rows_to_read)):
            try:
                row = self.row(i)
            except Exception as exc:  # noqa: BLE001
                raise DistancesCorrupt(f"{self.path}: row {i} cannot be read: {exc}") from exc
            if np.isnan(row).any() or row[i] != 0.0:
                raise DistancesCorrupt(f"{self.path}: row {i} is damaged (NaN, or D[{i},{i}] != 0)")
        if self.sources is not None:
            for index, vertex in enumerate(self.sources.tolist()):
                try:
                    with self._lock:
                        diagonal = self._reader.read("distance", [index, vertex], [1, 1])
                except Exception as exc:  # noqa: BLE001
                    raise DistancesCorrupt(
                        f"{self.path}: row of source {vertex} cannot be read: {exc}"
                    ) from exc
                if float(np.asarray(diagonal).reshape(-1)[0]) != 0.0:
                    raise DistancesCorrupt(
                        f"{self.path}: stored row {index} (source {vertex}) has D[{vertex},{vertex}] != 0"
                    )

    def _check(self, start: int, count: int, what: str) -> None:
        if count < 1 or start < 0 or start + count > self.n:
            raise IndexError(f"{what} [{start}, {start + count}) outside 0..{self.n} of {self.path}")

    def has_row(self, vertex: int) -> bool:
        """Whether the file holds the distances from ``vertex`` (every vertex of a dense file)."""
        vertex = int(vertex)
        if not 0 <= vertex < self.n:
            return False
        return self.sources is None or self._stored_index(vertex) is not None

    def _stored_index(self, vertex: int) -> int | None:
        """Row of ``vertex`` in a rows file, None when it is not a source."""
        assert self.sources is not None
        at = int(np.searchsorted(self._sorted_sources, vertex))
        if at < len(self._sorted_sources) and self._sorted_sources[at] == vertex:
            return int(self._source_order[at])
        return None

    def _storage_row(self, vertex: int) -> int:
        """The file row holding ``vertex``'s distances; RowNotStored when there is none."""
        self._check(vertex, 1, "row")
        if self.sources is None:
            return vertex
        index = self._stored_index(vertex)
        if index is None:
            raise RowNotStored(
                f"{self.path} holds the rows of {len(self.sources)} sources only, not of vertex {vertex} "
                f"(layout 'rows', apsp-fw --sources)"
            )
        return index

    def row(self, i: int) -> np.ndarray:
        """float32[n]: distances from vertex ``i`` (:class:`RowNotStored` if a rows file lacks it)."""
        stored = self._storage_row(int(i))
        with self._lock:
            data = self._reader.read("distance", [stored, 0], [1, self.n])
        return np.asarray(data, dtype=np.float32).reshape(self.n)

    def tile(self, r0: int, c0: int, rows: int, cols: int) -> np.ndarray:
        """float32[rows, cols]: the block starting at (r0, c0).

        In a rows file every vertex r0 .. r0+rows-1 must be a stored source.
        """
        r0, c0, rows, cols = int(r0), int(c0), int(rows), int(cols)
        self._check(r0, rows, "rows")
        self._check(c0, cols, "columns")
        first = self._storage_row(r0)
        if self.sources is not None:
            for offset in range(1, rows):
                if self._storage_row(r0 + offset) != first + offset:  # raises RowNotStored if absent
                    raise RowNotStored(f"{self.path}: rows {r0}..{r0 + rows - 1} are not stored together")
        with self._lock:
            data = self._reader.read("distance", [first, c0], [rows, cols])
        return np.asarray(data, dtype=np.float32).reshape(rows, cols)

    def value(self, i: int, j: int) -> float:
        """The single distance D[i, j].

        A rows file answers from row i, or else (``symmetric``: undirected graphs only) from
        row j as D[j, i]; :class:`RowNotStored` when neither row is there.
        """
        i, j = int(i), int(j)
        self._check(i, 1, "row")
        self._check(j, 1, "column")
        if self.sources is None or self.has_row(i):
            return float(self.tile(i, j, 1, 1)[0, 0])
        if self.symmetric and self.has_row(j):
            return float(self.tile(j, i, 1, 1)[0, 0])
        also = f" nor of vertex {j}" if self.symmetric else " (symmetric=False: row j is not used)"
        raise RowNotStored(
            f"{self.path} holds the rows of {len(self.sources)} sources only, not of vertex {i}{also}"
        )

    def close(self) -> None:
        with self._lock:
            close_bp_reader(self._reader, self.path)

    def __enter__(self) -> DistanceMatrix:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
