"""Two guards on the files litpath writes and reads, below every layer so that all may use them.

* :func:`write_atomically`: every small record a stage writes (``counts.json``,
  ``graph_counts.json``, ``plan.json``, ``mongo_load.json``, a machine description, the build's
  config) goes through it, so that a kill or a power loss mid-write leaves the old record or the
  whole new one, never a truncated file that a later run then fails to parse.
* :class:`LineLengthCap`: a binary stream that refuses a physical line longer than
  :data:`MAX_LINE_BYTES`. A line-based reader buffers a line until its end; a dump that never
  ends one (a gzip of a few MB inflates to GBs without a line feed) would otherwise be
  buffered whole, and the job killed for memory instead of failing with a clear error.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

# The longest physical line a line-based reader accepts, in bytes, its line feed not counted. A
# SemMedDB, CORD-19 or SPOKE row is at most a few kB; a sentence or an abstract a few hundred kB.
# 64 MiB leaves room for any real row and bounds what a reader holds for one line (this plus
# one read, at most 16 MiB). A line ends at a line feed (LF): a file with CR-only line ends
# longer than this counts as one line and is refused (convert its line ends first).
MAX_LINE_BYTES = 64 << 20


def write_atomically(path: str | Path, text: str | bytes) -> None:
    """``path`` holds either its old content or all of ``text``, also after a power loss: a
    temporary file of a unique name in the same folder (two workflows may share a results
    folder), fsynced, renamed over ``path``, and the folder fsynced so the rename itself is on
    disk. The folder must exist. The file is readable by all (0644), as ``write_text`` makes it
    under the usual umask: records hold no credentials (they are redacted before)."""
    path = Path(path)
    data = text.encode("utf-8") if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: str | Path) -> None:
    """Make the entries of ``folder`` (a rename into it) durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LineLengthCap(io.RawIOBase):
    """``stream`` passed on unchanged, until a physical line runs past ``max_line_bytes``
    (default: :data:`MAX_LINE_BYTES` as it is when the stream is opened): then the exception
    ``too_long(offset, max_line_bytes)`` builds is raised, ``offset`` being the byte (of the
    stream as read, so decompressed for gzip) where that line starts.

    Each chunk read is checked where it can hold a line end: its first and last line feeds
    (``find``/``rfind``, stopping at the first hit), and every one only when a chunk is longer
    than the cap (so no whole line inside it goes unchecked). The readers' chunks are smaller
    than the cap, so the cost is two short scans a chunk.
    """

    def __init__(
        self, stream: BinaryIO, too_long: Callable[[int, int], Exception], max_line_bytes: int | None = None
    ) -> None:
        max_line_bytes = MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be positive, not {max_line_bytes}")
        self._stream = stream
        self._cap = max_line_bytes
        self._too_long = too_long
        self._offset = 0  # bytes passed on so far
        self._line_start = 0  # offset of the first byte of the line not yet ended

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._check(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        self._check(data)
        n = len(data)
        buffer[:n] = data
        return n

    def _check(self, data: bytes) -> None:
        n = len(data)
        first = data.find(b"\n")
        if first < 0:
            if self._offset + n - self._line_start > self._cap:
                raise self._too_long(self._line_start, self._cap)
            self._offset += n
            return
        if self._offset + first - self._line_start > self._cap:
            raise self._too_long(self._line_start, self._cap)
        last = first
        if n > self._cap:  # a whole line may lie between two line feeds of this chunk
            while (after := data.find(b"\n", last + 1)) >= 0:
                if after - last - 1 > self._cap:
                    raise self._too_long(self._offset + last + 1, self._cap)
                last = after
        else:
            last = data.rfind(b"\n")
        self._line_start = self._offset + last + 1
        self._offset += n
        if self._offset - self._line_start > self._cap:
            raise self._too_long(self._line_start, self._cap)

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            super().close()


def line_number_at(open_binary: Callable[[], BinaryIO], offset: int) -> int | None:
    """The 1-based number of the line that starts at byte ``offset`` of what ``open_binary()``
    reads (a fresh handle: the one that raised is mid-stream), or None if it cannot be read
    again. For error messages only: it reads the file up to ``offset`` once more."""
    lines, left = 1, offset
    try:
        with open_binary() as handle:
            while left > 0 and (chunk := handle.read(min(left, 1 << 20))):
                lines += chunk.count(b"\n")
                left -= len(chunk)
    except Exception:  # noqa: BLE001 - a nicety of a message about an error already raised
        return None
    return lines


__all__ = ["MAX_LINE_BYTES", "LineLengthCap", "fsync_dir", "line_number_at", "write_atomically"]
