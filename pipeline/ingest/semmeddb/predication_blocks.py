"""PREDICATION in blocks: the Arrow fast path, an optimisation that gives the tables of the
record path (:mod:`pipeline.ingest.semmeddb.predication`) bit for bit.

The block loop, Arrow's parse and the rules for what goes to the record path are shared with the
other SemMedDB tables (:mod:`pipeline.ingest.semmeddb.blocks`). Here: a field that reads exactly
"N" where a NULL is allowed (predicate, names, semantic types, novelty) is ambiguous and its line
takes the record path. CUI fields are resolved once per distinct value (the dictionary Arrow
builds); rows with a list of gene ids are expanded column-wise into one row per (subject, object)
pair (:func:`_expand_multi_rows`). Concept names follow the record path's event order exactly:
(row, subject/object, argument position). The tests compare the two paths on the fixtures, on a
synthetic corpus and on random quirky files (tests/ingest/test_semmeddb_fast_path.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.base import IngestRun
from pipeline.ingest.semmeddb.blocks import (
    BLOCK_BYTES,
    BlockReader,
    classify_cui_fields,
    doc_ids,
    interleave_by_row,
    parse_ids,
    per_row,
    text_dictionary,
)
from pipeline.ingest.semmeddb.fields import PREDICATION_COLUMNS, parse_cui_field
from pipeline.ingest.semmeddb.predication import ORDER_STEP, PredicationRows
from pipeline.runtime.columnar import split_keys, sum_by_key

__all__ = ["BLOCK_BYTES", "PredicationBlocks"]
_ID_FIELDS = ("PREDICATION_ID", "SENTENCE_ID", "PMID")
_GENE_LIST = r"^[0-9]+(\|[0-9]+)+$"


class PredicationBlocks(PredicationRows, BlockReader):
    """The record path's state, plus the block path's (:class:`~pipeline.ingest.semmeddb.blocks.BlockReader`):
    the file's width and the concept events already applied."""

    columns = PREDICATION_COLUMNS
    widths = (12, 15)
    id_fields = _ID_FIELDS
    parsed = 12
    thread_name = "predication-parse"

    def __init__(self, run: IngestRun) -> None:
        PredicationRows.__init__(self, run)
        BlockReader.__init__(self)
        # The (cui, name, semtype) keys already applied (_triple_keys), held across blocks. As an
        # Arrow array, every block's pc.is_in built a hash table of all of them again, and pc.unique
        # the next: at 10M predications 128 blocks of ~30k distinct triples against up to 277k seen
        # took 21.7 s of the file's 23.7 s; as a set, the lookups are per block's triples only.
        self._seen_concept_events: set[str] = set()

    def analyse(self, data: bytes, table: pa.Table, invalid: list[int], n_lines: int) -> dict | None:
        """Everything about a parsed block that does not depend on earlier blocks (so it can run
        ahead in the parse thread): checks, the rows for the record path, the columns to write."""
        invalid_mask = np.zeros(n_lines, dtype=bool)
        invalid_mask[invalid] = True
        line_of_row = np.flatnonzero(~invalid_mask)  # block line index of each parsed row

        ok = np.ones(table.num_rows, dtype=bool)
        ids = []
        for name in _ID_FIELDS:
            valid, value = parse_ids(table.column(name))
            ok &= valid
            ids.append(value)
        predicate_indices, predicate_text = text_dictionary(table.column("PREDICATE"))
        good_predicate = pc.and_(
            pc.greater(pc.utf8_length(predicate_text), 0), pc.not_equal(predicate_text, "N")
        )
        ok &= per_row(good_predicate, predicate_indices)
        sides = []
        for cui_name, name_name, type_name, novelty_name in (
            ("SUBJECT_CUI", "SUBJECT_NAME", "SUBJECT_SEMTYPE", "SUBJECT_NOVELTY"),
            ("OBJECT_CUI", "OBJECT_NAME", "OBJECT_SEMTYPE", "OBJECT_NOVELTY"),
        ):
            cui_indices, cui_text = text_dictionary(table.column(cui_name))
            argument = classify_cui_fields(cui_text)
            # several gene ids ("3429|5715"): several arguments, expanded row by row below
            gene_list = pc.fill_null(pc.match_substring_regex(cui_text, _GENE_LIST), False)
            gene_entries = np.flatnonzero(gene_list.to_numpy(zero_copy_only=False))
            genes = {
                int(entry): parse_cui_field(value, cui_name)
                for entry, value in zip(
                    gene_entries, cui_text.take(pa.array(gene_entries)).to_pylist(), strict=True
                )
            }
            ok &= per_row(pc.or_(pc.is_valid(argument), gene_list), cui_indices)
            multi_entry = gene_list.to_numpy(zero_copy_only=False)
            novelty_indices, novelty_text = text_dictionary(table.column(novelty_name))
            flag = pc.case_when(
                pc.make_struct(pc.equal(novelty_text, "1"), pc.equal(novelty_text, "0")), True, False
            )  # null for anything else, "N" (from \\N) included: the record path decides
            ok &= per_row(pc.is_valid(flag), novelty_indices)
            name_indices, name_text = text_dictionary(table.column(name_name))
            type_indices, type_text = text_dictionary(table.column(type_name))
            ok &= per_row(pc.not_equal(name_text, "N"), name_indices)
            ok &= per_row(pc.not_equal(type_text, "N"), type_indices)
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
        slow_records = self.slow_records(data, slow_lines)
        if slow_records is None:
            return None  # a line the record path reads as more than one record

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
                "doc_id": doc_ids(pmid.to_numpy()),
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
                "doc_id": doc_ids(paper.to_numpy()),
                "cui": pc.take(arguments, code),
                "count": pc.cast(pa.array(count) if isinstance(count, np.ndarray) else count, pa.int32()),
            }
        )
        if multi_rows is not None:
            fast = interleave_by_row(fast, multi_rows)
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

    def commit(self, block: dict, first_line: int) -> None:
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
            fast = interleave_by_row(fast, slow)
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
            new = self._unseen(_triple_keys(triples))
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
        new = self._unseen(key)
        triples = triples.filter(new).sort_by([("order", "ascending")])
        for cui, name, semtype in zip(
            triples["cui"].to_pylist(),
            triples["name"].to_pylist(),
            triples["semtype"].to_pylist(),
            strict=True,
        ):
            self.concepts.add(cui, name, semtype)
        self._seen_concept_events.update(pc.filter(key, new).to_pylist())

    def _unseen(self, keys: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Which of ``keys`` (:func:`_triple_keys`) no earlier block applied, as booleans."""
        seen = self._seen_concept_events
        return pa.array([key not in seen for key in keys.to_pylist()], pa.bool_())


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
            "doc_id": doc_ids(mentions["pmid"].to_numpy()),
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
            "doc_id": doc_ids(pmid[pair_row]),
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
