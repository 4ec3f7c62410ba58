"""The evidence of each concept--concept edge as group_evidence groups it (pipeline.store.evidence_rows,
by sorts of (edge, value) keys) against the same records worked out row by row in Python, on fresh
random rows: distinct documents (doc_id order) and sentence ids, sorted and cut at the cap, their full
counts, the distinct predications, the truncation flag and each predicate's distinct predications
(most first, then by name) -- also where values repeat across edges, where an (edge, value) pair does
not fit one int64 key, and on no rows at all."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

from pipeline.store.evidence_rows import EVIDENCE, EVIDENCE_ROWS, ReadableSources, group_evidence

PREDICATES = ["TREATS", "CAUSES", "NEG_TREATS", "ISA", "AFFECTS"]


def _rows(rng: np.random.Generator, n_rows: int, n_edges: int, id_base: int) -> pa.Table:
    """Random evidence rows: edges in ascending order with repeats (the order the build hands them
    over), a small pool of papers and sentence ids shared across edges (so values repeat within
    and across edges), predication ids that repeat now and then; ids from ``id_base`` on."""
    edge = np.sort(rng.integers(0, n_edges, n_rows)).astype(np.int32)
    papers = [f"PMID:{int(p)}" for p in rng.integers(1, 10**7, max(2, n_rows // 4))]
    return pa.table(
        {
            "edge": edge,
            "doc_id": [papers[i] for i in rng.integers(0, len(papers), n_rows)],
            "sentence_id": id_base + rng.integers(0, max(2, n_rows // 3), n_rows),
            "predication_id": id_base + rng.integers(0, max(2, n_rows // 2), n_rows),
            "predicate": [PREDICATES[i] for i in rng.integers(0, len(PREDICATES), n_rows)],
            "subject_cui": ["C0000001"] * n_rows,
        },
        schema=EVIDENCE_ROWS,
    )


def _by_hand(rows: pa.Table, keys: tuple[pa.Array, pa.Array], cap: int) -> list[dict]:
    """The records, worked out one row at a time."""
    documents, sentences, predications = defaultdict(set), defaultdict(set), defaultdict(set)
    by_predicate = defaultdict(set)
    for row in rows.to_pylist():
        documents[row["edge"]].add(row["doc_id"])
        sentences[row["edge"]].add(row["sentence_id"])
        predications[row["edge"]].add(row["predication_id"])
        by_predicate[row["edge"], row["predicate"]].add(row["predication_id"])
    counts = defaultdict(Counter)
    for (edge, predicate), ids in by_predicate.items():
        counts[edge][predicate] = len(ids)
    return [
        {
            "cui_a": keys[0][edge].as_py(),
            "cui_b": keys[1][edge].as_py(),
            "documents": sorted(documents[edge])[:cap],
            "sentence_ids": sorted(sentences[edge])[:cap],
            "n_documents": len(documents[edge]),
            "n_predications": len(predications[edge]),
            "truncated": len(documents[edge]) > cap or len(sentences[edge]) > cap,
            "predicates": [{"predicate": p, "count": n}
                           for p, n in sorted(counts[edge].items(), key=lambda item: (-item[1], item[0]))],  # fmt: skip
        }
        for edge in sorted(documents)
    ]


def _edge_keys(n_edges: int) -> tuple[pa.Array, pa.Array]:
    return (pa.array([f"C{i:07d}" for i in range(n_edges)]), pa.array([f"C{i + 1:07d}" for i in range(n_edges)]))


@pytest.mark.parametrize("seed", range(6))
def test_grouped_as_by_hand(seed):
    rng = np.random.default_rng([seed, 20261130])
    n_edges = int(rng.integers(1, 40))
    # ids near 2**61 in some cases: (edge, id) then needs more than an int64 and is sorted as two columns
    id_base = 2**61 if seed % 3 == 2 else int(rng.integers(0, 1000))
    rows = _rows(rng, int(rng.integers(1, 600)), n_edges, id_base)
    cap = int(rng.integers(1, 8))
    keys = _edge_keys(n_edges)
    years = pa.table({"doc_id": pa.array([], pa.string()), "year": pa.array([], pa.int32())})
    grouped = group_evidence(rows, keys, cap, ReadableSources(years, None, 2))
    assert grouped.schema == EVIDENCE
    got = [{k: v for k, v in record.items() if k != "sentences"} for record in grouped.to_pylist()]
    assert got == _by_hand(rows, keys, cap)


def test_the_cap_cuts_the_lists_not_the_counts():
    rows = pa.table({"edge": [0, 0, 0, 1], "doc_id": ["PMID:3", "PMID:1", "PMID:2", "PMID:1"],
                     "sentence_id": [30, 10, 10, 5], "predication_id": [7, 8, 8, 9],
                     "predicate": ["TREATS"] * 4, "subject_cui": ["C0000001"] * 4}, schema=EVIDENCE_ROWS)  # fmt: skip
    records = group_evidence(rows, _edge_keys(2), 2).to_pylist()  # no readable sources: predicates null
    assert all(r["predicates"] is None for r in records)
    assert [(r["documents"], r["sentence_ids"], r["n_documents"], r["n_predications"], r["truncated"]) for r in records] == [
        (["PMID:1", "PMID:2"], [10, 30], 3, 2, True), (["PMID:1"], [5], 1, 1, False)]  # fmt: skip


def test_no_rows():
    grouped = group_evidence(EVIDENCE_ROWS.empty_table(), _edge_keys(3), 5)
    assert grouped.num_rows == 0 and grouped.schema == EVIDENCE


def test_a_null_is_an_error_naming_the_column():
    rows = _rows(np.random.default_rng(1), 20, 3, 0)
    nulled = rows.set_column(2, "sentence_id", pa.array([None] + rows["sentence_id"].to_pylist()[1:], pa.int64()))
    with pytest.raises(ValueError, match="null sentence_id"):
        group_evidence(nulled, _edge_keys(3), 5)
