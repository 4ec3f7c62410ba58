"""Load one build's documents, concepts, evidence and provenance into MongoDB.

Collections (docs/design.md §6.5):

``documents``  ``_id = doc_id``; title, year, source, ids {pmid, doi, cord_uid}, builds [build ids
               that contain the paper]. Papers are shared between builds.
``concepts``   ``_id = "<build>:<cui>"``; build, cui, name, semtypes, vid (None when the concept
               is in the concepts table but not a graph vertex).
``evidence``   ``_id = "<build>:<cui_a>|<cui_b>"`` with ``cui_a < cui_b``, made by
               :func:`pipeline.store.evidence.evidence_id`, which the reader uses too: the
               predications behind each concept--concept edge of the graph -- build, cui_a,
               cui_b, documents [doc_id...], sentence_ids [...], n_predications, n_documents,
               truncated (lists are capped at ``max_evidence`` entries so a hub pair stays
               under 16 MB).
``builds``     ``_id = build_id``; the provenance record given by the caller (inputs with
               checksums and versions, config, counts, timings, created) plus ``status``
               ("loading" then "complete") and the load's own counts.

Only operations a MongoDB-wire server such as mongo-java-server also supports are used:
unordered ``bulk_write`` of ``ReplaceOne``/``UpdateOne`` upserts, single-field and compound
indexes, finds on indexed fields. Every ``_id`` is deterministic, so loading the same build
twice leaves the same documents. The URI's credentials are never printed
(:func:`redact_uri`).

A server that goes away during a load is retried with exponential backoff (each write and
count, :class:`RetryPolicy`); when it stays away the load fails with :class:`MongoUnavailable`
saying what was being written, and a rerun completes it without duplicates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pymongo import ASCENDING, MongoClient, ReplaceOne, UpdateOne
from pymongo.database import Database
from pymongo.errors import ConnectionFailure, OperationFailure

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import table_path
from pipeline.config.connections import redact_config, redact_uri
from pipeline.runtime.resources import SpillFolder, memory_budget_bytes, sweep_stale_spills
from pipeline.store.evidence import evidence_id

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int | None], None]  # (collection, rows written so far, total or None)
INDEXES: dict[str, list[list[tuple[str, int]]]] = {
    "concepts": [
        [("build", ASCENDING), ("cui", ASCENDING)],
        [("build", ASCENDING), ("vid", ASCENDING)],
        [("name", ASCENDING)],
    ],
    "evidence": [[("build", ASCENDING), ("cui_a", ASCENDING), ("cui_b", ASCENDING)]],
    "documents": [[("ids.pmid", ASCENDING)], [("builds", ASCENDING)]],
    "builds": [[("created", ASCENDING)]],
}


T = TypeVar("T")


def connect(uri: str, *, timeout_ms: int = 10_000, socket_timeout_ms: int | None = None,
            app: str = "litpath") -> MongoClient:
    """The one way litpath opens a MongoDB client (the load, its read-back, the comparison, the
    service): every wait bounded (server selection, connect, each socket operation), and the
    client named for the server's logs. The URI carries the credentials; nothing logs it."""
    return MongoClient(
        uri,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=timeout_ms,
        socketTimeoutMS=socket_timeout_ms if socket_timeout_ms is not None else timeout_ms,
        appname=app,
    )


class MongoUnavailable(RuntimeError):
    """MongoDB stayed unreachable through every retry; the message says what was being written."""


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




def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _write(
    db: Database,
    collection: str,
    operations: Iterable,
    batch_size: int,
    progress: Progress | None,
    total: int | None,
    retry: Callable[[Callable[[], T], str], T] | None = None,
) -> int:
    written = 0
    for chunk in _chunks(operations, batch_size):
        # Upserts with deterministic _ids: resending a batch that half-landed is harmless.
        what = f"writing {collection} rows {written}..{written + len(chunk) - 1}"

        def send(chunk: list = chunk) -> object:
            return db[collection].bulk_write(chunk, ordered=False)

        result = retry(send, what) if retry is not None else send()
        # Every upsert matched a document or inserted one: the server has the whole batch.
        acknowledged = int(result.matched_count) + int(result.upserted_count)
        if acknowledged != len(chunk):
            raise MongoUnavailable(
                f"{collection}: the server acknowledged {acknowledged} of {len(chunk)} upserts ({what})"
            )
        written += len(chunk)
        if progress is not None:
            progress(collection, written, total)
    return written


def ensure_indexes(db: Database) -> None:
    """Create the indexes the service's lookups use (idempotent)."""
    for collection, indexes in INDEXES.items():
        for keys in indexes:
            db[collection].create_index(keys)


READ_BACK_LIMIT = 250_000


def _row_count(tables_dir: Path, name: str) -> int | None:
    """Rows of a table from its Parquet metadata (None when it is absent): the progress total."""
    path = table_path(tables_dir, name)
    return None if path is None else ds.dataset(str(path), format="parquet").count_rows()


def _document_operations(tables_dir: Path, build_id: str, batch_rows: int) -> Iterator[UpdateOne]:
    path = table_path(tables_dir, "documents")
    if path is None:
        return
    columns = ["doc_id", "pmid", "doi", "cord_uid", "title", "year", "source"]
    for batch in ds.dataset(str(path), format="parquet").to_batches(columns=columns, batch_size=batch_rows):
        for row in batch.to_pylist():
            ids = {k: row[k] for k in ("pmid", "doi", "cord_uid") if row[k] is not None}
            fields = {"title": row["title"], "year": row["year"], "source": row["source"], "ids": ids}
            yield UpdateOne(
                {"_id": row["doc_id"]}, {"$set": fields, "$addToSet": {"builds": build_id}}, upsert=True
            )


def _concept_rows(tables_dir: Path, graph_dir: Path) -> pa.Table:
    """cui, name, semtypes, vid: the concepts table joined (full outer) with the concept vertices."""
    vertices = pq.read_table(GraphFolder(graph_dir).vertices, columns=["vid", "kind", "key", "name"])
    vertices = vertices.filter(pc.equal(vertices["kind"], "concept"))
    vertices = pa.table({"cui": vertices["key"], "vid": vertices["vid"], "vertex_name": vertices["name"]})
    path = table_path(tables_dir, "concepts")
    if path is None:
        concepts = pa.table(
            {
                "cui": pa.array([], pa.string()),
                "name": pa.array([], pa.string()),
                "semtypes": pa.array([], pa.list_(pa.string())),
            }
        )
    else:
        concepts = ds.dataset(str(path), format="parquet").to_table(columns=["cui", "name", "semtypes"])
    # Joined by lookup: Arrow's hash join cannot carry the list column semtypes.
    position = pc.index_in(concepts["cui"], value_set=vertices["cui"].combine_chunks())
    known = pa.table(
        {
            "cui": concepts["cui"],
            "name": concepts["name"],
            "semtypes": concepts["semtypes"],
            "vid": pc.take(vertices["vid"], position),
        }
    )
    unknown = vertices.filter(
        pc.invert(pc.is_in(vertices["cui"], value_set=concepts["cui"].combine_chunks()))
    )
    only_vertices = pa.table(
        {
            "cui": unknown["cui"],
            "name": unknown["vertex_name"],
            "semtypes": pa.nulls(unknown.num_rows, pa.list_(pa.string())),
            "vid": unknown["vid"],
        }
    )
    return pa.concat_tables([known.cast(only_vertices.schema), only_vertices]).sort_by("cui")


def _concept_operations(rows: pa.Table, build_id: str) -> Iterator[ReplaceOne]:
    for batch in rows.to_batches(max_chunksize=10_000):
        for row in batch.to_pylist():
            doc = {
                "build": build_id,
                "cui": row["cui"],
                "name": row["name"],
                "semtypes": row["semtypes"] or [],
                "vid": row["vid"],
            }
            yield ReplaceOne({"_id": f"{build_id}:{row['cui']}"}, doc, upsert=True)


# Memory the evidence grouping holds per predication row of a concept--concept edge (the rows,
# Arrow's hash grouping and its distinct lists): about 200 bytes, from the 30M-predication
# corpus, whose 30M rows took the load to 6.3 GB in one piece.
EVIDENCE_BYTES_PER_ROW = 200
_EVIDENCE_ROWS = pa.schema(
    [("edge", pa.int32()), ("doc_id", pa.string()), ("sentence_id", pa.int64()), ("predication_id", pa.int64())]
)


def _concept_edge_keys(graph_dir: Path) -> pa.Array:
    """"cui_a|cui_b" of every concept--concept edge of the graph, in edges.parquet's order."""
    edges = pq.read_table(GraphFolder(graph_dir).edges, columns=["src", "dst", "kind"])
    edges = edges.filter(pc.equal(edges["kind"], "concept_concept"))
    keys = pq.read_table(GraphFolder(graph_dir).vertices, columns=["key"])["key"].combine_chunks()
    # vertex keys are sorted, so src < dst gives key(src) < key(dst) for two concepts
    pairs = pc.binary_join_element_wise(pc.take(keys, edges["src"]), pc.take(keys, edges["dst"]), "|")
    return pairs.combine_chunks() if isinstance(pairs, pa.ChunkedArray) else pairs


def _evidence_rows(tables_dir: Path, edge_keys: pa.Array, batch_rows: int) -> Iterator[pa.Table]:
    """Per batch of predications: the rows on a concept--concept edge, by edge index."""
    path = table_path(tables_dir, "predications")
    if path is None:
        raise FileNotFoundError(f"{tables_dir / 'predications.parquet'} not found (needed for evidence)")
    columns = ["predication_id", "doc_id", "sentence_id", "subject_cui", "object_cui"]
    for batch in ds.dataset(str(path), format="parquet").to_batches(columns=columns, batch_size=batch_rows):
        s, o = batch.column("subject_cui"), batch.column("object_cui")
        first = pc.less(s, o)
        pair = pc.binary_join_element_wise(pc.if_else(first, s, o), pc.if_else(first, o, s), "|")
        edge = pc.index_in(pair, value_set=edge_keys)
        keep = pc.is_valid(edge)
        yield pa.table(
            [
                pc.filter(edge, keep),
                pc.filter(batch.column("doc_id"), keep),
                pc.filter(batch.column("sentence_id"), keep),
                pc.filter(batch.column("predication_id"), keep),
            ],
            schema=_EVIDENCE_ROWS,
        )


def _group_evidence(rows: pa.Table, edge_keys: pa.Array) -> pa.Table:
    """Per edge of ``rows``: distinct documents and sentence ids, distinct predications counted."""
    grouped = (
        rows.group_by("edge", use_threads=False)
        .aggregate([("doc_id", "distinct"), ("sentence_id", "distinct"), ("predication_id", "count_distinct")])
        .sort_by("edge")
    )
    split = pc.split_pattern(pc.take(edge_keys, grouped["edge"]), "|", max_splits=1)
    return pa.table(
        {
            "cui_a": pc.list_element(split, 0),
            "cui_b": pc.list_element(split, 1),
            "documents": grouped["doc_id_distinct"],
            "sentence_ids": grouped["sentence_id_distinct"],
            "n_predications": grouped["predication_id_count_distinct"],
        }
    )


def evidence_partitions(predication_rows: int, budget_bytes: int) -> int:
    """How many partitions the evidence of ``predication_rows`` needs to be grouped within
    ``budget_bytes`` (1: in memory, in one piece)."""
    return max(1, -(-predication_rows * EVIDENCE_BYTES_PER_ROW // max(budget_bytes, 1)))


def _evidence_tables(
    tables_dir: Path, edge_keys: pa.Array, batch_rows: int, partitions: int, spill_parent: Path
) -> Iterator[pa.Table]:
    """The evidence of every concept--concept edge (:func:`_group_evidence`), in ``partitions``
    pieces: with more than one, the rows are first spilled to Parquet files under
    ``spill_parent``, edge index modulo ``partitions``, and grouped one file at a time, so the
    memory held is a partition's, not the corpus's. Each edge is in exactly one piece."""
    if partitions <= 1:
        parts = list(_evidence_rows(tables_dir, edge_keys, batch_rows))
        yield _group_evidence(pa.concat_tables(parts) if parts else _EVIDENCE_ROWS.empty_table(), edge_keys)
        return
    with SpillFolder(spill_parent, ".evidence-spill-") as spill:
        paths = [spill / f"part-{k:04d}.parquet" for k in range(partitions)]
        writers = [pq.ParquetWriter(path, _EVIDENCE_ROWS) for path in paths]
        try:
            for rows in _evidence_rows(tables_dir, edge_keys, batch_rows):
                part = rows.column("edge").to_numpy() % partitions
                for k, writer in enumerate(writers):
                    writer.write_table(rows.filter(pa.array(part == k)))
        finally:
            for writer in writers:
                writer.close()
        for path in paths:
            yield _group_evidence(pq.read_table(path), edge_keys)
            path.unlink()


def _evidence_operations(
    table: pa.Table, build_id: str, max_evidence: int, truncated: list[int]
) -> Iterator[ReplaceOne]:
    for batch in table.to_batches(max_chunksize=10_000):
        for row in batch.to_pylist():
            documents = sorted(row["documents"])
            sentences = sorted(row["sentence_ids"])
            cut = len(documents) > max_evidence or len(sentences) > max_evidence
            truncated[0] += cut
            doc = {
                "build": build_id,
                "cui_a": row["cui_a"],
                "cui_b": row["cui_b"],
                "documents": documents[:max_evidence],
                "sentence_ids": sentences[:max_evidence],
                "n_documents": len(documents),
                "n_predications": row["n_predications"],
                "truncated": cut,
            }
            yield ReplaceOne({"_id": evidence_id(build_id, row["cui_a"], row["cui_b"])}, doc, upsert=True)


def load_build(
    uri: str,
    database: str,
    build_id: str,
    tables_dir: Path,
    graph_dir: Path,
    build_record: dict,
    batch_size: int = 5_000,
    max_evidence: int = 1_000,
    progress: Progress | None = None,
    retry: RetryPolicy | None = None,
    budget_bytes: int | None = None,
    spill_dir: Path | None = None,
) -> dict:
    """Upsert one build into MongoDB; return counts per collection (rows written, rows in the build).

    Idempotent: every ``_id`` derives from the build id and the keys, so a rerun replaces the
    same documents. ``build_record`` is stored in ``builds`` as given (with ``status``).
    Every call is retried per ``retry`` (default :class:`RetryPolicy`); a server that stays
    away raises :class:`MongoUnavailable`, leaving the build's status at "loading".

    The evidence is grouped within ``budget_bytes`` (default: :func:`memory_budget_bytes`, the
    stages' budget): beyond it, in partitions spilled under ``spill_dir`` (default: the build
    folder, ``graph_dir``'s parent) and loaded one at a time; ``counts["evidence_partitions"]``.
    """
    policy = retry or RetryPolicy()
    budget = memory_budget_bytes(None) if budget_bytes is None else budget_bytes

    def retried(call: Callable[[], T], what: str) -> T:
        return _with_retry(call, what, uri, policy)

    tables_dir, graph_dir = Path(tables_dir), Path(graph_dir)
    for needed in (GraphFolder(graph_dir).vertices, GraphFolder(graph_dir).edges):
        if not needed.exists():
            raise FileNotFoundError(f"{needed} not found (run build-graph first)")
    spill_dir = Path(spill_dir) if spill_dir else graph_dir.parent
    sweep_stale_spills(spill_dir)  # evidence spilled by a load that was killed
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
            lambda: db.builds.replace_one({"_id": build_id}, {**record, "status": "loading"}, upsert=True),
            "recording the build",
        )

        clock = time.perf_counter()
        documents_written = _write(
            db,
            "documents",
            _document_operations(tables_dir, build_id, batch_size),
            batch_size,
            progress,
            _row_count(tables_dir, "documents"),
            retried,
        )
        timings["documents"] = round(time.perf_counter() - clock, 3)

        clock = time.perf_counter()
        concept_rows = _concept_rows(tables_dir, graph_dir)
        concepts_written = _write(
            db,
            "concepts",
            _concept_operations(concept_rows, build_id),
            batch_size,
            progress,
            concept_rows.num_rows,
            retried,
        )
        timings["concepts"] = round(time.perf_counter() - clock, 3)

        clock = time.perf_counter()
        edge_keys = _concept_edge_keys(graph_dir)
        partitions = evidence_partitions(_row_count(tables_dir, "predications") or 0, budget)
        truncated = [0]
        evidence_written = _write(
            db,
            "evidence",
            (
                operation
                for piece in _evidence_tables(
                    tables_dir, edge_keys, max(batch_size, 1 << 18), partitions, spill_dir
                )
                for operation in _evidence_operations(piece, build_id, max_evidence, truncated)
            ),
            batch_size,
            progress,
            len(edge_keys),
            retried,
        )
        timings["evidence"] = round(time.perf_counter() - clock, 3)

        # Every write was acknowledged upsert by upsert (_write). Counting the build's documents
        # back as well is cheap on MongoDB (indexed) but walks the whole collection on a server
        # without secondary indexes (the local MongoDB-wire server: minutes per million), so it
        # is done only for collections of up to READ_BACK_LIMIT documents.
        counts = {
            "documents_written": documents_written,
            "concepts_written": concepts_written,
            "evidence_written": evidence_written,
            "evidence_truncated": truncated[0],
            "evidence_partitions": partitions,
        }
        for collection, field in (("documents", "builds"), ("concepts", "build"), ("evidence", "build")):
            size = retried(lambda c=collection: db[c].estimated_document_count(), f"sizing {collection}")
            if size <= READ_BACK_LIMIT:
                counts[f"{collection}_in_build"] = retried(
                    lambda c=collection, f=field: db[c].count_documents({f: build_id}), f"counting {collection}"
                )
            else:
                counts[f"{collection}_in_build"] = None  # not read back: see counts["read_back_skipped"]
                counts.setdefault("read_back_skipped", []).append(f"{collection} ({size:,} documents)")
        timings["total"] = round(time.perf_counter() - started, 3)
        complete = {
            "$set": {
                "status": "complete",
                "mongo_counts": counts,
                "mongo_timings": timings,
                "loaded": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        }
        retried(lambda: db.builds.update_one({"_id": build_id}, complete), "marking the build complete")
        written = ", ".join(
            f"{counts[key]:,} {key.removesuffix('_written')}" for key in counts
            if key.endswith("_written") and isinstance(counts[key], int)
        )  # fmt: skip
        log.info("loaded build %s into %s/%s: %s written in %.1f s (counts in the builds record)",
                 build_id, redact_uri(uri), database, written, timings["total"])  # fmt: skip
        return counts
    finally:
        client.close()
