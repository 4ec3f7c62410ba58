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
    **dialect: Any,
) -> Iterator[Record]:
    """Records of CSV text given as physical lines numbered from ``first_line``.

    ``dialect`` goes to :func:`csv.reader`. ``prepare`` (optional) rewrites each physical line
    before the parser sees it; ``raw`` keeps the line as read. ``continuation`` (optional)
    supplies further physical lines, asked for only while a record that started in ``physical``
    is still open (a quoted line break), so a caller can cut its input into blocks at line ends
    and still read records that span a cut. A record with no fields (an empty line) comes back
    as unreadable, with the error "empty line".
    """
    pending: list[str] = []

    def physical_lines() -> Iterator[str]:
        for line in physical:
            pending.append(line)
            yield line if prepare is None else prepare(line)
        while continuation is not None and pending:
            line = continuation()
            if line is None:
                return
            pending.append(line)
            yield line if prepare is None else prepare(line)

    reader = csv.reader(physical_lines(), **dialect)
    next_line = first_line
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raw = "".join(pending)
            pending.clear()
            yield next_line, None, raw, f"malformed CSV: {exc}"
            next_line = first_line + reader.line_num
            continue
        raw = "".join(pending)
        pending.clear()
        line = next_line
        next_line = first_line + reader.line_num
        if not record:
            yield line, None, raw, "empty line"
            continue
        yield line, record, raw, None


def utf8_csv_records(source: InputFile) -> Iterator[Record]:
    """Records of a UTF-8 CSV file (RFC 4180 quoting, a BOM allowed).

    Undecodable bytes are kept as surrogates (``surrogateescape``) so the reader can
    quarantine the exact row and field instead of failing the whole file; :func:`printable_raw`
    makes such a record's text fit for the quarantine.
    """
    reject_utf16(source)
    text = io.TextIOWrapper(source.line_stream(), encoding="utf-8-sig", errors="surrogateescape", newline="")
    yield from csv_records(text)


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
