"""Reader for CORD-19 ``metadata.csv`` (UTF-8, header row, RFC 4180 quoting).

Columns are found by header name; required: ``cord_uid``, ``title``, ``doi``, ``pubmed_id``,
``abstract``, ``publish_time`` (the others — sha, source_x, pmcid, license, authors, journal,
… — are ignored). A row is one CSV record (the line is that of its first physical line).

Each accepted row gives one ``documents`` row: ``doc_id`` = ``PMID:<pubmed_id>`` when
pubmed_id is present, else ``CORD:<cord_uid>``; ``doi`` lower-cased, ``cord_uid`` kept, year =
the leading four digits of ``publish_time`` (``2020-03-01``, ``2020``). The merge step
turns a ``CORD:`` paper whose DOI matches a PubMed record into that ``PMID:`` paper.

Quarantined: wrong column count, missing cord_uid, non-numeric pubmed_id, bytes that are
not UTF-8 (field named). A UTF-16 file or a header without the required columns is an
:class:`IngestError`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator

from pipeline.ingest.common import IngestError, IngestRun, InputFile, parse_int, reject_utf16

REQUIRED = ("cord_uid", "title", "doi", "pubmed_id", "abstract", "publish_time")
_YEAR = re.compile(r"(\d{4})")
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def iter_csv(source: InputFile) -> Iterator[tuple[int, list[str] | None, str, str | None]]:
    """Yield (line, fields, raw, error) per record of a UTF-8 CSV with a header.

    Undecodable bytes are kept as surrogates (``surrogateescape``) so the caller can
    quarantine the exact row and field instead of failing the whole file.
    """
    reject_utf16(source)
    text = io.TextIOWrapper(source.binary(), encoding="utf-8-sig", errors="surrogateescape", newline="")
    pending: list[str] = []

    def physical_lines() -> Iterator[str]:
        for line in text:
            pending.append(line)
            yield line

    reader = csv.reader(physical_lines())
    next_line = 1
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raw = "".join(pending)
            pending.clear()
            yield next_line, None, raw, f"malformed CSV: {exc}"
            next_line = reader.line_num + 1
            continue
        raw = "".join(pending)
        pending.clear()
        line = next_line
        next_line = reader.line_num + 1
        yield line, record, raw, None


def printable_raw(raw: str) -> str:
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def malformed_row_reason(header: list[str], fields: list[str]) -> tuple[str, str] | None:
    """(field, reason) when a parsed CSV row cannot be used as a whole, else None.

    Shared by the CSV readers (CORD-19 metadata, citation tables): a row whose column
    count differs from the header's, or that holds bytes which are not UTF-8.
    """
    if len(fields) != len(header):
        return "*", f"expected {len(header)} columns, got {len(fields)}"
    bad = undecodable_field(header, fields)
    if bad:
        return bad, "bytes that are not valid UTF-8"
    return None


def undecodable_field(header: list[str], fields: list[str]) -> str | None:
    for name, value in zip(header, fields, strict=False):
        if _UNDECODABLE.search(value):
            return name
    return None


def read_header(
    records: Iterator[tuple[int, list[str] | None, str, str | None]],
    source: InputFile,
    required: tuple[str, ...],
) -> list[str]:
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


def read_metadata(source: InputFile, run: IngestRun) -> None:
    records = iter_csv(source)
    header = read_header(records, source, REQUIRED)
    column = {name: header.index(name) for name in REQUIRED}
    for line, fields, raw, error in records:
        if fields is None:
            run.quarantine(line, None, error or "unreadable", printable_raw(raw))
            continue
        if fields == []:
            run.quarantine(line, None, "empty line", printable_raw(raw))
            continue
        malformed = malformed_row_reason(header, fields)
        if malformed:
            run.quarantine(line, *malformed, printable_raw(raw))
            continue
        cord_uid = fields[column["cord_uid"]].strip()
        if not cord_uid:
            run.quarantine(line, "cord_uid", "missing cord_uid", raw)
            continue
        pubmed_text = fields[column["pubmed_id"]].strip()
        pmid = None
        if pubmed_text:
            pmid = parse_int(pubmed_text)
            if pmid is None:
                run.quarantine(line, "pubmed_id", f"pubmed_id is not numeric: {pubmed_text!r}", raw)
                continue
        run.accept()
        year_match = _YEAR.match(fields[column["publish_time"]].strip())
        run.add(
            "documents",
            {
                "doc_id": f"PMID:{pmid}" if pmid is not None else f"CORD:{cord_uid}",
                "pmid": pmid,
                "doi": fields[column["doi"]].strip().lower() or None,
                "cord_uid": cord_uid,
                "title": fields[column["title"]].strip() or None,
                "abstract": fields[column["abstract"]].strip() or None,
                "year": int(year_match.group(1)) if year_match else None,
                "source": "cord19",
                "source_file": run.source_file,
            },
        )
