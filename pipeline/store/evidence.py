"""Supporting documents, predicates and sentences of concept--concept hops, from the MongoDB evidence store.

The evidence of a build is its ``evidence`` record buckets (store format 2,
:mod:`pipeline.store.store_format`): the build's listing says which bucket holds a pair (the
last whose first key is not greater), and one ``$in`` query on ``_id`` fetches the buckets of all
hops of a path. A bucket is content-addressed, so what was decoded once stays true and is kept
(:data:`BUCKET_CACHE`). The pairs come from CUIs resolved against the build's vertex table, and
only ids read from the store's own listing reach the query.

A missing record means "no evidence" only when the store holds the whole build: the loader
marks the build's ``builds`` record ``status: "complete"`` last. While a load runs, after one
failed, or in a database that never received this build, the evidence is unknown (None), not
empty. What the record says is read again every few seconds while the build is not complete,
and every :data:`RECHECK_COMPLETE_S` once it is: a store dropped, restored from an older
backup, or replaced by a rebuilt one under a running service turns the evidence back to unknown
within that time (the path service sets it from ``LITPATH_EVIDENCE_RECHECK_S``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from pathlib import Path

from pipeline.store.buckets import decode
from pipeline.store.store_format import BUCKET_COLLECTIONS, Listing, read_listing

log = logging.getLogger("litpath.evidence")

# A build not (yet) complete in the store is looked up again after this many seconds, so a load
# that finishes is seen without a restart. A complete one is looked up again after
# RECHECK_COMPLETE_S: one find_one on _id every few minutes costs nothing, and believing
# "complete" forever would answer [] ("no predication") for the documents of a store that has
# since been dropped or restored.
RECHECK_INCOMPLETE_S = 5.0
RECHECK_COMPLETE_S = 300.0
_loaded: dict[tuple[int, str, str], tuple[float, bool]] = {}
_loaded_lock = threading.Lock()
# Decoded evidence buckets by id (content-addressed: never stale), the most recently used kept.
BUCKET_CACHE = 256
_buckets: OrderedDict[str, dict[tuple[str, str], dict]] = OrderedDict()
# Each build's evidence listing, read again whenever the build's status is (so never older).
_listings: dict[tuple[int, str, str], tuple[float, Listing | None]] = {}


def set_recheck_interval(seconds: float) -> None:
    """How long a "complete" answer is believed before the record is read again (this process)."""
    global RECHECK_COMPLETE_S
    if not seconds > 0:
        raise ValueError(f"the evidence re-check interval must be > 0 seconds, got {seconds!r}")
    RECHECK_COMPLETE_S = float(seconds)


def build_status(db, build_id: str) -> str | None:
    """The ``status`` of the build's ``builds`` record (``"loading"``, ``"complete"``); None when
    the store has no record of it. Raises what the driver raises when the store cannot be read."""
    record = db["builds"].find_one({"_id": build_id}, {"status": 1})
    return None if not record else record.get("status")


def build_loaded(db, build_id: str) -> bool:
    """Whether the store's ``builds`` record says this build was loaded completely (cached for
    :data:`RECHECK_COMPLETE_S` when it does, :data:`RECHECK_INCOMPLETE_S` when not).

    Raises what the driver raises when the store cannot be read.
    """
    key = (id(db.client), db.name, build_id)
    now = time.monotonic()
    with _loaded_lock:
        cached = _loaded.get(key)
    if cached is not None:
        checked, complete = cached
        if now - checked < (RECHECK_COMPLETE_S if complete else RECHECK_INCOMPLETE_S):
            return complete
    status = build_status(db, build_id)
    complete = status == "complete"
    if not complete:
        log.warning(
            "evidence of build %s is unknown: the store's builds record %s%s",
            build_id,
            "is missing" if status is None else f"has status {status!r}, not 'complete'",
            " (it was complete when last read)" if cached is not None and cached[1] else "",
        )
    with _loaded_lock:
        _loaded[key] = (now, complete)
    return complete


def _listing(db, build_id: str, kind: str = "evidence") -> Listing | None:
    key = (id(db.client), db.name, build_id, kind)
    with _loaded_lock:
        loaded = _loaded.get(key[:3])
        cached = _listings.get(key)
    if cached is not None and loaded is not None and cached[0] >= loaded[0]:
        return cached[1]
    listing = read_listing(db, build_id, kind)
    with _loaded_lock:
        _listings[key] = (time.monotonic(), listing)
    return listing


def _evidence_records(table) -> dict[tuple[str, str], dict]:
    """An evidence bucket's records by (cui_a, cui_b)."""
    # a bucket loaded before the readable evidence has neither column: unknown (None)
    readable = [table[name].to_pylist() if name in table.column_names else [None] * table.num_rows
                for name in ("predicates", "sentences")]  # fmt: skip
    return {
        (a, b): {"documents": documents, "n_predications": n, "predicates": predicates, "sentences": sentences}
        for a, b, documents, n, predicates, sentences in zip(
            table["cui_a"].to_pylist(), table["cui_b"].to_pylist(), table["documents"].to_pylist(),
            table["n_predications"].to_pylist(), *readable, strict=True,
        )
    }  # fmt: skip


def _paper_records(table) -> dict[tuple[str], dict]:
    """A papers bucket's records by (doc_id,) (:mod:`pipeline.store.paper_evidence`)."""
    return {(row["doc_id"],): row for row in table.to_pylist()}


_DECODERS = {"evidence": _evidence_records, "papers": _paper_records}


def _bucket_records(db, ids: set[str], kind: str = "evidence") -> dict[str, dict[tuple, dict]]:
    """Each bucket's records by key, from the cache or, in one query, from the store."""
    found: dict[str, dict[tuple[str, str], dict]] = {}
    with _loaded_lock:
        for bucket_id in ids & _buckets.keys():
            _buckets.move_to_end(bucket_id)
            found[bucket_id] = _buckets[bucket_id]
    missing = sorted(ids - found.keys())
    if missing:
        for doc in db[BUCKET_COLLECTIONS[kind]].find({"_id": {"$in": missing}}, {"arrow": 1}):
            found[doc["_id"]] = _DECODERS[kind](decode(doc["arrow"]))
        with _loaded_lock:
            for bucket_id in missing:
                if bucket_id in found:
                    _buckets[bucket_id] = found[bucket_id]
            while len(_buckets) > BUCKET_CACHE:
                _buckets.popitem(last=False)
    return found


def evidence_for_pairs(db, build_id: str, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], dict] | None:
    """``{(a, b) sorted: {"documents": [...], "n_predications": int, "predicates": [...],
    "sentences": [...]}}``, or None when the evidence is unknown: the store fails, or it has not
    loaded this build completely. ``predicates`` are ``{predicate, count}``, ``sentences``
    ``{sentence_id, pmid, year, predicate, subject, text}``
    (:mod:`pipeline.store.evidence_rows`); both None for a build loaded before they were stored.

    A pair with no evidence record in a completely loaded build maps to
    ``{"documents": [], "n_predications": 0, "predicates": [], "sentences": []}`` (known: none).
    """
    if db is None or not pairs:
        return {} if pairs == [] else None
    wanted = {tuple(sorted((a, b))) for a, b in pairs}
    try:
        if not build_loaded(db, build_id):
            return None
        listing = _listing(db, build_id)
        where = {pair: listing.bucket_for(pair) if listing is not None else None for pair in wanted}
        records = _bucket_records(db, {bucket for bucket in where.values() if bucket is not None})
    except Exception as exc:  # noqa: BLE001 -- evidence is best effort; the path itself stands
        log.warning("evidence lookup failed: %s: %s", type(exc).__name__, exc)
        return None
    return _evidence_of(where, records)


def evidence_from_bucket_file(path: Path, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], dict] | None:
    """What :func:`evidence_for_pairs` answers, read from a build's own evidence bucket file
    (``litpath bucket-records --kind evidence``; the buckets its load sends to MongoDB, so the
    same records) instead of the store: the comparison of a build then needs no complete load,
    and runs beside the full graph. None (unknown) when the file cannot be read."""
    from pipeline.store.record_buckets import BucketFile, BucketFileError

    if not pairs:
        return {}
    wanted = {tuple(sorted((a, b))) for a, b in pairs}
    try:
        mapped = BucketFile.open(path, "evidence").mapped()
    except (BucketFileError, OSError, ValueError) as exc:
        log.warning("evidence of %s unknown: %s", path, exc)
        return None
    try:
        where = {pair: mapped.index_for(pair) for pair in wanted}  # buckets by their index in the file
        needed = {index for index in where.values() if index is not None}
        records = {index: _evidence_records(decode(mapped.bucket(index).data)) for index in needed}
    except (BucketFileError, OSError, ValueError) as exc:
        log.warning("evidence of %s unknown: %s", path, exc)
        return None
    finally:
        mapped.close()
    return _evidence_of(where, records)


def _evidence_of(where: dict[tuple[str, str], Hashable | None], records: dict[Hashable, dict]) -> dict[tuple[str, str], dict]:
    """Each pair's evidence, from the bucket that holds it (``where``: its id in the store, its
    index in a bucket file) and the buckets' records; none (empty lists) where its bucket has no
    record of it."""
    out = {}
    for pair, bucket in where.items():
        record = records.get(bucket, {}).get(pair) if bucket is not None else None
        if record is None:
            out[pair] = {"documents": [], "n_predications": 0, "predicates": [], "sentences": []}
            continue
        out[pair] = {
            "documents": list(record.get("documents") or []),
            "n_predications": int(record.get("n_predications") or 0),
            "predicates": record["predicates"],
            "sentences": record["sentences"],
        }
    return out


def paper_evidence_for(db, build_id: str, hops: list[tuple[str, str]]) -> dict[tuple[str, str], dict] | None:
    """``{(cui, doc_id): {"predicates": [{predicate, count}], "sentences": [{sentence_id, pmid, year,
    predicate, subject, text}]}}`` for concept--abstract hops: what the paper says naming the
    concept (:mod:`pipeline.store.paper_evidence`): the predicates most first, then by name; its
    first ``sentences_per_hop`` statements naming the concept by sentence id. None when unknown
    (the store fails or has not loaded the build completely, or loaded it before papers were
    stored); a paper without predications maps to empty lists."""
    if db is None or not hops:
        return {} if hops == [] else None
    try:
        if not build_loaded(db, build_id):
            return None
        listing = _listing(db, build_id, "papers")
        if listing is None:
            return None  # loaded before the papers' evidence was stored
        where = {hop: listing.bucket_for((hop[1],)) for hop in set(hops)}
        records = _bucket_records(db, {bucket for bucket in where.values() if bucket is not None}, "papers")
    except Exception as exc:  # noqa: BLE001 -- evidence is best effort; the path itself stands
        log.warning("paper evidence lookup failed: %s: %s", type(exc).__name__, exc)
        return None
    out = {}
    for (cui, doc_id), bucket in where.items():
        paper = records.get(bucket, {}).get((doc_id,)) if bucket is not None else None
        if paper is None:
            out[(cui, doc_id)] = {"predicates": [], "sentences": []}
            continue
        predicates = [{"predicate": p["predicate"], "count": p["count"]} for p in paper["predicates"] if p["cui"] == cui]
        naming = [s for s in paper["sentences"] if cui in (s["subject"], s["object"])]  # already in sentence order
        sentences = [
            {"sentence_id": s["sentence_id"], "pmid": paper["pmid"], "year": paper["year"], "predicate": s["predicate"],
             "subject": s["subject"], "text": s["text"]}
            for s in naming[: paper["sentences_per_hop"]]
        ]  # fmt: skip
        out[(cui, doc_id)] = {"predicates": predicates, "sentences": sentences}
    return out
