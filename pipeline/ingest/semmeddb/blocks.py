"""What the SemMedDB readers' block paths share: the decompressed file cut into blocks at line
ends, Arrow's parse of a block, the column-wise checks, and the loop that reads ahead in threads
and commits blocks in file order, handing any block it cannot vouch for to the record path.

The *record path* reads any row, one Python step per row (:func:`pipeline.ingest.records.for_each_row`
and the dump dialect of :mod:`~pipeline.ingest.semmeddb.fields`). A *block path* cuts the
decompressed file at line ends into blocks of about ``block_bytes``, parses a block with Arrow's CSV
reader and validates it column-wise; it takes a block only when every record is exactly one
physical line (then record i of the block is line first_line + i), and hands each line that fails
a check to the record path, so quarantine rows, reasons and line numbers are those of the record
path. A block it cannot vouch for (a quoted line break, a lone CR, a NUL byte, a field starting
with \\N that goes on, a parse error) goes to the record path whole.

Arrow reads the fields as latin-1 bytes with the escapes applied, so an unquoted \\N arrives as
"N": a field that reads exactly "N" where a NULL is allowed is ambiguous, and its line takes the
record path (unless a reader checks the raw bytes: :func:`raw_field_is_null`).

:class:`BlockReader` is the loop; a table's reader (PREDICATION: :mod:`.predication_blocks`;
SENTENCE, CITATIONS, ENTITY: :mod:`.table_blocks`) says how a parsed block is checked and written.
"""

from __future__ import annotations

import io
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from pipeline.ingest.base import InputFile, Prefetch, reject_utf16
from pipeline.ingest.semmeddb.fields import dump_records

BLOCK_BYTES = 8 << 20  # the default block size
PARSE_AHEAD = 2  # blocks parsed and checked ahead, in as many threads
DICTIONARY = pa.dictionary(pa.int32(), pa.binary())
# CUI fields the block paths resolve themselves; any other form goes to the record path
_ONE_CUI = r"^C[0-9]{7}$"
_CUI_AND_GENES = r"^C[0-9]{7}(\|[0-9]+)+$"
_ONE_GENE = r"^[1-9][0-9]{0,17}$"
_LF, _CR, _COMMA, _BACKSLASH, _N = b"\n\r,\\N"
MAX_DIGITS = 18  # int64-safe; longer ids take the record path


class Blocks:
    """The decompressed bytes of a file, cut into blocks that end at a line end.

    The stream's chunks are kept as they come and joined once per block, so each byte is
    copied once on its way to a block (a joined buffer sliced in two copied it twice).
    """

    def __init__(self, stream: BinaryIO, block_bytes: int) -> None:
        self._stream = stream
        self._block_bytes = block_bytes
        self._pieces: deque[bytes] = deque()  # buffered bytes, in file order
        self._buffered = 0
        self._eof = False
        self._lines: list[str] = []  # physical lines handed out one by one (continuations)

    def _fill(self, want: int) -> None:
        while not self._eof and self._buffered < want:
            chunk = self._stream.read(max(want - self._buffered, 1 << 16))
            if chunk:
                self._pieces.append(chunk)
                self._buffered += len(chunk)
            else:
                self._eof = True

    def _last_line_end(self, limit: int) -> int:
        """Offset of the last line feed among the first ``limit`` buffered bytes, or -1."""
        end = self._buffered
        for piece in reversed(self._pieces):
            start = end - len(piece)
            if start < limit:
                cut = piece.rfind(b"\n", 0, limit - start)
                if cut >= 0:
                    return start + cut
            end = start
        return -1

    def _first_line_end(self) -> int:
        """Offset of the first buffered line feed, or -1."""
        offset = 0
        for piece in self._pieces:
            cut = piece.find(b"\n")
            if cut >= 0:
                return offset + cut
            offset += len(piece)
        return -1

    def _first_line_end_reading_on(self) -> int:
        """Offset of the first line feed, reading on while the buffer has none (a line longer
        than a block); -1 if the rest of the file has none."""
        cut = self._first_line_end()
        while cut < 0 and not self._eof:
            self._fill(max(2 * self._buffered, 1 << 16))
            cut = self._first_line_end()
        return cut

    def _split_off(self, size: int) -> bytes:
        """The first ``size`` buffered bytes, taken out of the buffer."""
        parts: list[bytes | memoryview] = []
        left = size
        while left:
            piece = self._pieces.popleft()
            if len(piece) > left:
                parts.append(memoryview(piece)[:left])
                self._pieces.appendleft(piece[left:])
                left = 0
            else:
                parts.append(piece)
                left -= len(piece)
        self._buffered -= size
        if len(parts) == 1 and isinstance(parts[0], bytes):
            return parts[0]
        return b"".join(parts)

    def next_block(self) -> tuple[bytes, bool]:
        """(data, complete): data ends with a line feed unless it is the file's unterminated
        last line, which comes alone with ``complete=False``; ``b""`` at the end."""
        assert not self._lines, "continuation lines left over"
        self._fill(self._block_bytes)
        cut = self._last_line_end(self._block_bytes)
        if cut < 0:
            cut = self._first_line_end_reading_on()
        if cut < 0:
            return self._split_off(self._buffered), False
        return self._split_off(cut + 1), True

    def unread(self, data: bytes) -> None:
        """Put a block back in front (a block before it went to the record path)."""
        self._pieces.appendleft(data)
        self._buffered += len(data)

    def leftover(self) -> str:
        """Physical lines split off by :meth:`next_line` but not asked for (after a lone CR)."""
        text = "".join(reversed(self._lines))
        self._lines = []
        return text

    def next_line(self) -> str | None:
        """One physical line (as :class:`io.TextIOWrapper` with ``newline=""`` splits them)."""
        if not self._lines:
            self._fill(1)
            cut = self._first_line_end_reading_on()
            data = self._split_off(self._buffered if cut < 0 else cut + 1)
            if not data:
                return None
            self._lines = list(io.StringIO(data.decode("latin-1"), newline=""))
            self._lines.reverse()
        return self._lines.pop()


def classify_cui_fields(values: pa.Array) -> pa.Array:
    """Argument of each distinct CUI field the block path resolves itself, else null."""
    one_cui = pc.match_substring_regex(values, _ONE_CUI)
    with_genes = pc.match_substring_regex(values, _CUI_AND_GENES)
    gene = pc.match_substring_regex(values, _ONE_GENE)
    return pc.case_when(
        pc.make_struct(one_cui, with_genes, gene),
        values,
        pc.utf8_slice_codeunits(values, 0, 8),
        pc.binary_join_element_wise("GENE:", values, ""),
    )


def null_goes_on(raw: np.ndarray) -> bool:
    """Whether some \\N in the bytes ``raw`` is followed by a byte other than a delimiter (a
    field that starts with \\N and goes on); conservative: an escaped backslash before N counts.
    numpy, not a regular expression: it scans the block outside the GIL."""
    at = np.flatnonzero((raw[:-2] == _BACKSLASH) & (raw[1:-1] == _N))
    after = raw[at + 2]
    return bool(np.any((after != _COMMA) & (after != _LF) & (after != _CR)))


def is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def parse_ids(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(valid, value): ``valid`` where the field is 1 to 18 ASCII digits (:func:`parse_int`)."""
    text = column.combine_chunks().view(pa.string())  # latin-1 bytes: only ASCII digits pass
    valid = pc.and_(pc.ascii_is_decimal(text), pc.less_equal(pc.binary_length(text), MAX_DIGITS))
    if not pc.all(valid).as_py():
        text = pc.if_else(valid, text, "0")
    value = pc.cast(text, pa.int64())
    return valid.to_numpy(zero_copy_only=False), value


def text_dictionary(column: pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """(indices, values as text) of a dictionary column of latin-1 bytes."""
    array = column.chunk(0) if column.num_chunks == 1 else column.unify_dictionaries().combine_chunks()
    values = array.dictionary
    text = values.view(pa.string())
    non_ascii = pc.invert(pc.string_is_ascii(text))
    where = np.flatnonzero(non_ascii.to_numpy(zero_copy_only=False))
    if len(where):
        decoded = [v.decode("latin-1") for v in values.take(pa.array(where)).to_pylist()]
        text = pc.replace_with_mask(text, non_ascii, pa.array(decoded, pa.string()))
    return array.indices, text


def per_row(flag: pa.Array, indices: pa.Array) -> np.ndarray | bool:
    """A per-value flag as a per-row boolean array (false where null); True if all hold."""
    flag = pc.fill_null(flag, False)
    if pc.all(flag).as_py() is not False and indices.null_count == 0:
        return True
    return pc.fill_null(pc.take(flag, indices), False).to_numpy(zero_copy_only=False)


def line_starts(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of each line of ``data`` (complete lines; end at the line feed)."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return np.r_[0, ends[:-1] + 1], ends


def raw_field_is_null(data: bytes, starts: np.ndarray, field: int, window: int = 64) -> np.ndarray:
    """For lines starting at ``starts`` whose first ``field`` fields hold no comma (ids), whether
    field number ``field`` (0-based) is the unquoted NULL marker ``\\N``: the bytes after the
    line's ``field``-th comma are ``\\N`` and a delimiter. Only the first ``window`` bytes of each
    line are looked at (a field that starts later counts as not NULL: the record path decides)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    padded = np.r_[raw, np.zeros(window + 3, np.uint8)]
    head = padded[starts[:, None] + np.arange(window)]
    commas = np.cumsum(head == _COMMA, axis=1)
    found = commas[:, -1] >= field
    begin = starts + np.argmax(commas >= field, axis=1) + 1
    after = padded[begin + 2]
    return (
        found
        & (padded[begin] == _BACKSLASH)
        & (padded[begin + 1] == _N)
        & ((after == _COMMA) | (after == _LF) | (after == _CR))
    )


class BlockReader:
    """The block loop of one file (:meth:`read`): the subclass names its columns
    (:attr:`columns`, the allowed :attr:`widths`, the integer :attr:`id_fields`, how many leading
    columns :attr:`parsed` Arrow converts) and gives :meth:`analyse` (a parsed block: checks and
    the rows to write, thread-safe), :meth:`commit` (an analysed block, in file order) and
    :meth:`record` (one record on the record path)."""

    columns: tuple[str, ...] = ()
    widths: tuple[int, ...] = ()
    id_fields: tuple[str, ...] = ()
    parsed: int = 0
    thread_name = "semmeddb-parse"

    def __init__(self) -> None:
        self.width: int | None = None  # columns of the file's first record

    # --- the subclass's part ------------------------------------------------------------------
    def analyse(self, data: bytes, table: pa.Table, invalid: list[int], n_lines: int) -> dict | None:
        raise NotImplementedError

    def commit(self, block: dict, first_line: int) -> None:
        raise NotImplementedError

    def record(self, line: int, fields: list[str | None] | None, raw: str, error: str | None) -> None:
        raise NotImplementedError

    # --- shared -------------------------------------------------------------------------------
    def record_block(self, text: str, first_line: int, blocks: Blocks | None) -> int:
        """The record path over a block of text (records still open at its end read on from
        ``blocks``); returns the number of the line after the last one consumed."""
        lines = list(io.StringIO(text, newline=""))
        pulled = 0

        def continuation() -> str | None:
            nonlocal pulled
            line = blocks.next_line() if blocks is not None else None
            pulled += line is not None
            return line

        for line, fields, raw, error in dump_records(lines, first_line, continuation):
            self.record(line, fields, raw, error)
        return first_line + len(lines) + pulled

    def parse(self, data: bytes) -> tuple[pa.Table, list[int]] | None:
        """Arrow's parse of a block (plus a sentinel line) into latin-1 bytes, ``\\N`` read as
        ``N`` (the callers treat a field ``N`` as ambiguous); None when it cannot be trusted."""
        # A record left open by a quote swallows the sentinel, so the record count tells.
        sentinel = b",".join([b"0"] * self.width) + b"\n"
        invalid: list[int] = []

        def wrong_width(row: pcsv.InvalidRow) -> str:
            invalid.append(-1 if row.number is None else row.number - 1)
            return "skip"

        # pyarrow decodes an invalid row's text as UTF-8 before it calls the handler; on other
        # bytes (a latin-1 dump) that raises inside pyarrow, which prints it as an ignored
        # exception. Without a handler a wrong-width row fails the parse instead, and the block
        # goes to the record path, as the count check below would send it.
        handler = wrong_width if is_utf8(data) else None
        names = list(self.columns[: self.width])
        include = names[: self.parsed]
        try:
            table = pcsv.read_csv(
                pa.py_buffer(data + sentinel),
                read_options=pcsv.ReadOptions(
                    column_names=names, use_threads=False, block_size=len(data) + len(sentinel) + 1
                ),
                parse_options=pcsv.ParseOptions(
                    delimiter=",",
                    quote_char='"',
                    double_quote=False,
                    escape_char="\\",
                    newlines_in_values=False,
                    ignore_empty_lines=False,
                    invalid_row_handler=handler,
                ),
                convert_options=pcsv.ConvertOptions(
                    include_columns=include,
                    column_types={
                        name: pa.binary() if name in self.id_fields else DICTIONARY for name in include
                    },
                    null_values=[],
                    strings_can_be_null=False,
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return table, invalid

    def prepare(self, data: bytes) -> dict | None:
        """The thread-safe part of the block path over ``data`` (complete lines): checks, Arrow's
        parse and :meth:`analyse`; None if the block needs the record path."""
        if b"\x00" in data or (b"\r" in data and data.count(b"\r") != data.count(b"\r\n")):
            return None  # NUL bytes and lone CRs: the record path's own line rules
        raw = np.frombuffer(data, dtype=np.uint8)
        if null_goes_on(raw):
            return None  # a field that starts with \\N and goes on (see fields.mark_nulls)
        n_lines = int(np.count_nonzero(raw == _LF))
        parsed = self.parse(data)
        if parsed is None:
            return None
        table, invalid = parsed
        if table.num_rows + len(invalid) != n_lines + 1 or len(set(invalid)) != len(invalid):
            return None
        if invalid and (min(invalid) < 0 or max(invalid) >= n_lines):
            return None
        analysed = self.analyse(
            data, table.slice(0, table.num_rows - 1), invalid, n_lines
        )  # less the sentinel
        if analysed is not None:
            analysed["n_lines"] = n_lines
        return analysed

    def fast_block(self, data: bytes, first_line: int, prepared: dict | None = None) -> bool:
        """The block path over ``data`` (complete lines, ``prepared`` by :meth:`prepare` if
        given); False (and nothing written) if the block needs the record path."""
        if prepared is None:
            prepared = self.prepare(data)
        if prepared is None:
            return False
        self.commit(prepared, first_line)
        return True

    def slow_records(self, data: bytes, slow_lines: np.ndarray) -> list | None:
        """(block line, record) of each line the record path must read inside a fast block; None
        when such a line is not one whole record (the block then goes to the record path)."""
        if not len(slow_lines):
            return []
        starts, ends = line_starts(data)
        raws = [data[starts[i] : ends[i] + 1].decode("latin-1") for i in slow_lines.tolist()]
        records = list(dump_records(raws, 0))
        if len(records) != len(raws) or any(
            record[0] != i or (record[3] or "").endswith("unexpected end of data")
            for i, record in enumerate(records)
        ):
            return None
        return list(zip(slow_lines.tolist(), records, strict=True))

    def file_width(self, data: bytes) -> int:
        """Columns of the file's first record (one of :attr:`widths`); the block path expects
        that many, and the widest when the first record says nothing."""
        first = data[: data.find(b"\n") + 1].decode("latin-1")
        records = list(dump_records([first], 1)) if first else []
        if records and records[0][1] is not None and len(records[0][1]) in self.widths:
            return len(records[0][1])
        return max(self.widths)

    def read(self, source: InputFile, block_bytes: int = BLOCK_BYTES) -> None:
        """Every row of ``source`` in blocks of about ``block_bytes``.

        Threads overlap: decompression (:class:`~pipeline.ingest.base.Prefetch`), Arrow's parse
        and the column-wise checks of the next PARSE_AHEAD blocks (:meth:`prepare`), and this
        one, which commits blocks strictly in file order.
        """
        reject_utf16(source)
        # line_stream: a line with no end within MAX_LINE_BYTES stops the file, so Blocks,
        # which reads on until a line feed, holds at most that much plus what is read ahead.
        blocks = Blocks(Prefetch(source.line_stream(buffered=False), block_bytes), block_bytes)
        next_line = 1
        ahead: deque[tuple[bytes, bool, Future | None]] = deque()
        with ThreadPoolExecutor(max_workers=PARSE_AHEAD, thread_name_prefix=self.thread_name) as parser:

            def read_ahead() -> None:
                while len(ahead) < PARSE_AHEAD + 1:
                    data, complete = blocks.next_block()
                    if not data:
                        return
                    if self.width is None:
                        self.width = self.file_width(data)
                    ahead.append((data, complete, parser.submit(self.prepare, data) if complete else None))

            read_ahead()
            while ahead:
                data, complete, parsing = ahead.popleft()
                prepared = parsing.result() if parsing is not None else None
                if prepared is not None:
                    self.fast_block(data, next_line, prepared)
                    next_line += prepared["n_lines"]
                else:
                    # The record path may read on into the following blocks: give them back first.
                    for later, _, later_parsing in reversed(ahead):
                        if later_parsing is not None:
                            later_parsing.cancel()
                        blocks.unread(later)
                    ahead.clear()
                    next_line = self.record_block(
                        data.decode("latin-1"), next_line, blocks if complete else None
                    )
                    while text := blocks.leftover():
                        next_line = self.record_block(text, next_line, blocks)
                read_ahead()


def interleave_by_row(first: pa.Table, second: pa.Table) -> pa.Table:
    """The rows of two tables in ``row`` order; each is in that order already and no block row
    is in both (a row takes one path), so a row's several output rows stay together."""
    place = np.searchsorted(first["row"].to_numpy(), second["row"].to_numpy()) + np.arange(second.num_rows)
    from_second = np.zeros(first.num_rows + second.num_rows, dtype=bool)
    from_second[place] = True
    order = np.empty(len(from_second), dtype=np.int64)
    order[~from_second] = np.arange(first.num_rows)
    order[from_second] = first.num_rows + np.arange(second.num_rows)
    return pa.concat_tables([first, second]).take(pa.array(order))


def doc_ids(pmid: np.ndarray) -> pa.Array:
    """``PMID:<pmid>`` per row; each string is built once per run of equal ids (a paper's rows
    sit together in a dump, and the mention keys come sorted), then repeated."""
    if not len(pmid):
        return pa.array([], pa.string())
    run_starts = np.r_[True, pmid[1:] != pmid[:-1]]
    text = pc.binary_join_element_wise("PMID:", pc.cast(pa.array(pmid[run_starts]), pa.string()), "")
    return text.take(pa.array(np.cumsum(run_starts) - 1))
