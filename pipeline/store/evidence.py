"""Supporting documents of concept--concept hops, from the MongoDB evidence store.

Collection ``evidence`` (written by ``pipeline.store.mongo``): ``_id = f"{build}:{a}|{b}"``
with ``a < b``, fields ``documents`` (doc ids), ``sentence_ids``, ``n_predications``. All
hops of a path are fetched in one ``$in`` query on ``_id``; the ids are built from CUIs that
were resolved against the build's vertex table, so only validated values reach the query.
"""

from __future__ import annotations

import logging

log = logging.getLogger("litpath.evidence")


def evidence_id(build_id: str, cui_a: str, cui_b: str) -> str:
    a, b = sorted((cui_a, cui_b))
    return f"{build_id}:{a}|{b}"


def evidence_for_pairs(db, build_id: str, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], dict] | None:
    """``{(a, b) sorted: {"documents": [...], "n_predications": int}}``; None when the store fails.

    A pair with no evidence document maps to ``{"documents": [], "n_predications": 0}``.
    """
    if db is None or not pairs:
        return {} if pairs == [] else None
    wanted = {evidence_id(build_id, a, b): tuple(sorted((a, b))) for a, b in pairs}
    try:
        found = {
            doc["_id"]: doc
            for doc in db["evidence"].find(
                {"_id": {"$in": list(wanted)}}, {"documents": 1, "n_predications": 1}
            )
        }
    except Exception as exc:  # noqa: BLE001 -- evidence is best effort; the path itself stands
        log.warning("evidence lookup failed: %s", exc)
        return None
    out = {}
    for _id, pair in wanted.items():
        doc = found.get(_id) or {}
        out[pair] = {
            "documents": list(doc.get("documents") or []),
            "n_predications": int(doc.get("n_predications") or 0),
        }
    return out
