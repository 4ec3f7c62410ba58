from __future__ import annotations

import pytest

from pipeline.ingest.common import IngestError, ingest_file

from .helpers import DATA, counts, rows


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
