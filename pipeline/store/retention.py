"""Which builds a results folder and its MongoDB store hold, and removing builds from both
(``litpath builds list|prune|rm``, :mod:`pipeline.store.commands`).

A build lives in two places: its folder ``<results>/builds/<id>`` and, once loaded, its
``builds`` record and bucket listing in MongoDB (store format 2, :mod:`pipeline.store.store_format`).
Buckets are shared between builds, so removing a build removes its record and listing, and then
every bucket that no remaining listing names (:func:`collect_buckets`); format-1 records of the
removed builds go too. ``latest`` is never removed: :func:`remove_builds` refuses it.

The order makes an interrupted removal safe to rerun: the store first (the record is marked
"removing", so readers treat the build's evidence as unknown, then its listing and the record go),
then the folder. Buckets are collected only while no load is running (a load inserts its buckets
before it lists them, so they would look unused); the collection is skipped and said so
otherwise, and the next prune does it. After a prune the local MongoDB-wire server gives the
freed space back (``compact``, :class:`services.local.mongo` CompactionHandler); a MongoDB that
refuses the command (no privilege) leaves it to its own compaction.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymongo.database import Database
from pymongo.errors import OperationFailure

from pipeline.builds.layout import BuildLayout, ResultsLayout
from pipeline.runtime.errors import LitpathError
from pipeline.store.store_format import BUCKET_COLLECTIONS, BUILD_BUCKETS, BUILDS, LEGACY_COLLECTIONS

# Bucket ids are read and deleted in chunks of this many (a $in list well under a wire message).
ID_CHUNK = 5_000


class RetentionError(LitpathError, ValueError):
    """A removal that would break the results folder (``latest``) or names no build."""


@dataclass(frozen=True)
class BuildEntry:
    """One build as the results folder and the store see it."""

    build_id: str
    created: str | None  # ISO time: build.json's completion, else the store's record, else the folder's
    folder: Path | None  # None: only in the store
    folder_bytes: int  # every file's size, as the folder shows them
    store_status: str | None  # None: not in the store
    latest: bool
    shared_bytes: int = 0  # of folder_bytes, files also linked from elsewhere (a rerun's unchanged tables)
    complete: bool = True  # its folder has build.json (False: a run still writing it, or one that failed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "build_id": self.build_id, "created": self.created, "folder": str(self.folder) if self.folder else None,
            "folder_bytes": self.folder_bytes, "shared_bytes": self.shared_bytes, "store_status": self.store_status, "latest": self.latest,
            "complete": self.complete,
        }  # fmt: skip


# What a build id may be: the name of a folder right under builds/ (litpath's own are 12 hex
# digits). An id read from the store is not trusted to be one: ".." or "/x" would name a folder
# outside builds/ for the removal.
_BUILD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def latest_build_id(results: ResultsLayout) -> str | None:
    """The id of the build ``latest`` names (None: no link): the name in the link, not where
    it ends up, so that a build folder that is itself a link (moved to another disk) keeps its id."""
    if results.latest.is_symlink():
        return Path(os.readlink(results.latest)).name
    return results.latest.resolve().name if results.latest.exists() else None


def _files(*folders: Path) -> dict[tuple[int, int], tuple[int, int, int]]:
    """The regular files under ``folders`` by inode: (size, its links anywhere, its links in them)."""
    files: dict[tuple[int, int], tuple[int, int, int]] = {}
    for p in (p for folder in folders for p in folder.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        st = p.stat()
        size, links, here = files.get((st.st_dev, st.st_ino), (st.st_size, st.st_nlink, 0))
        files[(st.st_dev, st.st_ino)] = (size, links, here + 1)
    return files


def _folder_sizes(path: Path) -> tuple[int, int]:
    """(every file's bytes, the bytes of those also linked from elsewhere). A rerun hard-links the
    earlier build's unchanged tables and bucket files (pipeline.builds.reuse.link_or_copy): summed
    per folder, two builds would count those files twice, and removing one frees none of them."""
    files = _files(path).values()
    return sum(size * here for size, _, here in files), sum(size * here for size, links, here in files if links > here)


def _freed_bytes(folders: list[Path]) -> int:
    """The bytes removing ``folders`` gives back: files no other place links to."""
    return sum(size for size, links, here in _files(*folders).values() if here >= links)


def _folder_created(path: Path) -> str:
    record = BuildLayout(path).record
    if record.exists():
        try:
            written = json.loads(record.read_text())
        except (OSError, ValueError):
            written = None
        completed = written.get("completed") if isinstance(written, dict) else None
        if completed:
            return str(completed)
    return datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC).isoformat(timespec="seconds")


def list_builds(results: ResultsLayout, db: Database | None) -> list[BuildEntry]:
    """Every build of the results folder and of the store (when ``db`` is given), oldest first."""
    latest = latest_build_id(results)
    folders = {p.name: p for p in results.builds.iterdir() if p.is_dir()} if results.builds.exists() else {}
    records = {} if db is None else {r["_id"]: r for r in db[BUILDS].find({}, {"status": 1, "created": 1, "loaded": 1})}
    entries = []
    for build_id in sorted(folders.keys() | records.keys()):
        folder = folders.get(build_id)
        record = records.get(build_id, {})
        created = _folder_created(folder) if folder is not None else record.get("loaded") or record.get("created")
        folder_bytes, shared_bytes = _folder_sizes(folder) if folder is not None else (0, 0)
        entries.append(BuildEntry(
            build_id=build_id, created=str(created) if created else None, folder=folder,
            folder_bytes=folder_bytes, shared_bytes=shared_bytes,
            store_status=record.get("status") if build_id in records else None, latest=build_id == latest,
            complete=folder is None or BuildLayout(folder).record.exists(),
        ))  # fmt: skip
    return sorted(entries, key=lambda e: (e.created or "", e.build_id))


def prune_candidates(entries: list[BuildEntry], keep: int) -> list[str]:
    """The builds ``prune --keep N`` removes: the results folder's complete builds beyond the N
    newest, never ``latest`` (which counts among the N). Builds only in the store (another results
    folder's, perhaps) and folders without build.json (a run may still be writing one) are left
    to ``rm``, and do not count among the N."""
    if keep < 1:
        raise RetentionError("--keep must be at least 1 (latest is always kept)")
    with_folder = [e for e in entries if e.folder is not None and e.complete]
    kept = {e.build_id for e in with_folder if e.latest}
    for entry in reversed(with_folder):  # newest first
        if len(kept) >= keep:
            break
        kept.add(entry.build_id)
    return [e.build_id for e in with_folder if e.build_id not in kept]


def _remove_from_store(db: Database, build_id: str) -> dict[str, int]:
    """The build's record and listing, and its format-1 records; counts of what was deleted."""
    db[BUILDS].update_one({"_id": build_id}, {"$set": {"status": "removing"}})
    counts = {"listing_parts": db[BUILD_BUCKETS].delete_many({"build": build_id}).deleted_count}
    documents, concepts, evidence = LEGACY_COLLECTIONS
    for name in (concepts, evidence):  # format 1: one document per record, with its build
        counts[f"legacy_{name}"] = db[name].delete_many({"build": build_id}).deleted_count
    # format 1 papers were shared: the build leaves their list, and a paper no build lists goes
    db[documents].update_many({"builds": build_id}, {"$pull": {"builds": build_id}})
    counts["legacy_documents"] = db[documents].delete_many({"builds": {"$size": 0}}).deleted_count
    counts["records"] = db[BUILDS].delete_one({"_id": build_id}).deleted_count
    return counts


def referenced_buckets(db: Database) -> dict[str, set[str]]:
    """Per kind, the bucket ids some build's listing names."""
    used: dict[str, set[str]] = {kind: set() for kind in BUCKET_COLLECTIONS}
    for part in db[BUILD_BUCKETS].find({}, {"kind": 1, "ids": 1}):
        used.setdefault(part["kind"], set()).update(part["ids"])
    return used


def collect_buckets(db: Database) -> dict[str, int] | None:
    """Delete every bucket no listing names; per kind, the buckets deleted. None (nothing deleted)
    while a build is loading, whose buckets are in the store before its listing is."""
    if db[BUILDS].find_one({"status": "loading"}, {"_id": 1}) is not None:
        return None
    used = referenced_buckets(db)
    deleted = {}
    for kind, collection in BUCKET_COLLECTIONS.items():
        unused = [doc["_id"] for doc in db[collection].find({}, {"_id": 1}) if doc["_id"] not in used[kind]]
        deleted[kind] = 0
        for start in range(0, len(unused), ID_CHUNK):
            deleted[kind] += db[collection].delete_many({"_id": {"$in": unused[start : start + ID_CHUNK]}}).deleted_count
    return deleted


def compact_store(db: Database) -> dict[str, Any]:
    """Ask the server to give freed space back; what it replied, or why it did not."""
    try:
        reply = db.command("compact", BUCKET_COLLECTIONS["evidence"])
    except OperationFailure as exc:
        return {"compacted": False, "reason": str(exc)}
    return {"compacted": True, **{k: v for k, v in reply.items() if k != "ok"}}


def _build_folder(results: ResultsLayout, build_id: str) -> Path | None:
    """The folder ``rm`` deletes for ``build_id`` (None: none, only the store's record): its
    folder under builds/, or the folder that is linked there (a build moved to another disk),
    provided that folder holds a build; else RetentionError, before anything is removed."""
    entry = results.build(build_id).root
    if not entry.is_symlink():
        return entry if entry.exists() else None
    target = entry.resolve()
    if not target.exists():
        return None  # a dangling link: only the link goes
    if not (BuildLayout(target).config.exists() or BuildLayout(target).record.exists()):
        raise RetentionError(
            f"{entry} links to {target}, which holds no build (no config.yaml or build.json): "
            "nothing removed; remove the link yourself if it is not a build"
        )
    return target


def remove_builds(results: ResultsLayout, db: Database | None, build_ids: list[str], *, compact: bool = True) -> dict[str, Any]:
    """Remove builds from the store (when ``db`` is given) and the results folder, collect the
    buckets no build needs any more and compact the store. Refuses ``latest`` and unknown ids
    before removing anything."""
    build_ids = list(dict.fromkeys(build_ids))  # each once, in the order given
    latest = latest_build_id(results)
    known = {e.build_id for e in list_builds(results, db)}
    for build_id in build_ids:
        if not _BUILD_ID.fullmatch(build_id):
            raise RetentionError(
                f"{build_id!r} is not a build id (the name of a folder under {results.builds}): nothing removed"
            )
        if build_id == latest:
            dangling = "" if results.latest.exists() else " (its folder is gone: make a build to move it on)"
            raise RetentionError(f"build {build_id} is the one {results.latest} names: it is never removed{dangling}")
        if build_id not in known:
            raise RetentionError(f"no build {build_id!r} in {results.builds} or the store")
    # every folder checked before anything is removed, the store's records included
    folders = {b: _build_folder(results, b) for b in build_ids}
    # the bytes the removal gives back: a file the kept builds still link to stays
    report: dict[str, Any] = {"removed": [], "store": {}, "folders_bytes": _freed_bytes([f for f in folders.values() if f])}
    for build_id in build_ids:
        if db is not None:
            report["store"][build_id] = _remove_from_store(db, build_id)
        link, folder = results.build(build_id).root, folders[build_id]
        if folder is not None:
            shutil.rmtree(folder)
        if link.is_symlink():
            link.unlink()
        logs = results.build_logs(build_id)
        if logs.exists():
            shutil.rmtree(logs)
        report["removed"].append(build_id)
    if db is not None:
        report["buckets_deleted"] = collect_buckets(db)
        if report["buckets_deleted"] is None:
            report["buckets_note"] = "a build is loading: unused buckets are collected by the next prune"
        if compact and build_ids:
            report["compaction"] = compact_store(db)
    return report
