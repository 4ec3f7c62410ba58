"""The SPOKE side of the comparison: the CUI -> SPOKE mapping and batched connectivity queries.

Connectivity contract. Two concepts ``a`` and ``b`` are *connected within h hops* when some
SPOKE node mapped from ``a`` and some SPOKE node mapped from ``b`` are joined by a path of at
most ``h`` relationships, followed in either direction (the literature graph is undirected).
Two concepts that share a mapped node (two CUIs of one SPOKE node, or a repeated concept)
are connected with length 0. The evidence of a connected pair is one shortest SPOKE path
between the closest mapped nodes (ties broken by label and identifier of the end nodes;
among equally short paths between the same two nodes, Neo4j's ``shortestPath`` picks one).

SPOKE as it is served (docs/design.md §6.6). Identifiers are compared whatever their type in
Neo4j (an integer Entrez id matches the mapping's ``"3569"``); a node marked obsolete (SPOKE's
``vestige``, true or "True") is neither a mapped node nor a step of a path; a node with several
labels is the node the mapping names under any of them, and a path reports each node's labels;
and a :class:`RelationshipFilter` (allowed or denied relationship types) keeps hub
relationships (``ENCODES_OeP``: every protein of an organism two hops from every other) out of
the hop checks and scenario 4's search.

Queries. Everything is read-only (``session.execute_read``) and parameterized: identifiers
travel as parameters, only checked labels, relationship types and the integer hop bound are
part of the text. A whole run costs

* one query resolving every mapped (label, identifier) to a Neo4j element id (a
  ``UNION ALL`` of one ``UNWIND`` per label), and
* one ``UNWIND $pairs`` query per ``chunk_size`` distinct node pairs per hop bound, each
  pair answered with ``shortestPath((a)-[*..h]-(b))``;
* with a deny list, one ``db.relationshipTypes()`` call (the allowed types are the others).

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

from pipeline.spoke.mapping.rules import MAPPABLE_LABELS
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
OBSOLETE_PROPERTY = "vestige"  # SPOKE's mark of an obsolete node (pipeline.spoke.mapping.rules)
MAX_HOPS = 4  # hop limit h of a literature hop: a few relationships at most are meaningful
# Scenario 4 ("path exists in SPOKE") has no bound in the paper; shortestPath is a
# bidirectional breadth-first search, so a generous cap stays cheap (DEFAULT_SCENARIO4_MAX_HOPS).
MAX_PAIR_HOPS = 32
DEFAULT_SCENARIO4_MAX_HOPS = 12


@dataclass(frozen=True)
class RelationshipFilter:
    """Which SPOKE relationship types a hop check, scenario 4's search and the neighbourhood may
    follow: only ``allow`` when given, else every type but ``deny``; empty both: every type."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in (*self.allow, *self.deny):
            check_name(name, "relationship type")
        if self.allow and self.deny:
            raise ValueError("give allowed or denied SPOKE relationship types, not both")

    @property
    def active(self) -> bool:
        return bool(self.allow or self.deny)

    def as_dict(self) -> dict[str, list[str]]:
        return {"allow": list(self.allow), "deny": list(self.deny)}

    def describe(self) -> str:
        if self.allow:
            return "only " + ", ".join(self.allow)
        if self.deny:
            return "all but " + ", ".join(self.deny)
        return "every relationship type"


NO_FILTER = RelationshipFilter()


def obsolete_test(variable: str, obsolete_property: str | None) -> str:
    """Cypher that is true for a node marked obsolete (the property true, or "true" in any case).
    The property's name travels as the parameter ``$obsolete`` (read as ``n[$obsolete]``: no
    warning from Neo4j when no node has it, and still checked during a shortest-path search)."""
    if not obsolete_property:
        return "false"
    return f"coalesce(toLower(toString({variable}[$obsolete])) = 'true', false)"


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
        relationships: RelationshipFilter = NO_FILTER,
        obsolete_property: str | None = OBSOLETE_PROPERTY,
    ):
        self.driver = driver
        self.relationships = relationships
        self.obsolete_property = obsolete_property
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
        # NodeRef -> (element id, name); None when the mapping names a node Neo4j lacks (or obsolete)
        self._resolved: dict[NodeRef, tuple[str, str | None] | None] = {}
        self.obsolete: set[NodeRef] = set()  # mapped nodes Neo4j marks obsolete (skipped)
        self._ref_of_eid: dict[str, NodeRef] = {}  # element id -> the mapped node resolved to it
        self._types: str | None = None  # the relationship type expression of the filter, once resolved

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
        """Element id and name of each node; None for nodes absent from Neo4j or marked obsolete.
        One query for all new refs; identifiers match whatever their type in Neo4j."""
        from pipeline.spoke.mapping.nodes import typed_keys

        refs = list(refs)
        wanted = sorted({ref for ref in refs if ref not in self._resolved})
        if wanted:
            by_label: dict[str, list[str]] = defaultdict(list)
            for ref in wanted:
                by_label[ref.label].append(ref.identifier)
            ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
            obsolete = obsolete_test("n", self.obsolete_property)
            parts, parameters = [], {}
            for i, (label, identifiers) in enumerate(sorted(by_label.items())):
                parameters[f"ids{i}"], parameters[f"label{i}"] = typed_keys(identifiers), label
                parts.append(
                    f"UNWIND $ids{i} AS id MATCH (n:{quote(self.naming.label_of(label))} {{{ident}: id}}) "
                    f"RETURN $label{i} AS label, toString(id) AS id, elementId(n) AS eid, n.{name} AS name, "
                    f"{obsolete} AS obsolete"
                )
            found = {}
            for row in self._read(" UNION ALL ".join(parts), obsolete=self.obsolete_property, **parameters):
                ref = NodeRef(row["label"], row["id"])
                if row["obsolete"]:
                    self.obsolete.add(ref)
                else:
                    found[ref] = (row["eid"], row["name"])
                    self._ref_of_eid.setdefault(row["eid"], ref)
            for ref in wanted:
                self._resolved[ref] = found.get(ref)
        return {ref: self._resolved[ref] for ref in refs}

    def present(self, ref: NodeRef) -> bool:
        return self._resolved.get(ref) is not None

    def same_node(self, x: NodeRef, y: NodeRef) -> bool:
        """Whether two mapped nodes are one Neo4j node (a node with two labels, mapped under both)."""
        hit_x, hit_y = self._resolved.get(x), self._resolved.get(y)
        return hit_x is not None and hit_y is not None and hit_x[0] == hit_y[0]

    def name_of(self, ref: NodeRef) -> str | None:
        hit = self._resolved.get(ref)
        return hit[1] if hit else None

    # ------------------------------------------------------------------ connectivity

    def relationship_types(self) -> str:
        """The type part of a variable-length pattern (``:A|B``; empty for every type). A deny
        list becomes the allowed types (Neo4j's types less the denied), read once."""
        if self._types is None:
            if self.relationships.allow:
                allowed = list(self.relationships.allow)
            elif self.relationships.deny:
                rows = self._read(
                    "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS t"
                )
                denied = set(self.relationships.deny)
                allowed = sorted(r["t"] for r in rows if r["t"] not in denied)
                if not allowed:  # nothing may be followed: a type that cannot exist
                    allowed = ["litpath_no_relationship_allowed"]
            else:
                allowed = []
            self._types = (":" + "|".join(quote(t) for t in allowed)) if allowed else ""
        return self._types

    def _path_query(self, hops: int) -> str:
        if not 1 <= hops <= MAX_PAIR_HOPS:
            raise ValueError(f"SPOKE hop limit must be 1..{MAX_PAIR_HOPS}, not {hops}")
        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        # Neo4j checks a predicate over all of a shortest path's nodes during its search.
        skip = (
            f" WHERE all(x IN nodes(p) WHERE NOT {obsolete_test('x', self.obsolete_property)})"
            if self.obsolete_property
            else ""
        )
        return (
            "UNWIND $pairs AS pair "
            "MATCH (a) WHERE elementId(a) = pair.a "
            "MATCH (b) WHERE elementId(b) = pair.b "
            f"MATCH p = shortestPath((a)-[{self.relationship_types()}*..{int(hops)}]-(b)){skip} "
            "RETURN pair.a AS a, pair.b AS b, "
            f"[n IN nodes(p) | {{eid: elementId(n), labels: labels(n), identifier: toString(n.{ident}), "
            f"name: n.{name}}}] AS nodes, "
            f"[r IN relationships(p) | {{type: type(r), start: elementId(startNode(r)), "
            f"from: toString(startNode(r).{ident}), to: toString(endNode(r).{ident})}}] AS relationships"
        )

    def node_label(self, labels: Iterable[str], eid: str | None = None) -> str:
        """The label a path reports for a node: the mapped node's own label when it is one of the
        resolved nodes, else its labels as the mapping names them (several joined by ``:``)."""
        if eid is not None and eid in self._ref_of_eid:
            return self._ref_of_eid[eid].label
        logical = {self.naming.label_of(label): label for label in MAPPABLE_LABELS}
        names = sorted(logical.get(label, label) for label in labels)
        return ":".join(names) if names else ""

    def node_paths(
        self, node_pairs: Iterable[tuple[NodeRef, NodeRef]], hops: int
    ) -> dict[tuple[NodeRef, NodeRef], dict[str, Any]]:
        """Shortest SPOKE path (nodes, relationships) of each connected pair of distinct, present nodes.

        Keys are the pairs as given (in sorted order); missing keys are not connected within ``hops``.
        """
        query = self._path_query(hops)
        # One query per pair of Neo4j nodes; several pairs of mapped nodes can be one pair of
        # Neo4j nodes (a node with two labels, mapped under both), and each gets the path: a
        # single entry per element-id pair kept only the last of them, which one depending on
        # the order of a set (Python's hash seed), so a hop's SPOKE link changed between runs.
        wanted: dict[tuple[str, str], list[tuple[NodeRef, NodeRef]]] = defaultdict(list)
        for x, y in node_pairs:
            a, b = sorted((x, y))
            if a == b or not (self.present(a) and self.present(b)) or self.same_node(a, b):
                continue
            wanted[(self._resolved[a][0], self._resolved[b][0])].append((a, b))
        found: dict[tuple[NodeRef, NodeRef], dict[str, Any]] = {}
        items = sorted(wanted)
        for start in range(0, len(items), self.chunk_size):
            chunk = [{"a": a, "b": b} for a, b in items[start : start + self.chunk_size]]
            for row in self._read(query, pairs=chunk, obsolete=self.obsolete_property):
                path = {
                    "nodes": [
                        {"eid": n["eid"], "label": self.node_label(n["labels"], n["eid"]),
                         "identifier": n["identifier"], "name": n["name"]}
                        for n in row["nodes"]
                    ],
                    "relationships": row["relationships"],
                }  # fmt: skip
                for pair in wanted[(row["a"], row["b"])]:
                    found[pair] = path
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
        cutoffs: Iterable[EdgeCutoff] = (),
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:  # fmt: skip
        """The seed node and every node within ``hops`` relationships of it whose label is one of
        ``labels`` (all labels when empty), in :data:`NEIGHBOURHOOD_ORDER`.

        The paper's query set (section VIII): "COVID-19-related concepts that appear in SPOKE v3
        as vertices were identified by using SPOKE's Neighborhood Explorer [...] A total of 54
        connected vertices, of which 6 are of type Disease and 48 are of type Protein". The seed
        counts as distance 0 when its label is wanted. Paths follow the relationship filter, avoid
        obsolete nodes, and keep to the ``cutoffs`` (Neighborhood Explorer's edge thresholds).
        Each node carries its ``distance`` and ``support``: the number of shortest paths from the
        seed to it (for one hop, the relationships joining it to the seed). Returns ``(seed,
        nodes)``; ``seed`` is None when no node has that identifier. One round trip (two with a
        deny list of relationship types)."""
        from pipeline.spoke.mapping.nodes import typed_keys

        if not 1 <= hops <= 3:
            raise ValueError(f"neighbourhood hops must be 1..3, not {hops}")
        ident, name = quote(self.naming.identifier_property), quote(self.naming.name_property)
        labels = list(labels)
        wanted = [self.naming.label_of(check_name(label, "neighbourhood label")) for label in labels]
        if seed_label:
            label = quote(self.naming.label_of(check_name(seed_label, "seed label")))
            seed_match = f"MATCH (s:{label}) WHERE s.{ident} IN $seed"
        else:
            seed_match = f"MATCH (s) WHERE s.{ident} IN $seed"
        label_filter = "any(l IN labels(n) WHERE l IN $labels)" if wanted else "true"
        parameters: dict[str, Any] = {
            "seed": typed_keys([seed]),
            "labels": wanted,
            "obsolete": self.obsolete_property,
        }
        conditions = [f"NOT {obsolete_test('x', self.obsolete_property)}"] if self.obsolete_property else []
        path_filter = f"all(x IN nodes(p) WHERE {conditions[0]})" if conditions else "true"
        cut = []
        for i, cutoff in enumerate(cutoffs):
            parameters[f"cut{i}"] = cutoff.as_dict()
            cut.append(cutoff.cypher(f"$cut{i}"))
        edge_filter = f"all(r IN relationships(p) WHERE {' AND '.join(cut)})" if cut else "true"
        query = (
            f"{seed_match} WITH s LIMIT 1 "
            f"OPTIONAL MATCH p = (s)-[{self.relationship_types()}*1..{int(hops)}]-(n) "
            f"WHERE n <> s AND {label_filter} AND {path_filter} AND {edge_filter} "
            "WITH s, n, length(p) AS len "
            "WITH s, n, min(len) AS distance, collect(len) AS lens "
            f"RETURN labels(s) AS seed_labels, toString(s.{ident}) AS seed_id, s.{name} AS seed_name, "
            "[l IN labels(s) WHERE l IN $labels] AS seed_wanted, "
            f"[l IN labels(n) WHERE l IN $labels] AS wanted_labels, labels(n) AS node_labels, "
            f"toString(n.{ident}) AS identifier, n.{name} AS name, distance, "
            "size([l IN lens WHERE l = distance]) AS support"
        )
        rows = self._read(query, **parameters)
        if not rows:
            return None, []
        logical = {self.naming.label_of(label): label for label in labels}
        first = rows[0]

        def label_of(wanted_labels: list[str], all_labels: list[str]) -> str:
            # a node with several labels is reported under the first wanted one it carries
            for label in wanted:
                if label in wanted_labels:
                    return logical.get(label, label)
            return self.node_label(all_labels)

        seed_label_out = label_of(first["seed_wanted"], first["seed_labels"])
        seed_node = {"label": seed_label_out, "identifier": first["seed_id"], "name": first["seed_name"]}
        nodes = []
        if first["seed_wanted"] or not wanted:
            nodes.append({**seed_node, "distance": 0, "support": None})
        found = [
            {"label": label_of(r["wanted_labels"], r["node_labels"]), "identifier": r["identifier"],
             "name": r["name"], "distance": int(r["distance"]), "support": int(r["support"])}
            for r in rows
            if r["identifier"] is not None
        ]  # fmt: skip
        found.sort(key=lambda n: (n["distance"], -n["support"], n["label"], n["identifier"]))
        return seed_node, nodes + found


# The order of a neighbourhood's nodes, which decides which are kept when there are more than
# the limit: the closest first; among equally close ones, those joined to the seed by more
# shortest paths (one hop: more relationships); then by label and identifier.
NEIGHBOURHOOD_ORDER = (
    "distance, then support (shortest paths from the seed, more first), then label and identifier"
)


@dataclass(frozen=True)
class EdgeCutoff:
    """A threshold on a relationship property, as SPOKE's Neighborhood Explorer offers: a
    relationship of one of ``types`` passes only when its ``property`` is at least ``minimum``
    (a list property: when one of its values is); relationships of other types always pass."""

    types: tuple[str, ...]
    property: str
    minimum: float

    def __post_init__(self) -> None:
        if not self.types:
            raise ValueError(f"an edge cutoff on {self.property!r} must name its relationship types")
        for name in (*self.types, self.property):
            check_name(name, "edge cutoff name")

    def as_dict(self) -> dict[str, Any]:
        return {"types": list(self.types), "property": self.property, "minimum": self.minimum}

    @classmethod
    def parse(cls, text: str) -> EdgeCutoff:
        """``TYPE[|TYPE...].property>=minimum`` (``INTERACTS_PiP.confidence>=0.7``)."""
        match = re.fullmatch(r"\s*([\w|]+)\.(\w+)\s*>=\s*([-+0-9.eE]+)\s*", text)
        if not match:
            raise ValueError(
                f"edge cutoff {text!r} is not TYPE.property>=number (e.g. INTERACTS_PiP.confidence>=0.7)"
            )
        return cls(tuple(match.group(1).split("|")), match.group(2), float(match.group(3)))

    def cypher(self, parameter: str) -> str:
        value = f"r[{parameter}.property]"
        return (
            f"(NOT type(r) IN {parameter}.types OR coalesce(CASE WHEN valueType({value}) STARTS WITH 'LIST' "
            f"THEN any(v IN {value} WHERE toFloatOrNull(v) >= {parameter}.minimum) "
            f"ELSE toFloatOrNull({value}) >= {parameter}.minimum END, false))"
        )


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
        if x == y or self.graph.same_node(x, y):
            return SpokeLink(True, self.hops, 0, [x.as_dict(self.graph.name_of(x))], [])
        found = self.node_paths.get(tuple(sorted((x, y))))
        if found is None:
            return None
        nodes, rels = list(found["nodes"]), list(found["relationships"])
        x_hit = self.graph.resolve([x])[x]
        if x_hit is not None and nodes[0]["eid"] != x_hit[0]:
            nodes.reverse()  # report the path from x to y (element ids: labels and identifiers may repeat)
            rels.reverse()
        # relationships[i] joins nodes[i] and nodes[i + 1]; "forward" when it points that way
        relationships = [
            {
                "type": rel["type"],
                "from": rel["from"],
                "to": rel["to"],
                "forward": rel["start"] == nodes[i]["eid"],
            }
            for i, rel in enumerate(rels)
        ]
        shown = [{key: node[key] for key in ("label", "identifier", "name")} for node in nodes]
        shown[0]["label"], shown[-1]["label"] = x.label, y.label  # the ends as the mapping names them
        return SpokeLink(True, self.hops, len(relationships), shown, relationships)

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
    "CONCEPT_KEY", "DEFAULT_SCENARIO4_MAX_HOPS", "MAX_HOPS", "MAX_PAIR_HOPS", "NEIGHBOURHOOD_ORDER", "NO_FILTER",
    "OBSOLETE_PROPERTY", "CuiMapping", "EdgeCutoff", "NodeRef", "RelationshipFilter", "SpokeConnections", "SpokeGraph", "SpokeLink", "link_for",
    "obsolete_test",
]  # fmt: skip
