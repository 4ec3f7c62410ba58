"""The Arrow string helpers both synthetic dump writers (:mod:`pipeline.ingest.synth`, the
compact profile, and :mod:`pipeline.ingest.synth_release`, the calibrated one) build their CSV
lines with: whole columns of lines are joined by Arrow kernels and written without a Python loop
per row, which is what lets a 30M-predication corpus be written in minutes."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from isal import igzip


def binary(values: list[bytes]) -> pa.Array:
    return pa.array(values, pa.binary())


def numbers(values: np.ndarray) -> pa.Array:
    """Integers as their decimal text (binary)."""
    return pc.cast(pc.cast(pa.array(values), pa.string()), pa.binary())


def join(*parts: Any) -> pa.Array:
    """Concatenate binary arrays/bytes element-wise (bytes are broadcast)."""
    pieces = [pa.scalar(p, pa.binary()) if isinstance(p, bytes) else p for p in parts]
    return pc.binary_join_element_wise(*pieces, pa.scalar(b"", pa.binary()))


def gzip_writer(path: Path, fast: bool = True) -> BinaryIO:
    """gzip at level 1 with a fixed header time, so the same seed gives the same files: ISA-L
    (about 5x zlib's speed) when ``fast``, else zlib, whose bytes the bundled sample
    (config/sample/, the compact profile) was written with and is checked against."""
    if fast:
        return igzip.IGzipFile(filename=str(path), mode="wb", compresslevel=1, mtime=0)
    return gzip.GzipFile(filename=str(path), mode="wb", compresslevel=1, mtime=0)


def write_lines(stream: BinaryIO, lines: pa.Array) -> int:
    """Write a binary array whose elements already end in newlines, without Python loops; the
    bytes written."""
    if len(lines) == 0:
        return 0
    lines = pa.concat_arrays([lines]) if lines.offset else lines
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32, count=len(lines) + 1)
    stream.write(memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]])
    return int(offsets[-1] - offsets[0])
