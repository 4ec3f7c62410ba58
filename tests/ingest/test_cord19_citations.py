from __future__ import annotations

import pytest
from support.data import DATA, counts, rows

from pipeline.ingest.base import IngestError
from pipeline.ingest.run import ingest_file


def test_cord19_metadata(tmp_path):
    result = ingest_file("cord19_metadata", DATA / "cord19" / "metadata.csv", tmp_path)
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (6, 3, 3)
    counts(tmp_path)
    docs = rows(tmp_path, "documents")
    assert [d["doc_id"] for d in docs] == ["PMID:12345678", "CORD:02tnwd4m", "CORD:ejv2xln0"]
    assert docs[0]["cord_uid"] == "ug7v899j" and docs[0]["pmid"] == 12345678 and docs[0]["year"] == 2018
    assert docs[1]["doi"] == "10.1000/example.3"  # lower-cased for matching
    assert docs[1]["abstract"] == "An abstract\nspanning two lines."
    assert docs[2]["abstract"] is None and docs[2]["source"] == "cord19"
    quarantine = {q["line"]: q for q in rows(tmp_path, "quarantine")}
    # the multi-line abstract makes the physical line numbers skip one
    assert {line: q["field"] for line, q in quarantine.items()} == {6: "pubmed_id", 7: "*", 8: "cord_uid"}


def test_cord19_bad_bytes_and_header(tmp_path):
    text = (DATA / "cord19" / "metadata.csv").read_bytes()
    bad = tmp_path / "metadata.csv"
    bad.write_bytes(text.replace(b"A CORD-only preprint", b"A CORD-only \xff preprint"))
    result = ingest_file("cord19_metadata", bad, tmp_path / "bad")
    assert result.rows_quarantined == 4
    quarantine = {q["line"]: q for q in rows(tmp_path / "bad", "quarantine")}
    assert quarantine[5]["field"] == "title" and "UTF-8" in quarantine[5]["reason"]

    headless = tmp_path / "headless.csv"
    headless.write_bytes(b"a,b,c\n1,2,3\n")
    with pytest.raises(IngestError, match=r"headless\.csv: line 1: header lacks column\(s\) cord_uid"):
        ingest_file("cord19_metadata", headless, tmp_path / "headless")

    utf16 = tmp_path / "metadata16.csv"
    utf16.write_bytes(text.decode("utf-8").encode("utf-16"))
    with pytest.raises(IngestError, match="UTF-16"):
        ingest_file("cord19_metadata", utf16, tmp_path / "utf16")


def test_citations_table(tmp_path):
    result = ingest_file("citations_table", DATA / "citations" / "open_citation_collection.csv", tmp_path)
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (6, 3, 3)
    counts(tmp_path)
    assert rows(tmp_path, "citations")[2] == {"citing": "PMID:34567890", "cited": "PMID:12345678"}
    quarantine = {q["line"]: (q["field"], q["reason"]) for q in rows(tmp_path, "quarantine")}
    assert quarantine[5][0] == "citing" and "PMC1" in quarantine[5][1]
    assert quarantine[6][0] == "*"
    assert quarantine[7] == ("citing", "bytes that are not valid UTF-8")


@pytest.mark.parametrize("block_bytes", [64, 1 << 20])
def test_citations_table_lines_and_counts_on_random_rows(tmp_path, monkeypatch, block_bytes):
    """Every row is accounted for at its own line, across parser blocks: valid rows (leading zeros
    dropped as int() did), non-numeric ids, wrong widths, empty lines and bad bytes."""
    import random

    from pipeline.ingest import citations

    monkeypatch.setattr(citations, "BLOCK_BYTES", block_bytes)
    rng = random.Random(block_bytes)
    lines, expected_ok, expected_bad = [b"citing,referenced"], [], {}
    for line in range(2, 400):
        kind = rng.choice(["ok", "ok", "ok", "zeros", "text", "wide", "narrow", "empty", "bytes"])
        a, b = rng.randint(1, 10**8), rng.randint(1, 10**8)
        if kind == "ok":
            lines.append(f"{a},{b}".encode())
            expected_ok.append((f"PMID:{a}", f"PMID:{b}"))
        elif kind == "zeros":
            lines.append(f"00{a},0{b}".encode())
            expected_ok.append((f"PMID:{a}", f"PMID:{b}"))
        elif kind == "text":
            lines.append(f"{a},PMC{b}".encode())
            expected_bad[line] = ("referenced", "not numeric")
        elif kind == "wide":
            lines.append(f"{a},{b},{a}".encode())
            expected_bad[line] = ("*", "expected 2 columns, got 3")
        elif kind == "narrow":
            lines.append(f"{a}".encode())
            expected_bad[line] = ("*", "expected 2 columns, got 1")
        elif kind == "empty":
            lines.append(b"")
            expected_bad[line] = ("*", "empty line")
        else:
            lines.append(b"\xff\xfe" + str(a).encode() + f",{b}".encode())
            expected_bad[line] = ("citing", "not valid UTF-8")
    path = tmp_path / "occ.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = ingest_file("citations_table", path, tmp_path / "out")
    assert result.rows_read == len(lines) - 1 == result.rows_accepted + result.rows_quarantined
    assert [(r["citing"], r["cited"]) for r in rows(tmp_path / "out", "citations")] == expected_ok
    found = {q["line"]: (q["field"], q["reason"]) for q in rows(tmp_path / "out", "quarantine")}
    assert set(found) == set(expected_bad)
    for line, (field, reason) in expected_bad.items():
        assert found[line][0] == field and reason in found[line][1], (line, found[line])


HEADER = "cord_uid,sha,source_x,title,doi,pmcid,pubmed_id,license,abstract,publish_time,authors,journal\n"


def _cord_row(i: int, title: str | None = None, authors: str = "Doe, Jane") -> str:
    title = f'"Title {i}"' if title is None else title
    return f'u{i:07d},,PMC,{title},10.1/{i},,{1000 + i},cc,"An abstract, {i}.",2020-01-01,"{authors}",J\n'


def _plain_row(i: int) -> str:
    return f"u{i:07d},,PMC,Title {i},10.1/{i},,{1000 + i},cc,An abstract,2020-01-01,Doe,J\n"


@pytest.mark.parametrize("rows_after, row", [(4, _cord_row), (6000, _cord_row), (4, _plain_row), (6000, _plain_row)])
def test_a_quote_never_closed_costs_its_own_line_only(tmp_path, rows_after, row):
    """A stray opening quote swallowed the rows after it (up to the next quote, 131,072
    characters, or the end of the file) as one field: 1,410 rows gone from a 6,001-row file,
    counted as one quarantined row (found in review). Now its line is quarantined and the rows
    after it are read, whether or not they quote their fields."""
    lines = [_cord_row(i) for i in range(3)]
    lines.append('u0000003,,PMC,"Broken title,10.1/3,,1003,cc,no abstract,2020-01-01,Doe,J\n')
    lines += [row(i) for i in range(4, 4 + rows_after)]
    path = tmp_path / "metadata.csv"
    path.write_text(HEADER + "".join(lines))
    result = ingest_file("cord19_metadata", path, tmp_path / "out")
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (len(lines), len(lines) - 1, 1)
    (quarantined,) = rows(tmp_path / "out", "quarantine")
    assert quarantined["line"] == 5 and "a quote opened on this line is not closed" in quarantined["reason"]
    documents = rows(tmp_path / "out", "documents")
    assert [d["cord_uid"] for d in documents] == [f"u{i:07d}" for i in range(4 + rows_after) if i != 3]


def test_long_fields_and_quoted_line_breaks_are_rows(tmp_path):
    """A 240 KB author list (a large consortium) was refused by the csv module's 128 KiB field
    limit; a quoted line break is one field, not a resync."""
    lines = [_cord_row(0, authors="; ".join(f"Author {k}, A." for k in range(20_000))),
             _cord_row(1, title='"Two\nlines"'), _cord_row(2)]  # fmt: skip
    path = tmp_path / "metadata.csv"
    path.write_text(HEADER + "".join(lines))
    result = ingest_file("cord19_metadata", path, tmp_path / "out")
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (3, 3, 0)
    assert [d["title"] for d in rows(tmp_path / "out", "documents")] == ["Title 0", "Two\nlines", "Title 2"]


@pytest.mark.parametrize("pubmed_id", ["0", "000"])
def test_a_pubmed_id_that_is_no_pmid_is_quarantined(tmp_path, pubmed_id):
    """A pubmed_id of 0 became the document PMID:0 (found in review); like a non-numeric one, it
    is quarantined, naming the field."""
    row = _cord_row(1).replace(",1001,", f",{pubmed_id},")
    path = tmp_path / "metadata.csv"
    path.write_text(HEADER + _cord_row(0) + row)
    result = ingest_file("cord19_metadata", path, tmp_path / "out")
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (2, 1, 1)
    (quarantined,) = rows(tmp_path / "out", "quarantine")
    assert (quarantined["line"], quarantined["field"]) == (3, "pubmed_id")
    assert quarantined["reason"] == f"pubmed_id is not a PMID: {pubmed_id!r}"
