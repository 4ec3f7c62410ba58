# Over 600 lines: one measured fast path (blocks in numpy/Arrow), whose parts only make sense together; every check falls back to the record path.
"""PREDICATION in blocks: the Arrow fast path, an optimisation that gives the tables of the
record path (:mod:`pipeline.ingest.semmeddb.predication`) bit for bit.

The *record path* handles any row, one Python step per row. The *block path* cuts the
decompressed file at line ends into blocks of about ``block_bytes``, parses a block with Arrow's
CSV reader and validates it column-wise; it takes a block only when every record is exactly one
physical line (then record i of the block is line first_line + i), and hands each line that
fails a check to the record path, so quarantine rows, reasons and line numbers are those of the
record path. A block it cannot vouch for (a quoted line break, a lone CR, a NUL byte, a field
starting with \\N that goes on, a parse error) goes to the record path whole.

Arrow reads the fields as latin-1 bytes with the escapes applied, so an unquoted \\N arrives as
"N": a field that reads exactly "N" where a NULL is allowed (predicate, names, semantic types,
novelty) is ambiguous and its line takes the record path. CUI fields are resolved once per
distinct value (the dictionary Arrow builds); rows with a list of gene ids are expanded
column-wise into one row per (subject, object) pair (:func:`_expand_multi_rows`). Concept
names follow the record path's event order exactly: (row, subject/object, argument position).
The tests compare the two paths on the fixtures, on a synthetic corpus and on random quirky
files (tests/ingest/test_semmeddb_fast_path.py).
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

from pipeline.ingest.base import IngestRun, InputFile, Prefetch, reject_utf16
from pipeline.ingest.semmeddb.fields import PREDICATION_COLUMNS, dump_records, parse_cui_field
from pipeline.ingest.semmeddb.predication import ORDER_STEP, PredicationRows
from pipeline.runtime.columnar import split_keys, sum_by_key

BLOCK_BYTES = 8 << 20  # the default block size
PARSE_AHEAD = 2  # blocks parsed and checked ahead, in as many threads
_ID_FIELDS = ("PREDICATION_ID", "SENTENCE_ID", "PMID")
_DICT = pa.dictionary(pa.int32(), pa.binary())
# CUI fields the block path resolves itself; any other form goes to the record path
_ONE_CUI = r"^C[0-9]{7}$"
_CUI_AND_GENES = r"^C[0-9]{7}(\|[0-9]+)+$"
_ONE_GENE = r"^[1-9][0-9]{0,17}$"
_LF, _CR, _COMMA, _BACKSLASH, _N = b"\n\r,\\N"
_GENE_LIST = r"^[0-9]+(\|[0-9]+)+$"
_MAX_DIGITS = 18  # int64-safe; longer ids take the record path


class _Blocks:
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


def _classify_cui_fields(values: pa.Array) -> pa.Array:
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


def _null_goes_on(raw: np.ndarray) -> bool:
    """Whether some \\N in the bytes ``raw`` is followed by a byte other than a delimiter (a
    field that starts with \\N and goes on); conservative: an escaped backslash before N counts.
    numpy, not a regular expression: it scans the block outside the GIL."""
    at = np.flatnonzero((raw[:-2] == _BACKSLASH) & (raw[1:-1] == _N))
    after = raw[at + 2]
    return bool(np.any((after != _COMMA) & (after != _LF) & (after != _CR)))


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse_ids(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(valid, value): ``valid`` where the field is 1 to 18 ASCII digits (:func:`parse_int`)."""
    text = column.combine_chunks().view(pa.string())  # latin-1 bytes: only ASCII digits pass
    valid = pc.and_(pc.ascii_is_decimal(text), pc.less_equal(pc.binary_length(text), _MAX_DIGITS))
    if not pc.all(valid).as_py():
        text = pc.if_else(valid, text, "0")
    value = pc.cast(text, pa.int64())
    return valid.to_numpy(zero_copy_only=False), value


def _text_dictionary(column: pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
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


def _per_row(flag: pa.Array, indices: pa.Array) -> np.ndarray | bool:
    """A per-value flag as a per-row boolean array (false where null); True if all hold."""
    flag = pc.fill_null(flag, False)
    if pc.all(flag).as_py() is not False and indices.null_count == 0:
        return True
    return pc.fill_null(pc.take(flag, indices), False).to_numpy(zero_copy_only=False)


class PredicationBlocks(PredicationRows):
    """The record path's state, plus the block path's: the file's width and the concept events
    already applied."""

    def __init__(self, run: IngestRun) -> None:
        super().__init__(run)
        self.width: int | None = None  # columns of the file's first record (12 or 15)
        self._seen_concept_events = pa.array([], pa.string())

    def record_block(self, text: str, first_line: int, blocks: _Blocks | None) -> int:
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

    def _parse(self, data: bytes) -> tuple[pa.Table, list[int]] | None:
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
        handler = wrong_width if _is_utf8(data) else None
        names = list(PREDICATION_COLUMNS[: self.width])
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
                    include_columns=names[:12],
                    column_types={name: pa.binary() if name in _ID_FIELDS else _DICT for name in names[:12]},
                    null_values=[],
                    strings_can_be_null=False,
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return table, invalid

    def prepare(self, data: bytes) -> dict | None:
        """The thread-safe part of the block path over ``data`` (complete lines): checks, Arrow's
        parse and :meth:`_analyse`; None if the block needs the record path."""
        if b"\x00" in data or (b"\r" in data and data.count(b"\r") != data.count(b"\r\n")):
            return None  # NUL bytes and lone CRs: the record path's own line rules
        raw = np.frombuffer(data, dtype=np.uint8)
        if _null_goes_on(raw):
            return None  # a field that starts with \\N and goes on (see fields.mark_nulls)
        n_lines = int(np.count_nonzero(raw == _LF))
        parsed = self._parse(data)
        if parsed is None:
            return None
        table, invalid = parsed
        if table.num_rows + len(invalid) != n_lines + 1 or len(set(invalid)) != len(invalid):
            return None
        if invalid and (min(invalid) < 0 or max(invalid) >= n_lines):
            return None
        return self._analyse(data, table.slice(0, table.num_rows - 1), invalid, n_lines)  # less the sentinel

    def fast_block(self, data: bytes, first_line: int, prepared: dict | None = None) -> bool:
        """The block path over ``data`` (complete lines, ``prepared`` by :meth:`prepare` if
        given); False (and nothing written) if the block needs the record path."""
        if prepared is None:
            prepared = self.prepare(data)
        if prepared is None:
            return False
        self._commit(prepared, first_line)
        return True

    def _analyse(self, data: bytes, table: pa.Table, invalid: list[int], n_lines: int) -> dict | None:
        """Everything about a parsed block that does not depend on earlier blocks (so it can run
        ahead in the parse thread): checks, the rows for the record path, the columns to write."""
        invalid_mask = np.zeros(n_lines, dtype=bool)
        invalid_mask[invalid] = True
        line_of_row = np.flatnonzero(~invalid_mask)  # block line index of each parsed row

        ok = np.ones(table.num_rows, dtype=bool)
        ids = []
        for name in _ID_FIELDS:
            valid, value = _parse_ids(table.column(name))
            ok &= valid
            ids.append(value)
        predicate_indices, predicate_text = _text_dictionary(table.column("PREDICATE"))
        good_predicate = pc.and_(
            pc.greater(pc.utf8_length(predicate_text), 0), pc.not_equal(predicate_text, "N")
        )
        ok &= _per_row(good_predicate, predicate_indices)
        sides = []
        for cui_name, name_name, type_name, novelty_name in (
            ("SUBJECT_CUI", "SUBJECT_NAME", "SUBJECT_SEMTYPE", "SUBJECT_NOVELTY"),
            ("OBJECT_CUI", "OBJECT_NAME", "OBJECT_SEMTYPE", "OBJECT_NOVELTY"),
        ):
            cui_indices, cui_text = _text_dictionary(table.column(cui_name))
            argument = _classify_cui_fields(cui_text)
            # several gene ids ("3429|5715"): several arguments, expanded row by row below
            gene_list = pc.fill_null(pc.match_substring_regex(cui_text, _GENE_LIST), False)
            gene_entries = np.flatnonzero(gene_list.to_numpy(zero_copy_only=False))
            genes = {
                int(entry): parse_cui_field(value, cui_name)
                for entry, value in zip(
                    gene_entries, cui_text.take(pa.array(gene_entries)).to_pylist(), strict=True
                )
            }
            ok &= _per_row(pc.or_(pc.is_valid(argument), gene_list), cui_indices)
            multi_entry = gene_list.to_numpy(zero_copy_only=False)
            novelty_indices, novelty_text = _text_dictionary(table.column(novelty_name))
            flag = pc.case_when(
                pc.make_struct(pc.equal(novelty_text, "1"), pc.equal(novelty_text, "0")), True, False
            )  # null for anything else, "N" (from \\N) included: the record path decides
            ok &= _per_row(pc.is_valid(flag), novelty_indices)
            name_indices, name_text = _text_dictionary(table.column(name_name))
            type_indices, type_text = _text_dictionary(table.column(type_name))
            ok &= _per_row(pc.not_equal(name_text, "N"), name_indices)
            ok &= _per_row(pc.not_equal(type_text, "N"), type_indices)
            sides.append(
                (
                    cui_indices,
                    argument,
                    name_indices,
                    name_text,
                    type_indices,
                    type_text,
                    pc.take(flag, novelty_indices),
                    multi_entry,
                    genes,
                )
            )

        # Lines for the record path: wrong width, or a field the block path does not resolve.
        slow_lines = np.sort(np.concatenate([np.flatnonzero(invalid_mask), line_of_row[~ok]]))
        slow_records = []
        if len(slow_lines):
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
            starts = np.r_[0, ends[:-1] + 1]
            raws = [data[starts[i] : ends[i] + 1].decode("latin-1") for i in slow_lines.tolist()]
            slow_records = list(dump_records(raws, 0))
            # each line must be one whole record, as it was for Arrow
            if len(slow_records) != len(raws) or any(
                record[0] != i or (record[3] or "").endswith("unexpected end of data")
                for i, record in enumerate(slow_records)
            ):
                return None
            slow_records = list(zip(slow_lines.tolist(), slow_records, strict=True))

        # rows with a several-gene argument: one predication row per (subject, object) pair
        multi = np.zeros(len(ok), dtype=bool)
        for side in sides:
            if side[-1]:
                multi |= side[-2][side[0].to_numpy(zero_copy_only=False)]
        multi &= ok
        n_multi = int(multi.sum())
        multi_rows = multi_events = multi_mentions = None
        if n_multi:
            multi_rows, multi_events, multi_mentions = _expand_multi_rows(
                np.flatnonzero(multi), line_of_row, ids, predicate_indices, predicate_text, sides
            )
            ok &= ~multi

        keep = pa.array(ok)
        n_fast = int(ok.sum())
        fast_line = line_of_row[ok]
        predication_id, sentence_id, pmid = (pc.filter(v, keep) for v in ids)
        # one dictionary of arguments for both sides
        (s_cui, s_arg, *s_rest), (o_cui, o_arg, *o_rest) = (side[:-2] for side in sides)
        unified = pc.dictionary_encode(pa.concat_arrays([s_arg, o_arg]))
        arguments = unified.dictionary
        s_code = pc.filter(pc.take(unified.indices, s_cui), keep)
        o_code = pc.filter(pc.take(unified.indices, pc.add(o_cui, len(s_arg))), keep)
        fast = pa.table(
            {
                "row": pa.array(fast_line, pa.int64()),
                "predication_id": predication_id,
                "doc_id": _doc_ids(pmid.to_numpy()),
                "sentence_id": sentence_id,
                "predicate": pc.take(predicate_text, pc.filter(predicate_indices, keep)),
                "subject_cui": pc.take(arguments, s_code),
                "object_cui": pc.take(arguments, o_code),
                "subject_novelty": pc.filter(s_rest[-1], keep),
                "object_novelty": pc.filter(o_rest[-1], keep),
            }
        )
        # mentions: one per side of every fast row, counted per (paper, argument)
        n_codes = max(len(arguments), 1)
        pmids = pmid.to_numpy()
        if len(pmids) and int(pmids.max()) >= (1 << 62) // n_codes:  # no room to pack: rare ids
            pairs = (
                pa.table({"pmid": pa.concat_arrays([pmid, pmid]), "code": pa.concat_arrays([s_code, o_code])})
                .group_by(["pmid", "code"], use_threads=False)
                .aggregate([([], "count_all")])
            )
            paper, code, count = pairs["pmid"], pairs["code"], pairs["count_all"]
        else:
            key = np.concatenate([pmids, pmids]) * n_codes + np.concatenate(
                [s_code.to_numpy(zero_copy_only=False), o_code.to_numpy(zero_copy_only=False)]
            )
            key, count = sum_by_key(key)
            paper, code = (pa.array(part) for part in split_keys(key, n_codes))
        mentions = pa.table(
            {
                "doc_id": _doc_ids(paper.to_numpy()),
                "cui": pc.take(arguments, code),
                "count": pc.cast(pa.array(count) if isinstance(count, np.ndarray) else count, pa.int32()),
            }
        )
        if multi_rows is not None:
            fast = _interleave_by_row(fast, multi_rows)
            mentions = pa.concat_tables([mentions, multi_mentions])
        concept_sides = [
            _distinct_triples(
                arguments, code, name_indices, name_text, type_indices, type_text, keep, fast_line, side
            )
            for side, (code, name_indices, name_text, type_indices, type_text) in enumerate(
                [(s_code, *s_rest[:4]), (o_code, *o_rest[:4])]
            )
        ]
        return {
            "slow_records": slow_records,
            "n_accepted": n_fast + n_multi,
            "fast": fast,
            "mentions": mentions,
            "concept_sides": [side for side in concept_sides if side is not None],
            "multi_events": multi_events,
            "n_lines": n_lines,
        }

    def _commit(self, block: dict, first_line: int) -> None:
        """Apply an analysed block, in file order: record-path rows, concepts, tables."""
        events: list = []
        slow_rows: list = []
        for index, (_, fields, raw, error) in block["slow_records"]:
            self.record(first_line + index, fields, raw, error, events=events, rows=slow_rows, row=index)
        self.run.accept(block["n_accepted"])
        fast = block["fast"]
        if slow_rows:
            slow = pa.table(
                [
                    pa.array(column, field.type)
                    for column, field in zip(zip(*slow_rows, strict=True), fast.schema, strict=True)
                ],
                schema=fast.schema,
            )
            fast = _interleave_by_row(fast, slow)
        self.run.add_table("predications", fast.drop_columns(["row"]))
        self.run.add_table("mentions", block["mentions"])
        self._concept_events(block["concept_sides"], block["multi_events"], events)

    def _concept_events(self, sides: list, multi_events: pa.Table | None, events: list) -> None:
        """Apply the block's (cui, name, semtype) events to the concepts in row order: the fast
        rows' distinct triples (``sides``), the several-gene rows' events and the record path's.

        Only the first event of each distinct triple can change :class:`~pipeline.ingest.semmeddb.fields.Concepts` (a repeat is
        a no-op), and triples applied in an earlier block are skipped, so the Python work is
        per new triple, not per row.
        """
        parts = []
        for triples, distinct, packed, fast_line, side in sides:
            new = pc.invert(pc.is_in(_triple_keys(triples), value_set=self._seen_concept_events))
            if not pc.any(new).as_py():
                continue
            # only triples not applied before need their first row (for the event order)
            fresh = distinct[new.to_numpy(zero_copy_only=False)]
            rows = np.flatnonzero(np.isin(packed, fresh))
            _, first = np.unique(packed[rows], return_index=True)
            parts.append(
                triples.filter(new).append_column(
                    "order", pa.array((2 * fast_line[rows[first]] + side) * ORDER_STEP, pa.int64())
                )
            )
        if multi_events is not None:
            parts.append(multi_events)
        if events:
            parts.append(
                pa.table(
                    {
                        "cui": pa.array([e[0] for e in events], pa.string()),
                        "name": pa.array([e[1] for e in events], pa.string()),
                        "semtype": pa.array([e[2] for e in events], pa.string()),
                        "order": pa.array([e[3] for e in events], pa.int64()),
                    }
                )
            )
        if not parts:
            return
        triples = pa.concat_tables(parts)
        key = _triple_keys(triples)
        new = pc.invert(pc.is_in(key, value_set=self._seen_concept_events))
        triples = triples.filter(new).sort_by([("order", "ascending")])
        for cui, name, semtype in zip(
            triples["cui"].to_pylist(),
            triples["name"].to_pylist(),
            triples["semtype"].to_pylist(),
            strict=True,
        ):
            self.concepts.add(cui, name, semtype)
        self._seen_concept_events = pc.unique(
            pa.concat_arrays([self._seen_concept_events, pc.filter(key, new).combine_chunks()])
        )

    def read(self, source: InputFile, block_bytes: int = BLOCK_BYTES) -> None:
        """Every row of ``source`` in blocks of about ``block_bytes``; :meth:`finish` follows.

        Threads overlap: decompression (:class:`~pipeline.ingest.base.Prefetch`), Arrow's parse
        and the column-wise checks of the next PARSE_AHEAD blocks (:meth:`prepare`), and this
        one, which commits blocks strictly in file order.
        """
        reject_utf16(source)
        # line_stream: a line with no end within MAX_LINE_BYTES stops the file, so _Blocks,
        # which reads on until a line feed, holds at most that much plus what is read ahead.
        blocks = _Blocks(Prefetch(source.line_stream(buffered=False), block_bytes), block_bytes)
        next_line = 1
        ahead: deque[tuple[bytes, bool, Future | None]] = deque()
        with ThreadPoolExecutor(max_workers=PARSE_AHEAD, thread_name_prefix="predication-parse") as parser:

            def read_ahead() -> None:
                while len(ahead) < PARSE_AHEAD + 1:
                    data, complete = blocks.next_block()
                    if not data:
                        return
                    if self.width is None:
                        self.width = _file_width(data)
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


def _doc_ids(pmid: np.ndarray) -> pa.Array:
    """``PMID:<pmid>`` per row; each string is built once per run of equal ids (a paper's rows
    sit together in a dump, and the mention keys come sorted), then repeated."""
    if not len(pmid):
        return pa.array([], pa.string())
    run_starts = np.r_[True, pmid[1:] != pmid[:-1]]
    text = pc.binary_join_element_wise("PMID:", pc.cast(pa.array(pmid[run_starts]), pa.string()), "")
    return text.take(pa.array(np.cumsum(run_starts) - 1))


def _interleave_by_row(first: pa.Table, second: pa.Table) -> pa.Table:
    """The rows of two tables in ``row`` order; each is in that order already and no block row
    is in both (a row takes one path), so a row's several predications stay together."""
    place = np.searchsorted(first["row"].to_numpy(), second["row"].to_numpy()) + np.arange(second.num_rows)
    from_second = np.zeros(first.num_rows + second.num_rows, dtype=bool)
    from_second[place] = True
    order = np.empty(len(from_second), dtype=np.int64)
    order[~from_second] = np.arange(first.num_rows)
    order[from_second] = first.num_rows + np.arange(second.num_rows)
    return pa.concat_tables([first, second]).take(pa.array(order))


def _ranges(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, position) of each item when owner i has lengths[i] items, in order."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, position


def _split_like_items(
    text: pa.Array, entry: np.ndarray, n: np.ndarray, owner: np.ndarray, position: np.ndarray
) -> pa.Array:
    """:func:`~pipeline.ingest.semmeddb.fields.split_like` column-wise: for argument ``position``
    of row ``owner`` (with n[owner] arguments and value text[entry[owner]]), the ``|``-separated
    part when the value has that many parts, else the whole value."""
    used, which = np.unique(entry, return_inverse=True)
    values = text.take(pa.array(used))
    parts = pc.split_pattern(values, "|")
    n_parts = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    first_part = np.cumsum(n_parts) - n_parts
    value = which[owner]
    agree = n_parts[value] == n[owner]
    part = np.where(agree, first_part[value] + position, 0)
    return pc.if_else(
        pa.array(agree), pc.list_flatten(parts).take(pa.array(part)), values.take(pa.array(value))
    )


def _expand_multi_rows(
    rows: np.ndarray,
    line_of_row: np.ndarray,
    ids: list[pa.Array],
    predicate_indices: pa.Array,
    predicate_text: pa.Array,
    sides: list,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The block's rows with a several-gene argument (table rows ``rows``), column-wise as the
    record path gives them: (predication rows, one per (subject, object) pair, subject-major;
    concept events (cui, name, semtype, order); mentions (doc_id, cui, count))."""
    take = pa.array(rows)
    line = line_of_row[rows]
    predication_id, sentence_id, pmid = (v.take(take) for v in ids)
    pmid = pmid.to_numpy()
    per_side = []
    events = []
    for side, (
        indices,
        argument,
        name_indices,
        name_text,
        type_indices,
        type_text,
        flag,
        _,
        genes,
    ) in enumerate(sides):
        # the arguments of each distinct CUI field: its gene ids, or the one argument
        entry = indices.take(take).to_numpy(zero_copy_only=False)
        used, which = np.unique(entry, return_inverse=True)
        singles = argument.take(pa.array(used)).to_pylist()
        lists = [
            genes[e] if single is None else [single] for e, single in zip(used.tolist(), singles, strict=True)
        ]
        n_used = np.array([len(arguments) for arguments in lists], dtype=np.int64)
        flat = pa.array([a for arguments in lists for a in arguments], pa.string())
        n = n_used[which]  # arguments per row
        owner, position = _ranges(n)
        cui = flat.take(pa.array((np.cumsum(n_used) - n_used)[which][owner] + position))
        names = _split_like_items(
            name_text, name_indices.take(take).to_numpy(zero_copy_only=False), n, owner, position
        )
        types = _split_like_items(
            type_text, type_indices.take(take).to_numpy(zero_copy_only=False), n, owner, position
        )
        events.append(
            pa.table(
                {
                    "cui": cui,
                    "name": names,
                    "semtype": types,
                    "order": pa.array((2 * line[owner] + side) * ORDER_STEP + position, pa.int64()),
                }
            )
        )
        per_side.append((cui, n, owner, flag.take(take)))
    (s_cui, n_s, s_owner, s_flag), (o_cui, n_o, o_owner, o_flag) = per_side

    # mentions: every argument of either side, counted per (paper, argument)
    mentions = (
        pa.table(
            {
                "pmid": np.concatenate([pmid[s_owner], pmid[o_owner]]),
                "cui": pa.concat_arrays([s_cui, o_cui]),
            }
        )
        .group_by(["pmid", "cui"], use_threads=False)
        .aggregate([([], "count_all")])
    )
    mentions = pa.table(
        {
            "doc_id": _doc_ids(mentions["pmid"].to_numpy()),
            "cui": mentions["cui"],
            "count": pc.cast(mentions["count_all"], pa.int32()),
        }
    )

    # predication rows: the subject x object pairs of each row
    pair_row, pair = _ranges(n_s * n_o)
    subject = (np.cumsum(n_s) - n_s)[pair_row] + pair // n_o[pair_row]
    obj = (np.cumsum(n_o) - n_o)[pair_row] + pair % n_o[pair_row]
    by_pair = pa.array(pair_row)
    predications = pa.table(
        {
            "row": pa.array(line[pair_row], pa.int64()),
            "predication_id": predication_id.take(by_pair),
            "doc_id": _doc_ids(pmid[pair_row]),
            "sentence_id": sentence_id.take(by_pair),
            "predicate": predicate_text.take(predicate_indices.take(take)).take(by_pair),
            "subject_cui": s_cui.take(pa.array(subject)),
            "object_cui": o_cui.take(pa.array(obj)),
            "subject_novelty": s_flag.take(by_pair),
            "object_novelty": o_flag.take(by_pair),
        }
    )
    return predications, pa.concat_tables(events), mentions


def _distinct_triples(
    arguments: pa.Array,
    code: pa.Array,
    name_indices: pa.Array,
    name_text: pa.Array,
    type_indices: pa.Array,
    type_text: pa.Array,
    keep: pa.Array,
    fast_line: np.ndarray,
    side: int,
) -> tuple | None:
    """Distinct (argument, name, semtype) of one side of a block's rows; codes < 2**21 (block rows)."""
    packed = (
        (code.to_numpy(zero_copy_only=False).astype(np.int64) << 42)
        | (pc.filter(name_indices, keep).to_numpy(zero_copy_only=False).astype(np.int64) << 21)
        | pc.filter(type_indices, keep).to_numpy(zero_copy_only=False).astype(np.int64)
    )
    if not len(packed):
        return None
    distinct = np.sort(packed)
    distinct = distinct[np.r_[True, distinct[1:] != distinct[:-1]]]
    low21 = (1 << 21) - 1
    triples = pa.table(
        {
            "cui": arguments.take(pa.array(distinct >> 42)),
            "name": name_text.take(pa.array((distinct >> 21) & low21)),
            "semtype": type_text.take(pa.array(distinct & low21)),
        }
    )
    return triples, distinct, packed, fast_line, side


def _triple_keys(triples: pa.Table) -> pa.Array:
    """One string per (cui, name, semtype); the separators cannot occur in latin-1 text."""
    return pc.binary_join_element_wise(
        triples["cui"],
        triples["name"],
        triples["semtype"],
        "\ue002",
        null_handling="replace",
        null_replacement="\ue001",
    )


def _file_width(data: bytes) -> int:
    """Columns of the file's first record (12 or 15); the block path expects that many."""
    first = data[: data.find(b"\n") + 1].decode("latin-1")
    records = list(dump_records([first], 1)) if first else []
    if records and records[0][1] is not None and len(records[0][1]) in (12, 15):
        return len(records[0][1])
    return 15
