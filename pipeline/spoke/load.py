"""Load a SPOKE-style dump into Neo4j through the official driver, idempotently and accountably.

The load runs in two passes over the files:

1. **check** (nothing written): every row is parsed; malformed rows, a second node with a
   (label, identifier) already seen, a node whose properties would overwrite its identifier
   or name property (``SET n += row.p`` runs after the merge), a repeated (source, type,
   target) edge and edges whose endpoints are neither in the nodes file nor already in Neo4j
   become rejections naming file and line. With ``on_error="fail"`` (the default) any rejection stops the
   load here, before anything is written; with ``"reject"`` those rows are skipped and
   reported.
2. **write**: uniqueness constraints on (label, identifier) first, then nodes and edges in
   batches of ``UNWIND $rows ... MERGE`` grouped by label / (source label, type, target
   label), so a reload changes nothing and gives the same counts. A label or relationship
   type with nothing in Neo4j before the load is written with ``CREATE`` instead: the check
   pass has already removed every duplicate, so the result is the same as ``MERGE``'s,
   without its per-row lookup (the uniqueness constraint still guards nodes).

Afterwards the counts in Neo4j are checked against what was written (before + created =
after, per label and per relationship type) and the report says exactly what is in.

Every query and batch runs with the driver's query timeout (``neo4j.query_timeout_s``, see
:func:`pipeline.store.neo4j.query_timeout_of`): a Neo4j that stalls stops the load with an
error naming that setting instead of holding the job until its walltime. The batches already
written stay; a rerun writes the same graph (the load is idempotent).

Memory: the check pass keeps each node's identifier and line (about 100 bytes a node)
and a 64-bit digest of each edge (about 60 bytes an edge).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import neo4j
from neo4j.exceptions import ClientError, DriverError, Neo4jError

from pipeline.config.connections import Neo4jSettings
from pipeline.runtime.progress import Progress
from pipeline.spoke.dump import DumpError, EdgeRow, NodeRow, Rejection, read_edges, read_nodes
from pipeline.spoke.hetionet import Metaedge
from pipeline.store.neo4j import (
    GraphNaming,
    Neo4jUnavailable,
    connect,
    is_timeout,
    query_timeout_of,
    quote,
    timeout_error,
)  # fmt: skip

OnError = Literal["fail", "reject"]
MALFORMED = "(malformed)"  # the count key for rows whose label or type could not be read
KEEP_REJECTIONS = 1000  # rejections kept verbatim in the report; all are counted


@dataclass
class Count:
    read: int = 0
    rejected: int = 0
    loaded: int = 0  # rows sent to Neo4j (distinct, after rejections)
    created: int = 0  # of those, new in Neo4j (0 on a reload)
    before: int = 0  # in Neo4j before the load
    in_neo4j: int = 0  # in Neo4j after the load

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class LoadReport:
    nodes: dict[str, Count] = field(default_factory=lambda: defaultdict(Count))
    edges: dict[str, Count] = field(default_factory=lambda: defaultdict(Count))
    rejections: list[Rejection] = field(default_factory=list)
    rejected_total: int = 0
    problems: list[str] = field(default_factory=list)  # verification failures
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return not self.problems

    def reject(self, rejection: Rejection, counts: dict[str, Count]) -> None:
        counts[rejection.label or MALFORMED].rejected += 1
        self.rejected_total += 1
        if len(self.rejections) < KEEP_REJECTIONS:
            self.rejections.append(rejection)

    def totals(self) -> dict[str, dict[str, int]]:
        def total(counts: dict[str, Count]) -> dict[str, int]:
            keys = Count().as_dict().keys()
            return {key: sum(getattr(c, key) for c in counts.values()) for key in keys}

        return {"nodes": total(self.nodes), "edges": total(self.edges)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": {k: v.as_dict() for k, v in sorted(self.nodes.items())},
            "edges": {k: v.as_dict() for k, v in sorted(self.edges.items())},
            "totals": self.totals(),
            "rejected_total": self.rejected_total,
            "rejections": [str(r) for r in self.rejections],
            "verified": self.verified,
            "problems": list(self.problems),
            "seconds": dict(self.seconds),
        }

    def to_text(self) -> str:
        lines = []
        for title, counts in (("label", self.nodes), ("relationship type", self.edges)):
            lines.append(
                f"{title:<28} {'read':>10} {'rejected':>9} {'loaded':>10} {'created':>10} {'in Neo4j':>10}"
            )
            for key, c in sorted(counts.items()):
                lines.append(
                    f"{key:<28} {c.read:>10} {c.rejected:>9} {c.loaded:>10} {c.created:>10} {c.in_neo4j:>10}"
                )
            lines.append("")
        for rejection in self.rejections[:20]:
            lines.append(f"rejected: {rejection}")
        if self.rejected_total > 20:
            lines.append(f"... {self.rejected_total - 20} more rejections")
        lines.extend(f"VERIFICATION FAILED: {p}" for p in self.problems)
        if self.verified:
            lines.append("verified: counts in Neo4j match what was loaded")
        return "\n".join(lines)


def _counted(rows: Iterable, progress: Progress, every: int = 10_000) -> Iterator:
    """The rows, passed on unchanged, counted into ``progress`` every ``every`` rows."""
    for i, row in enumerate(rows, start=1):
        if i % every == 0:
            progress.advance(every)
        yield row


def _edge_digest(edge: EdgeRow) -> int:
    key = "\x1f".join(
        (edge.source_label, edge.source_identifier, edge.rel_type, edge.target_label, edge.target_identifier)
    )
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def _fill_properties(batch: list[dict[str, Any]]) -> bool:
    """Whether a batch sets properties; if so every row gets a map (``SET += null`` fails)."""
    if not any("p" in row for row in batch):
        return False
    for row in batch:
        row.setdefault("p", {})
    return True


class SpokeLoader:
    """Loads one dump (nodes and/or edges files) into the database of an open driver."""

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str | None = None,
        naming: GraphNaming | None = None,
        batch_size: int = 10_000,
        on_error: OnError = "fail",
    ):
        if on_error not in ("fail", "reject"):
            raise ValueError(f"on_error must be 'fail' or 'reject', not {on_error!r}")
        self.driver = driver
        self.database = database
        self.naming = naming or GraphNaming()
        self.batch_size = batch_size
        self.on_error = on_error
        self.query_timeout_s = query_timeout_of(driver)  # seconds per transaction; None: no limit
        self._doing = ""  # what the load asks of Neo4j now, for a timeout's message

    def _query(self, text: str) -> neo4j.Query:
        """An auto-commit query that Neo4j stops past the query timeout."""
        return neo4j.Query(text, timeout=self.query_timeout_s)

    # ------------------------------------------------------------------------ check pass

    def _check(
        self,
        nodes: Iterable[NodeRow | Rejection] | None,
        edges: Iterable[EdgeRow | Rejection] | None,
        report: LoadReport,
    ) -> tuple[dict[str, set[int]], set[str], set[str], set[str]]:
        """Rejected lines per file; node labels, relationship types and edge endpoint labels to write."""
        rejected_lines: dict[str, set[int]] = defaultdict(set)
        node_lines: dict[str, dict[str, int]] = defaultdict(dict)  # label -> identifier -> line
        labels: set[str] = set()
        rel_types: set[str] = set()
        endpoint_labels: set[str] = set()

        def reject(rejection: Rejection, counts: dict[str, Count]) -> None:
            rejected_lines[rejection.file].add(rejection.line)
            report.reject(rejection, counts)

        # The properties the query sets from the row's own columns (they may be configured
        # other than the dump's identifier/name, which the reader already refuses).
        reserved = {
            self.naming.identifier_property: "identifier",
            self.naming.name_property: "name",
        }
        for item in nodes or ():
            if isinstance(item, Rejection):
                report.nodes[item.label or MALFORMED].read += 1
                reject(item, report.nodes)
                continue
            report.nodes[item.label].read += 1
            clash = sorted(key for key in item.properties if key in reserved)
            if clash:
                reject(
                    Rejection(self._nodes_file, item.line,
                              f"property {clash[0]!r} would overwrite the node's {reserved[clash[0]]} "
                              f"property {clash[0]!r}", item.label),
                    report.nodes,
                )  # fmt: skip
                continue
            seen = node_lines[item.label]
            first = seen.get(item.identifier)
            if first is not None:
                reject(
                    Rejection(self._nodes_file, item.line,
                              f"duplicate node {item.label} {item.identifier!r} (first at line {first})", item.label),
                    report.nodes,
                )  # fmt: skip
                continue
            seen[item.identifier] = item.line
            labels.add(item.label)

        edge_digests: set[int] = set()
        unresolved: list[tuple[EdgeRow, str]] = []  # edges with an endpoint not in the nodes file
        for item in edges or ():
            if isinstance(item, Rejection):
                report.edges[item.label or MALFORMED].read += 1
                reject(item, report.edges)
                continue
            report.edges[item.rel_type].read += 1
            digest = _edge_digest(item)
            if digest in edge_digests:
                reject(
                    Rejection(self._edges_file, item.line,
                              f"duplicate edge {item.source_label} {item.source_identifier!r} -[{item.rel_type}]-> "
                              f"{item.target_label} {item.target_identifier!r}", item.rel_type),
                    report.edges,
                )  # fmt: skip
                continue
            edge_digests.add(digest)
            rel_types.add(item.rel_type)
            endpoint_labels.update((item.source_label, item.target_label))
            if item.source_identifier not in node_lines.get(
                item.source_label, ()
            ) or item.target_identifier not in node_lines.get(item.target_label, ()):
                unresolved.append((item, self._edges_file))

        if unresolved:
            present = self._existing_nodes(unresolved, node_lines)
            for edge, file in unresolved:
                missing = [
                    f"{label} {identifier!r}"
                    for label, identifier in (
                        (edge.source_label, edge.source_identifier),
                        (edge.target_label, edge.target_identifier),
                    )
                    if identifier not in node_lines.get(label, ()) and (label, identifier) not in present
                ]
                if missing:
                    reject(
                        Rejection(
                            file, edge.line, f"edge endpoint not found: {', '.join(missing)}", edge.rel_type
                        ),
                        report.edges,
                    )
        return rejected_lines, labels, rel_types, endpoint_labels

    def _existing_nodes(
        self, unresolved: list[tuple[EdgeRow, str]], node_lines: dict[str, dict[str, int]]
    ) -> set[tuple[str, str]]:
        """Which endpoints not in the nodes file are already in Neo4j (edges-only or incremental loads)."""
        wanted: dict[str, set[str]] = defaultdict(set)
        for edge, _ in unresolved:
            for label, identifier in (
                (edge.source_label, edge.source_identifier),
                (edge.target_label, edge.target_identifier),
            ):
                if identifier not in node_lines.get(label, ()):
                    wanted[label].add(identifier)
        prop = quote(self.naming.identifier_property)
        present: set[tuple[str, str]] = set()
        with self.driver.session(database=self.database) as session:
            for label, identifiers in wanted.items():
                ordered = sorted(identifiers)
                query = self._query(f"UNWIND $ids AS id MATCH (n:{quote(label)} {{{prop}: id}}) RETURN id")
                self._doing = f"looking up {label} edge endpoints already in Neo4j"
                for start in range(0, len(ordered), self.batch_size):
                    chunk = ordered[start : start + self.batch_size]
                    for record in session.run(query, ids=chunk):
                        present.add((label, record["id"]))
        return present

    # ------------------------------------------------------------------------ write pass

    def _ensure_constraints(self, labels: Iterable[str]) -> None:
        prop = self.naming.identifier_property
        with self.driver.session(database=self.database) as session:
            for label in sorted(labels):
                name = f"litpath_{label}_{prop}_unique"
                query = (
                    f"CREATE CONSTRAINT {quote(name)} IF NOT EXISTS "
                    f"FOR (n:{quote(label)}) REQUIRE n.{quote(prop)} IS UNIQUE"
                )
                self._doing = f"creating the uniqueness constraint on :{label}({prop})"
                try:
                    session.run(self._query(query)).consume()
                except ClientError as exc:
                    if is_timeout(exc):
                        raise  # load() names the timeout setting
                    raise RuntimeError(
                        f"cannot create the uniqueness constraint on :{label}({prop}): {exc.message}"
                    ) from None

    def _count(
        self, labels: Iterable[str], rel_types: Iterable[str]
    ) -> tuple[dict[str, int], dict[str, int]]:
        # notifications off: counting a type not created yet is expected, not worth a warning
        self._doing = "counting nodes and relationships"
        with self.driver.session(database=self.database, notifications_min_severity="OFF") as session:
            nodes = {
                label: session.run(self._query(f"MATCH (n:{quote(label)}) RETURN count(n) AS n")).single()["n"]
                for label in labels
            }
            edges = {
                rel: session.run(self._query(f"MATCH ()-[r:{quote(rel)}]->() RETURN count(r) AS n")).single()["n"]
                for rel in rel_types
            }
        return nodes, edges

    def _write_batches(
        self, session: neo4j.Session, query: str, batch: list[dict[str, Any]]
    ) -> tuple[int, int]:
        """Run one batch in a managed (retried) write transaction; (rows matched, entities created)."""

        @neo4j.unit_of_work(timeout=self.query_timeout_s)
        def work(tx: neo4j.ManagedTransaction) -> tuple[int, int]:
            result = tx.run(query, rows=batch)
            record = result.single()
            summary = result.consume()
            created = summary.counters.nodes_created + summary.counters.relationships_created
            return (record["n"] if record else 0), created

        return session.execute_write(work)

    def _node_query(self, label: str, with_properties: bool, create: bool) -> str:
        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        props = " SET n += row.p" if with_properties else ""
        verb = "CREATE" if create else "MERGE"
        return (
            f"UNWIND $rows AS row {verb} (n:{quote(label)} {{{ident}: row.id}}) "
            f"SET n.{name} = row.name{props} RETURN count(n) AS n"
        )

    def _edge_query(
        self, source_label: str, rel_type: str, target_label: str, with_properties: bool, create: bool
    ) -> str:
        ident = quote(self.naming.identifier_property)
        props = " SET r += row.p" if with_properties else ""
        verb = "CREATE" if create else "MERGE"
        return (
            f"UNWIND $rows AS row "
            f"MATCH (a:{quote(source_label)} {{{ident}: row.s}}) "
            f"MATCH (b:{quote(target_label)} {{{ident}: row.t}}) "
            f"{verb} (a)-[r:{quote(rel_type)}]->(b){props} RETURN count(r) AS n"
        )

    def _write_nodes(self, nodes: Iterable[NodeRow | Rejection], skip: set[int], report: LoadReport) -> None:
        buffers: dict[str, list[dict[str, Any]]] = defaultdict(list)
        with self.driver.session(database=self.database) as session:

            def flush(label: str) -> None:
                batch = buffers.pop(label, [])
                if not batch:
                    return
                create = report.nodes[label].before == 0
                query = self._node_query(label, _fill_properties(batch), create)
                self._doing = f"writing a batch of {len(batch):,} {label} nodes"
                matched, created = self._write_batches(session, query, batch)
                report.nodes[label].loaded += matched
                report.nodes[label].created += created

            for item in nodes:
                if isinstance(item, Rejection) or item.line in skip:
                    continue
                row: dict[str, Any] = {"id": item.identifier, "name": item.name}
                if item.properties:
                    row["p"] = item.properties
                buffer = buffers[item.label]
                buffer.append(row)
                if len(buffer) >= self.batch_size:
                    flush(item.label)
            for label in list(buffers):
                flush(label)

    def _write_edges(self, edges: Iterable[EdgeRow | Rejection], skip: set[int], report: LoadReport) -> None:
        buffers: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        with self.driver.session(database=self.database) as session:

            def flush(key: tuple[str, str, str]) -> None:
                batch = buffers.pop(key, [])
                if not batch:
                    return
                source_label, rel_type, target_label = key
                create = report.edges[rel_type].before == 0
                query = self._edge_query(
                    source_label, rel_type, target_label, _fill_properties(batch), create
                )
                self._doing = f"writing a batch of {len(batch):,} {rel_type} edges"
                matched, created = self._write_batches(session, query, batch)
                if matched != len(batch):
                    # Endpoints were checked before writing; a shortfall means the graph changed under us.
                    report.problems.append(
                        f"{rel_type}: {len(batch) - matched} edges of a batch found no endpoints in Neo4j"
                    )
                report.edges[rel_type].loaded += matched
                report.edges[rel_type].created += created

            for item in edges:
                if isinstance(item, Rejection) or item.line in skip:
                    continue
                row: dict[str, Any] = {"s": item.source_identifier, "t": item.target_identifier}
                if item.properties:
                    row["p"] = item.properties
                key = (item.source_label, item.rel_type, item.target_label)
                buffer = buffers[key]
                buffer.append(row)
                if len(buffer) >= self.batch_size:
                    flush(key)
            for key in list(buffers):
                flush(key)

    # ------------------------------------------------------------------------------ load

    def load(
        self,
        nodes_path: str | Path | None,
        edges_path: str | Path | None,
        fmt: str = "hetionet",
        metaedges: dict[str, Metaedge] | None = None,
    ) -> LoadReport:
        """Check, then write, then verify; raises DumpError (on_error="fail") before writing anything,
        Neo4jTimeout naming the query timeout setting when Neo4j stops a query or batch past it."""
        try:
            return self._load(nodes_path, edges_path, fmt, metaedges)
        except Neo4jError as exc:
            if is_timeout(exc):
                raise timeout_error(f"load-spoke ({self._doing})", self.query_timeout_s) from None
            raise

    def _load(
        self,
        nodes_path: str | Path | None,
        edges_path: str | Path | None,
        fmt: str,
        metaedges: dict[str, Metaedge] | None,
    ) -> LoadReport:
        if nodes_path is None and edges_path is None:
            raise ValueError("nothing to load: give a nodes file, an edges file or both")
        self._nodes_file = str(nodes_path) if nodes_path else ""
        self._edges_file = str(edges_path) if edges_path else ""

        def node_rows() -> Iterable[NodeRow | Rejection] | None:
            return read_nodes(nodes_path, fmt) if nodes_path else None

        def edge_rows() -> Iterable[EdgeRow | Rejection] | None:
            return read_edges(edges_path, fmt, metaedges) if edges_path else None

        report = LoadReport()
        started = time.perf_counter()
        rejected_lines, labels, rel_types, edge_labels = self._check(node_rows(), edge_rows(), report)
        report.seconds["check"] = time.perf_counter() - started
        if report.rejected_total and self.on_error == "fail":
            raise DumpError(report.rejections[0], more=report.rejected_total - 1)

        # Edge endpoint labels need their constraint (index) too, for the MATCH in edge batches.
        all_labels = labels | edge_labels
        step = time.perf_counter()
        self._ensure_constraints(all_labels)
        before_nodes, before_edges = self._count(labels, rel_types)
        for label in labels:
            report.nodes[label].before = before_nodes[label]
        for rel in rel_types:
            report.edges[rel].before = before_edges[rel]
        report.seconds["constraints"] = time.perf_counter() - step

        rows = sum(c.read for c in report.nodes.values()) + sum(c.read for c in report.edges.values())
        progress = Progress("litpath load-spoke", rows, "rows")
        step = time.perf_counter()
        if nodes_path:
            progress.stage("nodes")
            nodes = _counted(node_rows() or (), progress)
            self._write_nodes(nodes, rejected_lines.get(self._nodes_file, set()), report)
        report.seconds["nodes"] = time.perf_counter() - step
        step = time.perf_counter()
        if edges_path:
            progress.stage("edges")
            edges = _counted(edge_rows() or (), progress)
            self._write_edges(edges, rejected_lines.get(self._edges_file, set()), report)
        report.seconds["edges"] = time.perf_counter() - step
        progress.finish("nodes and edges written")

        step = time.perf_counter()
        self._verify(report, labels, rel_types)
        report.seconds["verify"] = time.perf_counter() - step
        report.seconds["total"] = time.perf_counter() - started
        return report

    def _verify(self, report: LoadReport, labels: set[str], rel_types: set[str]) -> None:
        after_nodes, after_edges = self._count(labels, rel_types)
        for kind, counts, after in (
            ("label", report.nodes, after_nodes),
            ("type", report.edges, after_edges),
        ):
            for key, count in counts.items():
                if key not in after:
                    continue  # a label or type that had only rejected rows
                count.in_neo4j = after[key]
                expected_loaded = count.read - count.rejected
                if count.loaded != expected_loaded:
                    report.problems.append(
                        f"{kind} {key}: {expected_loaded} rows to load, {count.loaded} written"
                    )
                if count.in_neo4j != count.before + count.created:
                    report.problems.append(
                        f"{kind} {key}: {count.before} before + {count.created} created != {count.in_neo4j} in Neo4j"
                    )
                if count.in_neo4j < count.loaded:
                    report.problems.append(
                        f"{kind} {key}: {count.loaded} loaded but only {count.in_neo4j} in Neo4j"
                    )


def load_spoke(
    driver: neo4j.Driver,
    nodes_path: str | Path | None,
    edges_path: str | Path | None,
    fmt: str = "hetionet",
    *,
    database: str | None = None,
    naming: GraphNaming | None = None,
    metaedges: dict[str, Metaedge] | None = None,
    batch_size: int = 10_000,
    on_error: OnError = "fail",
) -> LoadReport:
    """Load a dump into Neo4j; see the module docstring for the contract."""
    loader = SpokeLoader(driver, database=database, naming=naming, batch_size=batch_size, on_error=on_error)
    return loader.load(nodes_path, edges_path, fmt, metaedges)


def forget_load_the_server_lacks(report_path: Path, settings: Neo4jSettings, *, timeout_s: float = 3.0) -> str | None:
    """Before the workflow plans a run: remove the SPOKE load report (``results/spoke/load.json``)
    when Neo4j holds fewer nodes of a label than it says were loaded, so that SPOKE is loaded
    again; a line saying so for the log, else None.

    The report is a file and Neo4j a server: after a new or emptied server (``neo4j.uri`` pointed
    at another one, a local store lost with its machine) the report still said SPOKE was loaded,
    nothing loaded it, and every comparison then found none of the mapped nodes in SPOKE. A load
    merges on the identifiers, so loading into a server that still holds SPOKE changes nothing.
    A server that cannot be reached keeps the report, and the line says so."""
    path = Path(report_path)
    if not path.exists():
        return None
    try:
        nodes = json.loads(path.read_text()).get("nodes", {})
        loaded = {label: int(count.get("loaded", 0)) for label, count in nodes.items()}
    except (ValueError, AttributeError, TypeError) as error:  # cut short, or not litpath's
        path.unlink(missing_ok=True)
        return f"{path} is not a SPOKE load report litpath can read ({type(error).__name__}): it is removed, so SPOKE is loaded again"
    loaded = {label: n for label, n in loaded.items() if n > 0}
    if not loaded:
        return None
    where = f"Neo4j {settings.describe()}"
    try:
        driver = connect(settings, connection_timeout=timeout_s, max_transaction_retry_time=0.0)
        try:
            held, _ = SpokeLoader(driver, database=settings.database)._count(loaded, ())
        finally:
            driver.close()
    except (Neo4jUnavailable, Neo4jError, DriverError, OSError) as error:
        return f"{where}: could not check that it holds the SPOKE of {path} ({type(error).__name__}); the report is kept"
    short = [f"{label} {held[label]:,} of {n:,}" for label, n in sorted(loaded.items()) if held[label] < n]
    if not short:
        return None
    path.unlink(missing_ok=True)
    return (f"{where} holds fewer SPOKE nodes than {path} says were loaded ({', '.join(short[:3])}"
            f"{', ...' if len(short) > 3 else ''}; a new or emptied server?): the report is removed, so SPOKE "
            "is loaded again")  # fmt: skip


__all__ = ["Count", "DumpError", "LoadReport", "SpokeLoader", "forget_load_the_server_lacks", "load_spoke"]
