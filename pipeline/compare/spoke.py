"""The SPOKE side of the comparison: the CUI -> SPOKE mapping and batched connectivity queries.

Connectivity contract. Two concepts ``a`` and ``b`` are *connected within h hops* when some
SPOKE node mapped from ``a`` and some SPOKE node mapped from ``b`` are joined by a path of at
most ``h`` relationships, followed in either direction (the literature graph is undirected).
Two concepts that share a mapped node (two CUIs of one SPOKE node, or a repeated concept)
are connected with length 0. The evidence of a connected pair is one shortest SPOKE path
between the closest mapped nodes (ties broken by label and identifier of the end nodes;
among equally short paths between the same two nodes, Neo4j's ``shortestPath`` picks one).

Queries. Everything is read-only (``session.execute_read``) and parameterized: identifiers
travel as parameters, only checked labels and the integer hop bound are part of the text.
A whole run costs

* one query resolving every mapped (label, identifier) to a Neo4j element id (a
  ``UNION ALL`` of one ``UNWIND`` per label), and
* one ``UNWIND $pairs`` query per ``chunk_size`` distinct node pairs per hop bound, each
  pair answered with ``shortestPath((a)-[*..h]-(b))``.

:attr:`SpokeGraph.round_trips` counts the queries sent. Each runs with the driver's query
timeout (:func:`pipeline.store.neo4j.query_timeout_of`, ``neo4j.query_timeout_s``), or the time
left to a deadline when that is shorter: Neo4j stops a query past it.

Node level. :class:`SpokeConnections` keeps the SPOKE path of every pair of mapped *nodes*,
not only the best per concept pair, so that the classifier can ask for one SPOKE node per
concept along a whole path (an exact match is one SPOKE walk, see
:func:`pipeline.compare.classify.joined_walk`).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

from pipeline.store.neo4j import (
    GraphNaming,
    Neo4jTimeout,
    Neo4jUnavailable,
    check_name,
    is_timeout,
    query_timeout_of,
    quote,
    timeout_error,
)

CONCEPT_KEY = re.compile(r"^(C\d{7}|GENE:\d{1,12})$")
MAX_HOPS = 4  # hop limit h of a literature hop: a few relationships at most are meaningful
# Scenario 4 ("path exists in SPOKE") has no bound in the paper; shortestPath is a
# bidirectional breadth-first search, so a generous cap stays cheap (DEFAULT_SCENARIO4_MAX_HOPS).
MAX_PAIR_HOPS = 32
DEFAULT_SCENARIO4_MAX_HOPS = 12


@dataclass(frozen=True, order=True)
class NodeRef:
    """A SPOKE node as the mapping names it."""

    label: str
    identifier: str

    def as_dict(self, name: str | None = None) -> dict[str, Any]:
        return {"label": self.label, "identifier": self.identifier, "name": name}


class CuiMapping:
    """The mapping table (cui, spoke_label, spoke_identifier, method, source) as lookups."""

    def __init__(self, rows: Iterable[tuple[str, str, str, str]]):
        nodes: dict[str, set[NodeRef]] = defaultdict(set)
        methods: dict[tuple[str, NodeRef], str] = {}
        cuis: dict[str, set[str]] = defaultdict(set)  # identifier -> CUIs
        cuis_by_node: dict[NodeRef, set[str]] = defaultdict(set)
        for cui, label, identifier, method in rows:
            ref = NodeRef(check_name(label, "SPOKE label in the mapping"), identifier)
            nodes[cui].add(ref)
            methods.setdefault((cui, ref), method)
            cuis[identifier].add(cui)
            cuis_by_node[ref].add(cui)
        self._nodes = {cui: tuple(sorted(refs)) for cui, refs in nodes.items()}
        self._methods = methods
        self._cuis = {identifier: sorted(c) for identifier, c in cuis.items()}
        self._cuis_by_node = {ref: sorted(c) for ref, c in cuis_by_node.items()}

    @classmethod
    def from_file(cls, path: str | Path) -> CuiMapping:
        """Read the Parquet or CSV mapping written by ``pipeline.spoke.mapping.build.write_mapping``."""
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"mapping file not found: {path}")
        if path.suffix == ".csv":
            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(strings_can_be_null=False))
        else:
            table = pq.read_table(path)
        needed = ["cui", "spoke_label", "spoke_identifier"]
        missing = [c for c in needed if c not in table.column_names]
        if missing:
            raise ValueError(f"{path}: mapping lacks column(s) {missing} (has {table.column_names})")
        columns = [table.column(c).to_pylist() for c in needed]
        method = (
            table.column("method").to_pylist() if "method" in table.column_names else ["?"] * table.num_rows
        )
        rows = []
        for line, (cui, label, identifier, how) in enumerate(zip(*columns, method, strict=True), start=2):
            if not cui or not label or not identifier:
                raise ValueError(f"{path}: row {line}: empty cui, spoke_label or spoke_identifier")
            rows.append((str(cui), str(label), str(identifier), str(how)))
        try:
            return cls(rows)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def __len__(self) -> int:
        return len(self._nodes)

    def nodes_of(self, cui: str) -> tuple[NodeRef, ...]:
        return self._nodes.get(cui, ())

    def method_of(self, cui: str, ref: NodeRef) -> str | None:
        return self._methods.get((cui, ref))

    def cuis_of(self, identifier: str, label: str | None = None) -> list[str]:
        """CUIs mapped to a SPOKE identifier (of one label, when given)."""
        if label is not None:
            return list(self._cuis_by_node.get(NodeRef(label, identifier), []))
        return list(self._cuis.get(identifier, []))


@dataclass
class SpokeLink:
    """Whether two concepts connect in SPOKE within the hop bound, and the SPOKE path found."""

    connected: bool
    hops: int  # the bound the answer holds for
    length: int | None = None  # relationships on the path found (0: a shared node)
    nodes: list[dict[str, Any]] = field(default_factory=list)  # label, identifier, name, in path order
    relationships: list[dict[str, Any]] = field(default_factory=list)  # type, from, to (identifiers)

    def as_dict(self) -> dict[str, Any]:
        return {
            "connected": self.connected,
            "hops": self.hops,
            "length": self.length,
            "nodes": self.nodes,
            "relationships": self.relationships,
        }

    def oriented(self, reverse: bool) -> SpokeLink:
        """The same link read from the other end when ``reverse``."""
        if not reverse or not self.nodes:
            return self
        relationships = [{**r, "forward": not r["forward"]} for r in reversed(self.relationships)]
        return SpokeLink(self.connected, self.hops, self.length, list(reversed(self.nodes)), relationships)

    def describe(self) -> str:
        """``DOID:820 Myocarditis (Disease) -[RESEMBLES_DrD]-> DOID:934 ...`` in path order."""
        if not self.connected:
            return ""
        parts = [_node_text(self.nodes[0])]
        for rel, node in zip(self.relationships, self.nodes[1:], strict=True):
            arrow = f"-[{rel['type']}]->" if rel["forward"] else f"<-[{rel['type']}]-"
            parts += [arrow, _node_text(node)]
        return " ".join(parts)


def _node_text(node: dict[str, Any]) -> str:
    name = f" {node['name']}" if node.get("name") else ""
    return f"{node['identifier']}{name} ({node['label']})"


class SpokeGraph:
    """Read-only, batched connectivity queries against a SPOKE Neo4j through an open driver."""

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str | None = None,
        naming: GraphNaming | None = None,
        chunk_size: int = 5000,
        where: str = "Neo4j",
        deadline: float | None = None,
    ):
        self.driver = driver
        # time.monotonic() by which every query must have ended (the path service's request
        # deadline): each query gets the time left as its transaction timeout, so Neo4j itself
        # stops work nobody waits for. None: no deadline (the CLI).
        self.deadline = deadline
        # Seconds any one query may run (the CLI's neo4j.query_timeout_s, set on the driver by
        # connect()); None: no limit.
        self.query_timeout_s = query_timeout_of(driver)
        self.database = database
        self.naming = naming or GraphNaming()
        self.chunk_size = chunk_size
        self.where = where  # for error messages (never holds a password)
        self.round_trips = 0  # queries sent (the one-time connectivity check is not counted)
        self._verified = False
        # NodeRef -> (element id, name); None when the mapping names a node Neo4j lacks
        self._resolved: dict[NodeRef, tuple[str, str | None] | None] = {}

    # ------------------------------------------------------------------ plumbing

    def _timeout(self) -> tuple[float | None, bool]:
        """(the next query's transaction timeout, whether it is the time left to the deadline):
        the shorter of the query timeout and that time; Neo4jTimeout once the deadline passed."""
        if self.deadline is None:
            return self.query_timeout_s, False
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Neo4jTimeout(f"SPOKE queries at {self.where} ran past their deadline")
        if self.query_timeout_s is not None and self.query_timeout_s < left:
            return self.query_timeout_s, False
        return left, True

    def _read(self, query: str, **parameters: Any) -> list[dict[str, Any]]:
        """One query in a managed read transaction: one round trip."""
        timeout, by_deadline = self._timeout()

        @neo4j.unit_of_work(timeout=timeout)
        def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(query, parameters)]

        try:
            if not self._verified:  # fail fast: a managed transaction would retry for 30 s first
                self.driver.verify_connectivity()
                self._verified = True
            self.round_trips += 1
            with self.driver.session(
                database=self.database, default_access_mode=neo4j.READ_ACCESS
            ) as session:
                return session.execute_read(work)
        except (ServiceUnavailable, SessionExpired, OSError) as exc:
            raise Neo4jUnavailable(f"Neo4j is not reachable at {self.where}: {exc}") from None
        except Neo4jError as exc:
            if is_timeout(exc) and by_deadline:
                raise Neo4jTimeout(f"a SPOKE query at {self.where} ran past its deadline") from None
            if is_timeout(exc):
                raise timeout_error(f"a SPOKE query at {self.where}", timeout) from None
            raise Neo4jUnavailable(
                f"Neo4j at {self.where} refused a SPOKE query: {exc.code}: {exc.message}"
            ) from None

    # ------------------------------------------------------------------ node resolution

    def resolve(self, refs: Iterable[NodeRef]) -> dict[NodeRef, tuple[str, str | None] | None]:
        """Element id and name of each node; None for nodes absent from Neo4j. One query for all new refs."""
        wanted = sorted({ref for ref in refs if ref not in self._resolved})
        if wanted:
            by_label: dict[str, list[str]] = defaultdict(list)
            for ref in wanted:
                by_label[ref.label].append(ref.identifier)
            ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
            parts, parameters = [], {}
            for i, (label, identifiers) in enumerate(sorted(by_label.items())):
                parameters[f"ids{i}"], parameters[f"label{i}"] = identifiers, label
                parts.append(
                    f"UNWIND $ids{i} AS id MATCH (n:{quote(self.naming.label_of(label))} {{{ident}: id}}) "
                    f"RETURN $label{i} AS label, id, elementId(n) AS eid, n.{name} AS name"
                )
            found = {}
            for row in self._read(" UNION ALL ".join(parts), **parameters):
                found[NodeRef(row["label"], row["id"])] = (row["eid"], row["name"])
            for ref in wanted:
                self._resolved[ref] = found.get(ref)
        return {ref: self._resolved[ref] for ref in refs}

    def present(self, ref: NodeRef) -> bool:
        return self._resolved.get(ref) is not None

    def name_of(self, ref: NodeRef) -> str | None:
        hit = self._resolved.get(ref)
        return hit[1] if hit else None

    # ------------------------------------------------------------------ connectivity

    def _path_query(self, hops: int) -> str:
        if not 1 <= hops <= MAX_PAIR_HOPS:
            raise ValueError(f"SPOKE hop limit must be 1..{MAX_PAIR_HOPS}, not {hops}")
        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        return (
            "UNWIND $pairs AS pair "
            "MATCH (a) WHERE elementId(a) = pair.a "
            "MATCH (b) WHERE elementId(b) = pair.b "
            f"MATCH p = shortestPath((a)-[*..{int(hops)}]-(b)) "
            "RETURN pair.a AS a, pair.b AS b, "
            f"[n IN nodes(p) | {{label: head(labels(n)), identifier: n.{ident}, name: n.{name}}}] AS nodes, "
            f"[r IN relationships(p) | {{type: type(r), from: startNode(r).{ident}, to: endNode(r).{ident}}}] "
            "AS relationships"
        )

    def node_paths(
        self, node_pairs: Iterable[tuple[NodeRef, NodeRef]], hops: int
    ) -> dict[tuple[NodeRef, NodeRef], dict[str, Any]]:
        """Shortest SPOKE path (nodes, relationships) of each connected pair of distinct, present nodes.

        Keys are the pairs as given (in sorted order); missing keys are not connected within ``hops``.
        """
        query = self._path_query(hops)
        wanted: dict[tuple[str, str], tuple[NodeRef, NodeRef]] = {}
        for x, y in node_pairs:
            a, b = sorted((x, y))
            if a == b or not (self.present(a) and self.present(b)):
                continue
            wanted[(self._resolved[a][0], self._resolved[b][0])] = (a, b)
        found: dict[tuple[NodeRef, NodeRef], dict[str, Any]] = {}
        items = sorted(wanted)
        for start in range(0, len(items), self.chunk_size):
            chunk = [{"a": a, "b": b} for a, b in items[start : start + self.chunk_size]]
            for row in self._read(query, pairs=chunk):
                found[wanted[(row["a"], row["b"])]] = {
                    "nodes": row["nodes"],
                    "relationships": row["relationships"],
                }
        return found

    def connections(
        self, concept_pairs: Iterable[tuple[str, str]], mapping: CuiMapping, hops: int
    ) -> SpokeConnections:
        """Node-level SPOKE paths (within ``hops``) between the mapped nodes of each concept pair,
        in few round trips (one node lookup, one path query per chunk of node pairs)."""
        pairs = {tuple(sorted(p)) for p in concept_pairs}
        self.resolve({ref for pair in pairs for cui in pair for ref in mapping.nodes_of(cui)})
        present = {
            cui: [r for r in mapping.nodes_of(cui) if self.present(r)] for pair in pairs for cui in pair
        }
        node_pairs = {
            tuple(sorted((x, y))) for a, b in pairs for x in present[a] for y in present[b] if x != y
        }
        return SpokeConnections(self, hops, present, self.node_paths(node_pairs, hops))

    def links(
        self, concept_pairs: Iterable[tuple[str, str]], mapping: CuiMapping, hops: int
    ) -> dict[tuple[str, str], SpokeLink]:
        """:class:`SpokeLink` of each concept pair, keyed by the sorted pair and read from its first
        concept (use :func:`link_for` for a pair in any order); all in few round trips."""
        found = self.connections(concept_pairs, mapping, hops)
        return {pair: found.link(*pair) for pair in {tuple(sorted(p)) for p in concept_pairs}}

    def neighbourhood(
        self, seed: str, *, seed_label: str | None = None, hops: int = 1, labels: Iterable[str] = (),
        limit: int = 500,
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:  # fmt: skip
        """The seed node and the nodes within ``hops`` relationships of it whose label is one of
        ``labels`` (all labels when empty), closest first, then by label and identifier.

        The paper's query set (section VIII): "COVID-19-related concepts that appear in SPOKE v3
        as vertices were identified by using SPOKE's Neighborhood Explorer [...] A total of 54
        connected vertices, of which 6 are of type Disease and 48 are of type Protein". The seed
        counts as distance 0 when its label is wanted. Returns ``(seed, nodes)``; ``seed`` is None
        when no node has that identifier. One round trip (two without a seed label).
        """
        if not 1 <= hops <= 3:
            raise ValueError(f"neighbourhood hops must be 1..3, not {hops}")
        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        wanted = [self.naming.label_of(check_name(label, "neighbourhood label")) for label in labels]
        if seed_label:
            seed_match = f"MATCH (s:{quote(self.naming.label_of(check_name(seed_label, 'seed label')))} {{{ident}: $seed}})"
        else:
            seed_match = f"MATCH (s) WHERE s.{ident} = $seed"
        label_filter = "any(l IN labels(n) WHERE l IN $labels)" if wanted else "true"
        query = (
            f"{seed_match} WITH s LIMIT 1 "
            f"OPTIONAL MATCH p = (s)-[*1..{int(hops)}]-(n) WHERE n <> s AND {label_filter} "
            "WITH s, n, min(length(p)) AS distance "
            f"RETURN head(labels(s)) AS seed_label, s.{ident} AS seed_id, s.{name} AS seed_name, "
            f"[l IN labels(s) WHERE l IN $labels] <> [] AS seed_wanted, "
            f"head(labels(n)) AS label, n.{ident} AS identifier, n.{name} AS name, distance "
            "ORDER BY distance, label, identifier"
        )
        rows = self._read(query, seed=seed, labels=wanted)
        if not rows:
            return None, []
        first = rows[0]
        seed_node = {"label": first["seed_label"], "identifier": first["seed_id"], "name": first["seed_name"]}
        nodes = []
        if first["seed_wanted"] or not wanted:
            nodes.append({**seed_node, "distance": 0})
        nodes += [
            {"label": r["label"], "identifier": r["identifier"], "name": r["name"], "distance": int(r["distance"])}
            for r in rows
            if r["identifier"] is not None
        ]
        logical = {self.naming.label_of(label): label for label in labels}
        for node in nodes:
            node["label"] = logical.get(node["label"], node["label"])
        return seed_node, nodes[:limit]


class SpokeConnections:
    """Which mapped SPOKE nodes of a set of concept pairs are joined within ``hops``, and how.

    ``present[cui]`` are the concept's mapped nodes that exist in Neo4j; ``node_paths`` holds
    the shortest SPOKE path of every connected pair of distinct nodes (keyed by the sorted pair).
    """

    def __init__(self, graph: SpokeGraph, hops: int, present: dict[str, list[NodeRef]], node_paths: dict):
        self.graph = graph
        self.hops = hops
        self.present = present
        self.node_paths = node_paths

    def node_link(self, x: NodeRef, y: NodeRef) -> SpokeLink | None:
        """The SPOKE link from node x to node y (length 0 when they are one node); None if not joined."""
        if x == y:
            return SpokeLink(True, self.hops, 0, [x.as_dict(self.graph.name_of(x))], [])
        found = self.node_paths.get(tuple(sorted((x, y))))
        if found is None:
            return None
        nodes, rels = list(found["nodes"]), list(found["relationships"])
        if NodeRef(nodes[0]["label"], nodes[0]["identifier"]) != x:
            nodes.reverse()  # report the path from x to y
            rels.reverse()
        # relationships[i] joins nodes[i] and nodes[i + 1]; "forward" when it points that way
        relationships = [
            {**rel, "forward": rel["from"] == nodes[i]["identifier"]} for i, rel in enumerate(rels)
        ]
        return SpokeLink(True, self.hops, len(relationships), nodes, relationships)

    def link(self, a: str, b: str) -> SpokeLink:
        """The best link of concepts a and b over their mapped nodes, read from a to b: a shared
        node first, else the shortest path (ties by the end nodes' label and identifier)."""
        nodes_a, nodes_b = self.present.get(a, []), self.present.get(b, [])
        shared = sorted(set(nodes_a) & set(nodes_b))
        if shared:
            return self.node_link(shared[0], shared[0])
        best = None
        for x in nodes_a:
            for y in nodes_b:
                found = self.node_link(x, y)
                if found is None:
                    continue
                rank = (found.length, x, y)
                if best is None or rank < best[0]:
                    best = (rank, found)
        return best[1] if best is not None else SpokeLink(False, self.hops)


def link_for(links: dict[tuple[str, str], SpokeLink], a: str, b: str) -> SpokeLink:
    """The link of ``a`` and ``b`` from :meth:`SpokeGraph.links`, read from ``a`` to ``b``."""
    key = (a, b) if a <= b else (b, a)
    return links[key].oriented(key != (a, b))


__all__ = [
    "CONCEPT_KEY", "DEFAULT_SCENARIO4_MAX_HOPS", "MAX_HOPS", "MAX_PAIR_HOPS", "CuiMapping", "NodeRef",
    "SpokeConnections", "SpokeGraph", "SpokeLink", "link_for",
]  # fmt: skip
