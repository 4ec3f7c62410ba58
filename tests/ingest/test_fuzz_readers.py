"""Bad-input fuzzing of every ingest reader (``pipeline.ingest.registry``).

Each reader gets files of its own real-format lines (the fixtures under tests/data), mutated
(tests/support/fuzzing.py), through :func:`ingest_file`, the way the workflow runs it. Whatever the
input, a reader either

* reads it: rows read = accepted + quarantined, every quarantined row in quarantine.parquet
  with the file's name, a line within the file and a reason, every accepted row in its table,
  and every output a readable Parquet file of its schema; or
* refuses the whole file with an :class:`IngestError` that names it, where the file is bad as
  a whole (broken XML, a broken gzip stream, a damaged CSV header, UTF-16): never for a bad
  data line, and never with any other exception.

PubMed XML is mutated inside the tree (element text and attributes, records dropped or
repeated), so most files stay well formed and their rows can be counted independently; some
are then damaged as text, and must be refused exactly when ElementTree cannot parse them.
"""

from __future__ import annotations

import copy
import gzip
import json
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support.data import DATA
from support.fuzzing import FUZZ, joined, mutated_line, mutated_lines, physical_lines, seed_lines

from pipeline.ingest.base import SCHEMAS, IngestCounts, IngestError
from pipeline.ingest.registry import reader_for
from pipeline.ingest.run import ingest_file

pytestmark = pytest.mark.fuzz  # many generated inputs: the full tier only (make test)

SEMMEDDB_TOKENS = (b'"\\N"', b'\\"', b"\\\\", b"\\'", b"1|medd", b"3429|5715", b"C0796614|931", b"dsyn|gngm")
CSV_TOKENS = (b'""', b'"a,b"', b'"unterminated', b"PMC1234567", b"2020-03-01", b"10.1000/x")


def fixture(*parts: str) -> bytes:
    return DATA.joinpath(*parts).read_bytes()


CORD19_HEADER = fixture("cord19", "metadata.csv").split(b"\n", 1)[0]


def output_tables(kind: str) -> tuple[str, ...]:
    return reader_for(kind).produces + ("quarantine",)


def ingest(
    kind: str, data: bytes, compression: str = "plain", refusable: bool = False, **options
) -> tuple[IngestCounts | None, dict[str, pa.Table]]:
    """Run ``kind``'s reader (with ``options``) on ``data`` and check what every reader promises
    (module docstring).

    Returns the counts and the output tables, or (None, {}) when the file was refused as a whole,
    which only a file that is bad as a whole may be: ``refusable`` (a damaged header, broken
    XML), a file that looks UTF-16, or a truncated gzip stream.
    """
    with tempfile.TemporaryDirectory(prefix="litpath-fuzz-") as work:
        path = Path(work) / ("input.gz" if compression != "plain" else "input")
        if compression == "plain":
            path.write_bytes(data)
        else:
            packed = gzip.compress(data, mtime=0)
            path.write_bytes(packed[: len(packed) // 2] if compression == "gzip-truncated" else packed)
        out = Path(work) / "out"
        try:
            counts = ingest_file(kind, path, out, **options)
        except IngestError as exc:
            assert str(exc).startswith(f"{path}: "), f"the error does not name the file: {exc}"
            assert refusable or compression == "gzip-truncated" or looks_utf16(data), (
                f"a file that is not bad as a whole was refused instead of quarantining rows: {exc}"
            )
            return None, {}
        assert compression != "gzip-truncated", "a truncated gzip stream was read as complete"
        assert json.loads((out / "counts.json").read_text()) == counts.to_dict()
        tables = {table: pq.read_table(out / f"{table}.parquet") for table in output_tables(kind)}
    assert counts.rows_read == counts.rows_accepted + counts.rows_quarantined
    for name, table in tables.items():
        assert table.schema.equals(SCHEMAS.get(name, tables["quarantine"].schema), check_metadata=False), name
        assert table.num_rows == counts.tables[name], name
    quarantine = tables["quarantine"].to_pylist()
    assert len(quarantine) == counts.rows_quarantined
    for row in quarantine:
        assert row["source_file"] == path.name and row["reason"] and row["line"] >= 1, row
    return counts, tables


def looks_utf16(data: bytes) -> bool:
    """What ``reject_utf16`` refuses: a UTF-16 BOM or a NUL in the first two bytes."""
    return data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:2]


compressions = st.sampled_from(("plain",) * 8 + ("gzip", "gzip-truncated"))


def check_csv_lines(
    data: bytes, counts: IngestCounts, tables: dict[str, pa.Table], header_lines: int
) -> None:
    """Rows of a line-oriented CSV reader: at most one per physical line, quarantine lines in the file."""
    lines = physical_lines(data)
    assert counts.rows_read <= max(lines - header_lines, 0)
    for row in tables["quarantine"].to_pylist():
        assert row["line"] <= lines, row


# ------------------------------------------------------------------------------- SemMedDB --
def semmeddb_file(name: str) -> st.SearchStrategy[bytes]:
    seeds = seed_lines(fixture("semmeddb", name))
    return joined(mutated_lines(seeds, b",", SEMMEDDB_TOKENS))


@FUZZ
@given(data=semmeddb_file("PREDICATION.csv"), compression=compressions)
@example(
    data=b'"9999999999999999999999999","501","1","TREATS","C0012345","S","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    compression="plain",
)
def test_semmeddb_predication_survives_mutated_lines(data, compression):
    counts, tables = ingest("semmeddb_predication", data, compression)
    if counts is None:
        return
    check_csv_lines(data, counts, tables, 0)
    predications = tables["predications"]
    assert predications.num_rows >= counts.rows_accepted
    assert len(set(predications.column("predication_id").to_pylist())) <= counts.rows_accepted
    # The block path and the record path agree on every input (the block path hands the rows it
    # cannot vouch for to the record path): same rows, quarantine and concepts, same mention
    # counts once summed per (doc, cui) as the merge does (both write partial sums).
    record_counts, record_tables = ingest("semmeddb_predication", data, compression, block_path=False)
    assert record_counts is not None
    assert comparable(record_counts, record_tables) == comparable(counts, tables)


def comparable(counts: IngestCounts, tables: dict[str, pa.Table]) -> dict:
    mentions: Counter[tuple[str, str]] = Counter()
    for row in tables["mentions"].to_pylist():
        mentions[(row["doc_id"], row["cui"])] += row["count"]
    return {
        "counts": (counts.rows_read, counts.rows_accepted, counts.rows_quarantined),
        "mentions": dict(mentions),
        **{name: tables[name].to_pylist() for name in ("predications", "concepts", "quarantine")},
    }


@FUZZ
@given(data=semmeddb_file("SENTENCE.csv"), compression=compressions)
# Found before: integers beyond their column type (NUMBER int32, SENTENCE_ID int64) failed the file.
@example(data=b'"501","12345678","ti","99999999999","0","x","52",\\N,\\N', compression="plain")
@example(data=b'"9999999999999999999999999","12345678","ti","1","0","x","52",\\N,\\N', compression="plain")
def test_semmeddb_sentence_survives_mutated_lines(data, compression):
    counts, tables = ingest("semmeddb_sentence", data, compression)
    if counts is not None:
        check_csv_lines(data, counts, tables, 0)
        assert counts.tables["sentences"] == counts.rows_accepted


@FUZZ
@given(data=semmeddb_file("CITATIONS.csv"), compression=compressions)
@example(data=b'"12345678","0028-4793","20180601","2018/05/17 06:00","99999999999"', compression="plain")
@example(
    data=b'"9999999999999999999999999","0028-4793","20180601","2018/05/17 06:00","2018"', compression="plain"
)
def test_semmeddb_citations_survives_mutated_lines(data, compression):
    counts, tables = ingest("semmeddb_citations", data, compression)
    if counts is not None:
        check_csv_lines(data, counts, tables, 0)
        assert counts.tables["documents"] == counts.rows_accepted


@FUZZ
@given(data=semmeddb_file("ENTITY.csv"), compression=compressions)
@example(
    data=b'"1","9999999999999999999999999","C0012345","S","dsyn",\\N,\\N,"S","1000","0","20"',
    compression="plain",
)
def test_semmeddb_entity_survives_mutated_lines(data, compression):
    counts, tables = ingest("semmeddb_entity", data, compression)
    if counts is not None:
        check_csv_lines(data, counts, tables, 0)
        assert counts.tables["entity_mentions"] >= counts.rows_accepted


# ---------------------------------------------------------------- CSV tables with a header --
@st.composite
def csv_with_header(draw, data: bytes) -> tuple[bytes, bool]:
    """(file, header changed): the fixture's header, mutated now and then (a missing column
    is a whole-file error), and mutated data lines."""
    header = original = seed_lines(data)[0]
    if draw(st.integers(0, 9)) == 0:
        header = draw(mutated_line(header, b",", CSV_TOKENS))
    body = draw(joined(mutated_lines(seed_lines(data, skip=1), b",", CSV_TOKENS)))
    return header + b"\n" + body, header != original


@FUZZ
@given(file=csv_with_header(fixture("cord19", "metadata.csv")), compression=compressions)
@example(
    file=(CORD19_HEADER + b"\nug7v,,PMC,T,10.1/x,,9999999999999999999999999,cc,A,2018,,,,,,,,,\n", False),
    compression="plain",
)
def test_cord19_metadata_survives_mutated_lines(file, compression):
    data, header_changed = file
    counts, tables = ingest("cord19_metadata", data, compression, refusable=header_changed)
    if counts is not None:
        check_csv_lines(data, counts, tables, 1)
        assert counts.tables["documents"] == counts.rows_accepted


@FUZZ
@given(file=csv_with_header(fixture("citations", "open_citation_collection.csv")), compression=compressions)
# Found before: a wrong-width row with bytes that are not UTF-8 failed the whole file.
@example(file=(b"citing,referenced\n\x8011111111", False), compression="plain")
@example(file=(b"citing,referenced\n9999999999999999999999999,1\n", False), compression="plain")
def test_citations_table_survives_mutated_lines(file, compression):
    data, header_changed = file
    counts, tables = ingest("citations_table", data, compression, refusable=header_changed)
    if counts is not None:
        check_csv_lines(data, counts, tables, 1)
        assert counts.tables["citations"] == counts.rows_accepted


# ------------------------------------------------------------------------------ PubMed XML --
PUBMED_ARTICLE = (
    b'<?xml version="1.0"?><PubmedArticleSet><PubmedArticle>%s</PubmedArticle></PubmedArticleSet>'
)
PUBMED_BOOK = (
    b'<?xml version="1.0"?><PubmedArticleSet><PubmedBookArticle><BookDocument><PMID>1</PMID>'
    b"<Book><PubDate><Year>%s</Year></PubDate></Book></BookDocument></PubmedBookArticle></PubmedArticleSet>"
)
PUBMED = [fixture("pubmed", name) for name in sorted(p.name for p in (DATA / "pubmed").glob("*.xml"))]
XML_TEXT = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "12345678",
            " 29768149 ",
            "0",
            "-1",
            "9" * 20,
            "9" * 25,
            "²",
            "٣٣٣٣",
            "2020",
            "99999999999",
            "1e5",
            "abc",
            "MedlineDate 1999 Spring",
            "pubmed",
            "doi",
            "10.1000/X",
        ]
    ),  # fmt: skip
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6),
)


@st.composite
def pubmed_xml(draw) -> tuple[bytes, bool]:
    """(file, damaged as text): records of the fixtures dropped, repeated and reordered, element
    text and attribute values replaced; now and then a line of the result mutated as text."""
    root = ET.fromstring(draw(st.sampled_from(PUBMED)))
    records = list(root)
    out = ET.Element(root.tag)
    for index in draw(st.lists(st.integers(0, max(len(records) - 1, 0)), max_size=4)) if records else []:
        out.append(copy.deepcopy(records[index]))
    elements = list(out.iter())
    for _ in range(draw(st.integers(0, 6))):
        element = draw(st.sampled_from(elements))
        if element.attrib and draw(st.booleans()):
            element.set(draw(st.sampled_from(sorted(element.attrib))), draw(XML_TEXT))
        else:
            element.text = draw(XML_TEXT)
    data = ET.tostring(out, encoding="utf-8", xml_declaration=True)
    damaged = draw(st.integers(0, 4)) == 0
    if damaged:
        lines = data.split(b"\n")
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(mutated_line(lines[at], b" ", (b"<", b">", b"&", b"</PMID>", b"<PMID>", b"]]>")))
        data = b"\n".join(lines)
    return data, damaged


def pubmed_rows(root: ET.Element) -> tuple[int, int]:
    """(rows, accepted) by the reader's contract, counted here independently of it."""

    def numeric(text: str | None) -> bool:
        value = (text or "").strip()
        return value.isascii() and value.isdigit() and int(value) < 2**63

    rows = accepted = 0
    for record in root:
        if record.tag in ("PubmedArticle", "PubmedBookArticle"):
            rows += 1
            citation = record.find("BookDocument" if record.tag == "PubmedBookArticle" else "MedlineCitation")
            if citation is None or not numeric(citation.findtext("PMID")):
                continue
            accepted += 1
            for reference in record.iter("Reference"):
                for article_id in reference.findall("ArticleIdList/ArticleId"):
                    if article_id.get("IdType") == "pubmed":
                        rows += 1
                        accepted += numeric(article_id.text)
        elif record.tag == "DeleteCitation":
            for pmid in record.findall("PMID"):
                rows += 1
                accepted += numeric(pmid.text)
    return rows, accepted


@FUZZ
@given(document=pubmed_xml(), compression=compressions)
# Found before: a PMID beyond int64, a book year "²" (isdigit, not int()) or beyond int32 failed the file.
@example(
    document=(
        PUBMED_ARTICLE % b"<MedlineCitation><PMID>9999999999999999999999999</PMID></MedlineCitation>",
        False,
    ),
    compression="plain",
)
@example(document=(PUBMED_BOOK % "²".encode(), False), compression="plain")
@example(document=(PUBMED_BOOK % b"99999999999", False), compression="plain")
def test_pubmed_xml_survives_mutated_records(document, compression):
    data, _ = document
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        root = None
    counts, _ = ingest("pubmed_xml", data, compression, refusable=root is None)
    if compression == "gzip-truncated":
        return
    if root is None:
        assert counts is None, "broken XML was read"
        return
    assert counts is not None, "well-formed XML was refused"
    assert (counts.rows_read, counts.rows_accepted) == pubmed_rows(root)
    tables = counts.tables
    assert tables["documents"] + tables["citations"] + tables["deletions"] == counts.rows_accepted
