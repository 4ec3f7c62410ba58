"""SENTENCE, CITATIONS and ENTITY in Arrow blocks: the fast paths, which give the tables of the
record path (:mod:`pipeline.ingest.semmeddb.rows`) bit for bit.

At a release's size these are the big tables (253M SENTENCE and 1.9B ENTITY rows against 126M
PREDICATION rows), and a Python step per row read ENTITY at about 0.13M rows/s (7.5 min of the
30M-predication run's ingest). The block loop and its rules are :mod:`pipeline.ingest.semmeddb.blocks`'.
Here each table checks its columns, and hands every line it does not resolve itself to
the record path, inside the block: a wrong width, an id that is not 1-18 digits, a field that reads
"N" where a NULL is allowed (ambiguous: ``\\N`` and a literal N both read "N"; ENTITY's gene-only
rows, whose CUI is ``\\N``, are told apart by their raw bytes), a CUI field other than one CUI
(with or without gene ids) or one gene id. The record path's rows of a block are captured and
interleaved with the block's own by line, so the tables keep the file's row order; ENTITY's concept
events are applied in row order, as the record path applies them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.builds import tables
from pipeline.ingest.base import INT32_MAX, SCHEMAS, IngestRun
from pipeline.ingest.records import RowError
from pipeline.ingest.semmeddb.blocks import (
    BlockReader,
    classify_cui_fields,
    doc_ids,
    interleave_by_row,
    line_starts,
    parse_ids,
    per_row,
    raw_field_is_null,
    text_dictionary,
)
from pipeline.ingest.semmeddb.fields import (
    CITATIONS_COLUMNS,
    ENTITY_COLUMNS,
    SENTENCE_COLUMNS,
    Concepts,
)
from pipeline.ingest.semmeddb.rows import citations_row, entity_row, sentence_row

_INT32_DIGITS = len(str(INT32_MAX))


class _Capture:
    """The rows the record path adds for one line inside a block, kept with the line's row index
    until the block's table is written (``add``/``add_values`` as :class:`~pipeline.ingest.base.IngestRun`)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple]] = {}
        self.row = 0

    def add_values(self, table: str, values: tuple) -> None:
        self.rows.setdefault(table, []).append((self.row, *values))

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.add_values(table, tuple(row.get(name) for name in SCHEMAS[table].names))


def _small_int(text: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(valid, value) of a dictionary's text values read as :func:`~pipeline.ingest.base.parse_int`
    reads them with ``max_value = INT32_MAX``: ASCII digits (leading zeros allowed) up to INT32_MAX."""
    digits = pc.ascii_is_decimal(text)
    short = pc.less_equal(pc.utf8_length(pc.utf8_ltrim(text, "0")), _INT32_DIGITS)
    valid = pc.fill_null(pc.and_(digits, short), False)
    value = pc.cast(pc.if_else(valid, text, "0"), pa.int64())
    valid = pc.and_(valid, pc.less_equal(value, INT32_MAX)).to_numpy(zero_copy_only=False)
    return valid, value


class _TableBlocks(BlockReader):
    """One table's block path: :meth:`analyse` gives the block's own rows (with their row index in
    ``row``) and the lines for the record path; :meth:`commit` runs those lines through
    :meth:`row_function` with a capture, interleaves their rows with the block's, and writes."""

    table = ""  # the ingest table the rows go to

    def __init__(self, run: IngestRun) -> None:
        super().__init__()
        self.run = run

    def row_function(self, fields: list[str | None], out: Any) -> None:
        raise NotImplementedError

    def record(self, line: int, fields: list[str | None] | None, raw: str, error: str | None,
               out: Any = None) -> bool:  # fmt: skip
        """One record on the record path (as :func:`~pipeline.ingest.records.for_each_row`); its
        rows to ``out`` (default: the run); whether it was accepted."""
        if fields is None:
            self.run.quarantine(line, None, error or "unreadable", raw)
            return False
        try:
            self.row_function(fields, self.run if out is None else out)
        except RowError as exc:
            self.run.quarantine(line, exc.field, exc.reason, raw)
            return False
        self.run.accept()
        return True

    def slow_lines(
        self, invalid: list[int], n_lines: int, line_of_row: np.ndarray, ok: np.ndarray
    ) -> np.ndarray:
        invalid_mask = np.zeros(n_lines, dtype=bool)
        invalid_mask[invalid] = True
        return np.sort(np.concatenate([np.flatnonzero(invalid_mask), line_of_row[~ok]]))

    @staticmethod
    def rows_of(invalid: list[int], n_lines: int) -> np.ndarray:
        """The block line of each row Arrow parsed (the lines of the wrong width are not rows)."""
        mask = np.ones(n_lines, dtype=bool)
        mask[invalid] = False
        return np.flatnonzero(mask)

    def commit(self, block: dict, first_line: int) -> None:
        capture = _Capture()
        for index, (_, fields, raw, error) in block["slow_records"]:
            capture.row = index
            self.record(first_line + index, fields, raw, error, out=capture)
        self.run.accept(block["n_accepted"])
        self.write(block, capture.rows.get(self.table, []))

    def write(self, block: dict, slow_rows: list[tuple]) -> None:
        fast = block["rows"]
        if slow_rows:
            schema = fast.schema
            slow = pa.table(
                [
                    pa.array(column, field.type)
                    for column, field in zip(zip(*slow_rows, strict=True), schema, strict=True)
                ],
                schema=schema,
            )
            fast = interleave_by_row(fast, slow)
        self.run.add_table(self.table, fast.drop_columns(["row"]))


class SentenceBlocks(_TableBlocks):
    """SENTENCE -> sentences (sentence_id, doc_id, type, number, text)."""

    columns = SENTENCE_COLUMNS
    widths = (8, 9)
    id_fields = ("SENTENCE_ID", "PMID")
    parsed = 6  # SENTENCE_ID, PMID, TYPE, NUMBER, SENT_START_INDEX, SENTENCE (the text, kept)
    table = "sentences"
    thread_name = "sentence-parse"

    def row_function(self, fields: list[str | None], out: Any) -> None:
        sentence_row(fields, out)

    def analyse(self, data: bytes, table: pa.Table, invalid: list[int], n_lines: int) -> dict | None:
        valid, sentence_id = parse_ids(table.column("SENTENCE_ID"))
        ok = valid.copy()
        valid, pmid = parse_ids(table.column("PMID"))
        ok &= valid
        type_indices, type_text = text_dictionary(table.column("TYPE"))
        ok &= per_row(pc.not_equal(type_text, "N"), type_indices)  # \N or N: the record path decides
        number_indices, number_text = text_dictionary(table.column("NUMBER"))
        number_valid, number_value = _small_int(number_text)
        ok &= per_row(pa.array(number_valid), number_indices)
        text_indices, text_text = text_dictionary(table.column("SENTENCE"))
        ok &= per_row(pc.not_equal(text_text, "N"), text_indices)  # \N or N: the record path decides
        line_of_row = self.rows_of(invalid, n_lines)
        slow = self.slow_records(data, self.slow_lines(invalid, n_lines, line_of_row, ok))
        if slow is None:
            return None
        keep = pa.array(ok)
        rows = pa.table(
            {
                "row": pa.array(line_of_row[ok], pa.int64()),
                "sentence_id": pc.filter(sentence_id, keep),
                "doc_id": doc_ids(pc.filter(pmid, keep).to_numpy()),
                "type": pc.take(type_text, pc.filter(type_indices, keep)),
                "number": pc.cast(pc.take(number_value, pc.filter(number_indices, keep)), pa.int32()),
                "text": pc.take(text_text, pc.filter(text_indices, keep)),
            }
        )
        return {"rows": rows, "slow_records": slow, "n_accepted": int(ok.sum())}


class CitationBlocks(_TableBlocks):
    """CITATIONS -> documents (doc_id, pmid, year from PYEAR; 0 -> null)."""

    columns = CITATIONS_COLUMNS
    widths = (5,)
    id_fields = ("PMID",)
    parsed = 5
    table = "documents"
    thread_name = "citations-parse"

    def row_function(self, fields: list[str | None], out: Any) -> None:
        citations_row(fields, out, self.run.source_file)

    def analyse(self, data: bytes, table: pa.Table, invalid: list[int], n_lines: int) -> dict | None:
        valid, pmid = parse_ids(table.column("PMID"))
        ok = valid.copy()
        year_indices, year_text = text_dictionary(table.column("PYEAR"))
        year_valid, year_value = _small_int(year_text)  # "N" (\N or a literal N) is not: record path
        ok &= per_row(pa.array(year_valid), year_indices)
        line_of_row = self.rows_of(invalid, n_lines)
        slow = self.slow_records(data, self.slow_lines(invalid, n_lines, line_of_row, ok))
        if slow is None:
            return None
        keep = pa.array(ok)
        n = int(ok.sum())
        year = pc.take(year_value, pc.filter(year_indices, keep))
        columns = {
            "row": pa.array(line_of_row[ok], pa.int64()),
            "doc_id": doc_ids(pc.filter(pmid, keep).to_numpy()),
            "pmid": pc.filter(pmid, keep),
            "year": pc.cast(pc.if_else(pc.equal(year, 0), pa.scalar(None, pa.int64()), year), pa.int32()),
            "source": pa.array(["semmeddb"] * n, pa.string()) if n else pa.array([], pa.string()),
            "source_file": pa.array([self.run.source_file] * n, pa.string())
            if n
            else pa.array([], pa.string()),
        }
        schema = tables.DOCUMENTS
        rows = pa.table(
            {"row": columns["row"], **{f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in schema}}
        ).cast(pa.schema([pa.field("row", pa.int64()), *schema]))
        return {"rows": rows, "slow_records": slow, "n_accepted": n}


ENTITY_ORDER_STEP = 64  # concept events of a line: (line, argument) = line * step + argument
_EVENT_SCHEMA = pa.schema(
    [("cui", pa.string()), ("name", pa.string()), ("semtype", pa.string()), ("order", pa.int64())]
)


class _ConceptEvents:
    """The (cui, name, semtype) events of a whole file, applied to the concepts once, at the end,
    in file order (:meth:`apply`): what the record path does row by row.

    Only the first event of each distinct triple can change
    :class:`~pipeline.ingest.semmeddb.fields.Concepts` (a repeat is a no-op), so the log keeps the
    first (smallest ``order``) of each, compacting itself by a group-by whenever it holds
    :data:`COMPACT_ROWS` rows; Python then sees each distinct triple of the file once. Blocks on
    either path add to it (the record path through :meth:`add`, one event at a time, with the
    line it read)."""

    COMPACT_ROWS = 1 << 21

    def __init__(self) -> None:
        self._parts: list[pa.Table] = []
        self._rows = 0
        self._pending: list[tuple] = []
        self.line = 0  # the line the record path is reading (for add)
        self._argument = (-1, 0)

    def add(self, cui: str, name: str | None, semtype: str | None) -> None:
        line, argument = self._argument
        argument = argument + 1 if line == self.line else 0
        self._argument = (self.line, argument)
        self._pending.append((cui, name, semtype, self.line * ENTITY_ORDER_STEP + argument))

    def add_table(self, events: pa.Table) -> None:
        self._flush_pending()
        self._parts.append(events)
        self._rows += events.num_rows
        if self._rows >= self.COMPACT_ROWS:
            self._parts = [_first_of_each(pa.concat_tables(self._parts))]
            self._rows = self._parts[0].num_rows

    def _flush_pending(self) -> None:
        if self._pending:
            columns = list(zip(*self._pending, strict=True))
            self._pending = []
            self.add_table(pa.table([pa.array(c, f.type) for c, f in zip(columns, _EVENT_SCHEMA, strict=True)],
                                    schema=_EVENT_SCHEMA))  # fmt: skip

    def apply(self, concepts: Concepts) -> None:
        self._flush_pending()
        if not self._parts:
            return
        events = _first_of_each(pa.concat_tables(self._parts)).sort_by([("order", "ascending")])
        for cui, name, semtype in zip(
            events["cui"].to_pylist(), events["name"].to_pylist(), events["semtype"].to_pylist(), strict=True
        ):
            concepts.add(cui, name, semtype)
        self._parts = []


def _first_of_each(events: pa.Table) -> pa.Table:
    """The event with the smallest order of each distinct (cui, name, semtype)."""
    first = events.group_by(["cui", "name", "semtype"], use_threads=False).aggregate([("order", "min")])
    return pa.table([first["cui"], first["name"], first["semtype"], first["order_min"]], schema=_EVENT_SCHEMA)


class EntityBlocks(_TableBlocks):
    """ENTITY -> entity_mentions (sentence_id, cui, 1) + concepts. The block path resolves rows
    whose CUI field is one CUI (gene ids after it only annotate it) or, with CUI NULL, whose
    GENE_ID is one gene id; rows of several concepts take the record path."""

    columns = ENTITY_COLUMNS
    widths = (11,)
    id_fields = ("ENTITY_ID", "SENTENCE_ID")
    parsed = 7  # up to GENE_NAME; TEXT, SCORE and the offsets are tokenised only
    table = "entity_mentions"
    thread_name = "entity-parse"

    def __init__(self, run: IngestRun) -> None:
        super().__init__(run)
        self.concepts = Concepts()
        self.events = _ConceptEvents()

    def row_function(self, fields: list[str | None], out: Any) -> None:
        # Concept events wait in the log, in file order (see _ConceptEvents), on both paths.
        entity_row(fields, out, self.events)

    def analyse(self, data: bytes, table: pa.Table, invalid: list[int], n_lines: int) -> dict | None:
        ok = np.ones(table.num_rows, dtype=bool)
        valid, _ = parse_ids(table.column("ENTITY_ID"))
        ok &= valid
        valid, sentence_id = parse_ids(table.column("SENTENCE_ID"))
        ok &= valid
        line_of_row = self.rows_of(invalid, n_lines)
        cui_indices, cui_text = text_dictionary(table.column("CUI"))
        argument = classify_cui_fields(cui_text)  # one CUI (with or without gene ids) or one gene id
        is_gene = pc.fill_null(pc.starts_with(argument, "GENE:"), False)
        argument = pc.if_else(
            is_gene, pa.scalar(None, pa.string()), argument
        )  # a gene id in CUI: record path
        from_cui = per_row(pc.is_valid(argument), cui_indices)
        from_cui = np.full(table.num_rows, True) if from_cui is True else from_cui
        # CUI NULL: the raw bytes tell \N from a literal N; then GENE_ID gives the concept
        says_n = per_row(pc.equal(cui_text, "N"), cui_indices)
        says_n = np.full(table.num_rows, True) if says_n is True else says_n
        starts, _ = line_starts(data)
        null_cui = np.zeros(table.num_rows, dtype=bool)
        candidates = np.flatnonzero(says_n)
        if len(candidates):
            null_cui[candidates] = raw_field_is_null(data, starts[line_of_row[candidates]], 2)
        gene_indices, gene_text = text_dictionary(table.column("GENE_ID"))
        gene = classify_cui_fields(gene_text)
        gene = pc.if_else(
            pc.fill_null(pc.starts_with(gene, "GENE:"), False), gene, pa.scalar(None, pa.string())
        )
        gene_row = per_row(pc.is_valid(gene), gene_indices)
        gene_row = null_cui & (np.full(table.num_rows, True) if gene_row is True else gene_row)
        ok &= from_cui | gene_row
        name_indices, name_text = text_dictionary(table.column("NAME"))
        type_indices, type_text = text_dictionary(table.column("SEMTYPE"))
        gname_indices, gname_text = text_dictionary(table.column("GENE_NAME"))
        name_known = _as_rows(per_row(pc.not_equal(name_text, "N"), name_indices), table.num_rows)
        gname_known = _as_rows(per_row(pc.not_equal(gname_text, "N"), gname_indices), table.num_rows)
        ok &= np.where(gene_row, gname_known, name_known)
        ok &= _as_rows(per_row(pc.not_equal(type_text, "N"), type_indices), table.num_rows)
        slow = self.slow_records(data, self.slow_lines(invalid, n_lines, line_of_row, ok))
        if slow is None:
            return None
        keep = pa.array(ok)
        use_gene = pa.array(gene_row[ok])
        cui = pc.if_else(
            use_gene,
            pc.take(gene, pc.filter(gene_indices, keep)),
            pc.take(argument, pc.filter(cui_indices, keep)),
        )
        name = pc.if_else(
            use_gene,
            pc.take(gname_text, pc.filter(gname_indices, keep)),
            pc.take(name_text, pc.filter(name_indices, keep)),
        )
        semtype = pc.take(type_text, pc.filter(type_indices, keep))
        n = int(ok.sum())
        rows = pa.table(
            {
                "row": pa.array(line_of_row[ok], pa.int64()),
                "sentence_id": pc.filter(sentence_id, keep),
                "cui": cui,
                "count": pa.array(np.ones(n, np.int32)),
            }
        )
        # the block's events, one per distinct triple (its first row), ordered by block line
        codes = [
            gene_row[ok].astype(np.int64),
            np.where(gene_row, _codes(gene_indices), _codes(cui_indices))[ok],
            np.where(gene_row, _codes(gname_indices), _codes(name_indices))[ok],
            _codes(type_indices)[ok],
        ]
        first = _first_rows(codes)
        take = pa.array(first)
        events = pa.table(
            [cui.take(take), name.take(take), semtype.take(take),
             pa.array(line_of_row[ok][first] * ENTITY_ORDER_STEP, pa.int64())],
            schema=_EVENT_SCHEMA,
        )  # fmt: skip
        return {"rows": rows, "events": events, "slow_records": slow, "n_accepted": n}

    def record(self, line: int, fields: list[str | None] | None, raw: str, error: str | None,
               out: Any = None) -> bool:  # fmt: skip
        self.events.line = line
        return super().record(line, fields, raw, error, out)

    def commit(self, block: dict, first_line: int) -> None:
        # The block's own events are ordered by block line: made file lines here.
        events = block["events"]
        events = events.set_column(3, "order", pc.add(events["order"], first_line * ENTITY_ORDER_STEP))
        self.events.add_table(events)
        super().commit(block, first_line)

    def finish(self) -> None:
        """After the last block: the concepts, from every event in file order, written to the run."""
        self.events.apply(self.concepts)
        self.concepts.write(self.run)


def _codes(indices: pa.Array) -> np.ndarray:
    return indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _first_rows(codes: list[np.ndarray]) -> np.ndarray:
    """The first row of each distinct combination of the (non-negative) ``codes`` columns, in row
    order: one int64 key per row when they fit 63 bits (the dictionary indices of a block do),
    else a lexicographic sort."""
    if not len(codes[0]):
        return np.zeros(0, np.int64)
    bits = [max(1, int(c.max()).bit_length()) for c in codes]
    if sum(bits) <= 63:
        key = np.zeros(len(codes[0]), np.int64)
        for column, width in zip(codes, bits, strict=True):
            key = (key << width) | column
        _, first = np.unique(key, return_index=True)
    else:
        order = np.lexsort(codes[::-1])
        sorted_codes = [c[order] for c in codes]
        change = np.ones(len(order), dtype=bool)
        change[1:] = np.any([c[1:] != c[:-1] for c in sorted_codes], axis=0)
        # the first row of each run: the smallest row of the run (lexsort is stable)
        first = order[change]
    return np.sort(first)


def _as_rows(flag: np.ndarray | bool, n: int) -> np.ndarray:
    return np.full(n, True) if flag is True else flag
