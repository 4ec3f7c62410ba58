"""The SPOKE nodes a mapping reads: from a dump's nodes file, or from Neo4j (the mappable labels
and the node properties the rules read, :mod:`.rules`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pipeline.spoke.dump import NodeRow, read_nodes
from pipeline.spoke.mapping.rules import MAPPABLE_LABELS, NODE_PROPERTIES, SpokeNode


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
    """SPOKE nodes of the mappable labels from Neo4j, read-only (identifiers as strings). Each
    label's query runs with the driver's query timeout; past it, Neo4jTimeout names the setting."""
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


__all__ = ["spoke_nodes_from_dump", "spoke_nodes_from_neo4j"]
