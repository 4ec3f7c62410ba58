"""Load one build's documents, concepts, evidence and provenance into MongoDB (store format 2:
:mod:`pipeline.store.store_format`, docs/design.md §6.5).

A build's rows of each kind -- papers (``documents``), concepts with their vertex ids
(``concepts``), and the predications behind each concept--concept edge (``evidence``) -- are cut
into record buckets (:mod:`pipeline.store.buckets`): content-defined, so a build that shares most
of its rows with an earlier one shares most of its buckets, and content-addressed, so a bucket is
written once, whichever build brought it. The load therefore writes, with unordered inserts, only
the buckets no complete build in the store holds yet -- all of them into an empty store, those
with changed rows on top of a parent build -- then the build's listing of its buckets, then marks
the build complete. Nothing is ever upserted or updated in place but the ``builds`` record.

Only operations a MongoDB-wire server such as mongo-java-server also supports are used:
unordered ``insert_many``, ``delete_many`` and finds on ``_id`` or on indexed fields. Every
``_id`` is deterministic, so loading the same build twice leaves the same documents. The URI's
credentials are never printed (:func:`redact_uri`).

A server that goes away during a load is retried with exponential backoff (each write and read,
:class:`RetryPolicy`); when it stays away the load fails with :class:`MongoUnavailable` saying
what was being written, and a rerun completes it without duplicates.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
from bson import Binary
from pymongo import ASCENDING, MongoClient
from pymongo.database import Database
from pymongo.errors import BulkWriteError, ConnectionFailure, OperationFailure, PyMongoError

from pipeline.builds.layout import GraphFolder
from pipeline.config.connections import redact_config, redact_uri
from pipeline.runtime.errors import LitpathError
from pipeline.runtime.progress import Progress as ProgressLine
from pipeline.runtime.resources import memory_budget_bytes, sweep_stale_spills
from pipeline.store.buckets import Bucket, ListedBucket
from pipeline.store.evidence import build_status
from pipeline.store.record_buckets import (
    NEEDS_GRAPH,
    BucketFile,
    GroupingSettings,
    kind_records,
    record_buckets_of,
)
from pipeline.store.store_format import (
    BUCKET_COLLECTIONS,
    BUILD_BUCKETS,
    BUILDS,
    KINDS,
    STORE_FORMAT,
    Listing,
    listing_parts,
    read_listing,
)

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int | None], None]  # (kind, rows written so far, total or None)
INDEXES: dict[str, list[list[tuple[str, int]]]] = {
    BUILD_BUCKETS: [[("build", ASCENDING), ("kind", ASCENDING)]],
    BUILDS: [[("created", ASCENDING)]],
}
# One insert_many carries at most this many bytes of buckets (a wire message holds 48 MB).
INSERT_BYTES = 8 << 20
_DUPLICATE_KEY = 11000


T = TypeVar("T")


class _Client(MongoClient):
    """connect()'s clients: a MongoClient that remembers it was closed."""

    _litpath_closed = False

    def close(self) -> None:
        super().close()
        self._litpath_closed = True


# PyMongo joins its monitor threads as the process exits (an atexit handler), and a stopped
# monitor sleeps out its half-second step before it sees it is stopped: every `litpath` process
# that had a client, closed long before, took about 0.5 s more to exit (connect, ping and close:
# 0.95 s against 0.45 without that join, Intel Xeon) -- among them the loads that end a rerun,
# one after the other. When every client the process opened through connect() is closed, the
# join is dropped (their monitors are stopped daemon threads, which the interpreter leaves as it
# exits); while one is open, PyMongo stops and joins its monitors as before. (Weak references by
# identity: two clients of one server are equal, and a set would hold one of them.)
_CLIENTS: weakref.WeakValueDictionary[int, _Client] = weakref.WeakValueDictionary()
_AT_EXIT_REGISTERED = False


def _no_join_of_closed_clients_monitors() -> None:
    """At exit (before PyMongo's own handler, registered earlier): drop that handler when every
    client connect() opened is closed."""
    if any(not client._litpath_closed for client in list(_CLIENTS.values())):
        return
    shutdown = getattr(importlib.import_module("pymongo.synchronous.monitor"), "_shutdown_resources", None)
    if shutdown is not None:
        atexit.unregister(shutdown)


def connect(uri: str, *, timeout_ms: int = 10_000, socket_timeout_ms: int | None = None,
            app: str = "litpath") -> MongoClient:
    """The one way litpath opens a MongoDB client (the load, its read-back, the comparison, the
    service): every wait bounded (server selection, connect, each socket operation), and the
    client named for the server's logs. The URI carries the credentials; nothing logs it."""
    global _AT_EXIT_REGISTERED
    client = _Client(
        uri,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=timeout_ms,
        socketTimeoutMS=socket_timeout_ms if socket_timeout_ms is not None else timeout_ms,
        appname=app,
    )
    _CLIENTS[id(client)] = client
    if not _AT_EXIT_REGISTERED:  # after PyMongo's handler, so that it runs before it
        atexit.register(_no_join_of_closed_clients_monitors)
        _AT_EXIT_REGISTERED = True
    return client


class MongoUnavailable(LitpathError, RuntimeError):
    """MongoDB stayed unreachable through every retry, or reads back other than what was written;
    the message says what was being written or read (``litpath`` prints it as one line)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retry of one database call: ``attempts`` tries, waits doubling from ``first_wait``
    up to ``max_wait`` seconds; each try gives up selecting a server after ``timeout_ms``."""

    attempts: int = 6
    first_wait: float = 0.5
    max_wait: float = 8.0
    timeout_ms: int = 5_000

    def waits(self) -> Iterator[float]:
        wait = self.first_wait
        for _ in range(self.attempts - 1):
            yield wait
            wait = min(wait * 2, self.max_wait)


def _transient(exc: Exception) -> bool:
    """Network trouble (retry) as opposed to a server refusing the operation (fail now)."""
    if isinstance(exc, ConnectionFailure):  # AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError
        return True
    return isinstance(exc, OperationFailure) and bool(exc.has_error_label("RetryableWriteError"))


def _with_retry(call: Callable[[], T], what: str, uri: str, policy: RetryPolicy) -> T:
    started = time.monotonic()
    waits = policy.waits()
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 -- only the transient ones are retried
            if not _transient(exc):
                raise
            wait = next(waits, None)
            if wait is None:
                raise MongoUnavailable(
                    f"MongoDB at {redact_uri(uri)} unavailable while {what}: gave up after {attempt} "
                    f"attempts over {time.monotonic() - started:.1f} s ({type(exc).__name__}); the "
                    "load is idempotent: rerun it once the server is back"
                ) from exc
            log.warning(
                "MongoDB unavailable while %s (%s, attempt %d/%d); retrying in %.1f s",
                what,
                type(exc).__name__,
                attempt,
                policy.attempts,
                wait,
            )
            time.sleep(wait)




def ensure_indexes(db: Database) -> None:
    """Create the indexes the listings and records are found by (idempotent)."""
    for collection, indexes in INDEXES.items():
        for keys in indexes:
            db[collection].create_index(keys)


def known_buckets(db: Database, kind: str) -> set[str]:
    """The ids of the buckets of ``kind`` that some complete build of this store lists: those
    are in the store (a failed load may have left others, which an insert then finds there)."""
    complete = [record["_id"] for record in db[BUILDS].find({"status": "complete", "store_format": STORE_FORMAT}, {"_id": 1})]
    known: set[str] = set()
    for build_id in complete:
        listing = read_listing(db, build_id, kind)
        if listing is not None:
            known.update(listing.ids)
    return known


class _BucketWriter:
    """Inserts the buckets of one kind that the store does not hold yet, in unordered batches of at
    most ``batch_size`` buckets and :data:`INSERT_BYTES` bytes, and lists every bucket of the build."""

    def __init__(self, db: Database, kind: str, known: set[str], batch_size: int,
                 retry: Callable[[Callable[[], T], str], T], progress: Progress | None) -> None:  # fmt: skip
        self.db, self.kind, self.known = db, kind, known
        self.collection = db[BUCKET_COLLECTIONS[kind]]
        self.batch_size, self.retry, self.progress = batch_size, retry, progress
        self.first: list[tuple] = []
        self.ids: list[str] = []
        self.rows: list[int] = []
        self.written_buckets = self.written_rows = self.written_bytes = 0
        self._batch: list[dict] = []
        self._batch_rows = self._batch_bytes = 0
        self._seen = self._sent = 0
        # One batch in flight at a time, sent by one thread: batches reach the server in order.
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"litpath-insert-{kind}")
        self._in_flight: tuple[Future, list[dict], int] | None = None

    def add(self, bucket: Bucket | ListedBucket) -> None:
        bucket_id = bucket.bucket_id
        self.first.append(bucket.first)
        self.ids.append(bucket_id)
        self.rows.append(bucket.rows)
        self._seen += bucket.rows
        if bucket_id in self.known:
            return
        if isinstance(bucket, ListedBucket):
            raise ValueError(f"{self.kind} bucket {bucket_id}: listed without its bytes, and the store lacks it")
        self.known.add(bucket_id)  # the same rows twice in one build are stored once
        self._batch.append({"_id": bucket_id, "first": list(bucket.first), "rows": bucket.rows, "arrow": Binary(bucket.data)})
        self._batch_rows += bucket.rows
        self._batch_bytes += len(bucket.data)
        if len(self._batch) >= self.batch_size or self._batch_bytes >= INSERT_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand the batch to the sender thread, once the batch before it is in: the next batch is
        grouped and encoded while this one travels and the server stores it (another process)."""
        if not self._batch:
            return
        batch, rows = self._batch, self._batch_rows
        what = f"writing {self.kind} buckets {self._sent}..{self._sent + len(batch) - 1}"
        self._sent += len(batch)

        def send() -> list[int]:
            """Insert the batch; the positions of its buckets the store already had."""
            try:
                self.collection.insert_many(batch, ordered=False)
            except BulkWriteError as error:
                # A bucket already there (left by a load that failed, or sent twice by a retry)
                # holds the same bytes under the same id: only other errors are errors.
                errors = error.details.get("writeErrors", [])
                if any(e.get("code") != _DUPLICATE_KEY for e in errors) or error.details.get("writeConcernErrors"):
                    raise
                return [e["index"] for e in errors]
            return []

        self._collect()
        self._in_flight = (self._sender.submit(self.retry, send, what), batch, rows)
        self._batch, self._batch_rows, self._batch_bytes = [], 0, 0

    def _collect(self) -> None:
        """Wait for the batch in flight (its error, if any, is raised here) and count it."""
        if self._in_flight is None:
            return
        future, batch, rows = self._in_flight
        self._in_flight = None
        there = future.result()
        self.written_buckets += len(batch) - len(there)
        self.written_rows += rows - sum(batch[i]["rows"] for i in there)
        self.written_bytes += sum(len(doc["arrow"]) for doc in batch) - sum(len(batch[i]["arrow"]) for i in there)
        if self.progress is not None:
            self.progress(self.kind, self._seen, None)

    def finish(self) -> None:
        """Send what is left and wait until every batch is in."""
        self.flush()
        self._collect()

    def close(self) -> None:
        """Stop the sender thread (after the batch in flight, whose outcome no longer matters
        when the load is already failing)."""
        self._sender.shutdown(wait=True)

    def listing(self) -> Listing:
        return Listing(first=self.first, ids=self.ids, rows=self.rows)


def write_buckets(
    db: Database,
    build_id: str,
    kind: str,
    buckets: Iterable[Bucket],
    *,
    batch_size: int = 64,
    retry: Callable[[Callable[[], T], str], T] | None = None,
    progress: Progress | None = None,
    known: set[str] | None = None,
) -> dict[str, int]:
    """Store a build's ``buckets`` of one ``kind`` (in key order): those the store lacks, then the
    build's listing (replacing an earlier one of the same build). Returns rows and buckets, in the
    build and written."""
    call = retry or (lambda function, _what: function())
    known = known_buckets(db, kind) if known is None else known
    writer = _BucketWriter(db, kind, known, batch_size, call, progress)
    try:
        for bucket in buckets:
            writer.add(bucket)
        writer.finish()
    finally:
        writer.close()
    parts_docs = listing_parts(build_id, kind, writer.listing())
    call(lambda: db[BUILD_BUCKETS].delete_many({"build": build_id, "kind": kind}), f"clearing the {kind} listing")
    call(lambda: db[BUILD_BUCKETS].insert_many(parts_docs, ordered=False), f"writing the {kind} listing")
    return {
        f"{kind}_in_build": sum(writer.rows),
        f"{kind}_buckets": len(writer.ids),
        f"{kind}_written": writer.written_rows,
        f"{kind}_buckets_written": writer.written_buckets,
        # the buckets' bytes sent (what the store grows by, before its own overhead): a forecast
        # of the next rerun scales them (pipeline.builds.forecast)
        f"{kind}_bytes_written": writer.written_bytes,
    }


def write_records(db: Database, build_id: str, kind: str, parts: Iterable[pa.Table], **options) -> dict[str, int]:
    """:func:`write_buckets` of the record buckets of ``parts`` (tables of ``kind``'s rows, with
    :data:`RECORDS`' columns, in key order)."""
    return write_buckets(db, build_id, kind, record_buckets_of(kind, parts), **options)


def _verify(db: Database, build_id: str, kind: str, known_before: set[str] | frozenset[str] = frozenset(),
            limit: int = 20_000, known_sample: int = 1_000) -> int:  # fmt: skip
    """Read the build's listing back and check that the buckets it names are in the store: those
    this load wrote (all of them up to ``limit``, else every ``n``-th) and a sample of at most
    ``known_sample`` of those the store held before (``known_before``: listed by complete builds,
    checked when those loaded). The buckets checked. Raises MongoUnavailable.

    Each check reads the bucket on the local server: checking all 23k papers buckets of a 10M
    citation rerun, which wrote none, took 2.5 s per kind; the sample still finds a store that
    lost a collection."""
    listing = _listing_read_back(db, build_id, kind, {})
    written = [i for i in listing.ids if i not in known_before]
    held = [i for i in listing.ids if i in known_before]
    ids = written if len(written) <= limit else written[:: -(-len(written) // limit)]
    ids = ids + (held if len(held) <= known_sample else held[:: -(-len(held) // known_sample)])
    found = 0
    for start in range(0, len(ids), 1000):
        chunk = ids[start : start + 1000]
        found += sum(1 for _ in db[BUCKET_COLLECTIONS[kind]].find({"_id": {"$in": chunk}}, {"_id": 1}))
    if found != len(set(ids)):
        raise MongoUnavailable(f"{kind}: {len(set(ids)) - found} of the build's buckets are missing from the store")
    return len(ids)


def _listing_read_back(db: Database, build_id: str, kind: str, counts: dict) -> Listing:
    """The build's listing of ``kind``, of as many buckets as the load that wrote it reported
    (``<kind>_buckets`` of ``counts``, when there); raises MongoUnavailable when it reads back
    missing or of another size."""
    listing = read_listing(db, build_id, kind)
    if listing is None:
        raise MongoUnavailable(f"{kind}: the build's bucket listing reads back as missing")
    expected = counts.get(f"{kind}_buckets")
    if expected is not None and len(listing.ids) != int(expected):
        raise MongoUnavailable(f"{kind}: the build's listing names {len(listing.ids):,} buckets, "
                               f"its load wrote {int(expected):,}")  # fmt: skip
    return listing


@dataclass(frozen=True)
class LoadedKind:
    """One kind of a build as an earlier :func:`load_build` call (``complete=False``) wrote it:
    its counts (``<kind>_in_build``, ``<kind>_written``, ...) and the seconds it took."""

    counts: dict[str, int | str]
    seconds: float


def load_build(
    uri: str,
    database: str,
    build_id: str,
    tables_dir: Path,
    graph_dir: Path | None,
    build_record: dict,
    batch_size: int = 64,
    max_evidence: int = 1_000,
    progress: Progress | None = None,
    retry: RetryPolicy | None = None,
    budget_bytes: int | None = None,
    spill_dir: Path | None = None,
    sentences_per_hop: int | None = None,
    bucket_files: dict[str, Path] | None = None,
    kinds: Sequence[str] = KINDS,
    loaded: dict[str, LoadedKind] | None = None,
    complete: bool = True,
) -> dict:
    """Store one build in MongoDB; return its counts (rows and buckets in the build, written now).

    By kind: the call writes the ``kinds`` (default all) and takes those in ``loaded`` as written
    by earlier calls for this build (``complete=False``, one per kind as soon as its bucket file
    exists: the workflow loads the documents while the evidence is still being grouped); it reads
    their listings back and, with ``complete`` (every kind written or loaded), marks the build
    complete. A call with ``complete=False`` leaves the build "loading", so that no reader takes
    a build some of whose kinds are missing.

    Idempotent: bucket ids are digests of their rows and the listing's ids derive from the build
    id, so a rerun writes what is missing and leaves the same documents. ``build_record`` is
    stored in ``builds`` as given (with ``status`` and ``store_format``). Every call is retried per
    ``retry`` (default :class:`RetryPolicy`); a server that stays away raises
    :class:`MongoUnavailable`, leaving the build's status at "loading".

    The buckets of a kind come from its bucket file in ``bucket_files`` (``litpath
    bucket-records``, :mod:`pipeline.store.record_buckets`: grouped ahead, the load only sends),
    else they are grouped here: the evidence within ``budget_bytes`` (default:
    :func:`memory_budget_bytes`, the stages' budget), beyond it in partitions spilled under
    ``spill_dir`` (default: the build folder, ``graph_dir``'s parent); each edge quotes up to
    ``sentences_per_hop`` sentences (default: the config schema's ``evidence.sentences_per_hop``).
    ``counts["<kind>_source"]`` says which it was for each kind.
    """
    policy = retry or RetryPolicy()
    bucket_files = bucket_files or {}
    loaded = loaded or {}
    unknown = (set(kinds) | set(loaded)) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown record kind(s) {sorted(unknown)}: expected some of {', '.join(KINDS)}")
    if set(kinds) & set(loaded):
        raise ValueError(f"kind(s) {sorted(set(kinds) & set(loaded))} both to write and already loaded")
    if complete and set(KINDS) - set(kinds) - set(loaded):
        raise ValueError(f"the build cannot be marked complete without its {sorted(set(KINDS) - set(kinds) - set(loaded))}")

    def retried(call: Callable[[], T], what: str) -> T:
        return _with_retry(call, what, uri, policy)

    tables_dir, graph_dir = Path(tables_dir), (Path(graph_dir) if graph_dir is not None else None)
    # Bucket files are checked (kind, format) before anything is written.
    files = {kind: BucketFile.open(path, kind) for kind, path in bucket_files.items() if kind in kinds}
    grouping = None
    if set(kinds) - files.keys():  # some kind is grouped here, from the tables and the graph
        if graph_dir is None:
            raise FileNotFoundError(f"{', '.join(sorted(set(kinds) - files.keys()))}: no bucket file and no graph folder")
        for needed in (GraphFolder(graph_dir).vertices, GraphFolder(graph_dir).edges):
            if not needed.exists():
                raise FileNotFoundError(f"{needed} not found (run build-graph first)")
        spill_dir = Path(spill_dir) if spill_dir else graph_dir.parent
        sweep_stale_spills(spill_dir)  # evidence spilled by a load that was killed
        grouping = GroupingSettings(memory_budget_bytes(None) if budget_bytes is None else budget_bytes, spill_dir,
                                    max_evidence, sentences_per_hop)  # fmt: skip
    started = time.perf_counter()
    timings: dict[str, float] = {}
    client = connect(uri, timeout_ms=policy.timeout_ms, socket_timeout_ms=max(policy.timeout_ms, 30_000),
                     app="litpath-load")  # fmt: skip
    try:
        db = client[database]
        retried(lambda: ensure_indexes(db), "creating indexes")
        # The record is the build's config and provenance: credentials never reach the database.
        record = redact_config({k: v for k, v in build_record.items() if k != "_id"})
        record.setdefault("created", datetime.now(UTC).isoformat(timespec="seconds"))
        retried(
            lambda: db[BUILDS].replace_one(
                {"_id": build_id}, {**record, "status": "loading", "store_format": STORE_FORMAT}, upsert=True
            ),
            "recording the build",
        )
        counts: dict[str, int | str] = {"store_format": STORE_FORMAT}
        for kind in [kind for kind in KINDS if kind in kinds or kind in loaded]:
            if kind in loaded:  # written and read back by an earlier call: its listing is read here
                counts.update(loaded[kind].counts)
                # Its buckets were verified by that call, and no prune collects buckets while a
                # build is loading (pipeline.store.retention): verifying them again took most of
                # the last load's 9 s at 10M predications and 18 s at 30M, on every build's
                # critical path. The listing is what this call relies on.
                retried(lambda kind=kind: _listing_read_back(db, build_id, kind, loaded[kind].counts),
                        f"reading the {kind} listing back")  # fmt: skip
                timings[kind] = loaded[kind].seconds
                continue
            clock = time.perf_counter()
            known = retried(lambda kind=kind: known_buckets(db, kind), f"reading the store's {kind} listings")
            known_before = frozenset(known)  # the writer adds what it writes to ``known``
            if kind in files:
                source = files[kind]
                # the buckets the store holds are listed, not read: only those it lacks are sent
                buckets, total, notes = source.buckets(listed_only=known), source.counts.get(f"{kind}_in_build"), source.counts
                counts[f"{kind}_source"] = "bucket file"
            else:
                records = kind_records(kind, tables_dir, graph_dir if kind in NEEDS_GRAPH else None, grouping)
                buckets, total, notes = records.buckets(), records.total, records.notes
                counts[f"{kind}_source"] = "grouped by the load"
            line = ProgressLine(f"litpath load-mongo {kind}", total, "rows")

            def report(reported_kind: str, rows: int, total: int | None, line: ProgressLine = line) -> None:
                line.update(rows)
                if progress is not None:
                    progress(reported_kind, rows, total)

            counts.update(write_buckets(db, build_id, kind, buckets, batch_size=batch_size, retry=retried,
                                        progress=report, known=known))  # fmt: skip
            # the grouping's own counts (partitions, truncated hops), complete now that it ran
            for key, value in notes.items():
                counts.setdefault(key, value)
            counts[f"{kind}_verified_buckets"] = retried(
                lambda kind=kind, known_before=known_before: _verify(db, build_id, kind, known_before),
                f"reading the {kind} listing back",
            )
            line.finish(f"{counts[f'{kind}_buckets_written']:,} of {counts[f'{kind}_buckets']:,} buckets written")
            timings[kind] = round(time.perf_counter() - clock, 3)
        timings["total"] = round(time.perf_counter() - started + sum(loaded[kind].seconds for kind in loaded), 3)
        written = ", ".join(f"{counts[f'{kind}_written']:,} of {counts[f'{kind}_in_build']:,} {kind}"
                            for kind in KINDS if f"{kind}_written" in counts)  # fmt: skip
        if not complete:
            log.info("loaded the %s of build %s into %s/%s: %s rows written in %.1f s (the build stays loading)",
                     ", ".join(kinds), build_id, redact_uri(uri), database, written, timings["total"])  # fmt: skip
            return counts
        marking = {
            "$set": {
                "status": "complete",
                "mongo_counts": counts,
                "mongo_timings": timings,
                "loaded": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        }
        retried(lambda: db[BUILDS].update_one({"_id": build_id}, marking), "marking the build complete")
        log.info("loaded build %s into %s/%s: %s rows written in %.1f s (counts in the builds record)",
                 build_id, redact_uri(uri), database, written, timings["total"])  # fmt: skip
        return counts
    finally:
        client.close()


def forget_loads_the_store_lacks(complete_report: Path, kind_reports: Sequence[Path], uri: str | None,
                                 database: str, build_id: str, *, timeout_ms: int = 3_000) -> str | None:  # fmt: skip
    """Before the workflow plans a run: remove the build's load reports when the store no longer
    holds what they say -- every report when the store has no record of the build, and when the
    build's ``complete_report`` (``load-mongo --complete``) is there but the store's record is not
    complete -- so that the build is loaded again; a line saying so for the log, else None. The
    kinds' reports of a build still "loading" (a run stopped before the last load) stay.

    The reports are files and the store is a server: after a new, dropped or restored server (a
    user pointing ``mongo.uri`` at their own, a local store lost with its machine) Snakemake found
    every report present and ran nothing, and the store served no evidence for the build. A load
    writes only the buckets the store lacks, so loading a build it still mostly holds is cheap.
    A dry run removes them too: they are untrue, and its plan then shows the loads that will run.
    When the store cannot be read, the reports are kept and the line says why."""
    present = [Path(path) for path in (complete_report, *kind_reports) if Path(path).exists()]
    if not present or not uri:
        return None
    where = f"MongoDB {redact_uri(uri)} database {database}"
    try:
        client = connect(uri, timeout_ms=timeout_ms, app="litpath-workflow")
        try:
            status = build_status(client[database], build_id)
        finally:
            client.close()
    except PyMongoError as error:  # unreachable, refused, a URI it cannot use
        return f"{where}: could not check that it holds build {build_id} ({type(error).__name__}); its load reports are kept"
    if status == "complete" or (status is not None and not Path(complete_report).exists()):
        return None
    held = "no record of" if status is None else f"build status {status!r} for"
    for path in present:
        path.unlink(missing_ok=True)
    return (f"{where} has {held} build {build_id}, which {len(present)} load report(s) in "
            f"{present[0].parent} said was loaded (a new, dropped or restored server?): the reports are "
            "removed, so the build is loaded again")  # fmt: skip
