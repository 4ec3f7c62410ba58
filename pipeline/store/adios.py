"""ADIOS2 artifacts: ``graph.bp`` (CSR of the cost matrix) and ``distances.bp`` readers.

Layouts (DESIGN section 4), shared with the C++ solver:

graph.bp, one step
    ``n`` int64 scalar; ``row_ptr`` int64[n+1]; ``col_idx`` int64[nnz]; ``cost`` float32[nnz]
    (both directions of every undirected edge, rows sorted by column). Attributes:
    ``graph_digest``, ``weight_scheme``, ``edge_kinds`` (string array), ``created`` (ISO 8601
    UTC), ``n_vertices``, ``n_edges`` (undirected edges, ``nnz == 2 * n_edges``).

distances.bp, written by the solver
    one global float32 variable ``distance`` of shape n x n (unreachable = +inf) with
    attributes ``graph_digest``, ``n``, ``block_size``, ``process_grid``, ``algorithm``,
    ``solver_version``, ``semiring``. :class:`DistanceMatrix` reads row and tile selections
    only; the whole matrix is never loaded. Opening one checks it is whole (see
    :class:`DistancesCorrupt`), so a truncated or damaged file is never served.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import adios2
import numpy as np

GRAPH_ATTRIBUTES = ("graph_digest", "weight_scheme", "edge_kinds", "created", "n_vertices", "n_edges")
DISTANCE_ATTRIBUTES = ("graph_digest", "n")


class DistancesCorrupt(ValueError):
    """distances.bp is truncated, damaged or incomplete; the message names the file and the check."""


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
    col_idx = np.asarray(col_idx, dtype=np.int64)
    cost = np.asarray(cost, dtype=np.float32)
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
    with adios2.Stream(str(path), "w") as stream:
        stream.begin_step()
        stream.write("n", int(n))
        _write_1d(stream, "row_ptr", row_ptr)
        _write_1d(stream, "col_idx", col_idx)
        _write_1d(stream, "cost", cost)
        for name, value in attrs.items():
            _write_attribute(stream, name, value)
        stream.end_step()


def read_graph_bp(path: Path | str) -> tuple[tuple[int, np.ndarray, np.ndarray, np.ndarray], dict[str, Any]]:
    """``((n, row_ptr, col_idx, cost), attributes)`` of a graph.bp written by :func:`write_graph_bp`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"graph file not found: {path}")
    probe_opens(path, GraphCorrupt)
    with adios2.FileReader(str(path)) as reader:
        n = int(np.asarray(reader.read("n")).item())
        row_ptr = _read_1d(reader, "row_ptr", np.int64)
        col_idx = _read_1d(reader, "col_idx", np.int64)
        cost = _read_1d(reader, "cost", np.float32)
        attrs = _read_attributes(reader)
    if isinstance(attrs.get("edge_kinds"), str):
        attrs["edge_kinds"] = [attrs["edge_kinds"]]
    return (n, row_ptr, col_idx, cost), attrs


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
    with adios2.Stream(str(path), "w") as stream:
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


class GraphCorrupt(ValueError):
    """graph.bp is truncated or damaged; the message names the file."""


# Run in a child process before a BP file is opened here: ADIOS2 (2.12) segfaults on some
# damaged BP5 metadata (a truncated mmd.0, for one) instead of raising, and a crash there
# must not take the service or the pipeline down with it.
_PROBE = """
import sys, adios2
with adios2.FileReader(sys.argv[1]) as reader:
    for name in reader.available_attributes():
        reader.read_attribute(name)
    for name in reader.available_variables():
        reader.all_blocks_info(name)
"""


def probe_opens(path: Path, error: type[ValueError] = DistancesCorrupt, timeout_s: float = 300.0) -> None:
    """Open ``path`` with ADIOS2 in a child process; ``error`` if that crashes or raises
    (with ADIOS2's last message line)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, str(path)],
            capture_output=True,
            text=True,
            errors="replace",  # ADIOS2 prints raw bytes of damaged metadata
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
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
    """

    def __init__(self, path: Path | str, verify: bool = True):
        self.path = Path(path)
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
        variables = self._reader.available_variables()
        if "distance" not in variables:
            self._reader.close()
            raise DistancesCorrupt(
                f"{self.path}: no 'distance' variable (found {sorted(variables)}; incomplete write?)"
            )
        shape = [int(s) for s in variables["distance"]["Shape"].split(",")]
        if len(shape) != 2 or shape[0] != shape[1]:
            self._reader.close()
            raise ValueError(f"{self.path}: 'distance' must be square, has shape {shape}")
        self.n: int = shape[0]
        self.attributes: dict[str, Any] = _read_attributes(self._reader)
        if verify:
            try:
                if partial.exists():
                    raise DistancesCorrupt(
                        f"{self.path}: {partial.name} exists beside it (a solve did not finish)"
                    )
                self.verify()
            except BaseException:
                self._reader.close()
                raise

    def verify(self) -> None:
        """Cheap whole-file checks; raises :class:`DistancesCorrupt` naming the failed one.

        Attributes present and agreeing with the shape; the written blocks cover exactly
        n x n; the BP5 data files hold at least n*n float32 (no operator ever compresses
        distances); the first and last rows read back with a zero diagonal and no NaN.
        """
        missing = [a for a in DISTANCE_ATTRIBUTES if a not in self.attributes]
        if missing:
            raise DistancesCorrupt(f"{self.path}: attributes {missing} missing (incomplete write?)")
        if int(self.attributes["n"]) != self.n:
            raise DistancesCorrupt(
                f"{self.path}: attribute n = {self.attributes['n']} but 'distance' is {self.n}x{self.n}"
            )
        if self.n == 0:
            return
        blocks = self._reader.all_blocks_info("distance")
        area = sum(
            int(np.prod([int(c) for c in str(b["Count"]).split(",")])) for step in blocks for b in step
        )
        if area != self.n * self.n:
            raise DistancesCorrupt(f"{self.path}: written blocks cover {area} of {self.n * self.n} elements")
        if self.path.is_dir():
            data_files = sorted(self.path.glob("data.*"))
            data_bytes = sum(f.stat().st_size for f in data_files)
            need = self.n * self.n * np.dtype(np.float32).itemsize
            if data_bytes < need:
                raise DistancesCorrupt(
                    f"{self.path}: data files hold {data_bytes} bytes but {self.n}x{self.n} float32 needs "
                    f"{need}: truncated"
                )
        for i in sorted({0, self.n - 1}):
            try:
                row = self.row(i)
            except Exception as exc:  # noqa: BLE001
                raise DistancesCorrupt(f"{self.path}: row {i} cannot be read: {exc}") from exc
            if np.isnan(row).any() or row[i] != 0.0:
                raise DistancesCorrupt(f"{self.path}: row {i} is damaged (NaN, or D[{i},{i}] != 0)")

    def _check(self, start: int, count: int, what: str) -> None:
        if count < 1 or start < 0 or start + count > self.n:
            raise IndexError(f"{what} [{start}, {start + count}) outside 0..{self.n} of {self.path}")

    def row(self, i: int) -> np.ndarray:
        """float32[n]: distances from vertex ``i``."""
        i = int(i)
        self._check(i, 1, "row")
        with self._lock:
            data = self._reader.read("distance", [i, 0], [1, self.n])
        return np.asarray(data, dtype=np.float32).reshape(self.n)

    def tile(self, r0: int, c0: int, rows: int, cols: int) -> np.ndarray:
        """float32[rows, cols]: the block starting at (r0, c0)."""
        self._check(int(r0), int(rows), "rows")
        self._check(int(c0), int(cols), "columns")
        with self._lock:
            data = self._reader.read("distance", [int(r0), int(c0)], [int(rows), int(cols)])
        return np.asarray(data, dtype=np.float32).reshape(int(rows), int(cols))

    def value(self, i: int, j: int) -> float:
        """The single distance D[i, j]."""
        return float(self.tile(i, j, 1, 1)[0, 0])

    def close(self) -> None:
        with self._lock:
            self._reader.close()

    def __enter__(self) -> DistanceMatrix:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
