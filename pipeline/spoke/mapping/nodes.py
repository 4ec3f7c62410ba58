"""The SPOKE nodes a mapping reads: from a dump's nodes file, or from Neo4j.

Two ways to read Neo4j:

* :func:`spoke_nodes_from_neo4j` streams every node of the mappable labels (a *scan*): right for
  a SPOKE that litpath loaded from a dump, and the reference the lookups are tested against;
* :class:`Neo4jNodes` looks up only the identifiers a route can use, in batched ``UNWIND`` queries
  on the labels' identifier index (a *lookup*): what a mapping against SPOKE's own server does,
  where one label holds tens of millions of nodes (39M Protein nodes on today's SPOKE).

Both read identifiers whatever their type in Neo4j (an integer Gene identifier is the string
``"3569"`` to the mapping), and the node properties the rules read (:data:`.rules.NODE_PROPERTIES`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.runtime.errors import LitpathError
from pipeline.spoke.dump import NodeRow, read_nodes
from pipeline.spoke.mapping.rules import (
    MAPPABLE_LABELS,
    NODE_PROPERTIES,
    OBSOLETE_PROPERTY,
    SpokeNode,
    decoded_list,
    is_true,
)

LOOKUP_BATCH = 10_000  # identifiers per UNWIND query: large enough to amortize a round trip
# A label this large without an index on its identifier is refused: each batch would scan it.
LARGE_LABEL = 1_000_000
_CANONICAL_INTEGER = re.compile(r"^-?(0|[1-9][0-9]{0,17})\Z")


class MappingLookupError(LitpathError):
    """SPOKE's Neo4j cannot be looked up as the mapping needs (a large label without an index)."""


def spoke_nodes_from_dump(path: str | Path, fmt: str = "hetionet") -> Iterator[SpokeNode]:
    """SPOKE nodes from a dump's nodes file; unreadable rows are skipped (the loader names them)."""
    for item in read_nodes(path, fmt):
        if isinstance(item, NodeRow):
            yield SpokeNode(item.label, item.identifier, item.name, item.properties)


def spoke_nodes_from_neo4j(
    driver: Any,
    *,
    database: str | None = None,
    naming: Any = None,
    labels: Iterable[str] = MAPPABLE_LABELS,
    properties: Iterable[str] = NODE_PROPERTIES,
) -> Iterator[SpokeNode]:
    """Every SPOKE node of the mappable labels from Neo4j, read-only (identifiers as strings): a
    scan of each label. Each label's query runs with the driver's query timeout; past it,
    Neo4jTimeout names the setting."""
    import neo4j
    from neo4j.exceptions import Neo4jError

    from pipeline.store.neo4j import GraphNaming, is_timeout, query_timeout_of, quote, timeout_error

    naming = naming or GraphNaming()
    ident, name = quote(naming.identifier_property), quote(naming.name_property)
    wanted = list(properties)
    timeout = query_timeout_of(driver)
    with driver.session(database=database, default_access_mode="READ") as session:
        for label in labels:
            neo_label = naming.label_of(label)
            query = (
                f"MATCH (n:{quote(neo_label)}) WHERE n.{ident} IS NOT NULL "
                f"RETURN toString(n.{ident}) AS identifier, n.{name} AS name, "
                f"[p IN $props | n[p]] AS values"
            )
            try:
                for record in session.run(neo4j.Query(query, timeout=timeout), props=wanted):
                    props = {p: v for p, v in zip(wanted, record["values"], strict=True) if v is not None}
                    yield SpokeNode(label, record["identifier"], record["name"], props)
            except Neo4jError as exc:
                if is_timeout(exc):
                    raise timeout_error(f"reading the SPOKE {label} nodes from Neo4j", timeout) from None
                raise


def typed_keys(identifiers: Iterable[str]) -> list[str | int]:
    """The values to look an identifier up by, whatever its type in Neo4j: the string, and for a
    canonical integer (``"3569"``, not ``"03569"``) the integer too (Hetionet's and SPOKE's Gene
    identifiers are Entrez ids, stored as integers by some exports)."""
    keys: list[str | int] = []
    for identifier in identifiers:
        keys.append(identifier)
        if _CANONICAL_INTEGER.match(identifier):
            keys.append(int(identifier))
    return keys


@dataclass
class LookupStats:
    """What the lookups asked and found, per label (``mapping_stats.json``'s ``lookup``)."""

    labels: dict[str, int] = field(default_factory=dict)  # nodes per label in Neo4j (its count store)
    asked: Counter = field(default_factory=Counter)  # identifiers and property values looked up
    found: Counter = field(default_factory=Counter)  # nodes found (before obsolete ones are skipped)
    obsolete: Counter = field(default_factory=Counter)  # found, but marked obsolete: skipped
    string_lists: Counter = field(default_factory=Counter)  # "label.property": lists stored as strings
    round_trips: int = 0
    seconds: float = 0.0
    unindexed: list[str] = field(default_factory=list)  # "Label.property" looked up without an index
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "labels": dict(sorted(self.labels.items())),
            "asked": dict(sorted(self.asked.items())),
            "found": dict(sorted(self.found.items())),
            "obsolete_skipped": dict(sorted(self.obsolete.items())),
            "string_encoded_lists": dict(sorted(self.string_lists.items())),
            "round_trips": self.round_trips,
            "seconds": round(self.seconds, 3),
            "unindexed": self.unindexed,
            "warnings": self.warnings,
        }


class Neo4jNodes:
    """SPOKE's own Neo4j as the mapping's node source: nodes looked up by identifier (or by an
    indexed property), a batch of :data:`LOOKUP_BATCH` per read query, never a label read whole.

    Obsolete nodes (``obsolete_property`` true, or the string "true" in any case: SPOKE's
    ``vestige``) are counted and skipped. Each query runs with the driver's query timeout.
    """

    def __init__(
        self,
        driver: Any,
        *,
        database: str | None = None,
        naming: Any = None,
        properties: Iterable[str] = NODE_PROPERTIES,
        obsolete_property: str | None = OBSOLETE_PROPERTY,
        batch_size: int = LOOKUP_BATCH,
        large_label: int = LARGE_LABEL,
    ):
        from pipeline.store.neo4j import GraphNaming, query_timeout_of

        self.driver = driver
        self.database = database
        self.naming = naming or GraphNaming()
        self.properties = list(
            dict.fromkeys([*properties, *([obsolete_property] if obsolete_property else [])])
        )
        self.obsolete_property = obsolete_property
        self.batch_size = batch_size
        self.large_label = large_label
        self.timeout = query_timeout_of(driver)
        self.stats = LookupStats()
        self._indexes: dict[str, set[str]] | None = None  # Neo4j label -> properties with an index
        self._labels: set[str] | None = None  # the labels Neo4j has

    # ------------------------------------------------------------------ plumbing

    def _run(self, what: str, query: str, **parameters: Any) -> list[dict[str, Any]]:
        import neo4j
        from neo4j.exceptions import Neo4jError

        from pipeline.store.neo4j import is_timeout, timeout_error

        started = time.perf_counter()
        try:
            with self.driver.session(
                database=self.database, default_access_mode=neo4j.READ_ACCESS
            ) as session:
                records = [
                    r.data() for r in session.run(neo4j.Query(query, timeout=self.timeout), parameters)
                ]
        except Neo4jError as exc:
            if is_timeout(exc):
                raise timeout_error(what, self.timeout) from None
            raise
        finally:
            self.stats.round_trips += 1
            self.stats.seconds += time.perf_counter() - started
        return records

    def count(self, label: str) -> int:
        """Nodes of a label (Neo4j answers from its count store: no scan); 0 for a label the
        database does not have."""
        if label not in self.stats.labels:
            from pipeline.store.neo4j import quote

            if self._labels is None:
                rows = self._run("listing the Neo4j labels", "CALL db.labels() YIELD label RETURN label")
                self._labels = {row["label"] for row in rows}
            neo_label = self.naming.label_of(label)
            if neo_label not in self._labels:
                self.stats.labels[label] = 0
            else:
                rows = self._run(
                    f"counting the SPOKE {label} nodes", f"MATCH (n:{quote(neo_label)}) RETURN count(n) AS n"
                )
                self.stats.labels[label] = int(rows[0]["n"])
        return self.stats.labels[label]

    def indexed(self, label: str, prop: str) -> bool | None:
        """Whether Neo4j has an online single-property index on ``label.prop`` (None: it does not
        let this user list its indexes)."""
        if self._indexes is None:
            from neo4j.exceptions import Neo4jError

            try:
                rows = self._run(
                    "listing the Neo4j indexes",
                    "SHOW INDEXES YIELD entityType, labelsOrTypes, properties, state "
                    "WHERE entityType = 'NODE' AND state = 'ONLINE' AND size(properties) = 1 "
                    "RETURN labelsOrTypes AS labels, properties",
                )
            except Neo4jError:
                return None
            self._indexes = {}
            for row in rows:
                for neo_label in row["labels"] or ():
                    self._indexes.setdefault(neo_label, set()).add(row["properties"][0])
        return prop in self._indexes.get(self.naming.label_of(label), set())

    # ------------------------------------------------------------------ lookups

    def find(self, label: str, identifiers: Iterable[str]) -> Iterator[SpokeNode]:
        """The nodes of ``label`` whose identifier is one of ``identifiers`` (compared whatever its
        type in Neo4j), obsolete ones skipped."""
        yield from self._find(label, self.naming.identifier_property, identifiers)

    def find_prefixed(self, label: str, prefix: str) -> Iterator[SpokeNode]:
        """The nodes of ``label`` whose identifier starts with ``prefix``, read in one index range
        seek (``STARTS WITH`` on the identifier index): for the identity labels, whose nodes are
        few (6k SideEffect nodes on today's SPOKE) while the CUIs they could carry are millions."""
        if self.count(label) == 0:
            return
        self._require_index(label, self.naming.identifier_property)
        self.stats.asked[label] += 1
        rows = self._run(
            f"reading the SPOKE {label} nodes whose identifier starts with {prefix!r}",
            self.prefix_query(label),
            prefix=prefix,
            props=self.properties,
        )
        yield from self._nodes(label, rows)

    def prefix_query(self, label: str) -> str:
        from pipeline.store.neo4j import quote

        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        return (
            f"MATCH (n:{quote(self.naming.label_of(label))}) WHERE n.{ident} STARTS WITH $prefix "
            f"RETURN elementId(n) AS eid, toString(n.{ident}) AS identifier, n.{name} AS name, "
            "[p IN $props | n[p]] AS values"
        )

    def find_by_property(self, label: str, prop: str, values: Iterable[str]) -> Iterator[SpokeNode]:
        """The nodes of ``label`` whose property ``prop`` is one of ``values``; only when Neo4j
        indexes that property (else nothing: looking it up would scan the label)."""
        if self.indexed(label, prop):
            yield from self._find(label, prop, values)

    def _find(self, label: str, prop: str, values: Iterable[str]) -> Iterator[SpokeNode]:
        if self.count(label) == 0:
            return
        self._require_index(label, prop)
        query = self.lookup_query(label, prop)
        batch: list[str] = []
        for value in values:
            batch.append(value)
            if len(batch) >= self.batch_size:
                yield from self._batch(label, query, batch)
                batch = []
        if batch:
            yield from self._batch(label, query, batch)

    def lookup_query(self, label: str, prop: str) -> str:
        """The query of one batch: ``$keys`` (each identifier, typed both ways) against the label's
        index on ``prop`` -- an index seek per key, never a scan of the label."""
        from pipeline.store.neo4j import quote

        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        return (
            f"UNWIND $keys AS key MATCH (n:{quote(self.naming.label_of(label))}) WHERE n.{quote(prop)} = key "
            f"RETURN DISTINCT elementId(n) AS eid, toString(n.{ident}) AS identifier, n.{name} AS name, "
            "[p IN $props | n[p]] AS values"
        )

    def _batch(self, label: str, query: str, values: list[str]) -> Iterator[SpokeNode]:
        self.stats.asked[label] += len(values)
        rows = self._run(
            f"looking up {len(values)} SPOKE {label} nodes",
            query,
            keys=typed_keys(values),
            props=self.properties,
        )
        yield from self._nodes(label, rows)

    def _nodes(self, label: str, rows: list[dict[str, Any]]) -> Iterator[SpokeNode]:
        for row in rows:
            if row["identifier"] is None:
                continue
            self.stats.found[label] += 1
            props = {p: v for p, v in zip(self.properties, row["values"], strict=True) if v is not None}
            if self.obsolete_property and is_true(props.get(self.obsolete_property)):
                self.stats.obsolete[label] += 1
                continue
            for key, value in props.items():
                if isinstance(value, str) and decoded_list(value) is not None:
                    self.stats.string_lists[f"{label}.{key}"] += 1
            yield SpokeNode(label, row["identifier"], row["name"], props)

    def _require_index(self, label: str, prop: str) -> None:
        """Refuse to look up an unindexed identifier of a large label (each batch would scan it);
        a smaller one is looked up, with a warning."""
        if prop != self.naming.identifier_property or self.indexed(label, prop) is not False:
            return
        where = f"{label}.{prop}"
        if where in self.stats.unindexed:
            return
        self.stats.unindexed.append(where)
        create = f"CREATE INDEX FOR (n:{self.naming.label_of(label)}) ON (n.{prop})"
        if self.count(label) > self.large_label:
            raise MappingLookupError(
                f"SPOKE's Neo4j has no index on {where} ({self.count(label):,} nodes): every lookup would "
                f"read the whole label; ask its administrator for one ({create})"
            )
        self.stats.warnings.append(
            f"no index on {where}: each lookup batch reads the label ({create} would avoid it)"
        )


__all__ = [
    "LARGE_LABEL", "LOOKUP_BATCH", "LookupStats", "MappingLookupError", "Neo4jNodes", "spoke_nodes_from_dump",
    "spoke_nodes_from_neo4j", "typed_keys",
]  # fmt: skip
