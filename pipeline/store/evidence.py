"""Supporting documents of concept--concept hops, from the MongoDB evidence store.

Collection ``evidence`` (written by ``pipeline.store.mongo``): ``_id`` is :func:`evidence_id`,
which the writer uses too; fields ``documents`` (doc ids), ``sentence_ids``, ``n_predications``. All
hops of a path are fetched in one ``$in`` query on ``_id``; the ids are built from CUIs that
were resolved against the build's vertex table, so only validated values reach the query.

A missing document means "no evidence" only when the store holds the whole build: the loader
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


def evidence_id(build_id: str, cui_a: str, cui_b: str) -> str:
    """The ``_id`` of a concept pair's evidence document: ``<build>:<a>|<b>`` with ``a < b``
    (either order of the pair gives the same id)."""
    a, b = sorted((cui_a, cui_b))
    return f"{build_id}:{a}|{b}"


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


def evidence_for_pairs(db, build_id: str, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], dict] | None:
    """``{(a, b) sorted: {"documents": [...], "n_predications": int}}``, or None when the evidence
    is unknown: the store fails, or it has not loaded this build completely.

    A pair with no evidence document in a completely loaded build maps to
    ``{"documents": [], "n_predications": 0}`` (known: none).
    """
    if db is None or not pairs:
        return {} if pairs == [] else None
    wanted = {evidence_id(build_id, a, b): tuple(sorted((a, b))) for a, b in pairs}
    try:
        if not build_loaded(db, build_id):
            return None
        found = {
            doc["_id"]: doc
            for doc in db["evidence"].find(
                {"_id": {"$in": list(wanted)}}, {"documents": 1, "n_predications": 1}
            )
        }
    except Exception as exc:  # noqa: BLE001 -- evidence is best effort; the path itself stands
        log.warning("evidence lookup failed: %s: %s", type(exc).__name__, exc)
        return None
    out = {}
    for _id, pair in wanted.items():
        doc = found.get(_id) or {}
        out[pair] = {
            "documents": list(doc.get("documents") or []),
            "n_predications": int(doc.get("n_predications") or 0),
        }
    return out
