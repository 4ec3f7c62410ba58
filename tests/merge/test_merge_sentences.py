"""Rule 6 of the merge: the sentences the predications name, one row per sentence (the later
SENTENCE file wins), text capped with an ellipsis; in sentence_id ranges on a small budget, the
same rows as in memory."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus
from pipeline.merge import merge_ingested
from pipeline.merge.sentences import ELLIPSIS, SENTENCE_TEXT_CAP

PREDICATION = (
    '"1","101","1001","TREATS","C0000001","Aspirin","phsu","1","C0000002","Headache","sosy","1"\n'
    '"2","102","1001","NEG_TREATS","C0000002","Headache","sosy","1","C0000001","Aspirin","phsu","1"\n'
    '"3","201","1002","INHIBITS","C0000001","Aspirin","phsu","1","C0000003","COX-1","gngm","1"\n'
)
LONG = "Aspirin inhibits COX-1 " + "and much else besides " * 40  # 903 characters
OLDER_SENTENCES = (
    '"101","1001","ti","1","0","An older reading of sentence 101.","10",\\N,\\N\n'
    '"102","1001","ab","2","0","Headache is not treated by aspirin here.","40",\\N,\\N\n'
    '"103","1001","ab","3","0","No predication names this sentence.","30",\\N,\\N\n'
    f'"201","1002","ti","1","0","{LONG}","903",\\N,\\N\n'
)
NEWER_SENTENCES = '"101","1001","ti","1","0","Aspirin treats headache.","24",\\N,\\N\n'


def _ingested(tmp_path, files):
    folders = []
    for i, (kind, name, text) in enumerate(files):
        path = tmp_path / name
        path.write_text(text, encoding="latin-1")
        folders.append(tmp_path / f"in-{i}")
        ingest_file(kind, path, folders[-1])
    return folders


def _sentences(tables_dir):
    return {row["sentence_id"]: row for row in pq.read_table(tables_dir / "sentences.parquet").to_pylist()}


def test_sentences_are_those_of_the_predications_later_file_wins_text_capped(tmp_path):
    folders = _ingested(tmp_path, [
        ("semmeddb_predication", "PREDICATION.csv", PREDICATION),
        ("semmeddb_sentence", "SENTENCE_1.csv", OLDER_SENTENCES),
        ("semmeddb_sentence", "SENTENCE_2.csv", NEWER_SENTENCES),
    ])  # fmt: skip
    counts = merge_ingested(folders, tmp_path / "tables")
    sentences = _sentences(tmp_path / "tables")
    # 103 is named by no predication; 101 is in both files and the later one's text wins
    assert sorted(sentences) == [101, 102, 201]
    assert counts["tables"]["sentences"] == 3
    assert sentences[101] == {"sentence_id": 101, "doc_id": "PMID:1001", "text": "Aspirin treats headache."}
    assert sentences[102]["text"] == "Headache is not treated by aspirin here."
    capped = sentences[201]["text"]
    assert len(LONG) > SENTENCE_TEXT_CAP and len(capped) == SENTENCE_TEXT_CAP
    assert capped == LONG[: SENTENCE_TEXT_CAP - 1] + ELLIPSIS


def test_time_slice_cuts_the_sentences_of_later_papers(tmp_path):
    citations = '"1001","x","2001","2001","2001"\n"1002","x","2020","2020","2020"\n'
    folders = _ingested(tmp_path, [
        ("semmeddb_predication", "PREDICATION.csv", PREDICATION),
        ("semmeddb_sentence", "SENTENCE.csv", OLDER_SENTENCES),
        ("semmeddb_citations", "CITATIONS.csv", citations),
    ])  # fmt: skip
    counts = merge_ingested(folders, tmp_path / "tables", {"until_year": 2010})
    assert sorted(_sentences(tmp_path / "tables")) == [101, 102]  # 201 is paper 1002's, of 2020
    assert counts["time_slice"]["rows"]["sentences"] == {"before": 3, "kept": 2, "removed": 1}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    corpus = tmp_path_factory.mktemp("corpus")
    manifest = generate_corpus(corpus, 3000, seed=11, n_update_files=2)
    out = tmp_path_factory.mktemp("ingested")
    folders = []
    for i, entry in enumerate(manifest["files"]):
        folders.append(out / f"{i:03d}")
        ingest_file(entry["kind"], corpus / entry["path"], folders[-1])
    return folders


def test_sentence_ranges_on_a_small_budget_give_the_in_memory_rows(synthetic, tmp_path):
    reference = merge_ingested(synthetic, tmp_path / "memory")
    resources = {"memory_gib": 8 * 1024 / 2**30, "spill_dir": str(tmp_path / "spill")}  # 8 KiB
    spilled = merge_ingested(synthetic, tmp_path / "disk", {"resources": resources})
    assert spilled["merge"]["sentence_partitions"] > 2
    assert _sentences(tmp_path / "disk") == _sentences(tmp_path / "memory")
    # every predication's sentence is there, with the synthetic SENTENCE file's text
    predications = pq.read_table(tmp_path / "memory" / "predications.parquet", columns=["sentence_id", "doc_id"])
    sentences = _sentences(tmp_path / "memory")
    assert set(predications["sentence_id"].to_pylist()) == set(sentences) and reference["tables"]["sentences"] == len(sentences)
    for sentence_id, doc_id in zip(*predications.to_pydict().values(), strict=True):
        assert sentences[sentence_id]["doc_id"] == doc_id and sentences[sentence_id]["text"].endswith(".")


def test_text_cap_cuts_only_beyond_the_cap_and_counts_characters_not_bytes():
    import pyarrow as pa

    from pipeline.merge.sentences import capped_text

    at_cap, over = "\u00e9" * SENTENCE_TEXT_CAP, "\u00e9" * (SENTENCE_TEXT_CAP + 1)  # 2 bytes a character in UTF-8
    assert capped_text(pa.array([at_cap, over, None, ""])).to_pylist() == [
        at_cap, "\u00e9" * (SENTENCE_TEXT_CAP - 1) + ELLIPSIS, None, "",
    ]
