"""The readable evidence (predicates with counts, quoted sentences) against a plain-Python grouping
of the same predications, documents and sentences, on a synthetic build, in one piece and in
spilled partitions."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.store import evidence_rows


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
@pytest.mark.parametrize("filtered_scan", [True, False], ids=["filtered scan", "whole scan"])
def test_predicates_and_sentences_equal_a_plain_python_grouping(built, tmp_path, monkeypatch, per_hop, filtered_scan):
    """Also with the scan that keeps only the edges' concepts first (few edges, a rerun's) and
    without it (every edge of a build)."""
    monkeypatch.setattr(evidence_rows, "FILTERED_SCAN_EDGES", 10**9 if filtered_scan else 0)
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


@pytest.mark.parametrize("per_hop", [1, 3])
def test_papers_evidence_equals_a_plain_python_grouping(built, per_hop):
    """What each paper says of each concept: predicates by distinct predications, the statements
    naming it by (sentence id, predicate, subject, object), the first per_hop of them quoted; in
    one range and in 4 doc_id ranges."""
    from pipeline.store.paper_evidence import paper_tables

    tables, _ = built
    years = {row["doc_id"]: row["year"] for row in pq.read_table(tables / "documents.parquet").to_pylist()}
    texts = {row["sentence_id"]: row["text"] for row in pq.read_table(tables / "sentences.parquet").to_pylist()}
    counts: dict = {}
    statements: dict = {}
    for row in pq.read_table(tables / "predications.parquet").to_pylist():
        statement = (row["sentence_id"], row["predicate"], row["subject_cui"], row["object_cui"])
        for cui in {row["subject_cui"], row["object_cui"]}:
            counts.setdefault((row["doc_id"], cui), {}).setdefault(row["predicate"], set()).add(row["predication_id"])
            statements.setdefault((row["doc_id"], cui), set()).add(statement)
    expected: dict = {}
    for (doc_id, cui), by_predicate in counts.items():
        quoted = sorted(statements[(doc_id, cui)])[:per_hop]
        expected[(doc_id, cui)] = (
            sorted(((p, len(ids)) for p, ids in by_predicate.items()), key=lambda pc: (-pc[1], pc[0])),
            [(s, p, subject, obj, texts.get(s)) for s, p, subject, obj in quoted],
        )
    sources = evidence_rows.ReadableSources.of_build(tables, per_hop)
    for ranges in (1, 4):
        found: dict = {}
        doc_order = []
        for part in paper_tables(tables, ranges, sources):
            for paper in part.to_pylist():
                doc_order.append(paper["doc_id"])
                assert paper["year"] == years.get(paper["doc_id"]) and paper["sentences_per_hop"] == per_hop
                assert paper["pmid"] == int(paper["doc_id"].removeprefix("PMID:"))
                for cui in {p["cui"] for p in paper["predicates"]}:
                    naming = [s for s in paper["sentences"] if cui in (s["subject"], s["object"])][:per_hop]
                    found[(paper["doc_id"], cui)] = (
                        [(p["predicate"], p["count"]) for p in paper["predicates"] if p["cui"] == cui],
                        [(s["sentence_id"], s["predicate"], s["subject"], s["object"], s["text"]) for s in naming],
                    )
        assert doc_order == sorted(set(doc_order))  # one record per paper, in the buckets' key order
        assert found == expected


def test_paper_ranges_follow_half_the_budget():
    from pipeline.store.paper_evidence import PAPER_BYTES_PER_ROW, paper_partitions

    rows = 30_000_000
    assert paper_partitions(0, 1 << 30) == 1
    assert paper_partitions(rows, 2 * rows * PAPER_BYTES_PER_ROW) == 1
    assert paper_partitions(rows, rows * PAPER_BYTES_PER_ROW // 2) == 4
    assert paper_partitions(rows, 8 << 30) == 8  # the 30M run's budget: 8 doc_id ranges


@pytest.mark.parametrize("in_id_order", [True, False])
def test_sentence_texts_finds_exactly_the_wanted_sentences(tmp_path, in_id_order):
    """The texts of the wanted sentence ids (some not in the table, some twice), against a dict,
    from a table of many row groups in id order (the scan skips groups by the ids' bounds) or not."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    ids = np.sort(rng.choice(100_000, 5_000, replace=False))
    if not in_id_order:
        rng.shuffle(ids)
    texts = [f"sentence {i}" for i in ids]
    pq.write_table(pa.table({"sentence_id": ids, "text": texts}), tmp_path / "sentences.parquet", row_group_size=300)
    wanted = np.r_[rng.choice(ids[:2_000], 150), rng.choice(100_000, 50)]
    found = evidence_rows.sentence_texts(tmp_path / "sentences.parquet", pa.chunked_array([pa.array(wanted)]))
    by_id = dict(zip(ids.tolist(), texts, strict=True))
    assert dict(zip(found["sentence_id"].to_pylist(), found["text"].to_pylist(), strict=True)) == {
        i: by_id[i] for i in wanted.tolist() if i in by_id
    }
    assert found.num_rows == len({i for i in wanted.tolist() if i in by_id})


def test_years_of_looks_each_doc_id_up_like_a_dict():
    """Years by doc_id (repeated, unknown to the documents, or with a null year), against a dict."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(11)
    papers = [f"PMID:{n}" for n in rng.choice(100_000, 2_000, replace=False)]
    years = [None if rng.random() < 0.1 else int(rng.integers(1950, 2025)) for _ in papers]
    table = pa.table({"doc_id": papers, "year": pa.array(years, pa.int32())})
    asked = [str(rng.choice(papers)) if rng.random() < 0.8 else f"CORD:{rng.integers(1000)}" for _ in range(5_000)]
    by_id = dict(zip(papers, years, strict=True))
    got = evidence_rows._years_of(pa.chunked_array([pa.array(asked)]), table)
    assert got.to_pylist() == [by_id.get(doc) for doc in asked]
    assert got.type == pa.int32()


@pytest.mark.parametrize("huge_codes", [False, True])
def test_distinct_predications_count_like_sets(huge_codes):
    """The papers' per (paper, concept, predicate) count of distinct predications, by sorting codes,
    against Python sets; repeated ids (a predication whose subject is its object counts once), and
    codes whose joined key would overflow int64 (the three keys sorted instead)."""
    from pipeline.store.paper_evidence import _distinct_predications

    rng = np.random.default_rng(7)
    n = 5_000
    doc, cui, predicate = rng.integers(0, 40, n), rng.integers(0, 30, n), rng.integers(0, 4, n)
    if huge_codes:
        doc = doc * (2**40)
    ids = rng.integers(0, 300, n)
    got = _distinct_predications(doc, cui, predicate, ids).to_pylist()
    want: dict[tuple, set] = {}
    for d, c, p, i in zip(doc.tolist(), cui.tolist(), predicate.tolist(), ids.tolist(), strict=True):
        want.setdefault((d, c, p), set()).add(i)
    assert [(r["doc_id"], r["cui"], r["predicate"]) for r in got] == sorted(want)
    assert [r["predication_id_count_distinct"] for r in got] == [len(want[k]) for k in sorted(want)]
