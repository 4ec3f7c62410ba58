"""The pair codes of the evidence's rebuild (pipeline.store.record_buckets._PairCodes and
_pairs_to_redo) against plain Python sets of (cui_a, cui_b) tuples, on random graphs before and
after an update and random predications of the papers it changed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipeline.store.record_buckets import _PairCodes, _pairs_to_redo


def _graph(rng: np.random.Generator, cuis: list[str], edges: int) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(concept keys in vid order, src, dst) of a random concept graph on some of ``cuis``, as
    _concept_edges gives them: keys sorted, src < dst, edges in (src, dst) order."""
    keys = sorted(rng.choice(cuis, size=len(cuis) * 3 // 4, replace=False).tolist())
    src = rng.integers(0, len(keys), edges)
    dst = rng.integers(0, len(keys), edges)
    pairs = sorted({(min(a, b), max(a, b)) for a, b in zip(src.tolist(), dst.tolist(), strict=True) if a != b})
    return pa.array(keys, pa.string()), np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])


def _tuples(keys: pa.Array, src: np.ndarray, dst: np.ndarray) -> list[tuple[str, str]]:
    names = keys.to_pylist()
    return [(names[a], names[b]) for a, b in zip(src.tolist(), dst.tolist(), strict=True)]


def _predications(rng: np.random.Generator, cuis: list[str], rows: int) -> pa.Table:
    """Random predications, some of a concept with itself and some of CUIs on no graph."""
    pool = [*cuis, "C9999998", "C9999999"]
    subject = rng.choice(pool, rows).tolist()
    obj = [s if rng.random() < 0.05 else o for s, o in zip(subject, rng.choice(pool, rows).tolist(), strict=True)]
    return pa.table({"subject_cui": pa.array(subject).dictionary_encode(), "object_cui": obj})


def _named(rows: pa.Table) -> set[tuple[str, str]]:
    return {(min(s, o), max(s, o)) for s, o in zip(rows["subject_cui"].to_pylist(), rows["object_cui"].to_pylist(),
                                                   strict=True) if s != o}  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_pair_codes_give_the_set_algebra_of_the_pairs(seed):
    rng = np.random.default_rng(seed)
    cuis = [f"C{n:07d}" for n in rng.choice(10**7, 60, replace=False)]
    now_keys, now_src, now_dst = _graph(rng, cuis, 700)
    before_keys, before_src, before_dst = _graph(rng, cuis, 700)
    others = _predications(rng, cuis, 60)
    # papers that went named some pairs that papers still there name too (those are grouped again)
    gone = pa.concat_tables([_predications(rng, cuis, 60), others.slice(0, 30)])
    both_named = [(s, o) for s, o in zip(others["subject_cui"].to_pylist(), others["object_cui"].to_pylist(), strict=True)]

    codes = _PairCodes(now_keys, before_keys)
    now, before = codes.of_edges(now_keys, now_src, now_dst), codes.of_edges(before_keys, before_src, before_dst)
    # code order is the pairs' order, and the codes go back to the pairs
    assert codes.pairs(now) == _tuples(now_keys, now_src, now_dst)
    assert list(now) == sorted(now) and len(set(now.tolist())) == len(now)
    changed, grouped_again, patched_here = _pairs_to_redo(now, before, codes.named(others), codes.named(gone))

    now_pairs, before_pairs = _tuples(now_keys, now_src, now_dst), set(_tuples(before_keys, before_src, before_dst))
    on_a_graph = set(now_pairs) | before_pairs
    by_others, by_gone = _named(others), _named(gone)
    assert codes.pairs(codes.named(others)) == sorted(by_others & {p for p in by_others if set(p) <= set(codes.cuis.to_pylist())})
    added, removed = set(now_pairs) - before_pairs, before_pairs - set(now_pairs)
    want_changed = ((by_others | by_gone) & on_a_graph) | added | removed
    assert codes.pairs(changed) == sorted(want_changed)
    want_again = [p in by_others or p in added for p in now_pairs]
    assert grouped_again.tolist() == want_again
    assert patched_here.tolist() == [p in by_gone and not again and p in before_pairs
                                     for p, again in zip(now_pairs, want_again, strict=True)]  # fmt: skip
    # every branch is exercised: grouped again, patched, added, removed, and named by both
    assert any(want_again) and any(patched_here.tolist()) and added and removed
    assert any((min(p), max(p)) in set(now_pairs) & before_pairs for p in both_named[:30] if p[0] != p[1])
    unpatched = sorted(removed)[:3] + now_pairs[:2]
    assert codes.pairs(codes.of_pairs(unpatched)) == sorted(unpatched)
