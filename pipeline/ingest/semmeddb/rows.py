"""SENTENCE, CITATIONS and ENTITY one record at a time: the record path's rules, which the block
paths (:mod:`pipeline.ingest.semmeddb.table_blocks`) must agree with. Each function takes a
record's fields and an ``out`` with ``add``/``add_values`` (the ingest run, or a block's capture
of the rows it will interleave with its own), and raises RowError before it adds anything."""

from __future__ import annotations

from typing import Any

from pipeline.ingest.base import INT32_MAX, parse_int
from pipeline.ingest.records import RowError
from pipeline.ingest.semmeddb.fields import parse_cui_field, reject_width, required_int, split_like


def sentence_row(fields: list[str | None], out: Any) -> None:
    """One SENTENCE record -> a ``sentences`` row (sentence_id, doc_id, type, number, text), for the
    merge's ENTITY mentions and the hops' readable evidence; RowError for a row the quarantine takes."""
    reject_width(fields, (8, 9), "SENTENCE")
    sentence_id = required_int(fields[0], "SENTENCE_ID")
    pmid = required_int(fields[1], "PMID")
    number = parse_int(fields[3], INT32_MAX) if fields[3] is not None else None
    if fields[3] is not None and number is None:
        raise RowError("NUMBER", f"expected an integer up to {INT32_MAX}, got {fields[3]!r}")
    out.add_values("sentences", (sentence_id, f"PMID:{pmid}", fields[2], number, fields[5]))


def citations_row(fields: list[str | None], out: Any, source_file: str) -> None:
    """One CITATIONS record -> a ``documents`` row (doc_id, pmid, year from PYEAR; ``\\N`` or 0 -> null)."""
    reject_width(fields, (5,), "CITATIONS")
    pmid = required_int(fields[0], "PMID")
    year = None
    if fields[4] is not None:
        year = parse_int(fields[4], INT32_MAX)
        if year is None:
            raise RowError("PYEAR", f"expected a year, got {fields[4]!r}")
        year = year or None
    out.add("documents", {"doc_id": f"PMID:{pmid}", "pmid": pmid, "year": year, "source": "semmeddb",
                          "source_file": source_file})  # fmt: skip


def entity_row(fields: list[str | None], out: Any, concepts: Any) -> None:
    """One ENTITY record -> an ``entity_mentions`` row (sentence_id, cui, 1) per argument, and its
    concepts. When CUI is NULL the GENE_ID column is used under the same CUI rule."""
    reject_width(fields, (11,), "ENTITY")
    required_int(fields[0], "ENTITY_ID")
    sentence_id = required_int(fields[1], "SENTENCE_ID")
    if fields[2]:
        cuis = parse_cui_field(fields[2], "CUI")
        names = split_like(fields[3], len(cuis))
    else:
        cuis = parse_cui_field(fields[5], "GENE_ID")
        names = split_like(fields[6], len(cuis))
    for cui, name, semtype in zip(cuis, names, split_like(fields[4], len(cuis)), strict=True):
        concepts.add(cui, name, semtype)
        out.add_values("entity_mentions", (sentence_id, cui, 1))
