"""The SemMedDB dump's records and field rules, shared by its four readers: the MySQL dump
dialect and its NULL marker, the column orders, the CUI rule and the other field checks, and
the concepts table that ENTITY and PREDICATION both fill (see :mod:`pipeline.ingest.semmeddb`)."""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable, Iterable, Iterator

from pipeline.ingest.base import IngestRun, InputFile, parse_int, reject_utf16
from pipeline.ingest.records import Record, RowError, csv_records

NULL = "\ue000"  # cannot occur in latin-1 text, so it marks SQL NULL unambiguously
_CUI = re.compile(r"C\d{7}")

# MySQL's SELECT ... INTO OUTFILE: a backslash escapes, a doubled quote does not.
DUMP_DIALECT = {"delimiter": ",", "quotechar": '"', "escapechar": "\\", "doublequote": False, "strict": True}

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


def mark_nulls(line: str) -> str:
    """Replace unquoted ``\\N`` fields by the NULL marker before the CSV parser unescapes them.

    A literal backslash in the dump is always written ``\\\\``, so ``,\\N`` can only be a NULL
    field (``,\\\\N`` does not contain it), and a plain ``str.replace`` is safe and fast.
    """
    if "\\N" not in line:
        return line
    if line.startswith("\\N"):
        line = NULL + line[2:]
    return line.replace(",\\N", "," + NULL)


def dump_records(
    physical: Iterable[str], first_line: int = 1, continuation: Callable[[], str | None] | None = None
) -> Iterator[Record]:
    """Records of dump text (see :func:`pipeline.ingest.records.csv_records` for the arguments);
    NULL fields are None, and a record of one empty field is an empty line."""
    for line, fields, raw, error in csv_records(
        physical, first_line=first_line, continuation=continuation, prepare=mark_nulls, **DUMP_DIALECT
    ):
        if fields is None:
            yield line, None, raw, error
        elif fields == [""]:
            yield line, None, raw, "empty line"
        else:
            yield line, [None if f == NULL else f for f in fields], raw, None


# A UTF-8 byte order mark as latin-1 text: Arrow's CSV reader (the block paths) skips one at
# the start of a file, so the record path does too, and both read the first row alike.
_UTF8_BOM = "\xef\xbb\xbf"


def read_dump(source: InputFile) -> Iterator[Record]:
    """The records of a dump file (latin-1; a UTF-8 byte order mark at its start skipped)."""
    reject_utf16(source)
    text = io.TextIOWrapper(source.line_stream(), encoding="latin-1", newline="")
    first = next(text, "")
    yield from dump_records(itertools.chain([first.removeprefix(_UTF8_BOM)] if first else [], text))


def parse_cui_field(value: str | None, field: str) -> list[str]:
    """Apply the CUI rule to one CUI field; raise RowError for invalid values."""
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


def split_like(value: str | None, n: int) -> list[str | None]:
    """A ``|``-separated name or semantic type matched to ``n`` arguments: one part each when
    the counts agree, else the whole value shared."""
    if value is None:
        return [None] * n
    parts = value.split("|")
    return parts if len(parts) == n else [value] * n


def novelty(value: str | None, field: str) -> bool | None:
    if value == "1":
        return True
    if value == "0":
        return False
    if value is None:
        return None
    raise RowError(field, f"novelty must be 0, 1 or \\N, got {value!r}")


def required_int(value: str | None, field: str) -> int:
    number = parse_int(value)
    if number is None:
        raise RowError(field, f"expected a non-negative integer up to 2^63-1, got {value!r}")
    return number


def reject_width(fields: list[str | None], allowed: tuple[int, ...], table: str) -> None:
    if len(fields) not in allowed:
        want = " or ".join(str(n) for n in allowed)
        raise RowError("*", f"{table}: expected {want} columns, got {len(fields)}")


class Concepts:
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
