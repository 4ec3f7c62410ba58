from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.data import DATA, rows
from support.spills import stale_spill_folder

from pipeline.builds import tables
from pipeline.ingest.base import IngestError
from pipeline.ingest.run import ingest_file
from pipeline.merge import mentions as merge_mentions
from pipeline.merge import merge_ingested

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


def test_broken_rows_invariant_is_an_error_naming_the_file(ingested, tmp_path):
    """Rows read = accepted + quarantined is checked always: an IngestError naming the file's
    counts.json (an `assert` raised AssertionError, and nothing at all under `python -O`)."""
    import shutil

    copy = tmp_path / "cit"
    shutil.copytree(ingested / "cit", copy)
    counts = json.loads((copy / "counts.json").read_text())
    counts["rows_read"] += 1
    (copy / "counts.json").write_text(json.dumps(counts))
    with pytest.raises(IngestError, match=r"cit/counts.json: rows read .* != accepted .* \+ quarantined"):
        merge_ingested([ingested / "pred", copy], tmp_path / "out", {})
    assert not (tmp_path / "out" / "counts.json").exists()


def test_merge_sweeps_a_killed_merges_spill_folder_first(ingested, tmp_path):
    out = tmp_path / "merged"
    stale = stale_spill_folder(out, ".merge-spill-")
    merge_ingested([ingested / "pred"], out, {})
    assert not stale.exists()


# --- mention sums: Parquet dictionaries, plain strings and compaction give the same table ---


def _mention_dir(root, name: str, frame: pd.DataFrame, row_group_rows: int):
    """An ingest output folder holding only mentions (in row groups of their own dictionaries)."""
    folder = root / name
    folder.mkdir()
    table = pa.Table.from_pandas(frame, preserve_index=False).cast(
        pa.schema([("doc_id", pa.string(), False), ("cui", pa.string(), False), ("count", pa.int32(), False)])
    )
    pq.write_table(table, folder / "mentions.parquet", row_group_size=row_group_rows)
    counts = {"rows_read": len(frame), "rows_accepted": len(frame), "rows_quarantined": 0}
    (folder / "counts.json").write_text(json.dumps(counts))
    return folder


@pytest.mark.parametrize("compact_rows", [None, 50])
def test_mentions_summed_over_files_and_row_groups(tmp_path, monkeypatch, compact_rows):
    if compact_rows is not None:  # sum early, then mix the plain-string result with later files
        monkeypatch.setattr(merge_mentions, "_MENTIONS_COMPACT_ROWS", compact_rows)
    rng = np.random.default_rng()
    frames = [
        pd.DataFrame(
            {
                "doc_id": [f"PMID:{d}" for d in rng.integers(1, 300, rows)],
                "cui": [f"C{c:07d}" for c in rng.integers(1, 80, rows)],
                "count": rng.integers(1, 4, rows),
            }
        )
        for rows in (400, 1, 700)
    ]
    dirs = [_mention_dir(tmp_path, f"f{i}", f, int(rng.integers(1, 90))) for i, f in enumerate(frames)]
    out, result = merged(None, tmp_path, dirs)

    expected = (
        pd.concat(frames)
        .groupby(["doc_id", "cui"], as_index=False)["count"]
        .sum()
        .sort_values(["doc_id", "cui"])
    )
    got = pq.read_table(out / "mentions.parquet").to_pandas()
    assert got["doc_id"].tolist() == expected["doc_id"].tolist()
    assert got["cui"].tolist() == expected["cui"].tolist()
    assert got["count"].tolist() == expected["count"].tolist()
    assert result["tables"]["mentions"] == len(expected)
