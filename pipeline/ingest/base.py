"""What every ingest reader shares: the input file it streams, the run that collects its output,
and the :class:`Reader` record by which a source module declares a kind it reads.

A reader is a function ``read(source: InputFile, run: IngestRun, **options) -> None``. It
streams ``source`` and hands ``run`` its rows: accepted rows go to the tables the kind
produces (schemas from :mod:`pipeline.builds.tables`, or the ingest-internal :data:`SENTENCES` /
:data:`ENTITY_MENTIONS` that :mod:`pipeline.merge` joins), bad rows to the quarantine
with the 1-based line (or record index), the field and the reason. What a "row" is depends on
the format and is stated by each reader (a CSV record; for PubMed XML an article, a deleted
PMID or a cited PMID). A file that cannot be read at all raises :class:`IngestError` naming
the file and position.

Tables are written in batches with ``pyarrow.parquet.ParquetWriter`` so memory is bounded by
the batch size, not the input. This module imports no reader: the source modules import it,
and :mod:`pipeline.ingest.registry` collects what they declare.
"""

from __future__ import annotations

import hashlib
import io
import queue
import threading
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
from isal import igzip, isal_zlib

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.runtime.errors import LitpathError
from pipeline.runtime.files import LineLengthCap, line_number_at
from pipeline.runtime.progress import Progress

BATCH_ROWS = 100_000

# Ingest-internal tables (not build-level tables): SemMedDB SENTENCE gives sentence -> paper
# and the sentence's text (kept whole here; the merge's sentences table caps it), ENTITY gives
# concept mentions per sentence; the merge step joins the two into MENTIONS.
SENTENCES = pa.schema(
    [
        pa.field("sentence_id", pa.int64(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("type", pa.string()),  # ti | ab
        pa.field("number", pa.int32()),
        pa.field("text", pa.string()),  # SENTENCE; null for \N
    ]
)
ENTITY_MENTIONS = pa.schema(
    [
        pa.field("sentence_id", pa.int64(), nullable=False),
        pa.field("cui", pa.string(), nullable=False),
        pa.field("count", pa.int32(), nullable=False),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    **tables.ALL_TABLES,
    "sentences": SENTENCES,
    "entity_mentions": ENTITY_MENTIONS,
}


class IngestError(LitpathError):
    """A whole input file cannot be read; the message names the file and position."""


@dataclass
class IngestCounts:
    source_file: str
    kind: str
    sha256: str
    rows_read: int
    rows_accepted: int
    rows_quarantined: int
    seconds: float
    tables: dict[str, int]
    first_quarantined: dict[str, Any] | None = None  # {"line", "field", "reason"} of the first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _HashingReader(io.RawIOBase):
    """Binary reader that feeds every byte it passes on into a SHA-256."""

    def __init__(self, raw: BinaryIO, progress: Progress | None = None) -> None:
        self._raw = raw
        self.digest = hashlib.sha256()
        self.position = 0
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.digest.update(data)
        self.position += n
        if self._progress is not None:  # the file's bytes as stored: the ETA holds for gzip too
            self._progress.update(self.position)
        return n

    def drain(self) -> None:
        while chunk := self._raw.read(1 << 20):
            self.digest.update(chunk)
            self.position += len(chunk)

    def close_file(self) -> None:
        self._raw.close()


# What a damaged gzip stream raises: truncation (EOFError), a bad header or CRC
# (BadGzipFile, an OSError), or invalid deflate data (the inflater's own error).
_GZIP_ERRORS = (EOFError, OSError, isal_zlib.error, zlib.error)


class InputFile:
    """One input file opened for streaming: transparent gzip (by magic bytes), SHA-256 of the
    file's bytes as stored, and a clear :class:`IngestError` for a truncated gzip stream.

    gzip is inflated with ISA-L (python-isal's ``igzip``, same file API as :mod:`gzip`): about
    3x zlib's speed here (a 1.3 GB SemMedDB dump in 1.35 s against 4.05 s), which matters
    because inflating runs beside the parser on the same cores.
    """

    def __init__(self, path: Path, progress: Progress | None = None) -> None:
        self.path = Path(path)
        self.name = self.path.name
        if not self.path.is_file():
            raise IngestError(f"{self.path}: no such input file")
        with open(self.path, "rb") as probe:
            self.is_gzip = probe.read(2) == b"\x1f\x8b"
        self._hasher = _HashingReader(open(self.path, "rb"), progress)  # noqa: SIM115 - closed in close()
        buffered = io.BufferedReader(self._hasher, buffer_size=1 << 20)
        self._stream: BinaryIO = igzip.IGzipFile(fileobj=buffered, mode="rb") if self.is_gzip else buffered

    def binary(self) -> BinaryIO:
        return _GzipGuard(self._stream, self) if self.is_gzip else self._stream

    def line_stream(self, buffered: bool = True) -> BinaryIO:
        """:meth:`binary` for a line-based reader: a physical line longer than
        :data:`pipeline.runtime.files.MAX_LINE_BYTES` raises IngestError naming the file, the line and
        the byte where it starts, instead of being buffered whole (a dump without line ends
        would exhaust memory). ``buffered``: behind a 1 MiB buffer, for a reader that asks for
        small pieces (:class:`io.TextIOWrapper`)."""
        capped = LineLengthCap(self.binary(), self._line_too_long)
        return io.BufferedReader(capped, buffer_size=1 << 20) if buffered else capped

    def _line_too_long(self, offset: int, max_line_bytes: int) -> IngestError:
        opener = igzip.open if self.is_gzip else open
        line = line_number_at(lambda: opener(self.path, "rb"), offset)
        start = f"byte {offset:,}" + (" of the decompressed data" if self.is_gzip else "")
        which = f"line {line:,} (from {start})" if line is not None else f"the line from {start}"
        return IngestError(
            f"{self.path}: {which} runs past {max_line_bytes:,} bytes without a line end, the most a "
            "line may hold (pipeline.runtime.files.MAX_LINE_BYTES); the file is damaged or not a line-based dump"
        )

    def head(self, n: int = 4) -> bytes:
        """First ``n`` decompressed bytes, read from a separate handle."""
        opener = igzip.open if self.is_gzip else open
        try:
            with opener(self.path, "rb") as fh:
                return fh.read(n)
        except _GZIP_ERRORS as exc:
            what = "corrupt or truncated gzip stream" if self.is_gzip else "cannot read"
            raise IngestError(f"{self.path}: {what} ({exc})") from exc

    def sha256(self) -> str:
        self._hasher.drain()
        return self._hasher.digest.hexdigest()

    @property
    def compressed_offset(self) -> int:
        return self._hasher.position

    def close(self) -> None:
        self._stream.close()
        self._hasher.close_file()


class _GzipGuard(io.RawIOBase):
    """Turns gzip's EOFError/BadGzipFile into an IngestError naming the file and offset."""

    def __init__(self, stream: BinaryIO, source: InputFile) -> None:
        self._stream = stream
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._stream.read(len(buffer))
        except _GZIP_ERRORS as exc:
            raise IngestError(
                f"{self._source.path}: corrupt or truncated gzip stream near compressed byte "
                f"{self._source.compressed_offset} ({exc})"
            ) from exc
        n = len(data)
        buffer[:n] = data
        return n

    def read(self, size: int = -1) -> bytes:
        try:
            return self._stream.read(size)
        except _GZIP_ERRORS as exc:
            raise IngestError(
                f"{self._source.path}: corrupt or truncated gzip stream near compressed byte "
                f"{self._source.compressed_offset} ({exc})"
            ) from exc


def reject_utf16(source: InputFile) -> None:
    """UTF-16/32 files decode "successfully" as latin-1 into garbage; refuse them up front."""
    head = source.head(4)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(head) >= 2 and (head[0] == 0 or head[1] == 0)):
        raise IngestError(
            f"{source.path}: line 1: file looks UTF-16/32 encoded (BOM or NUL bytes); re-export it as text"
        )


# Parquet dictionary encoding only where values repeat (a doc_id column would overflow the
# dictionary page and fall back to plain anyway, after paying for the attempt). The merge writes
# its mentions table the same way: 19M rows at 10M predications in 0.91 s instead of 1.22 s,
# 64 MiB instead of 60, and the graph stage reads it faster (0.34 s against 0.44 s; AMD EPYC).
DICTIONARY_COLUMNS = {"predications": ["predicate", "subject_cui", "object_cui"], "mentions": ["cui"]}
# Column statistics (min/max per page, for readers that skip row groups) only in the tables the
# merge can pass on as they are; the others are read once, whole, by the merge. Leaving them out
# of the 19M-row mentions table at 10M predications saves ~20% of its Parquet encoding.
STATISTICS_TABLES = {"predications"}
# ... but every table's doc_id has them: a merge on the delta looks for CORD-19 ids among the
# doc_ids of the files with mentions, predications or sentences (pipeline.merge.delta), and then
# skips every row group of "PMID:" ids unread (1.2-1.6 CPU-s of a 10M update rerun's merge, 46M
# doc_ids; for 0.14 CPU-s more of the mentions' encoding at the ingest).
STATISTICS_COLUMNS = ["doc_id"]


class _BackgroundWrites:
    """Parquet encoding on one worker thread (in submission order, so each file's row order is
    kept) while the reader goes on; at most ``depth`` tables wait, which bounds memory."""

    def __init__(self, depth: int = 4) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-write")
        self._waiting: deque[Future] = deque()
        self._depth = depth

    def submit(self, writer: pq.ParquetWriter, table: pa.Table) -> None:
        self._waiting.append(self._executor.submit(writer.write_table, table))
        while len(self._waiting) > self._depth:
            self._waiting.popleft().result()

    def wait(self) -> None:
        while self._waiting:
            self._waiting.popleft().result()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class _TableSink:
    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        background: _BackgroundWrites,
        use_dictionary: list[str] | bool = True,
        write_statistics: list[str] | bool = True,
    ) -> None:
        self.path = path
        self.schema = schema
        self.background = background
        self.writer = pq.ParquetWriter(
            path, schema, use_dictionary=use_dictionary, write_statistics=write_statistics
        )
        self.columns: dict[str, list[Any]] = {name: [] for name in schema.names}
        self._lists = list(self.columns.values())
        self.rows = 0
        self.pending = 0

    def append(self, row: dict[str, Any]) -> None:
        for name, values in self.columns.items():
            values.append(row.get(name))
        self.pending += 1
        if self.pending >= BATCH_ROWS:
            self.flush()

    def append_values(self, values: tuple[Any, ...]) -> None:
        """Append one row given in schema column order (the fast path for hot loops)."""
        for column, value in zip(self._lists, values, strict=True):
            column.append(value)
        self.pending += 1
        if self.pending >= BATCH_ROWS:
            self.flush()

    def write_table(self, table: pa.Table) -> None:
        """Append a whole table after the rows already pending (row order is kept)."""
        self.flush()
        if table.num_rows:
            self.background.submit(self.writer, table.select(self.schema.names).cast(self.schema))
            self.rows += table.num_rows

    def flush(self) -> None:
        if self.pending:
            self.background.submit(self.writer, pa.Table.from_pydict(self.columns, schema=self.schema))
            self.rows += self.pending
            self.pending = 0
            for values in self.columns.values():
                values.clear()

    def close(self) -> None:
        self.flush()
        self.background.wait()
        self.writer.close()


class IngestRun:
    """Collects the output of one reader on one file: table rows, quarantine and counts."""

    def __init__(self, out_dir: Path, source_file: str, produces: tuple[str, ...]) -> None:
        self.source_file = source_file
        self.rows_read = 0
        self.rows_accepted = 0
        self.rows_quarantined = 0
        # The first quarantined row ({line, field, reason}): what the quarantine ceiling's error shows.
        self.first_quarantined: dict[str, Any] | None = None
        out_dir.mkdir(parents=True, exist_ok=True)
        self._background = _BackgroundWrites()
        self._sinks = {
            name: _TableSink(
                TableFolder(out_dir).table(name),
                SCHEMAS[name],
                self._background,
                DICTIONARY_COLUMNS.get(name, True),
                True if name in STATISTICS_TABLES else [c for c in STATISTICS_COLUMNS if c in SCHEMAS[name].names],
            )
            for name in produces
        }
        self._sinks["quarantine"] = _TableSink(
            TableFolder(out_dir).quarantine, tables.QUARANTINE, self._background
        )

    def add(self, table: str, row: dict[str, Any]) -> None:
        self._sinks[table].append(row)

    def add_values(self, table: str, values: tuple[Any, ...]) -> None:
        self._sinks[table].append_values(values)

    def add_table(self, table_name: str, table: pa.Table) -> None:
        """Append many rows at once (columnar readers); they follow the rows added before."""
        self._sinks[table_name].write_table(table)

    def accept(self, n: int = 1) -> None:
        self.rows_read += n
        self.rows_accepted += n

    def quarantine(self, line: int, field: str | None, reason: str, raw: str | None) -> None:
        self.rows_read += 1
        self.rows_quarantined += 1
        if self.first_quarantined is None:
            self.first_quarantined = {"line": line, "field": field, "reason": reason}
        if raw is not None and len(raw) > 2000:
            raw = raw[:2000] + "..."
        self._sinks["quarantine"].append(
            {"source_file": self.source_file, "line": line, "field": field, "reason": reason, "raw": raw}
        )

    def close(self) -> dict[str, int]:
        try:
            for sink in self._sinks.values():
                sink.close()
        finally:
            self._background.shutdown()
        return {name: sink.rows for name, sink in self._sinks.items()}

    def discard(self) -> None:
        """After a failed read: close the writers and delete every table file of this run.

        A closed ParquetWriter leaves a complete, valid-looking Parquet file holding the rows
        read before the failure; only counts.json would mark it unfinished, and a reader that
        globs the folder would not look. So nothing of a failed run stays.
        """
        try:
            self.close()
        except Exception:  # the failure being reported is the reader's, not this one
            pass
        for sink in self._sinks.values():
            sink.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Reader:
    """One input kind as its source module declares it: the tables the kind produces (besides
    the quarantine, which every kind has) and the function that reads one file of it."""

    kind: str
    produces: tuple[str, ...]
    read: Callable[..., None]  # read(source: InputFile, run: IngestRun, **options)


class Prefetch:
    """Reads (and decompresses) a stream ahead in a thread, ``depth`` chunks at most, so
    inflating runs while the reader parses the previous chunk (both release the GIL)."""

    def __init__(self, stream: BinaryIO, chunk_bytes: int, depth: int = 2) -> None:
        self._queue: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=depth)
        self._done = False
        self._thread = threading.Thread(target=self._run, args=(stream, chunk_bytes), daemon=True)
        self._thread.start()

    def _run(self, stream: BinaryIO, chunk_bytes: int) -> None:
        try:
            while chunk := stream.read(chunk_bytes):
                self._queue.put(chunk)
            self._queue.put(b"")
        except BaseException as exc:  # handed to the reading thread
            self._queue.put(exc)

    def read(self, _size: int = -1) -> bytes:
        if self._done:
            return b""
        item = self._queue.get()
        if isinstance(item, BaseException):
            self._done = True
            self._thread.join()
            raise item
        if not item:
            self._done = True
            self._thread.join()
        return item


INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def parse_int(value: str | None, max_value: int = INT64_MAX) -> int | None:
    """Digits only (no sign, no blanks) of a number up to ``max_value`` (the largest value of the
    column's integer type: int64 unless said) -> int; anything else -> None."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    if len(value.lstrip("0")) > len(str(max_value)):  # also keeps int() clear of its digit limit
        return None
    number = int(value)
    return number if number <= max_value else None
