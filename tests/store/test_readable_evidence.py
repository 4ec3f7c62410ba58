"""The readable evidence (predicates with counts, quoted sentences) against a plain-Python grouping
of the same predications, documents and sentences, on a synthetic build, in one piece and in
spilled partitions."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline.store import evidence_rows


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from support.pipeline_runs import merged_and_graphed

    return merged_and_graphed(tmp_path_factory.mktemp("build"))


def _expected(tables, edges, per_hop):
    """Per edge: predicates by distinct predications, most first then by name; statements (sentence,
    predicate, subject) by year (most recent, unknown last), PMID, sentence id, predicate, subject."""
    years = {row["doc_id"]: row["year"] for row in pq.read_table(tables / "documents.parquet").to_pylist()}
    texts = {row["sentence_id"]: row["text"] for row in pq.read_table(tables / "sentences.parquet").to_pylist()}
    predicates: dict = {}
    statements: dict = {}
    for row in pq.read_table(tables / "predications.parquet").to_pylist():
        pair = tuple(sorted((row["subject_cui"], row["object_cui"])))
        if pair not in edges:
            continue
        predicates.setdefault(pair, {}).setdefault(row["predicate"], set()).add(row["predication_id"])
        pmid = int(row["doc_id"].removeprefix("PMID:"))
        statements.setdefault(pair, set()).add(
            (row["sentence_id"], pmid, years.get(row["doc_id"]), row["predicate"], row["subject_cui"])
        )
    expected = {}
    for pair, by_predicate in predicates.items():
        counted = sorted(((p, len(ids)) for p, ids in by_predicate.items()), key=lambda pc: (-pc[1], pc[0]))
        chosen = sorted(statements[pair], key=lambda s: (s[2] is None, -(s[2] or 0), s[1], s[0], s[3], s[4]))
        expected[pair] = (
            [{"predicate": p, "count": n} for p, n in counted],
            [{"sentence_id": s, "pmid": pmid, "year": year, "predicate": p, "subject": subject, "text": texts.get(s)}
             for s, pmid, year, p, subject in chosen[:per_hop]],
        )  # fmt: skip
    return expected


@pytest.mark.parametrize("per_hop", [0, 3, 8])
def test_predicates_and_sentences_equal_a_plain_python_grouping(built, tmp_path, per_hop):
    tables, graph = built
    edge_keys = evidence_rows.concept_edge_keys(graph)
    edges = set(zip(edge_keys[0].to_pylist(), edge_keys[1].to_pylist(), strict=True))
    expected = _expected(tables, edges, per_hop)
    several = [pair for pair, (_, sentences) in expected.items() if len(sentences) >= min(per_hop, 3)]
    assert len(several) > 50  # enough pairs with several statements for the order to matter
    for partitions in (1, 5):
        pieces = evidence_rows.evidence_tables(tables, edge_keys, 997, partitions, tmp_path / "spill", sentences_per_hop=per_hop)
        found = {(r["cui_a"], r["cui_b"]): (r["predicates"], r["sentences"]) for p in pieces for r in p.to_pylist()}
        assert found == expected
    # the synthetic corpus writes one SENTENCE row per predication sentence: every quoted one has its text
    assert all(s["text"] for _, sentences in expected.values() for s in sentences)
