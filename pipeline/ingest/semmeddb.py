"""Readers for NLM SemMedDB CSV dumps (v43 layout): PREDICATION, SENTENCE, CITATIONS, ENTITY.

Format (MySQL ``SELECT ... INTO OUTFILE`` style): no header, latin-1, fields separated by
``,`` and optionally enclosed in ``"``, ``\\N`` is SQL NULL, backslash escapes a quote, a
backslash, an apostrophe or a line break (``\\"``, ``\\\\``, ``\\'``); files may be gzipped.
A "row" is one CSV record; the 1-based line of its first physical line goes to quarantine.

Column orders (v43):

* PREDICATION: PREDICATION_ID, SENTENCE_ID, PMID, PREDICATE, SUBJECT_CUI, SUBJECT_NAME,
  SUBJECT_SEMTYPE, SUBJECT_NOVELTY, OBJECT_CUI, OBJECT_NAME, OBJECT_SEMTYPE, OBJECT_NOVELTY
  and optionally FACT_VALUE, MOD_SCALE, MOD_VALUE (12 or 15 columns).
* SENTENCE: SENTENCE_ID, PMID, TYPE, NUMBER, SENT_START_INDEX, SENTENCE, SENT_END_INDEX,
  SECTION_HEADER, NORMALIZED_SECTION_HEADER (8 or 9 columns).
* CITATIONS: PMID, ISSN, DCOM, EDAT, PYEAR (5 columns).
* ENTITY: ENTITY_ID, SENTENCE_ID, CUI, NAME, SEMTYPE, GENE_ID, GENE_NAME, TEXT, SCORE,
  START_INDEX, END_INDEX (11 columns).

**The CUI rule** (one rule for every CUI field). A field is split on ``|`` into tokens;
each token must be a UMLS CUI (``C`` + 7 digits) or an NCBI Gene id (digits):

* if any token is a CUI, the argument is the CUI token(s); trailing gene ids only annotate
  the concept (``C0796614|931`` -> ``C0796614``) and are ignored;
* otherwise every gene id becomes its own argument ``GENE:<id>``
  (``6520`` -> ``GENE:6520``; ``3429|5715`` -> ``GENE:3429``, ``GENE:5715``);
* any other token (``1|medd``), or an empty/NULL field, quarantines the whole row with the
  field name and the offending token.

A PREDICATION row with several subject or object arguments becomes one ``predications``
row per (subject, object) pair, all sharing the PREDICATION_ID (so "number of predications"
means distinct PREDICATION_IDs). Names and semantic types given ``|``-separated are matched
to the arguments position by position when the counts agree, else shared.

**Mentions.** Every PREDICATION row counts one mention of each distinct subject argument
and one of each distinct object argument in its paper ``PMID:<pmid>`` (a concept that is both
subject and object counts twice). The counts are partially aggregated here and summed per
(doc_id, cui) by the merge step. ENTITY rows give per-sentence mentions
(``entity_mentions``); the merge step resolves sentence -> paper through SENTENCE.

Novelty flags ``0``/``1`` become booleans, ``\\N`` null; anything else is quarantined.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator

from pipeline.ingest.common import IngestRun, InputFile, parse_int, reject_utf16

NULL = "\ue000"  # cannot occur in latin-1 text, so it marks SQL NULL unambiguously
_CUI = re.compile(r"C\d{7}")
MENTION_FLUSH = 100_000

PREDICATION_COLUMNS = (
    "PREDICATION_ID",
    "SENTENCE_ID",
    "PMID",
    "PREDICATE",
    "SUBJECT_CUI",
    "SUBJECT_NAME",
    "SUBJECT_SEMTYPE",
    "SUBJECT_NOVELTY",
    "OBJECT_CUI",
    "OBJECT_NAME",
    "OBJECT_SEMTYPE",
    "OBJECT_NOVELTY",
    "FACT_VALUE",
    "MOD_SCALE",
    "MOD_VALUE",
)
SENTENCE_COLUMNS = (
    "SENTENCE_ID",
    "PMID",
    "TYPE",
    "NUMBER",
    "SENT_START_INDEX",
    "SENTENCE",
    "SENT_END_INDEX",
    "SECTION_HEADER",
    "NORMALIZED_SECTION_HEADER",
)
CITATIONS_COLUMNS = ("PMID", "ISSN", "DCOM", "EDAT", "PYEAR")
ENTITY_COLUMNS = (
    "ENTITY_ID",
    "SENTENCE_ID",
    "CUI",
    "NAME",
    "SEMTYPE",
    "GENE_ID",
    "GENE_NAME",
    "TEXT",
    "SCORE",
    "START_INDEX",
    "END_INDEX",
)


class RowError(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def parse_cui_field(value: str | None, field: str) -> list[str]:
    """Apply the module's CUI rule to one CUI field; raise RowError for invalid values."""
    if value is None or value == "":
        raise RowError(field, "missing CUI")
    cuis: list[str] = []
    genes: list[str] = []
    for token in value.split("|"):
        token = token.strip()
        if _CUI.fullmatch(token):
            if token not in cuis:
                cuis.append(token)
        elif token.isascii() and token.isdigit():
            gene = f"GENE:{int(token)}"
            if gene not in genes:
                genes.append(gene)
        else:
            raise RowError(
                field, f"invalid CUI token {token!r} in {value!r} (expected C+7 digits or an NCBI Gene id)"
            )
    return cuis or genes


def _split_like(value: str | None, n: int) -> list[str | None]:
    if value is None:
        return [None] * n
    parts = value.split("|")
    return parts if len(parts) == n else [value] * n


def _novelty(value: str | None, field: str) -> bool | None:
    if value == "1":
        return True
    if value == "0":
        return False
    if value is None:
        return None
    raise RowError(field, f"novelty must be 0, 1 or \\N, got {value!r}")


def _required_int(value: str | None, field: str) -> int:
    number = parse_int(value)
    if number is None:
        raise RowError(field, f"expected a non-negative integer, got {value!r}")
    return number


def _mark_nulls(line: str) -> str:
    """Replace unquoted ``\\N`` fields by the NULL marker before the CSV parser unescapes them.

    A literal backslash in the dump is always written ``\\\\``, so ``,\\N`` can only be a NULL
    field (``,\\\\N`` does not contain it), and a plain ``str.replace`` is safe and fast.
    """
    if "\\N" not in line:
        return line
    if line.startswith("\\N"):
        line = NULL + line[2:]
    return line.replace(",\\N", "," + NULL)


def iter_records(source: InputFile) -> Iterator[tuple[int, list[str | None] | None, str, str | None]]:
    """Yield (line, fields, raw, error) per CSV record; NULL fields are None."""
    reject_utf16(source)
    text = io.TextIOWrapper(source.binary(), encoding="latin-1", newline="")
    pending: list[str] = []

    def physical_lines() -> Iterator[str]:
        for line in text:
            pending.append(line)
            yield _mark_nulls(line)

    reader = csv.reader(
        physical_lines(), delimiter=",", quotechar='"', escapechar="\\", doublequote=False, strict=True
    )
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
        if not record or record == [""]:
            yield line, None, raw, "empty line"
            continue
        yield line, [None if f == NULL else f for f in record], raw, None


class _Concepts:
    """cui -> (first name seen, union of semantic types), written once at the end."""

    def __init__(self) -> None:
        self.by_cui: dict[str, tuple[str | None, set[str]]] = {}

    def add(self, cui: str, name: str | None, semtype: str | None) -> None:
        entry = self.by_cui.get(cui)
        if entry is None:
            entry = (name, set())
            self.by_cui[cui] = entry
        elif entry[0] is None and name:
            entry = (name, entry[1])
            self.by_cui[cui] = entry
        if semtype:
            entry[1].update(s for s in semtype.split("|") if s)

    def write(self, run: IngestRun) -> None:
        for cui in sorted(self.by_cui):
            name, semtypes = self.by_cui[cui]
            run.add("concepts", {"cui": cui, "name": name, "semtypes": sorted(semtypes)})


def _reject_width(fields: list[str | None], allowed: tuple[int, ...], table: str) -> None:
    if len(fields) not in allowed:
        want = " or ".join(str(n) for n in allowed)
        raise RowError("*", f"{table}: expected {want} columns, got {len(fields)}")


def read_predication(source: InputFile, run: IngestRun) -> None:
    concepts = _Concepts()
    mentions: dict[tuple[str, str], int] = {}
    # (CUI field, name, semtype) -> arguments; the vocabulary is small next to the rows
    arguments: dict[tuple[str | None, str | None, str | None, str], list[str]] = {}

    def resolve(cui_field: str | None, name: str | None, semtype: str | None, field: str) -> list[str]:
        key = (cui_field, name, semtype, field)
        cuis = arguments.get(key)
        if cuis is None:
            cuis = parse_cui_field(cui_field, field)
            for cui, one_name, one_type in zip(
                cuis, _split_like(name, len(cuis)), _split_like(semtype, len(cuis)), strict=True
            ):
                concepts.add(cui, one_name, one_type)
            if len(arguments) < 1_000_000:
                arguments[key] = cuis
        return cuis

    def flush_mentions() -> None:
        for (doc_id, cui), count in mentions.items():
            run.add_values("mentions", (doc_id, cui, count))
        mentions.clear()

    for line, fields, raw, error in iter_records(source):
        if fields is None:
            run.quarantine(line, None, error or "unreadable", raw)
            continue
        try:
            _reject_width(fields, (12, 15), "PREDICATION")
            predication_id = _required_int(fields[0], "PREDICATION_ID")
            sentence_id = _required_int(fields[1], "SENTENCE_ID")
            pmid = _required_int(fields[2], "PMID")
            predicate = fields[3]
            if not predicate:
                raise RowError("PREDICATE", "missing predicate")
            subjects = resolve(fields[4], fields[5], fields[6], "SUBJECT_CUI")
            objects = resolve(fields[8], fields[9], fields[10], "OBJECT_CUI")
            subject_novelty = _novelty(fields[7], "SUBJECT_NOVELTY")
            object_novelty = _novelty(fields[11], "OBJECT_NOVELTY")
        except RowError as exc:
            run.quarantine(line, exc.field, exc.reason, raw)
            continue
        run.accept()
        doc_id = f"PMID:{pmid}"
        for cui in subjects:
            mentions[(doc_id, cui)] = mentions.get((doc_id, cui), 0) + 1
        for cui in objects:
            mentions[(doc_id, cui)] = mentions.get((doc_id, cui), 0) + 1
        for subject in subjects:
            for obj in objects:
                run.add_values(
                    "predications",
                    (
                        predication_id,
                        doc_id,
                        sentence_id,
                        predicate,
                        subject,
                        obj,
                        subject_novelty,
                        object_novelty,
                    ),
                )
        if len(mentions) >= MENTION_FLUSH:
            flush_mentions()
    flush_mentions()
    concepts.write(run)


def read_sentence(source: InputFile, run: IngestRun) -> None:
    for line, fields, raw, error in iter_records(source):
        if fields is None:
            run.quarantine(line, None, error or "unreadable", raw)
            continue
        try:
            _reject_width(fields, (8, 9), "SENTENCE")
            sentence_id = _required_int(fields[0], "SENTENCE_ID")
            pmid = _required_int(fields[1], "PMID")
            number = parse_int(fields[3]) if fields[3] is not None else None
            if fields[3] is not None and number is None:
                raise RowError("NUMBER", f"expected an integer, got {fields[3]!r}")
        except RowError as exc:
            run.quarantine(line, exc.field, exc.reason, raw)
            continue
        run.accept()
        run.add(
            "sentences",
            {"sentence_id": sentence_id, "doc_id": f"PMID:{pmid}", "type": fields[2], "number": number},
        )


def read_citations(source: InputFile, run: IngestRun) -> None:
    """CITATIONS -> documents (doc_id, pmid, year from PYEAR; ``\\N`` or 0 -> null)."""
    for line, fields, raw, error in iter_records(source):
        if fields is None:
            run.quarantine(line, None, error or "unreadable", raw)
            continue
        try:
            _reject_width(fields, (5,), "CITATIONS")
            pmid = _required_int(fields[0], "PMID")
            year = None
            if fields[4] is not None:
                year = parse_int(fields[4])
                if year is None:
                    raise RowError("PYEAR", f"expected a year, got {fields[4]!r}")
                year = year or None
        except RowError as exc:
            run.quarantine(line, exc.field, exc.reason, raw)
            continue
        run.accept()
        run.add(
            "documents",
            {
                "doc_id": f"PMID:{pmid}",
                "pmid": pmid,
                "year": year,
                "source": "semmeddb",
                "source_file": run.source_file,
            },
        )


def read_entity(source: InputFile, run: IngestRun) -> None:
    """ENTITY -> entity_mentions (sentence_id, cui, 1) + concepts. When CUI is NULL the
    GENE_ID column is used under the same CUI rule."""
    concepts = _Concepts()
    for line, fields, raw, error in iter_records(source):
        if fields is None:
            run.quarantine(line, None, error or "unreadable", raw)
            continue
        try:
            _reject_width(fields, (11,), "ENTITY")
            _required_int(fields[0], "ENTITY_ID")
            sentence_id = _required_int(fields[1], "SENTENCE_ID")
            if fields[2]:
                cuis = parse_cui_field(fields[2], "CUI")
                names = _split_like(fields[3], len(cuis))
            else:
                cuis = parse_cui_field(fields[5], "GENE_ID")
                names = _split_like(fields[6], len(cuis))
        except RowError as exc:
            run.quarantine(line, exc.field, exc.reason, raw)
            continue
        run.accept()
        for cui, name, semtype in zip(cuis, names, _split_like(fields[4], len(cuis)), strict=True):
            concepts.add(cui, name, semtype)
            run.add_values("entity_mentions", (sentence_id, cui, 1))
    concepts.write(run)
