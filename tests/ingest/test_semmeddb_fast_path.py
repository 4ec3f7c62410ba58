"""The PREDICATION reader's block path (Arrow, column-wise) against its record path (csv module,
one row at a time): same tables, same quarantine rows, same line numbers."""

from __future__ import annotations

import gzip
import random
from collections import Counter

import pytest
from support.data import DATA, counts, rows

from pipeline.ingest.run import ingest_file
from pipeline.ingest.semmeddb.predication_blocks import BLOCK_BYTES
from pipeline.ingest.synth import generate_corpus


def _outputs(out):
    result = counts(out)
    mentions = Counter()
    for row in rows(out, "mentions"):  # partial counts: the merge sums them per (doc, cui)
        mentions[(row["doc_id"], row["cui"])] += row["count"]
    return {
        "counts": {k: result[k] for k in ("rows_read", "rows_accepted", "rows_quarantined")},
        "predications": rows(out, "predications"),
        "quarantine": rows(out, "quarantine"),
        "concepts": rows(out, "concepts"),
        "mentions": dict(mentions),
    }


def _both_paths(path, tmp_path, block_bytes=BLOCK_BYTES):
    ingest_file("semmeddb_predication", path, tmp_path / "record", block_path=False)
    ingest_file("semmeddb_predication", path, tmp_path / "block", block_path=True, block_bytes=block_bytes)
    return _outputs(tmp_path / "record"), _outputs(tmp_path / "block")


@pytest.mark.parametrize("block_bytes", [BLOCK_BYTES, 64, 300])
def test_fixture_same_tables(tmp_path, block_bytes):
    record, block = _both_paths(DATA / "semmeddb" / "PREDICATION.csv", tmp_path, block_bytes)
    assert block == record
    assert [q["line"] for q in block["quarantine"]] == [5, 6, 7, 9, 10]


def test_synthetic_corpus_same_tables(tmp_path):
    manifest = generate_corpus(tmp_path / "corpus", 20_000, seed=3, n_update_files=1)
    path = tmp_path / "corpus" / "semmeddb" / "semmedVER43_R_PREDICATION.csv.gz"
    record, block = _both_paths(path, tmp_path, 1 << 16)
    assert block == record
    assert block["counts"]["rows_quarantined"] == manifest["expected_quarantine"][path.name]


GOOD = '"{pid}","{sid}","{pmid}","TREATS","C0012345","Sj\xf6gren\\\'s, x","dsyn","1","C0000123","Drug \\"X\\"","phsu","0",\\N,\\N,\\N'
QUIRKS = [
    '"{pid}","{sid}","{pmid}","ISA","C0796614|931","MS4A1","gngm",\\N,"6520","SLC3A2","gngm","1"',  # 12 columns
    '"{pid}","{sid}","{pmid}","ISA","3429|5715","IFI27|PSMD9","gngm|aapp","1","0012","G","gngm","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","3429|5715","IFI27|PSMD9","gngm|aapp","1","672|675|672","BRCA1|BRCA2","gngm","0",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","1|medd","M","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}"," {pmid}","ISA","C0000001","M","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}",\\N,"C0000001","M","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","N","C0000001",N,"N","1","C0000123",\\N,\\N,"yes",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001",\\Nabc,"dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001","two\nlines","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001","escaped\\\nbreak","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001","lone\rcr","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001","M","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N\r',
    '"{pid}","{sid}","{pmid}","ISA","C0000001","nul\x00","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001","a"b,"dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","C0000001 ","M","dsyn","1","C0000123|C0000456","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","ISA","GENE","M","dsyn","1","99999999999999999999","D","phsu","1",\\N,\\N,\\N',
    '"{pid}","{sid}","{pmid}","TREATS"',
    "",
    '"{pid}","{sid}","00{pmid}","ISA","C0000002","",,"0","C0000002","D","phsu","1",\\N,\\N,\\N',
]


@pytest.mark.parametrize("seed", range(6))
def test_random_quirks_same_tables(tmp_path, seed):
    rng = random.Random(seed)
    lines = []
    for pid in range(1, 400):
        template = rng.choice(QUIRKS) if rng.random() < 0.25 else GOOD
        lines.append(template.format(pid=pid, sid=pid * 3, pmid=1000 + pid // 4))
    text = "\n".join(lines) + rng.choice(["\n", "", '\n"9999","1","2","ISA","C0000001","open quote'])
    path = tmp_path / "PREDICATION.csv.gz"
    with gzip.open(path, "wb") as f:
        f.write(text.encode("latin-1"))
    record, block = _both_paths(path, tmp_path, rng.choice([200, 700, 4096]))
    assert block == record


def test_quarantine_line_after_a_quoted_line_break(tmp_path):
    """A record spanning two physical lines shifts every later record's line number by one."""
    good = GOOD.format(pid=1, sid=1, pmid=1)
    broken = '"2","2","2","ISA","C0000001","two\nlines","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N'
    bad = '"3","3","3","ISA","1|medd","M","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N'
    path = tmp_path / "PREDICATION.csv"
    path.write_bytes("\n".join([good, broken, good, bad, good, ""]).encode("latin-1"))
    record, block = _both_paths(path, tmp_path, 4096)
    assert block == record
    assert [q["line"] for q in block["quarantine"]] == [5]


def test_gene_lists_on_both_sides_give_every_pair(tmp_path):
    """A row with gene lists on both sides: one predication per (subject, object) pair,
    subject-major; a name or semantic type is split part by part where the counts agree, else
    shared whole (hand-checked, and the same as the record path)."""
    genes = (
        '"7","21","1007","INTERACTS_WITH","3429|5715|7157","IFI27|PSMD9|TP53","gngm","1",'
        '"672|675|672","BRCA1|BRCA2|BRCA1","gngm|aapp","0",\\N,\\N,\\N'
    )
    lines = [GOOD.format(pid=pid, sid=pid, pmid=1000 + pid) for pid in range(1, 7)]
    lines += [genes, GOOD.format(pid=8, sid=8, pmid=1008)]
    path = tmp_path / "PREDICATION.csv"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    record, block = _both_paths(path, tmp_path, 4096)
    assert block == record
    pairs = [(r["subject_cui"], r["object_cui"]) for r in block["predications"] if r["predication_id"] == 7]
    assert pairs == [(f"GENE:{s}", f"GENE:{o}") for s in (3429, 5715, 7157) for o in (672, 675)]
    assert [r["predication_id"] for r in block["predications"]] == [1, 2, 3, 4, 5, 6] + [7] * 6 + [8]
    concepts = {c["cui"]: (c["name"], c["semtypes"]) for c in block["concepts"]}
    assert concepts["GENE:5715"] == ("PSMD9", ["gngm"])
    # three names for two distinct objects: the whole value is shared; two types: split
    assert concepts["GENE:672"] == ("BRCA1|BRCA2|BRCA1", ["gngm"])
    assert concepts["GENE:675"] == ("BRCA1|BRCA2|BRCA1", ["aapp"])
    assert block["mentions"][("PMID:1007", "GENE:672")] == 1
    assert block["counts"]["rows_accepted"] == 8


def test_a_field_that_starts_with_the_null_marker_reads_as_the_record_path_reads_it(tmp_path):
    r"""Arrow would read ``\Nabc`` as "Nabc"; the record path keeps what the dump's NULL rule
    gives, and the block path must send such a block there (here the concept's first name)."""
    lines = [GOOD.format(pid=pid, sid=pid, pmid=1000 + pid) for pid in range(1, 4)]
    lines.insert(1, '"9","9","1009","ISA","C0000009",\\Nabc,"dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N')
    lines.append(
        '"10","10","1010","ISA","C0000009","Later name","dsyn","1","C0000123","D","phsu","1",\\N,\\N,\\N'
    )
    path = tmp_path / "PREDICATION.csv"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    record, block = _both_paths(path, tmp_path, 4096)
    assert block == record
    names = {c["cui"]: c["name"] for c in block["concepts"]}
    assert names["C0000009"] not in ("Nabc", "Later name")


@pytest.mark.parametrize("block_bytes", [BLOCK_BYTES, 200])
def test_a_quarantined_row_names_no_concept(tmp_path, block_bytes):
    """A row quarantined for its novelty, or for its other argument's CUI, gave its good
    argument's concept its name and semantic type all the same (found in review): only accepted
    rows name concepts, on both paths."""
    lines = [
        '"1","11","101","ISA","C2455521","Bad row name","humn","X","C0000123","D","phsu","1",\\N,\\N,\\N',
        '"2","12","102","ISA","C0000777","Bad too","humn","1","1|medd","M","dsyn","1",\\N,\\N,\\N',
        '"3","13","103","ISA","C2455521","Quinaserol","phsu","1","C0000123","D","phsu","0",\\N,\\N,\\N',
    ]
    path = tmp_path / "PREDICATION.csv"
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    record, block = _both_paths(path, tmp_path, block_bytes)
    assert block == record
    assert [q["line"] for q in record["quarantine"]] == [1, 2]
    concepts = {c["cui"]: (c["name"], sorted(c["semtypes"])) for c in record["concepts"]}
    assert concepts == {"C2455521": ("Quinaserol", ["phsu"]), "C0000123": ("D", ["phsu"])}


@pytest.mark.parametrize("block_bytes", [BLOCK_BYTES, 200])
def test_a_utf8_byte_order_mark_is_skipped_on_both_paths(tmp_path, block_bytes):
    """Arrow (the block path) skips a BOM at the start of the file; the record path quarantined
    the first row for it (found in review): both read it now."""
    lines = [GOOD.format(pid=1, sid=11, pmid=101), GOOD.format(pid=2, sid=12, pmid=102)]
    path = tmp_path / "PREDICATION.csv"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode("latin-1"))
    record, block = _both_paths(path, tmp_path, block_bytes)
    assert block == record
    assert record["counts"] == {"rows_read": 2, "rows_accepted": 2, "rows_quarantined": 0}
