from __future__ import annotations

import gzip

import pytest
from support.data import DATA, counts, rows

from pipeline.ingest.base import IngestError
from pipeline.ingest.run import ingest_file


def test_real_medline_record(tmp_path):
    result = ingest_file("pubmed_xml", DATA / "pubmed" / "pubmed-29768149.xml", tmp_path)
    assert (result.rows_read, result.rows_quarantined) == (1, 0)
    (doc,) = rows(tmp_path, "documents")
    assert doc["doc_id"] == "PMID:29768149" and doc["pmid"] == 29768149
    assert doc["title"] == "Inhaled Combined Budesonide-Formoterol as Needed in Mild Asthma."
    assert doc["year"] == 2018
    assert doc["doi"] == "10.1056/nejmoa1715274"
    assert doc["abstract"].startswith("BACKGROUND: In patients with mild asthma")
    assert "D001249" in doc["mesh"] and len(doc["mesh"]) == 23
    assert rows(tmp_path, "citations") == [] and rows(tmp_path, "deletions") == []


def test_reference_list_and_bad_records(tmp_path):
    result = ingest_file("pubmed_xml", DATA / "pubmed" / "baseline_refs.xml", tmp_path)
    # rows: 4 articles + 4 cited PubMed ids of accepted articles
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (8, 6, 2)
    counts(tmp_path)
    docs = {d["doc_id"]: d for d in rows(tmp_path, "documents")}
    first = docs["PMID:12345678"]
    assert first["title"] == "Interleukin-7 and COVID-19 outcomes."  # inline markup kept as text
    assert first["abstract"] == "BACKGROUND: IL-7 is a cytokine (β-chain).\nRESULTS: It matters."
    assert first["doi"] == "10.1000/example.1"  # the article's own id, not a reference's
    assert first["mesh"] == ["D015849", "D000086382"]
    assert docs["PMID:23456789"]["year"] == 2019  # from MedlineDate
    assert rows(tmp_path, "citations") == [
        {"citing": "PMID:12345678", "cited": "PMID:11111111"},
        {"citing": "PMID:12345678", "cited": "PMID:22222222"},
        {"citing": "PMID:34567890", "cited": "PMID:12345678"},
    ]
    quarantine = rows(tmp_path, "quarantine")
    assert [(q["line"], q["field"]) for q in quarantine] == [(1, "ReferenceList/ArticleId"), (4, "PMID")]
    assert "PMC99x" in quarantine[0]["reason"]


def test_delete_citation(tmp_path):
    result = ingest_file("pubmed_xml", DATA / "pubmed" / "update_delete.xml", tmp_path)
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (4, 3, 1)
    assert rows(tmp_path, "deletions") == [
        {"doc_id": "PMID:34567890", "source_file": "update_delete.xml"},
        {"doc_id": "PMID:45678901", "source_file": "update_delete.xml"},
    ]
    assert rows(tmp_path, "quarantine")[0]["field"] == "DeleteCitation/PMID"


def test_gzip_and_truncated_gzip(tmp_path):
    data = gzip.compress((DATA / "pubmed" / "pubmed-29768149.xml").read_bytes())
    whole = tmp_path / "pubmed25n0001.xml.gz"
    whole.write_bytes(data)
    assert ingest_file("pubmed_xml", whole, tmp_path / "ok").rows_accepted == 1
    cut = tmp_path / "pubmed25n0002.xml.gz"
    cut.write_bytes(data[: len(data) - 200])
    with pytest.raises(
        IngestError,
        match=r"pubmed25n0002\.xml\.gz: corrupt or truncated gzip stream near compressed byte \d+",
    ):
        ingest_file("pubmed_xml", cut, tmp_path / "cut")
    assert not (tmp_path / "cut" / "counts.json").exists()  # an unfinished file never looks finished


def test_broken_xml_names_file_and_position(tmp_path):
    broken = tmp_path / "broken.xml"
    text = (DATA / "pubmed" / "baseline_refs.xml").read_text()
    broken.write_text(text.replace("<Title>J Ex</Title></Journal>", "<Title>J Ex</Journal>", 1))
    with pytest.raises(IngestError, match=r"broken\.xml: broken XML at line \d+, column \d+ after 1 records"):
        ingest_file("pubmed_xml", broken, tmp_path / "out")


@pytest.mark.parametrize("root", ["PubmedArticle", "pmc-articleset"])
def test_a_file_of_another_root_is_refused(tmp_path, root):
    """A lone PubmedArticle, or a PMC JATS file, was read as an empty file: every record skipped
    and the ingest finished with 0 rows (found in review)."""
    text = (DATA / "pubmed" / "pubmed-29768149.xml").read_text()
    article = text[text.index("<PubmedArticle>") : text.rindex("</PubmedArticle>") + len("</PubmedArticle>")]
    other = tmp_path / "other.xml"
    other.write_text(article if root == "PubmedArticle" else f"<{root}>{article}</{root}>")
    with pytest.raises(IngestError, match=rf"other\.xml: the root element is <{root}>, not <PubmedArticleSet>"):
        ingest_file("pubmed_xml", other, tmp_path / "out")
    assert not (tmp_path / "out" / "counts.json").exists()


def test_child_paths_match_elementpath():
    """_at/_all/_text_at (chains of one-tag finds, the reader's fast path) against ElementPath's
    find/findall/findtext of the same "A/B/C" path, on random trees with repeated and missing tags."""
    import random
    import xml.etree.ElementTree as ET

    from pipeline.ingest.pubmed import _all, _at, _text_at

    rng = random.Random(7)

    def grow(element, depth):
        for _ in range(rng.randint(0, 3) if depth < 4 else 0):
            child = ET.SubElement(element, rng.choice("ABC"))
            child.text = rng.choice([None, "", f"t{rng.randint(0, 99)}"])
            grow(child, depth + 1)

    for _ in range(300):
        root = ET.Element("R")
        grow(root, 0)
        for length in (1, 2, 3):
            tags = [rng.choice("ABCD") for _ in range(length)]
            path = "/".join(tags)
            assert _all(root, *tags) == root.findall(path)
            assert _at(root, *tags) is root.find(path)
            assert _text_at(root, *tags) == root.findtext(path)
