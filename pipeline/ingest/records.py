"""The record loop of the line-oriented readers: CSV text in, one record at a time out.

A record is ``(line, fields, raw, error)``: the 1-based line of its first physical line, its
fields (None when it cannot be parsed, and then ``error`` says why), and ``raw``, the text of
all its physical lines, for the quarantine. The CSV dialect is the caller's: CORD-19 metadata is
RFC 4180 UTF-8 (:func:`utf8_csv_records`), SemMedDB a MySQL dump
(:mod:`pipeline.ingest.semmeddb.fields`). :func:`for_each_row` is the loop every record reader
runs over them: unreadable records and rows that fail their checks go to the quarantine, the
others are accepted.
"""

from __future__ import annotations

import csv
import io
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pipeline.ingest.base import IngestError, IngestRun, InputFile, reject_utf16

# (line, fields or None, raw text, error): see the module docstring.
Record = tuple[int, list[Any] | None, str, str | None]

_UNDECODABLE = re.compile("[\udc80-\udcff]")


class RowError(Exception):
    """A row that fails a check: the field (None for the row as a whole) and the reason, for
    the quarantine."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def csv_records(
    physical: Iterable[str],
    *,
    first_line: int = 1,
    continuation: Callable[[], str | None] | None = None,
    prepare: Callable[[str], str] | None = None,
    resync: bool = False,
    **dialect: Any,
) -> Iterator[Record]:
    """Records of CSV text given as physical lines numbered from ``first_line``.

    ``dialect`` goes to :func:`csv.reader`. ``prepare`` (optional) rewrites each physical line
    before the parser sees it; ``raw`` keeps the line as read. ``continuation`` (optional)
    supplies further physical lines, asked for only while a record that started in ``physical``
    is still open (a quoted line break), so a caller can cut its input into blocks at line ends
    and still read records that span a cut. A record with no fields (an empty line) comes back
    as unreadable, with the error "empty line".

    ``resync``: every record has the first record's (the header's) number of fields, so one that
    spans several physical lines and does not -- or that the parser gives up on, or whose second
    line is a whole row by itself -- is a quote opened and never closed, which swallowed the
    lines after it (up to the next quote, the field size limit or the end of the file). Its first
    line is quarantined, saying so, and the parser starts again at the line after it: the rows
    it had swallowed are read, not lost.
    """
    lines = iter(physical)
    pushback: deque[str] = deque()  # lines read again after a resync
    pending: list[str] = []

    def physical_lines() -> Iterator[str]:
        while True:
            if pushback:
                line = pushback.popleft()
            else:
                line = next(lines, None)
                if line is None:
                    if continuation is None or not pending:
                        return
                    line = continuation()
                    if line is None:
                        return
            pending.append(line)
            yield line if prepare is None else prepare(line)

    def fields_alone(line: str) -> int:
        """The fields of one physical line read by itself: a line that is a whole row of the
        header's width is a row, not a quoted field's second line, even where the field count of
        the record that took it happens to agree (a stray quote in a column that every row
        quotes is closed by the next row's quote in that column)."""
        return len(next(csv.reader([line if prepare is None else prepare(line)], **dialect), []))

    reader = csv.reader(physical_lines(), **dialect)
    next_line = first_line
    width: int | None = None
    while True:
        try:
            record = next(reader)
            error = None
        except StopIteration:
            break
        except csv.Error as exc:
            record, error = None, f"malformed CSV: {exc}"
        line, spanned = next_line, len(pending)
        if resync and spanned > 1 and width is not None and (
            record is None or len(record) != width or fields_alone(pending[1]) == width
        ):
            if record is None:
                why = error
            elif len(record) != width:
                why = f"{len(record)} fields where the header has {width}"
            else:
                why = "the next line is a whole row by itself"
            reason = (
                f"a quote opened on this line is not closed where its row ends: it ran over {spanned} "
                f"lines ({why}); this line is quarantined and the next ones read again"
            )
            yield line, None, pending[0], reason
            pushback.extendleft(reversed(pending[1:]))
            pending.clear()
            next_line = line + 1
            reader = csv.reader(physical_lines(), **dialect)
            continue
        raw = "".join(pending)
        pending.clear()
        next_line = line + spanned
        if record is None:
            yield line, None, raw, error
            continue
        if not record:
            yield line, None, raw, "empty line"
            continue
        if width is None:
            width = len(record)
        yield line, record, raw, None


# The longest field a CSV record may hold: the csv module's default, 128 KiB, refused real
# CORD-19 rows (a large consortium's author list); a quote never closed is caught by
# csv_records' resync, not by this limit.
FIELD_SIZE_LIMIT = 64 << 20


def utf8_csv_records(source: InputFile) -> Iterator[Record]:
    """Records of a UTF-8 CSV file (RFC 4180 quoting, a BOM allowed), every one of the header's
    width (``resync``: a quote never closed costs its own line, not the rows after it).

    Undecodable bytes are kept as surrogates (``surrogateescape``) so the reader can
    quarantine the exact row and field instead of failing the whole file; :func:`printable_raw`
    makes such a record's text fit for the quarantine.
    """
    reject_utf16(source)
    text = io.TextIOWrapper(source.line_stream(), encoding="utf-8-sig", errors="surrogateescape", newline="")
    csv.field_size_limit(FIELD_SIZE_LIMIT)
    yield from csv_records(text, resync=True)


def printable_raw(raw: str) -> str:
    """The text of a :func:`utf8_csv_records` record with each undecodable byte as U+FFFD."""
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def malformed_row_reason(header: list[str], fields: list[str]) -> tuple[str, str] | None:
    """(field, reason) when a parsed CSV row with a header cannot be used as a whole, else None:
    its column count differs from the header's, or it holds bytes which are not UTF-8."""
    if len(fields) != len(header):
        return "*", f"expected {len(header)} columns, got {len(fields)}"
    bad = undecodable_field(header, fields)
    if bad:
        return bad, "bytes that are not valid UTF-8"
    return None


def undecodable_field(header: list[str], fields: list[str]) -> str | None:
    """The name of the first field holding bytes that are not UTF-8, else None."""
    for name, value in zip(header, fields, strict=False):
        if _UNDECODABLE.search(value):
            return name
    return None


def read_header(records: Iterator[Record], source: InputFile, required: tuple[str, ...]) -> list[str]:
    """The column names of the header record (stripped); an IngestError naming the file when it
    is missing, unreadable or lacks a ``required`` column."""
    first = next(records, None)
    if first is None:
        raise IngestError(f"{source.path}: empty file, expected a header row")
    _line, header, _raw, error = first
    if header is None or error:
        raise IngestError(f"{source.path}: line 1: unreadable header ({error})")
    header = [name.strip() for name in header]
    missing = [name for name in required if name not in header]
    if missing:
        raise IngestError(
            f"{source.path}: line 1: header lacks column(s) {', '.join(missing)}; got {header[:20]}"
        )
    return header


def for_each_row(
    records: Iterable[Record],
    run: IngestRun,
    parse_row: Callable[[list[Any]], None],
    printable: Callable[[str], str] | None = None,
) -> None:
    """Hand every readable record's fields to ``parse_row`` and count the row.

    ``parse_row`` adds the row's output to ``run``, or raises :class:`RowError` before it adds
    anything; the row is then quarantined with that field and reason. Unreadable records are
    quarantined with their error. ``printable`` (optional) turns a record's raw text into what
    the quarantine keeps.
    """
    for line, fields, raw, error in records:
        if fields is None:
            run.quarantine(line, None, error or "unreadable", raw if printable is None else printable(raw))
            continue
        try:
            parse_row(fields)
        except RowError as exc:
            run.quarantine(line, exc.field, exc.reason, raw if printable is None else printable(raw))
            continue
        run.accept()
