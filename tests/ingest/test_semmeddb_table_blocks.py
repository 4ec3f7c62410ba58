"""The SENTENCE, CITATIONS and ENTITY readers' block paths (Arrow, column-wise) against their record
paths (csv module, one row at a time): the same tables, quarantine rows and line numbers, on the
fixtures, on both synthetic profiles and on random files of quirky lines."""

from __future__ import annotations

import gzip
import random

import pytest
from support.data import DATA, counts, rows

from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus

TABLES = {
    "semmeddb_sentence": ["sentences"],
    "semmeddb_citations": ["documents"],
    "semmeddb_entity": ["entity_mentions", "concepts"],
}


def _outputs(out, kind):
    result = counts(out)
    return {
        "counts": {k: result[k] for k in ("rows_read", "rows_accepted", "rows_quarantined")},
        "quarantine": rows(out, "quarantine"),
        **{table: rows(out, table) for table in TABLES[kind]},
    }


def _both_paths(kind, path, tmp_path, block_bytes=1 << 20):
    ingest_file(kind, path, tmp_path / "record", block_path=False)
    ingest_file(kind, path, tmp_path / "block", block_path=True, block_bytes=block_bytes)
    return _outputs(tmp_path / "record", kind), _outputs(tmp_path / "block", kind)


@pytest.mark.parametrize("block_bytes", [1 << 20, 64, 300])
@pytest.mark.parametrize(
    ("kind", "name"),
    [("semmeddb_sentence", "SENTENCE.csv"), ("semmeddb_citations", "CITATIONS.csv"), ("semmeddb_entity", "ENTITY.csv")],
)
def test_fixtures_same_tables(tmp_path, kind, name, block_bytes):
    record, block = _both_paths(kind, DATA / "semmeddb" / name, tmp_path, block_bytes)
    assert block == record
    assert record["counts"]["rows_quarantined"] >= 1  # each fixture has a bad row


# the calibrated corpus (about 8 s) runs in the full suite only
@pytest.mark.parametrize("profile", ["compact", pytest.param("calibrated", marks=pytest.mark.slow)])
def test_synthetic_corpora_same_tables(tmp_path, profile):
    manifest = generate_corpus(tmp_path / "corpus", 20_000, seed=3, profile=profile)
    for kind, name in (("semmeddb_sentence", "SENTENCE.csv.gz"), ("semmeddb_citations", "CITATIONS.csv"),
                       ("semmeddb_entity", "ENTITY.csv.gz")):  # fmt: skip
        path = tmp_path / "corpus" / "semmeddb" / f"semmedVER43_R_{name}"
        record, block = _both_paths(kind, path, tmp_path / kind, 1 << 16)
        assert block == record, name
        assert block["counts"]["rows_quarantined"] == manifest["expected_quarantine"].get(path.name, 0)
        assert block["counts"]["rows_read"] > 1000


ENTITY_GOOD = '{eid},{sid},"C0012345","Sj\xf6gren\\\'s syndrome","dsyn",\\N,\\N,"Sj\xf6gren",1000,0,8'
ENTITY_QUIRKS = [
    '{eid},{sid},\\N,"SLC3A2","gngm","6520","SLC3A2","SLC3A2",888,0,6',  # gene only: GENE_ID
    '{eid},{sid},\\N,"x","gngm","3429|5715","IFI27|PSMD9","IFI27",888,0,6',  # two genes
    '{eid},{sid},N,"x","gngm","6520","SLC3A2","SLC3A2",888,0,6',  # a literal N, not NULL
    '{eid},{sid},"N","x","gngm","6520","SLC3A2","SLC3A2",888,0,6',  # quoted: a literal N
    '{eid},{sid},\\N,"x","gngm","6520",\\N,"SLC3A2",888,0,6',  # gene without a name
    '{eid},{sid},\\N,"x","gngm",\\N,\\N,"SLC3A2",888,0,6',  # neither CUI nor gene
    '{eid},{sid},"C0796614|931","MS4A1","gngm","931","MS4A1","CD20",1000,0,4',  # CUI and gene
    '{eid},{sid},"C0000001|C0000002","A|B","dsyn|phsu",\\N,\\N,"a",1000,0,1',  # two CUIs
    '{eid},{sid},"6520","SLC3A2","gngm",\\N,\\N,"SLC3A2",888,0,6',  # a gene id in CUI
    '{eid},{sid},"1|medd","Medd","dsyn",\\N,\\N,"medd",1000,0,4',
    '{eid},{sid},"C0000123",\\N,"phsu",\\N,\\N,"X",1000,0,1',  # no name
    '{eid},{sid},"C0000123","N","N",\\N,\\N,"X",1000,0,1',
    '{eid},{sid},"C0000123","Later name","phsu|orch",\\N,\\N,"X",1000,0,1',
    '{eid},{sid},"C0000123","",\\N,\\N,\\N,"X",1000,0,1',
    '{eid},x{sid},"C0000123","D","phsu",\\N,\\N,"X",1000,0,1',
    '{eid},{sid},"C0000123","two\nlines","phsu",\\N,\\N,"X",1000,0,1',
    '{eid},{sid},"C0000123","lone\rcr","phsu",\\N,\\N,"X",1000,0,1',
    '{eid},{sid},"C0000123","D","phsu",\\N,\\N,"X",1000,0',
    '{eid},{sid},"C0000123",\\Nabc,"phsu",\\N,\\N,"X",1000,0,1',
    "",
]
SENTENCE_GOOD = '{eid},{sid},"ab",2,10,"A sentence about Sj\xf6gren\\\'s \\"X\\".",52,\\N,\\N'
SENTENCE_QUIRKS = [
    '{eid},{sid},"ti",1,0,"Title.",6,"BACKGROUND","background"',  # nine columns
    '{eid},{sid},\\N,1,0,"No type.",8,\\N,\\N',
    '{eid},{sid},"N",1,0,"Type N.",7,\\N,\\N',
    '{eid},{sid},"ab",\\N,0,"No number.",9,\\N,\\N',
    '{eid},{sid},"ab",007,0,"Leading zeros.",13,\\N,\\N',
    '{eid},{sid},"ab",99999999999,0,"Too big.",8,\\N,\\N',
    '{eid},{sid},"ab","2x",0,"Bad number.",11,\\N,\\N',
    '{eid},PMID{sid},"ab",1,0,"Bad pmid.",9,\\N,\\N',
    '{eid},{sid},"ab",1,0,"Two\nlines.",10,\\N,\\N',
    '{eid},{sid},"ab",1',
    "",
]
CITATIONS_GOOD = '{sid},"0028-4793",20180601,"2018-05-17",2018'
CITATIONS_QUIRKS = [
    '{sid},\\N,\\N,"2019-01-02",\\N',
    '{sid},\\N,\\N,"2019-01-02",0',
    '{sid},\\N,\\N,"2019-01-02","20x0"',
    '{sid},\\N,\\N,"2019-01-02",N',
    '"{sid}",\\N,\\N,"2019-01-02",02019',
    '{sid}0000000000000000000,\\N,\\N,"2019",2019',
    '{sid},\\N,\\N,"2019"',
    "",
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("kind", "good", "quirks"),
    [
        ("semmeddb_entity", ENTITY_GOOD, ENTITY_QUIRKS),
        ("semmeddb_sentence", SENTENCE_GOOD, SENTENCE_QUIRKS),
        ("semmeddb_citations", CITATIONS_GOOD, CITATIONS_QUIRKS),
    ],
)
def test_random_quirks_same_tables(tmp_path, kind, good, quirks, seed):
    rng = random.Random(seed)
    lines = [
        (rng.choice(quirks) if rng.random() < 0.25 else good).format(eid=i, sid=1000 + i // 3) for i in range(1, 400)
    ]
    text = "\n".join(lines) + rng.choice(["\n", "", '\n9999,1,"open quote'])
    path = tmp_path / "table.csv.gz"
    with gzip.open(path, "wb") as f:
        f.write(text.encode("latin-1"))
    record, block = _both_paths(kind, path, tmp_path, rng.choice([200, 700, 4096]))
    assert block == record
    assert record["counts"]["rows_quarantined"] > 0 and record["counts"]["rows_accepted"] > 0


def test_gene_only_entity_reads_its_gene_id_and_a_literal_n_is_quarantined(tmp_path):
    """Hand-checked: a CUI of ``\\N`` (NULL) takes GENE_ID; a literal N in CUI is an invalid CUI."""
    lines = [
        '1,10,\\N,"SLC3A2","gngm","6520","SLC3A2","SLC3A2",888,0,6',
        '2,10,N,"SLC3A2","gngm","6520","SLC3A2","SLC3A2",888,0,6',
        '3,11,"C0000123","Drug X","phsu",\\N,\\N,"X",1000,0,1',
    ]
    path = tmp_path / "ENTITY.csv"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    record, block = _both_paths("semmeddb_entity", path, tmp_path, 4096)
    assert block == record
    assert [(r["sentence_id"], r["cui"]) for r in block["entity_mentions"]] == [(10, "GENE:6520"), (11, "C0000123")]
    assert [(q["line"], q["field"]) for q in block["quarantine"]] == [(2, "CUI")]
    assert {c["cui"]: c["name"] for c in block["concepts"]} == {"GENE:6520": "SLC3A2", "C0000123": "Drug X"}


def test_sentence_text_nulls_and_escapes_same_on_both_paths(tmp_path):
    # The text is kept for the hops' evidence: \N is NULL, a quoted "N" is the letter N (Arrow
    # reads both as N, so the block path hands them to the record path), escapes are undone.
    lines = [
        b'"1","10","ti","1","0",\\N,"0",\\N,\\N\n',
        b'"2","10","ab","2","0","N","1",\\N,\\N\n',
        b'"3","10","ab","3","0","He said \\"no\\", \\\\ then left.","9",\\N,\\N\n',
        b'"4","11","ab","1","0","","0",\\N,\\N\n',
        b'"5","11","ab","2","0","Caf\xe9 au lait spots.","20",\\N,\\N\n',
    ]
    path = tmp_path / "SENTENCE.csv"
    path.write_bytes(b"".join(lines))
    record, block = _both_paths("semmeddb_sentence", path, tmp_path)
    assert block == record
    assert [row["text"] for row in record["sentences"]] == [
        None, "N", 'He said "no", \\ then left.', "", "Caf\u00e9 au lait spots.",
    ]
