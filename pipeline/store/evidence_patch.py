"""The evidence of concept pairs that only lost papers, patched from the earlier build's records
instead of grouped again from every predication on the pair.

A PubMed update file deletes papers; the merge on the delta drops their predications
(:mod:`pipeline.merge.delta`), and every concept pair one of them named gets a new evidence
record. Those pairs are the frequent ones: at 10M calibrated predications the 142 papers whose
predications an update file changed named 525 pairs with 2.5M predications between them, a
quarter of the table, which the grouping read and grouped again (11 of the evidence job's 25 s
alone). Where a pair's only change is that some papers are gone, its new record follows from the
earlier one and the rows that went (:func:`records_without_papers`), as grouping would give it
(:mod:`pipeline.store.evidence_rows`), because a paper's rows go whole: its document, its
sentence ids (a sentence is one paper's) and its predication ids leave the pair with it:

* ``documents`` and ``sentence_ids`` are sorted and cut at ``max_evidence``: the gone values are
  taken out of a complete list; from a cut one only when every gone value lies after its last
  entry (the list is then the same);
* ``n_documents`` and ``n_predications`` lose the gone documents and distinct predication ids,
  ``predicates`` each predicate's gone predication ids (a predicate left with none goes);
* ``truncated`` stays false; a truncated record stays truncated while the documents still exceed
  the cap, and is not when they do not and its sentence list was complete;
* ``sentences`` quotes the first ``sentences_per_hop`` statements by a rule that reads only the
  statement's own paper: the gone papers' entries are taken out, which is the new list when the
  record quoted fewer than ``sentences_per_hop`` (it quoted them all).

Where none of those holds -- a gone document inside a cut list, a quoted sentence gone from a full
list, a cut sentence list whose record may stop being truncated -- the pair is handed back to be
grouped from the table. ``tests/store/test_evidence_patch.py`` checks patched records against
records grouped from the remaining rows, on random rows with small caps.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.store.evidence_rows import EVIDENCE


def gone_rows_by_pair(rows: pa.Table) -> dict[tuple[str, str], list[dict]]:
    """The predications of the papers that went (doc_id, sentence_id, predication_id, predicate,
    subject_cui, object_cui), by the concept pair they join, (cui_a, cui_b) with cui_a < cui_b; a
    predication of a concept with itself joins no pair."""
    by_pair: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows.to_pylist():
        s, o = row["subject_cui"], row["object_cui"]
        if s != o:
            by_pair[(s, o) if s < o else (o, s)].append(row)
    return by_pair


def records_without_papers(
    earlier: pa.Table, gone: dict[tuple[str, str], list[dict]], max_evidence: int, sentences_per_hop: int
) -> tuple[pa.Table, list[tuple[str, str]]]:
    """The records of ``earlier`` (the earlier build's evidence records of pairs that still are
    edges) less the rows in ``gone`` (:func:`gone_rows_by_pair`): (the patched records, in key
    order, and the pairs that cannot be patched and must be grouped from the table)."""
    patched, regroup = [], []
    for record in earlier.to_pylist():
        pair = (record["cui_a"], record["cui_b"])
        new = _without(record, gone.get(pair, []), max_evidence, sentences_per_hop)
        if new is None:
            regroup.append(pair)
        else:
            patched.append(new)
    patched.sort(key=lambda r: (r["cui_a"], r["cui_b"]))
    return pa.Table.from_pylist(patched, schema=EVIDENCE), sorted(regroup)


def _without_values(listed: list, gone: set, complete: bool) -> list | None:
    """A sorted list cut at the cap, less the ``gone`` values (None: not known from the list)."""
    if complete:
        return [value for value in listed if value not in gone] if gone <= set(listed) else None
    if listed and any(value <= listed[-1] for value in gone):
        return None  # a gone value inside the cut list: the next value after the cut is unknown
    return listed


def _without(record: dict, rows: list[dict], cap: int, per_hop: int) -> dict | None:
    """One record less the rows of papers that went (None: to be grouped from the table)."""
    if not rows:
        return record
    gone_docs = {row["doc_id"] for row in rows}
    gone_sentences = {row["sentence_id"] for row in rows}
    gone_predications: dict[str, set] = defaultdict(set)
    for row in rows:
        gone_predications[row["predicate"]].add(row["predication_id"])
    if None in gone_docs or None in gone_sentences or any(None in ids for ids in gone_predications.values()):
        return None
    n_documents = record["n_documents"] - len(gone_docs)
    n_predications = record["n_predications"] - len(set().union(*gone_predications.values()))
    if n_documents < 1 or n_predications < 1:
        return None
    # a cut list has ``cap`` entries; a complete list of exactly ``cap`` is treated as cut (safe)
    documents = _without_values(record["documents"], gone_docs, complete=record["n_documents"] <= cap)
    sentences_complete = len(record["sentence_ids"]) < cap
    sentence_ids = _without_values(record["sentence_ids"], gone_sentences, complete=sentences_complete)
    if documents is None or sentence_ids is None:
        return None
    if not record["truncated"]:
        truncated = False
    elif n_documents > cap:
        truncated = True
    elif sentences_complete:
        truncated = False
    else:
        return None  # the sentences may or may not still exceed the cap
    counts = Counter({entry["predicate"]: entry["count"] for entry in record["predicates"] or []})
    for predicate, ids in gone_predications.items():
        counts[predicate] -= len(ids)
    if any(count < 0 for count in counts.values()):
        return None
    predicates = [{"predicate": p, "count": c} for p, c in sorted(counts.items(), key=lambda pc_: (-pc_[1], pc_[0])) if c > 0]
    quoted = record["sentences"]
    if quoted is not None:
        kept = [entry for entry in quoted if entry["sentence_id"] not in gone_sentences]
        if len(kept) < len(quoted) and len(quoted) >= per_hop:
            return None  # a quoted statement went from a full list: the next one is unknown
        quoted = kept
    return dict(record, documents=documents, sentence_ids=sentence_ids, n_documents=n_documents,
                n_predications=n_predications, truncated=truncated,
                predicates=predicates if record["predicates"] is not None else None, sentences=quoted)  # fmt: skip


def pair_keys(cui_a: pa.Array, cui_b: pa.Array) -> list[tuple[str, str]]:
    """(cui_a, cui_b) tuples of two key columns."""
    return list(zip(pc.cast(cui_a, pa.string()).to_pylist(), pc.cast(cui_b, pa.string()).to_pylist(), strict=True))


__all__ = ["gone_rows_by_pair", "pair_keys", "records_without_papers"]
