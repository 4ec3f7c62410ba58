"""Reader for a plain citation table ``citing,referenced`` of PMIDs (NIH Open Citation
Collection layout: UTF-8 CSV with that header row; extra columns are ignored).

A row is one CSV record after the header; accepted rows give ``citations``
(``PMID:<citing>`` -> ``PMID:<referenced>``). Non-numeric ids, rows with another number of
columns than the header (an empty line included) and bytes that are not UTF-8 are
quarantined with line and field.

The Open Citation Collection has hundreds of millions of rows, so there is no Python loop
per row: pyarrow's CSV reader parses blocks in C++ (the two id columns as bytes, so a row
with bad bytes is quarantined rather than failing the file), rows of the wrong width come
to an invalid-row handler with their line number, and the id check is one vectorized
regular expression per block. Python only touches the rows it quarantines.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from pipeline.ingest.base import IngestError, IngestRun, InputFile, Reader, reject_utf16

REQUIRED = ("citing", "referenced")
BLOCK_BYTES = 16 << 20
_DIGITS = "^[0-9]+$"


def _header(source: InputFile) -> list[str]:
    """The header's column names (UTF-8, BOM stripped); an IngestError naming the file if unusable."""
    first = source.head(1 << 16).split(b"\n", 1)[0].rstrip(b"\r")
    if not first:
        raise IngestError(f"{source.path}: empty file, expected a header row")
    try:
        names = [name.strip() for name in first.decode("utf-8-sig").split(",")]
    except UnicodeDecodeError as exc:
        raise IngestError(f"{source.path}: line 1: unreadable header ({exc})") from None
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        raise IngestError(
            f"{source.path}: line 1: header lacks column(s) {', '.join(missing)}; got {names[:20]}"
        )
    return names


def _original(value: bytes) -> bytes:
    """The file's bytes of a value read through the latin-1 transcoding."""
    return value.decode("utf-8").encode("latin-1")


def _printable(value: bytes | None) -> str:
    return "" if value is None else _original(value).decode("utf-8", "replace")


def read_citations_table(source: InputFile, run: IngestRun) -> None:
    reject_utf16(source)
    header = _header(source)
    invalid: list[tuple[int, str, str]] = []  # (line, reason, raw) of rows of the wrong width

    def wrong_width(row: pcsv.InvalidRow) -> str:
        raw = _original((row.text or "").encode("utf-8")).decode("utf-8", "replace")
        reason = "empty line" if not raw.strip() else f"expected {row.expected_columns} columns, got {row.actual_columns}"
        invalid.append((int(row.number) if row.number is not None else 0, reason, raw))
        return "skip"

    reader = pcsv.open_csv(
        source.binary(),
        # latin-1: every byte decodes, so a row with bad bytes reaches the handler or the id check
        # (pyarrow decodes an invalid row's text as UTF-8 and would fail the file); _original()
        # gets the bytes back for the quarantine.
        read_options=pcsv.ReadOptions(
            block_size=BLOCK_BYTES, use_threads=False, skip_rows=1, column_names=header, encoding="latin-1"
        ),
        parse_options=pcsv.ParseOptions(invalid_row_handler=wrong_width, ignore_empty_lines=False),
        convert_options=pcsv.ConvertOptions(
            include_columns=list(REQUIRED),
            column_types={name: pa.binary() for name in REQUIRED},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    # Lines: the header is line 1; each row read, valid or not, is the next line (OCC rows never
    # span lines). Rows of the wrong width are removed from the batches (and reported by the
    # parser ahead of the batches), so the line of a row that reaches a batch is its position
    # among those rows plus the invalid lines before it: resolved once all are known.
    rows_seen = 0
    bad_rows: list[tuple[int, str, str, str]] = []  # (position among batch rows, field, reason, raw)
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowInvalid, OSError) as exc:
            raise IngestError(f"{source.path}: unreadable CSV after {rows_seen + len(invalid)} rows: {exc}") from None
        n = batch.num_rows
        citing, referenced = batch.column("citing"), batch.column("referenced")
        good_citing = pc.match_substring_regex(citing, _DIGITS)
        good = pc.and_(good_citing, pc.match_substring_regex(referenced, _DIGITS))
        n_good = int(pc.sum(good).as_py() or 0)
        if n_good:
            run.add_table(
                "citations",
                pa.table(
                    {
                        # leading zeros go, as int() took them before: PMID:0012 is PMID:12
                        "citing": pc.binary_join_element_wise("PMID:", _canonical(pc.filter(citing, good)), ""),
                        "cited": pc.binary_join_element_wise("PMID:", _canonical(pc.filter(referenced, good)), ""),
                    }
                ),
            )
            run.accept(n_good)
        if n_good < n:
            citing_ok = good_citing.to_numpy(zero_copy_only=False)
            for row in np.flatnonzero(~good.to_numpy(zero_copy_only=False)).tolist():
                bad_rows.append((rows_seen + row, *_why(citing[row].as_py(), referenced[row].as_py(), citing_ok[row])))
        rows_seen += n
    invalid_lines = sorted(line for line, _, _ in invalid)
    quarantined = [(line, "*", reason, raw) for line, reason, raw in invalid]
    positions = [position for position, *_ in bad_rows]
    for line, (_, field, reason, raw) in zip(_lines_of(positions, invalid_lines), bad_rows, strict=True):
        quarantined.append((line, field, reason, raw))
    for line, field, reason, raw in sorted(quarantined):
        run.quarantine(line, field, reason, raw)


def _why(citing: bytes, referenced: bytes, citing_ok: bool) -> tuple[str, str, str]:
    """(field, reason, raw) of a row whose ids are not both numeric."""
    raw = f"{_printable(citing)},{_printable(referenced)}"
    if not citing and not referenced:  # pyarrow reads an empty line as a row of empty fields
        return "*", "empty line (no ids)", ""
    field, value = ("citing", citing) if not citing_ok else ("referenced", referenced)
    try:
        text = _original(value).decode("utf-8")
    except UnicodeDecodeError:
        return field, "bytes that are not valid UTF-8", raw
    what = "citing PMID" if field == "citing" else "referenced PMID"
    return field, f"{what} is not numeric: {text!r}", raw


def _canonical(ids: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Digit strings without leading zeros (one zero stays), as strings."""
    text = pc.cast(ids, pa.string())
    stripped = pc.utf8_ltrim(text, characters="0")
    return pc.if_else(pc.equal(stripped, ""), "0", stripped)


def _lines_of(positions: list[int], invalid_lines: list[int]) -> list[int]:
    """File lines of rows at the given (increasing) positions among the rows that reached the
    batches, the first on line 2, skipping the lines of the rows the parser set aside."""
    out = []
    skipped = 0
    pending = iter(invalid_lines)
    upcoming = next(pending, None)
    for position in positions:
        line = 2 + position + skipped
        while upcoming is not None and upcoming <= line:
            skipped += 1
            line += 1
            upcoming = next(pending, None)
        out.append(line)
    return out


READERS = (Reader("citations_table", produces=("citations",), read=read_citations_table),)
