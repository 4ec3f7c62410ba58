"""How litpath lays out its MongoDB database (store format 2; docs/design.md §6.5): the collection
names, a build's bucket listing, and reading that listing back.

* ``document_buckets``, ``concept_buckets``, ``evidence_buckets``, ``paper_buckets``: record buckets
  (:mod:`pipeline.store.buckets`), ``{_id: digest, first: [key...], rows, arrow: <IPC bytes>}``,
  shared by every build that has the same rows;
* ``build_buckets``: each build's listing of the buckets it holds, per kind, in key order,
  ``{_id: "<build>:<kind>:<part>", build, kind, part, first: [[key...]...], ids: [...], rows: [...]}``
  in parts of :data:`LISTING_PART` buckets;
* ``builds``: each build's provenance record, ``status`` "loading" then "complete", and
  ``store_format``.

Format 1 (litpath before this format) kept one document per record in ``documents``, ``concepts`` and
``evidence`` (:data:`LEGACY_COLLECTIONS`); ``litpath builds prune`` removes them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

STORE_FORMAT = 2
KINDS = ("documents", "concepts", "evidence", "papers")
BUCKET_COLLECTIONS = {
    "documents": "document_buckets",
    "concepts": "concept_buckets",
    "evidence": "evidence_buckets",
    "papers": "paper_buckets",  # what each paper says of its concepts (pipeline.store.paper_evidence)
}
BUILD_BUCKETS = "build_buckets"
BUILDS = "builds"
LEGACY_COLLECTIONS = ("documents", "concepts", "evidence")
LISTING_PART = 10_000
# Each kind's key columns (a bucket's ``first`` holds their values).
KEYS = {"documents": ["doc_id"], "concepts": ["cui"], "evidence": ["cui_a", "cui_b"], "papers": ["doc_id"]}


@dataclass(frozen=True)
class Listing:
    """A build's buckets of one kind, in key order: the first key of each (a tuple), its id, its rows."""

    first: list[tuple]
    ids: list[str]
    rows: list[int]

    def bucket_for(self, key: tuple) -> str | None:
        """The id of the bucket that would hold ``key`` (the last one whose first key is not
        greater), or None before the first bucket."""
        at = bisect.bisect_right(self.first, key) - 1
        return self.ids[at] if at >= 0 else None

    @property
    def total_rows(self) -> int:
        return sum(self.rows)


def listing_parts(build_id: str, kind: str, listing: Listing) -> list[dict]:
    """The ``build_buckets`` documents of a listing."""
    parts = []
    for part, start in enumerate(range(0, max(len(listing.ids), 1), LISTING_PART)):
        stop = start + LISTING_PART
        parts.append(
            {
                "_id": f"{build_id}:{kind}:{part:05d}",
                "build": build_id,
                "kind": kind,
                "part": part,
                "first": [list(key) for key in listing.first[start:stop]],
                "ids": listing.ids[start:stop],
                "rows": listing.rows[start:stop],
            }
        )
    return parts


def read_listing(db, build_id: str, kind: str) -> Listing | None:
    """The listing a build's load wrote for ``kind``; None when there is none."""
    parts = sorted(db[BUILD_BUCKETS].find({"build": build_id, "kind": kind}), key=lambda doc: doc["part"])
    if not parts:
        return None
    return Listing(
        first=[tuple(key) for part in parts for key in part["first"]],
        ids=[i for part in parts for i in part["ids"]],
        rows=[n for part in parts for n in part["rows"]],
    )
