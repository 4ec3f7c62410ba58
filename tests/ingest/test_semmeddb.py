from __future__ import annotations

import gzip
import shutil

import pytest
from support.data import DATA, counts, rows

from pipeline.ingest.base import IngestError
from pipeline.ingest.records import RowError
from pipeline.ingest.run import ingest_file
from pipeline.ingest.semmeddb.fields import parse_cui_field


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C0012345", ["C0012345"]),
        ("C0796614|931", ["C0796614"]),
        ("6520", ["GENE:6520"]),
        ("3429|5715", ["GENE:3429", "GENE:5715"]),
    ],
)
def test_cui_rule(value, expected):
    assert parse_cui_field(value, "SUBJECT_CUI") == expected


@pytest.mark.parametrize("value", ["1|medd", "", None, "C123", "medd"])
def test_cui_rule_rejects(value):
    with pytest.raises(RowError) as info:
        parse_cui_field(value, "OBJECT_CUI")
    assert info.value.field == "OBJECT_CUI"


def test_predication_reader(tmp_path):
    out = tmp_path / "pred"
    result = ingest_file("semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv", out)
    assert (result.rows_read, result.rows_accepted, result.rows_quarantined) == (10, 5, 5)
    assert counts(out)["sha256"] == result.sha256

    predications = rows(out, "predications")
    by_id = {}
    for row in predications:
        by_id.setdefault(row["predication_id"], []).append(row)
    assert sorted(by_id) == [1001, 1002, 1003, 1004, 1008]
    assert by_id[1002][0]["subject_cui"] == "C0796614"  # CUI wins over the trailing gene id
    assert by_id[1002][0]["object_novelty"] is False
    assert by_id[1003][0]["subject_cui"] == "GENE:6520"
    assert [(r["subject_cui"], r["object_cui"]) for r in by_id[1004]] == [
        ("GENE:3429", "C0000123"),
        ("GENE:5715", "C0000123"),
    ]
    assert by_id[1008][0]["subject_novelty"] is None
    assert by_id[1001][0] == {
        "predication_id": 1001,
        "doc_id": "PMID:12345678",
        "sentence_id": 501,
        "predicate": "TREATS",
        "subject_cui": "C0012345",
        "object_cui": "C0000123",
        "subject_novelty": True,
        "object_novelty": True,
    }

    concepts = {row["cui"]: row for row in rows(out, "concepts")}
    assert concepts["C0012345"]["name"] == "Sjögren's syndrome, primary"  # latin-1 and \' decoded
    assert concepts["C0000123"]["name"] == 'Drug "X"'
    assert concepts["C0024117"]["name"] == "Back\\slash lung"
    assert concepts["GENE:3429"]["name"] == "IFI27" and concepts["GENE:5715"]["semtypes"] == ["aapp"]

    mentions = {(r["doc_id"], r["cui"]): r["count"] for r in rows(out, "mentions")}
    assert mentions[("PMID:12345678", "C0012345")] == 2  # subject of 1001, object of 1003
    assert (
        mentions[("PMID:23456789", "C0000123")] == 2
    )  # objects of 1004 (once, not per gene) and subject of 1008

    quarantine = {r["line"]: r for r in rows(out, "quarantine")}
    assert sorted(quarantine) == [5, 6, 7, 9, 10]
    assert quarantine[5]["field"] == "SUBJECT_CUI" and "medd" in quarantine[5]["reason"]
    assert quarantine[6]["field"] == "*" and "got 5" in quarantine[6]["reason"]
    assert quarantine[7]["field"] == "PMID"
    assert quarantine[9]["field"] == "SUBJECT_CUI" and quarantine[9]["reason"] == "missing CUI"
    assert quarantine[10]["field"] == "SUBJECT_NOVELTY"
    assert all(r["source_file"] == "PREDICATION.csv" and r["raw"] for r in quarantine.values())


def test_predication_reader_gzip_same_result(tmp_path):
    packed = tmp_path / "PREDICATION.csv.gz"
    with open(DATA / "semmeddb" / "PREDICATION.csv", "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain = ingest_file("semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv", tmp_path / "a")
    zipped = ingest_file("semmeddb_predication", packed, tmp_path / "b")
    assert rows(tmp_path / "a", "predications") == rows(tmp_path / "b", "predications")
    assert plain.rows_quarantined == zipped.rows_quarantined
    assert plain.sha256 != zipped.sha256  # checksum of the file as stored


@pytest.mark.parametrize("damage", ["truncated", "deflate_data_overwritten", "crc_wrong"])
def test_damaged_gzip_is_a_clear_error(tmp_path, damage):
    packed = tmp_path / "PREDICATION.csv.gz"
    body = (DATA / "semmeddb" / "PREDICATION.csv").read_bytes() * 50
    data = bytearray(gzip.compress(body))
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "deflate_data_overwritten":
        data[len(data) // 3 : len(data) // 3 + 64] = bytes(range(64))
    else:
        data[-8] ^= 0xFF  # the CRC-32 of the trailer
    packed.write_bytes(bytes(data))
    out = tmp_path / "out"
    (out).mkdir()
    (out / "counts.json").write_text("{}")  # an earlier run's: must not vouch for this one
    with pytest.raises(IngestError, match=r"PREDICATION\.csv\.gz: corrupt or truncated gzip"):
        ingest_file("semmeddb_predication", packed, out)
    # Nothing of the failed run stays: no complete-looking Parquet of the rows read before the
    # damage, and no counts.json.
    assert sorted(p.name for p in out.iterdir()) == []


def test_utf16_file_is_a_clear_error(tmp_path):
    wrong = tmp_path / "CITATIONS.csv"
    wrong.write_bytes((DATA / "semmeddb" / "CITATIONS.csv").read_text("latin-1").encode("utf-16"))
    with pytest.raises(IngestError, match=r"CITATIONS\.csv: line 1: .*UTF-16"):
        ingest_file("semmeddb_citations", wrong, tmp_path / "out")


def test_citations_sentence_entity(tmp_path):
    result = ingest_file("semmeddb_citations", DATA / "semmeddb" / "CITATIONS.csv", tmp_path / "c")
    assert (result.rows_accepted, result.rows_quarantined) == (2, 1)
    docs = {r["doc_id"]: r for r in rows(tmp_path / "c", "documents")}
    assert docs["PMID:12345678"]["year"] == 2018 and docs["PMID:23456789"]["year"] is None
    assert docs["PMID:12345678"]["source"] == "semmeddb"
    assert rows(tmp_path / "c", "quarantine")[0]["field"] == "PYEAR"

    result = ingest_file("semmeddb_sentence", DATA / "semmeddb" / "SENTENCE.csv", tmp_path / "s")
    assert (result.rows_accepted, result.rows_quarantined) == (3, 1)
    sentences = rows(tmp_path / "s", "sentences")
    assert sentences[0] == {
        "sentence_id": 501,
        "doc_id": "PMID:12345678",
        "type": "ti",
        "number": 1,
        # latin-1 decoded, the dump's backslash escapes undone
        "text": 'Sj\u00f6gren\'s syndrome treated with drug "X", a study.',
    }
    assert [row["text"] for row in sentences[1:]] == ["SLC3A2 stimulates Sjogren.", "IFI27 and PSMD9 coexist."]

    result = ingest_file("semmeddb_entity", DATA / "semmeddb" / "ENTITY.csv", tmp_path / "e")
    assert (result.rows_accepted, result.rows_quarantined) == (4, 1)
    mentions = [(r["sentence_id"], r["cui"]) for r in rows(tmp_path / "e", "entity_mentions")]
    assert mentions == [(501, "C0012345"), (502, "GENE:6520"), (503, "C0796614"), (999, "C0000123")]
    counts(tmp_path / "e")


def test_every_table_with_a_doc_id_has_its_statistics(tmp_path):
    """The doc_id statistics a merge on the delta reads instead of the doc_ids (it skips every row
    group whose ids lie outside the CORD-19 ids it looks for); the other columns' only in the
    predications (the tables the merge passes on whole), which readers skip row groups of."""
    import pyarrow.parquet as pq

    from pipeline.builds.layout import TableFolder

    ingest_file("semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv", tmp_path / "p")
    ingest_file("semmeddb_sentence", DATA / "semmeddb" / "SENTENCE.csv", tmp_path / "s")
    ingest_file("semmeddb_citations", DATA / "semmeddb" / "CITATIONS.csv", tmp_path / "c")
    checked = 0
    for folder, name in ((tmp_path / "p", "mentions"), (tmp_path / "p", "predications"),
                         (tmp_path / "s", "sentences"), (tmp_path / "c", "documents")):  # fmt: skip
        metadata = pq.ParquetFile(TableFolder(folder).table(name)).metadata
        columns = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
        for group in range(metadata.num_row_groups):
            for at, column in enumerate(columns):
                stats = metadata.row_group(group).column(at).statistics
                has = stats is not None and stats.has_min_max
                assert has == (column == "doc_id" or name == "predications"), (name, column)
                checked += 1
    assert checked > 10


def test_unknown_kind_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown ingest kind"):
        ingest_file("nope", DATA / "semmeddb" / "CITATIONS.csv", tmp_path)
    with pytest.raises(IngestError, match="no such input file"):
        ingest_file("semmeddb_citations", tmp_path / "missing.csv", tmp_path / "out")


def test_collection_is_timed_while_a_file_is_read_and_restored_after(tmp_path, monkeypatch) -> None:
    """The reader runs with automatic collection off, yet a reference cycle made meanwhile is
    freed by the timed collection; afterwards gc is as it was, including after a failed read."""
    import gc
    import time
    import weakref

    from pipeline.ingest import run as run_module

    seen: dict[str, object] = {}

    class Node:
        pass

    def read(source, run, **_options) -> None:
        seen["enabled_inside"] = gc.isenabled()
        cycle = Node()
        cycle.self = cycle
        seen["cycle"] = weakref.ref(cycle)
        del cycle
        deadline = time.monotonic() + 5
        while seen["cycle"]() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["freed_inside"] = seen["cycle"]() is None
        if seen.get("fail"):
            raise RuntimeError("reader failed")

    reader = run_module.reader_for("semmeddb_predication")
    monkeypatch.setattr(
        run_module, "reader_for", lambda kind: type(reader)(reader.kind, reader.produces, read)
    )
    monkeypatch.setattr(run_module, "GC_INTERVAL_S", 0.05)
    source = tmp_path / "in.csv"
    source.write_text("")
    assert gc.isenabled()
    run_module.ingest_file("semmeddb_predication", source, tmp_path / "out")
    assert seen["enabled_inside"] is False and seen["freed_inside"] is True
    assert gc.isenabled()
    seen["fail"] = True
    with pytest.raises(RuntimeError, match="reader failed"):
        run_module.ingest_file("semmeddb_predication", source, tmp_path / "out2")
    assert gc.isenabled()
