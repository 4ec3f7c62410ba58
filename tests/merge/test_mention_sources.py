"""What one mention is (``ingest.mention_source``), on a corpus small enough to count by hand.

Concepts A..G = C0000001..C0000007. Papers PMID:100 (sentences 11, 12) and PMID:200 (21).

PREDICATION (accepted rows; one more row is quarantined for its CUI)::

    1  s11  A TREATS B        A is an argument of three predications of sentence 11
    2  s11  A INHIBITS C
    3  s11  D STIMULATES A
    4  s12  A TREATS B
    5  s21  E ISA E           a self-predication: E is subject and object
    6  s21  F PART_OF E

ENTITY (one row per occurrence in the text; one more row is quarantined for its CUI)::

    s11: A, B, F              C and D are predication arguments with no ENTITY row
    s12: A, A                 A occurs twice; B is an argument with no ENTITY row
    s21: E, F
    s999: G                   a sentence in no SENTENCE file: quarantined by the merge

By hand, per (paper, concept):

* predications (argument slots): PMID:100 A 1+1+1+1=4, B 2, C 1, D 1; PMID:200 E 2+1=3, F 1.
* entities (ENTITY rows): PMID:100 A 1+2=3, B 1, F 1; PMID:200 E 1, F 1. F is in no
  predication of sentence 11 and still counts.
* both, per (sentence, concept) the ENTITY rows, else 1 if an argument there:
  s11 A 1, B 1, C 1 (added), D 1 (added), F 1; s12 A 2, B 1 (added); s21 E 1, F 1
  -> PMID:100 A 3, B 2, C 1, D 1, F 1; PMID:200 E 1, F 1.
  Argument keys (sentence, concept): s11 A B C D, s12 A B, s21 E F = 8; covered by an ENTITY
  row: s11 A B, s12 A, s21 E F = 5; added: 3. Mentions: 7 ENTITY + 3 added = 10, where the
  old sum of the two sources gave 12 + 7 = 19.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.data import rows

from pipeline.ingest.run import ingest_file
from pipeline.merge import MENTION_SOURCES, mention_source_for, merge_ingested

A, B, C, D, E, F, G = (f"C000000{i}" for i in range(1, 8))

SENTENCE = """\
"11","100","ti","1","0","A treats B; A inhibits C; D stimulates A; F.","40",\\N,\\N
"12","100","ab","2","41","A treats B, and A again.","70",\\N,\\N
"21","200","ab","1","0","E is E; F is part of E.","23",\\N,\\N
"""


def _predication(pid: int, sentence: int, pmid: int, predicate: str, subject: str, obj: str) -> str:
    return (
        f'"{pid}","{sentence}","{pmid}","{predicate}","{subject}","s","dsyn","1",'
        f'"{obj}","o","dsyn","1",\\N,\\N,\\N\n'
    )


PREDICATION = "".join(
    [
        _predication(1, 11, 100, "TREATS", A, B),
        _predication(2, 11, 100, "INHIBITS", A, C),
        _predication(3, 11, 100, "STIMULATES", D, A),
        _predication(4, 12, 100, "TREATS", A, B),
        _predication(5, 21, 200, "ISA", E, E),
        _predication(6, 21, 200, "PART_OF", F, E),
        _predication(7, 12, 100, "TREATS", "1|medd", B),  # quarantined: not a CUI
    ]
)


def _entity(eid: int, sentence: int, cui: str, start: int) -> str:
    return f'"{eid}","{sentence}","{cui}","n","dsyn",\\N,\\N,"t","1000","{start}","{start + 1}"\n'


ENTITY = "".join(
    [
        _entity(1, 11, A, 0),
        _entity(2, 11, B, 9),
        _entity(3, 11, F, 40),
        _entity(4, 12, A, 0),
        _entity(5, 12, A, 20),
        _entity(6, 21, E, 0),
        _entity(7, 21, F, 9),
        _entity(8, 999, G, 0),  # its sentence is in no SENTENCE file
        _entity(9, 11, "1|medd", 3),  # quarantined: not a CUI
    ]
)

PREDICATIONS = {
    ("PMID:100", A): 4,
    ("PMID:100", B): 2,
    ("PMID:100", C): 1,
    ("PMID:100", D): 1,
    ("PMID:200", E): 3,
    ("PMID:200", F): 1,
}
ENTITIES = {
    ("PMID:100", A): 3,
    ("PMID:100", B): 1,
    ("PMID:100", F): 1,
    ("PMID:200", E): 1,
    ("PMID:200", F): 1,
}
ADDED = {("PMID:100", C): 1, ("PMID:100", D): 1, ("PMID:100", B): 1}  # arguments with no ENTITY row
BOTH = {
    ("PMID:100", A): 3,
    ("PMID:100", B): 2,
    ("PMID:100", C): 1,
    ("PMID:100", D): 1,
    ("PMID:100", F): 1,
    ("PMID:200", E): 1,
    ("PMID:200", F): 1,
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    root = tmp_path_factory.mktemp("mention_sources")
    files = {"SENTENCE": SENTENCE, "PREDICATION": PREDICATION, "ENTITY": ENTITY}
    kinds = {
        "SENTENCE": "semmeddb_sentence",
        "PREDICATION": "semmeddb_predication",
        "ENTITY": "semmeddb_entity",
    }
    for name, text in files.items():
        (root / f"{name}.csv").write_bytes(text.encode("latin-1"))
        ingest_file(kinds[name], root / f"{name}.csv", root / name.lower())
    return root


def _merge(ingested, tmp_path, names, mention_source=None):
    config = {} if mention_source is None else {"mention_source": mention_source}
    out = tmp_path / "merged"
    result = merge_ingested([ingested / n for n in names], out, config)
    assert json.loads((out / "counts.json").read_text()) == result
    assert result["rows_read"] == result["rows_accepted"] + result["rows_quarantined"]
    assert len(rows(out, "quarantine")) == result["rows_quarantined"] + result["merge_quarantined"]
    return {(m["doc_id"], m["cui"]): m["count"] for m in rows(out, "mentions")}, result


ALL = ["sentence", "predication", "entity"]


def test_rows_read_equal_accepted_plus_quarantined(ingested, tmp_path):
    _, result = _merge(ingested, tmp_path, ALL, "both")
    by_file = {c["kind"]: c for c in result["files"]}
    assert by_file["semmeddb_predication"]["rows_read"] == 7
    assert by_file["semmeddb_predication"]["rows_quarantined"] == 1
    assert by_file["semmeddb_entity"]["rows_read"] == 9
    assert by_file["semmeddb_entity"]["rows_quarantined"] == 1
    assert (result["rows_read"], result["rows_accepted"], result["rows_quarantined"]) == (19, 17, 2)
    # the unresolved entity is quarantined by the merge, on top of the files' quarantine
    assert result["merge_quarantined"] == 1 and result["tables"]["quarantine"] == 3


def test_predications_count_argument_slots(ingested, tmp_path):
    mentions, result = _merge(ingested, tmp_path, ALL, "predications")
    assert mentions == PREDICATIONS
    assert result["mention_source"] == "predications" and result["mention_source_requested"] == "predications"
    assert result["merge"]["mentions_counted"] == 12


def test_entities_count_occurrences_in_the_text(ingested, tmp_path):
    mentions, result = _merge(ingested, tmp_path, ALL, "entities")
    assert mentions == ENTITIES
    assert result["merge"]["entity_mentions_unresolved"] == 1
    assert result["merge"]["mentions_counted"] == 7


def test_both_is_the_union_of_mentions(ingested, tmp_path):
    mentions, result = _merge(ingested, tmp_path, ALL, "both")
    assert mentions == BOTH
    merge = result["merge"]
    assert merge["entity_mentions_counted"] == 7
    assert merge["predication_argument_slots"] == 12  # what predications counts
    assert merge["predication_argument_mentions"] == 8
    assert merge["predication_argument_mentions_covered_by_entities"] == 5
    assert merge["predication_argument_mentions_added"] == 3
    assert merge["mentions_counted"] == 7 + 3 == sum(BOTH.values())
    # never more than the ENTITY mentions plus the arguments they do not cover, never less
    # than the ENTITY mentions, and never the old double count
    for key, count in mentions.items():
        assert count == ENTITIES.get(key, 0) + ADDED.get(key, 0)
        assert ENTITIES.get(key, 0) <= count <= ENTITIES.get(key, 0) + PREDICATIONS.get(key, 0)


def test_both_after_a_deletion(ingested, tmp_path):
    """A paper deleted by a later file leaves neither its ENTITY rows nor its arguments."""
    deleting = tmp_path / "deleting"
    deleting.mkdir()
    pq.write_table(
        pa.table({"doc_id": ["PMID:200"], "source_file": ["upd.xml"]}),
        deleting / "deletions.parquet",
    )
    (deleting / "counts.json").write_text(
        json.dumps({"kind": "pubmed_xml", "rows_read": 1, "rows_accepted": 1, "rows_quarantined": 0})
    )
    mentions, result = _merge(ingested, tmp_path, [*ALL, deleting], "both")
    assert mentions == {key: n for key, n in BOTH.items() if key[0] == "PMID:100"}
    merge = result["merge"]
    assert merge["entity_mentions_removed_by_deletion"] == 2  # s21: E, F
    assert merge["predication_argument_mentions_removed_by_deletion"] == 2  # s21: E, F
    assert merge["predication_argument_mentions"] == 6
    assert merge["predication_argument_mentions_covered_by_entities"] == 3
    assert merge["predication_argument_mentions_added"] == 3
    assert merge["predication_argument_slots"] == 8


def test_auto_takes_predications_even_with_entity_files(ingested, tmp_path):
    """The default reproduces the paper's paper-concept count (tests/graph/test_paper_figures.py)."""
    mentions, result = _merge(ingested, tmp_path, ALL)  # no mention_source: the default
    assert mentions == PREDICATIONS
    assert result["mention_source_requested"] == "auto" and result["mention_source"] == "predications"
    assert "196M paper-concept relations" in result["mention_source_reason"]
    assert "1 SemMedDB ENTITY file(s) are not read" in result["mention_source_reason"]
    assert "entity_mentions_unresolved" not in result["merge"]  # entities are not read at all


def test_auto_takes_predications_without_entity_files(ingested, tmp_path):
    mentions, result = _merge(ingested, tmp_path, ["sentence", "predication"], "auto")
    assert mentions == PREDICATIONS
    assert result["mention_source"] == "predications"
    assert "not read" not in result["mention_source_reason"]


def test_mention_source_for_refuses_unknown_values():
    assert MENTION_SOURCES == ("auto", "entities", "predications", "both")
    assert mention_source_for("both", []) == ("both", "mention_source: both set in the configuration")
    # The schema's message, naming the key: ingest.mention_source: 'sum' is not one of [...]
    with pytest.raises(ValueError, match=r"ingest\.mention_source: 'sum' is not one of"):
        mention_source_for("sum", [])
