"""Evidence written into a MongoDB database the way `litpath load-mongo` writes it (store format 2),
for tests of the readers (the service, the comparison) that need a store with given records."""

from __future__ import annotations

import pyarrow as pa

from pipeline.store.evidence_rows import EVIDENCE
from pipeline.store.mongo import write_records
from pipeline.store.store_format import STORE_FORMAT


def store_evidence(db, build_id: str, records: list[dict], complete: bool = True) -> None:
    """``records``: dicts with cui_a, cui_b (any order), documents and n_predications (sentence_ids,
    predicates and sentences optional: the readable evidence, as in
    :data:`pipeline.store.evidence_rows.EVIDENCE`); the build's ``builds`` record is marked complete
    unless told otherwise."""
    write_records(db, build_id, "evidence", [evidence_table(records)])
    status = "complete" if complete else "loading"
    db.builds.replace_one({"_id": build_id}, {"status": status, "store_format": STORE_FORMAT}, upsert=True)


def evidence_bucket_file(path, records: list[dict]) -> None:
    """The same ``records`` as an evidence bucket file (what `litpath bucket-records` writes)."""
    from pipeline.store.record_buckets import KindRecords, write_bucket_file

    table = evidence_table(records)
    write_bucket_file(path, "evidence", KindRecords("evidence", lambda: [table], table.num_rows))


def evidence_table(records: list[dict]) -> pa.Table:
    """``records`` (see :func:`store_evidence`) as evidence rows in key order."""
    rows = sorted(
        (tuple(sorted((r["cui_a"], r["cui_b"]))), r) for r in records
    )
    return pa.table(
        {
            "cui_a": [pair[0] for pair, _ in rows],
            "cui_b": [pair[1] for pair, _ in rows],
            "documents": [sorted(r["documents"]) for _, r in rows],
            "sentence_ids": [sorted(r.get("sentence_ids", [])) for _, r in rows],
            "n_documents": [len(r["documents"]) for _, r in rows],
            "n_predications": [r["n_predications"] for _, r in rows],
            "truncated": [False for _ in rows],
            "predicates": pa.array([r.get("predicates") for _, r in rows], EVIDENCE.field("predicates").type),
            "sentences": pa.array([r.get("sentences") for _, r in rows], EVIDENCE.field("sentences").type),
        }
    )
