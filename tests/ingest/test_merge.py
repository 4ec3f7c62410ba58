from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import tables
from pipeline.ingest.common import IngestError, ingest_file
from pipeline.ingest.merge import merge_ingested

from .helpers import DATA, rows

INPUTS = {
    "cit": ("semmeddb_citations", DATA / "semmeddb" / "CITATIONS.csv"),
    "pred": ("semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv"),
    "sent": ("semmeddb_sentence", DATA / "semmeddb" / "SENTENCE.csv"),
    "ent": ("semmeddb_entity", DATA / "semmeddb" / "ENTITY.csv"),
    "base": ("pubmed_xml", DATA / "pubmed" / "baseline_refs.xml"),
    "cord": ("cord19_metadata", DATA / "cord19" / "metadata.csv"),
    "occ": ("citations_table", DATA / "citations" / "open_citation_collection.csv"),
    "upd1": ("pubmed_xml", DATA / "pubmed" / "update_delete.xml"),
    "upd2": ("pubmed_xml", DATA / "pubmed" / "update_readd.xml"),
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    root = tmp_path_factory.mktemp("ingested")
    for name, (kind, path) in INPUTS.items():
        ingest_file(kind, path, root / name)
    return root


def merged(ingested, tmp_path, names, config=None):
    out = tmp_path / "merged"
    result = merge_ingested([n if hasattr(n, "parent") else ingested / n for n in names], out, config or {})
    for name in ("documents", "mentions", "predications", "citations", "concepts", "quarantine"):
        assert pq.read_schema(out / f"{name}.parquet").equals(tables.ALL_TABLES[name]), name
    assert json.loads((out / "counts.json").read_text())["tables"] == result["tables"]
    return out, result


def test_doi_dedupe(ingested, tmp_path):
    out, result = merged(ingested, tmp_path, ["base", "cord"])
    docs = {d["doc_id"]: d for d in rows(out, "documents")}
    assert sorted(docs) == ["CORD:ejv2xln0", "PMID:12345678", "PMID:23456789", "PMID:34567890"]
    by_doi = docs["PMID:34567890"]  # CORD:02tnwd4m matched by DOI (other letter case)
    assert by_doi["cord_uid"] == "02tnwd4m" and by_doi["source"] == "pubmed"
    assert by_doi["title"] == "Third paper, deleted later."  # PubMed ranks above CORD-19
    assert by_doi["abstract"] == "An abstract\nspanning two lines."  # filled from CORD-19
    assert docs["PMID:12345678"]["cord_uid"] == "ug7v899j"  # matched by pubmed_id
    assert result["merge"]["cord_papers_matched_by_doi"] == 1
    assert result["rows_quarantined"] == 2 + 3


def test_doi_dedupe_remaps_citations(ingested, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    pq.write_table(
        pa.table({"citing": ["PMID:12345678"], "cited": ["CORD:02tnwd4m"]}, schema=tables.CITATIONS),
        extra / "citations.parquet",
    )
    (extra / "counts.json").write_text(
        json.dumps({"rows_read": 1, "rows_accepted": 1, "rows_quarantined": 0})
    )
    out, _ = merged(ingested, tmp_path, ["base", "cord", extra])
    assert {"citing": "PMID:12345678", "cited": "PMID:34567890"} in rows(out, "citations")
    assert all(not c["cited"].startswith("CORD:") for c in rows(out, "citations"))


def test_deletions_in_file_order(ingested, tmp_path):
    out, result = merged(ingested, tmp_path, ["cit", "pred", "base", "cord", "occ", "upd1"])
    docs = {d["doc_id"]: d for d in rows(out, "documents")}
    assert "PMID:34567890" not in docs
    assert "CORD:02tnwd4m" in docs  # its DOI twin was deleted, so it stays a CORD-19 paper
    assert (
        docs["PMID:23456789"]["title"] == "Second paper, revised." and docs["PMID:23456789"]["year"] == 2020
    )
    assert docs["PMID:12345678"]["year"] == 2018 and docs["PMID:12345678"]["source"] == "pubmed"
    citations = rows(out, "citations")
    assert all("PMID:34567890" not in (c["citing"], c["cited"]) for c in citations)
    assert citations == [
        {"citing": "PMID:12345678", "cited": "PMID:11111111"},
        {"citing": "PMID:12345678", "cited": "PMID:22222222"},
    ]  # PubMed and OCC rows deduplicated
    assert result["merge"]["documents_removed_by_deletion"] == 1
    assert result["merge"]["citations_removed_by_deletion"] == 2
    mentions = {(m["doc_id"], m["cui"]): m["count"] for m in rows(out, "mentions")}
    assert mentions[("PMID:12345678", "C0012345")] == 2
    assert len(rows(out, "predications")) == 6
    assert len(rows(out, "quarantine")) == result["rows_quarantined"] == 1 + 5 + 2 + 3 + 3 + 1


def test_later_record_readds_deleted_paper(ingested, tmp_path):
    out, result = merged(ingested, tmp_path, ["base", "occ", "upd1", "upd2"])
    docs = {d["doc_id"]: d for d in rows(out, "documents")}
    assert docs["PMID:34567890"]["title"] == "Third paper, re-instated."
    assert docs["PMID:34567890"]["year"] == 2021
    # the citations it made before the deletion stay deleted; nothing re-announced them
    assert all(c["citing"] != "PMID:34567890" for c in rows(out, "citations"))
    assert result["merge"]["documents_deleted_final"] == 1  # 45678901 was never re-added


def test_entity_mentions_through_sentences(ingested, tmp_path):
    out, result = merged(ingested, tmp_path, ["sent", "ent", "pred"], {"mention_source": "entities"})
    mentions = {(m["doc_id"], m["cui"]): m["count"] for m in rows(out, "mentions")}
    assert mentions == {
        ("PMID:12345678", "C0012345"): 1,
        ("PMID:12345678", "GENE:6520"): 1,
        ("PMID:23456789", "C0796614"): 1,
    }
    assert result["merge"]["entity_mentions_unresolved"] == 1  # sentence 999 is in no SENTENCE file
    unresolved = [q for q in rows(out, "quarantine") if q["field"] == "SENTENCE_ID"]
    assert len(unresolved) == 1 and "999" in unresolved[0]["reason"]
    concepts = {c["cui"]: c for c in rows(out, "concepts")}
    assert concepts["C0796614"]["semtypes"] == ["gngm"] and concepts["GENE:5715"]["name"] == "PSMD9"


def test_unfinished_ingest_dir_is_refused(tmp_path):
    (tmp_path / "half").mkdir()
    with pytest.raises(IngestError, match="no counts.json"):
        merge_ingested([tmp_path / "half"], tmp_path / "out", {})
