"""Evidence records patched for papers that went (pipeline.store.evidence_patch) against records
grouped from the rows that remain (pipeline.store.evidence_rows.group_evidence), on fresh random
predications with caps small enough that lists are cut and records truncated: every record patched
equals the grouped one, and a record is handed back wherever the earlier one cannot tell."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest

from pipeline.store.evidence_patch import gone_rows_by_pair, records_without_papers
from pipeline.store.evidence_rows import EVIDENCE, EVIDENCE_ROWS, ReadableSources, group_evidence

CONCEPTS = [f"C{i:07d}" for i in range(14)]
PREDICATES = ["TREATS", "CAUSES", "NEG_TREATS", "ISA"]


def _predications(rng: np.random.Generator, n_papers: int) -> tuple[list[dict], dict[str, int | None]]:
    """Random predications: each paper some sentences, each sentence some predications on a few
    concept pairs (a concept with itself now and then); and each paper's year (some unknown)."""
    rows, predication_id, sentence_id = [], 0, 0
    years = {}
    for paper in range(n_papers):
        doc = f"PMID:{rng.integers(1, 10**6)}{paper:03d}"
        years[doc] = None if rng.random() < 0.15 else int(rng.integers(1990, 1996))
        for _ in range(int(rng.integers(1, 4))):
            sentence_id += int(rng.integers(1, 5))
            for _ in range(int(rng.integers(1, 4))):
                predication_id += 1
                s, o = rng.choice(CONCEPTS[:4] if rng.random() < 0.5 else CONCEPTS, size=2)
                rows.append({"predication_id": predication_id, "doc_id": doc, "sentence_id": sentence_id,
                             "predicate": str(rng.choice(PREDICATES)), "subject_cui": str(s), "object_cui": str(o)})  # fmt: skip
    return rows, years


def _grouped(rows: list[dict], years: dict, cap: int, per_hop: int) -> dict[tuple[str, str], dict]:
    """The evidence records of ``rows``, by pair, as the build groups them."""
    on_pairs = [r for r in rows if r["subject_cui"] != r["object_cui"]]
    pairs = sorted({tuple(sorted((r["subject_cui"], r["object_cui"]))) for r in on_pairs})
    index = {pair: i for i, pair in enumerate(pairs)}
    table = pa.Table.from_pylist(
        [{"edge": index[tuple(sorted((r["subject_cui"], r["object_cui"])))], **{k: r[k] for k in EVIDENCE_ROWS.names[1:]}}
         for r in on_pairs], schema=EVIDENCE_ROWS)  # fmt: skip
    keys = (pa.array([a for a, _ in pairs], pa.string()), pa.array([b for _, b in pairs], pa.string()))
    sources = ReadableSources(pa.table({"doc_id": list(years), "year": pa.array(list(years.values()), pa.int32())}),
                              None, per_hop)  # fmt: skip
    grouped = group_evidence(table, keys, cap, sources)
    return {(r["cui_a"], r["cui_b"]): r for r in grouped.to_pylist()}


@dataclass
class _Case:
    """One random case: the caps, the records before and after some papers went, the gone rows by
    pair, the pairs they named that are still edges, and what the patch made of those."""

    cap: int
    per_hop: int
    earlier: dict
    now: dict
    by_pair: dict
    still: list
    patched: pa.Table
    unpatched: list

    @classmethod
    def of(cls, seed: int) -> _Case:
        rng = np.random.default_rng([seed, 20261129])
        cap, per_hop = int(rng.integers(2, 12)), int(rng.integers(1, 4))
        rows, years = _predications(rng, int(rng.integers(8, 40)))
        papers = sorted({r["doc_id"] for r in rows})
        gone = set(rng.choice(papers, size=max(1, len(papers) // 6), replace=False).tolist())
        earlier = _grouped(rows, years, cap, per_hop)
        now = _grouped([r for r in rows if r["doc_id"] not in gone], years, cap, per_hop)
        by_pair = gone_rows_by_pair(pa.Table.from_pylist([r for r in rows if r["doc_id"] in gone]))
        still = sorted(set(by_pair) & set(now))
        patched, unpatched = records_without_papers(_records([earlier[p] for p in still]), by_pair, cap, per_hop)
        return cls(cap, per_hop, earlier, now, by_pair, still, patched, unpatched)


def _records(records: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(records, schema=EVIDENCE)


@pytest.mark.parametrize("seed", range(12))
def test_patched_records_equal_records_grouped_from_the_remaining_rows(seed):
    case = _Case.of(seed)
    for record in case.patched.to_pylist():
        assert record == case.now[(record["cui_a"], record["cui_b"])]
    assert {(r["cui_a"], r["cui_b"]) for r in case.patched.to_pylist()} | set(case.unpatched) == set(case.still)
    # a pair no gone paper named is its earlier record
    untouched = sorted(set(case.now) - set(case.by_pair))
    same, _ = records_without_papers(_records([case.earlier[p] for p in untouched]), case.by_pair, case.cap, case.per_hop)
    assert same.to_pylist() == [case.now[p] for p in untouched]


def test_both_ways_are_taken_over_the_seeds():
    """The random cases above patch records and hand some back (cut lists, full quotes)."""
    cases = [_Case.of(seed) for seed in range(12)]
    patched_total = sum(case.patched.num_rows for case in cases)
    handed_back = sum(len(case.unpatched) for case in cases)
    assert patched_total > 20 and handed_back > 10, (patched_total, handed_back)




def test_a_truncated_record_whose_documents_fall_within_the_cap_is_grouped_again():
    """Three papers on a pair, cap 2: the record is truncated by its documents and its sentences.
    Without the last paper the documents fit, but four sentences still exceed the cap, which the
    earlier record (two sentence ids listed) cannot tell: the pair is handed back."""
    rows = [{"predication_id": i, "doc_id": doc, "sentence_id": sentence, "predicate": "TREATS",
             "subject_cui": "C0000001", "object_cui": "C0000002"}
            for i, (doc, sentence) in enumerate([("PMID:1", 1), ("PMID:1", 2), ("PMID:1", 3), ("PMID:2", 4), ("PMID:3", 5)])]  # fmt: skip
    years = {"PMID:1": 1990, "PMID:2": 1991, "PMID:3": 1985}
    earlier = _grouped(rows, years, 2, 1)[("C0000001", "C0000002")]
    now = _grouped(rows[:4], years, 2, 1)[("C0000001", "C0000002")]
    assert earlier["truncated"] and now["truncated"] and now["n_documents"] == 2
    by_pair = gone_rows_by_pair(pa.Table.from_pylist(rows[4:]))
    patched, unpatched = records_without_papers(_records([earlier]), by_pair, 2, 1)
    assert patched.num_rows == 0 and unpatched == [("C0000001", "C0000002")]
    assert earlier["sentences"] == now["sentences"]  # the quote (PMID:2's, the most recent) stays
