"""Classify literature paths against SPOKE (docs/design.md §10; seed paper section
VIII, Table VI).

A literature path is its concept sequence c0..ck (abstracts on it are evidence, not concepts).
A concept is *mapped* when the mapping names at least one SPOKE node that exists in Neo4j.
A *hop* is a consecutive pair, connected when the two concepts connect in SPOKE within ``h``
hops (see :mod:`pipeline.compare.spoke`). With every concept mapped, the hops are those of
the path; otherwise the unmapped concepts are collapsed out and the hops are those of the
collapsed path.

======  ====================================================================================
``1``   every concept maps and the path is one SPOKE walk: every hop connected *through one
        SPOKE node per concept* (exact match)
``2a``  every concept maps, some but not all hops connected -- or all connected, but not
        through one node per concept (no single SPOKE path; a note says so)
``2b``  every concept maps, no hop connected
``3a``  some concepts unmapped; the collapsed path is one SPOKE walk
``3b``  some unmapped; the collapsed path partially connected (or connected hop by hop only)
``3c``  some unmapped; the collapsed path not connected at all, or fewer than two mapped
``4``   no literature path between the pair, and a SPOKE path exists (up to the safety cap
        ``scenario4_max_hops``; the paper: "Path exists in SPOKE, and no path exists in the
        Pubmed co-occurrence graph", no bound)
``none`` no literature path and no SPOKE path within the cap (not a scenario of the paper)
======  ====================================================================================

Exact match is one SPOKE path. Table VI's 3a example: "After removing G0000159 expression,
the full path is P13232 IL7_HUMAN (Protein) -> DOID: 0080600 COVID-19 (Disease) -> P05231
IL6_HUMAN (Protein)": a concept between two hops is the same SPOKE node on both sides. When a
concept maps to several SPOKE nodes (a Gene and a Protein, two Disease nodes),
:func:`joined_walk` looks for one node per concept such that every hop joins the chosen
nodes (a dynamic programme over the path, shortest total first) and reports the nodes used.

Two readings of "found in the SPOKE shortest paths" (Table VI's words for 2b, 3a and 3b). The
default, ``adjacency``, reads it hop by hop, as above: a hop is found when SPOKE joins its two
concepts within h relationships. The stricter ``shortest`` reading asks more of the exact
scenarios: the (collapsed) literature path, as the SPOKE walk :func:`joined_walk` found, must
itself be a shortest SPOKE path between its two ends; when SPOKE joins the ends more directly, 1
becomes 2a and 3a becomes 3b (``scenario_strict``). Every pair carries the SPOKE distance between
its two ends (``spoke_distance``, within ``scenario4_max_hops``), so both readings are counted
from one run.

Scenario 4 and ``none`` have causes, which Fig. 10 counts apart (:data:`CAUSES`): the literature
may not connect two concepts it knows, or an end may not be in the literature graph at all (a
vocabulary gap: a retired CUI, one SemRep never produced); and a ``none`` pair may have an end
that maps to no SPOKE node, or two mapped ends that SPOKE does not join within the cap. The
paper's scenario numbers are kept; the cause is a column of its own.

A path of one concept has no hop and is not classified (pairs of a concept with itself are
never formed). Repeated concepts are allowed (a caller's path may revisit one): a hop from a
concept to itself, or between two CUIs of one SPOKE node, is connected with length 0.

:class:`Comparator` classifies whole sets of paths with one SPOKE node lookup and one batched
path query per hop bound (plus chunks), never one query per hop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.compare.literature import LiteraturePath
from pipeline.compare.spoke import (
    DEFAULT_SCENARIO4_MAX_HOPS,
    CuiMapping,
    NodeRef,
    SpokeConnections,
    SpokeGraph,
    SpokeLink,
)

SCENARIOS = ("1", "2a", "2b", "3a", "3b", "3c", "4", "none")
DESCRIPTIONS = {
    "1": "Exact match: every concept maps to SPOKE and the path is one SPOKE path",
    "2a": "All concepts map; the path is partly connected in SPOKE",
    "2b": "All concepts map; no hop is connected in SPOKE",
    "3a": "Some concepts unmapped; the collapsed path is one SPOKE path",
    "3b": "Some concepts unmapped; the collapsed path is partly connected in SPOKE",
    "3c": "Some concepts unmapped; the collapsed path is not connected in SPOKE (or < 2 mapped)",
    "4": "A path exists in SPOKE, no path in the literature graph",
    "none": "No path in the literature graph and none in SPOKE within the safety cap (not a paper scenario)",
}
NOT_JOINED = "every hop connects in SPOKE, but not through one SPOKE node per concept: no single SPOKE path"
# Scenario 4 and none, split by cause (the keys are the ``cause`` column's values).
CAUSES = {
    "4": {
        "literature-disconnected": "both ends are in the literature graph, which does not connect them",
        "literature-absent": "an end is not a vertex of the literature graph (a vocabulary gap)",
    },
    "none": {
        "unmapped": "an end maps to no SPOKE node present in Neo4j",
        "spoke-disconnected": "both ends map, and SPOKE does not join them within the cap",
    },
}
PAPER_PHRASE = "found in the SPOKE shortest paths"
READINGS = {
    "adjacency": "per-hop adjacency (the default): a hop is found in SPOKE when SPOKE joins its two "
    "concepts within h relationships",
    "shortest": "shortest path: for 1 and 3a the (collapsed) literature path must also be a shortest "
    "SPOKE path between its two ends (else 1 counts as 2a, 3a as 3b)",
}
# Under the shortest-path reading, an exact scenario whose walk is not a shortest SPOKE path.
STRICTER = {"1": "2a", "3a": "3b"}


def description(scenario: str, hops: int) -> str:
    """The scenario's meaning; scenario 1 and 3a with h > 1 are walks of up to h relationships a hop."""
    text = DESCRIPTIONS[scenario]
    if scenario in ("1", "3a") and hops > 1:
        text += f" (each hop within {hops} SPOKE relationships)"
    return text


def scenario_of(all_mapped: bool, n_mapped: int, n_hops: int, n_connected: int, joined: bool = True) -> str:
    """The scenario of a literature path from its counts (``n_hops``: hops checked in SPOKE;
    ``joined``: whether the connected hops form one SPOKE walk, see :func:`joined_walk`)."""
    full = n_connected == n_hops and joined
    if all_mapped:
        if n_hops == 0:
            raise ValueError("a path needs at least two concepts to be classified")
        return "1" if full else ("2b" if n_connected == 0 else "2a")
    if n_mapped < 2 or n_connected == 0:
        return "3c"
    return "3a" if full else "3b"


def joined_walk(concepts: Sequence[str], connections: SpokeConnections) -> list[NodeRef] | None:
    """One SPOKE node per concept such that every consecutive pair of chosen nodes is joined
    within the hop bound (the same node counts as joined), or None when there is none.

    A dynamic programme over the path: for each concept and each of its mapped nodes, the
    shortest total SPOKE length of a joined walk ending there. Among walks of equal total
    length the one with the smallest nodes (label, identifier) in path order wins, so the
    choice is deterministic.
    """
    if not concepts:
        return None
    layers = [sorted(connections.present.get(c, [])) for c in concepts]
    if any(not layer for layer in layers):
        return None
    # best[node] = (total length, walk so far) for walks ending at that node of the current concept
    best: dict[NodeRef, tuple[int, list[NodeRef]]] = {x: (0, [x]) for x in layers[0]}
    for layer in layers[1:]:
        step: dict[NodeRef, tuple[int, list[NodeRef]]] = {}
        for y in layer:
            for x, (total, walk) in best.items():
                link = connections.node_link(x, y)
                if link is None:
                    continue
                candidate = (total + int(link.length or 0), [*walk, y])
                if y not in step or candidate < step[y]:
                    step[y] = candidate
        if not step:
            return None
        best = step
    return min(best.values())[1]


def spoke_hops_of(concepts: Sequence[str], mapped: set[str]) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """Hops to check in SPOKE (collapsed over unmapped concepts) and, for each, the concepts skipped."""
    kept = [(i, c) for i, c in enumerate(concepts) if c in mapped]
    hops, skipped = [], []
    for (i, a), (j, b) in zip(kept, kept[1:], strict=False):
        hops.append((a, b))
        skipped.append(list(concepts[i + 1 : j]))
    return hops, skipped


@dataclass
class SpokeHop:
    source: str
    target: str
    skipped: list[str]  # unmapped concepts collapsed out between source and target
    link: SpokeLink

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "skipped": self.skipped, **self.link.as_dict()}


@dataclass
class Comparison:
    """One classified pair or path, with its evidence on both sides."""

    source: str
    target: str
    scenario: str
    concepts: list[str]
    mapped: dict[str, list[dict[str, Any]]]  # concept -> its SPOKE nodes present in Neo4j
    unmapped: list[str]
    spoke_hops: list[SpokeHop]
    literature: LiteraturePath | None = None
    pair_link: SpokeLink | None = None  # the pair's own SPOKE link (scenario 4 / none)
    hops: int = 1  # the hop limit h (scenario 4 / none: the safety cap searched)
    notes: list[str] = field(default_factory=list)
    spoke_walk: list[dict[str, Any]] | None = None  # one SPOKE node per mapped concept (1, 3a)
    cause: str | None = None  # scenario 4 and none: a key of CAUSES[scenario]
    spoke_distance: int | None = (
        None  # SPOKE relationships between the two ends (None: unmapped or past the cap)
    )
    walk_length: int | None = None  # relationships of the SPOKE walk of 1 and 3a
    shortest_in_spoke: bool | None = (
        None  # the walk is a shortest SPOKE path (None: not a reachable pair, or past the cap)
    )
    scenario_strict: str | None = None  # the scenario under the shortest-path reading

    @property
    def literature_cause(self) -> str | None:
        """Why the literature has no path: ``absent`` (an end not in its graph) or ``disconnected``."""
        lit = self.literature
        if lit is None or lit.reachable:
            return None
        return "absent" if not lit.in_graph else "disconnected"

    @property
    def n_connected(self) -> int:
        return sum(hop.link.connected for hop in self.spoke_hops)

    def as_dict(self) -> dict[str, Any]:
        lit = self.literature
        return {
            "source": self.source,
            "target": self.target,
            "scenario": self.scenario,
            "description": description(self.scenario, self.hops),
            "hop_limit": self.hops,
            "concepts": self.concepts,
            "mapped": self.mapped,
            "unmapped": self.unmapped,
            "spoke_hops": [hop.as_dict() for hop in self.spoke_hops],
            "n_connected": self.n_connected,
            "literature": None
            if lit is None
            else {
                "reachable": lit.reachable,
                "in_graph": lit.in_graph,
                "vertices": lit.vertices,
                "total_cost": lit.total_cost,
                "consistent": lit.consistent,
                "hops": [hop.as_dict() for hop in lit.hops],
                "evidence_status": lit.evidence_status,
                "shortest_paths": lit.shortest_paths,
            },
            "pair_link": None if self.pair_link is None else self.pair_link.as_dict(),
            "spoke_walk": self.spoke_walk,
            "cause": self.cause,
            "literature_cause": self.literature_cause,
            "spoke_distance": self.spoke_distance,
            "walk_length": self.walk_length,
            "shortest_in_spoke": self.shortest_in_spoke,
            "scenario_strict": self.scenario_strict or self.scenario,
            "notes": self.notes,
        }


class Comparator:
    """Classifies sets of literature paths (or caller-given concept sequences) against SPOKE.

    ``hops`` is the hop limit h of a literature hop; ``scenario4_max_hops`` the safety cap of
    the SPOKE search for pairs without a literature path (scenario 4 / none).
    """

    def __init__(
        self,
        mapping: CuiMapping,
        spoke: SpokeGraph,
        hops: int = 1,
        scenario4_max_hops: int | None = DEFAULT_SCENARIO4_MAX_HOPS,
    ):
        self.mapping = mapping
        self.spoke = spoke
        self.hops = int(hops)
        self.scenario4_max_hops = max(self.hops, int(scenario4_max_hops or self.hops))

    def _mapped_nodes(self, concepts: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        concepts = set(concepts)
        self.spoke.resolve({ref for c in concepts for ref in self.mapping.nodes_of(c)})
        out = {}
        for cui in concepts:
            nodes = [
                {**ref.as_dict(self.spoke.name_of(ref)), "method": self.mapping.method_of(cui, ref)}
                for ref in self.mapping.nodes_of(cui)
                if self.spoke.present(ref)
            ]
            if nodes:
                out[cui] = nodes
        return out

    def compare_sequences(self, sequences: Sequence[Sequence[str]]) -> list[Comparison]:
        """Classify caller-given concept sequences (each of at least two concepts) as paths."""
        paths = []
        for seq in sequences:
            if len(seq) < 2:
                raise ValueError(f"a path needs at least two concepts, got {list(seq)}")
            paths.append(LiteraturePath(seq[0], seq[-1], True, list(seq), list(seq)))
        return self.compare_paths(paths)

    def compare_paths(self, paths: Sequence[LiteraturePath]) -> list[Comparison]:
        """Classify literature paths; unreachable ones are checked as pairs (scenario 4 or none).

        Every pair's two ends (and a reachable path's collapsed ends, when an end is unmapped) are
        also searched in SPOKE up to the scenario-4 cap, in the same batched query: the SPOKE
        distance each pair carries, and the shortest-path reading's test."""
        concepts = {c for p in paths for c in (p.concepts if p.reachable else (p.source, p.target))}
        mapped = self._mapped_nodes(concepts)
        plans = []
        hop_pairs: set[tuple[str, str]] = set()
        end_pairs: set[tuple[str, str]] = set()
        for path in paths:
            end_pairs.add((path.source, path.target))
            if path.reachable:
                hops, skipped = spoke_hops_of(path.concepts, set(mapped))
                hop_pairs.update(hops)
                if hops:
                    end_pairs.add((hops[0][0], hops[-1][1]))
                plans.append((path, hops, skipped))
            else:
                plans.append((path, None, None))
        hop_connections = self.spoke.connections(hop_pairs, self.mapping, self.hops)
        end_connections = self.spoke.connections(end_pairs, self.mapping, self.scenario4_max_hops)
        return [
            self._unreachable(path, mapped, end_connections)
            if hops is None
            else self._reachable(path, hops, skipped, mapped, hop_connections, end_connections)
            for path, hops, skipped in plans
        ]

    def _unreachable(self, path: LiteraturePath, mapped, connections: SpokeConnections) -> Comparison:
        link = connections.link(path.source, path.target)
        ends = [path.source, path.target]
        notes = []
        if not path.in_graph:  # the ends the path finder did not find (an unreachable path has no vertices)
            notes.append(f"not a vertex of the literature graph: {', '.join(path.absent or ends)}")
        unmapped = [c for c in ends if c not in mapped]
        if link.connected:
            scenario, cause = "4", "literature-absent" if not path.in_graph else "literature-disconnected"
        else:
            scenario, cause = "none", "unmapped" if unmapped else "spoke-disconnected"
        return Comparison(
            path.source, path.target, scenario, ends, {c: mapped[c] for c in ends if c in mapped}, unmapped, [],
            path, link, self.scenario4_max_hops, notes, cause=cause,
            spoke_distance=link.length if link.connected else None, scenario_strict=scenario,
        )  # fmt: skip

    def _reachable(
        self, path, hops, skipped, mapped, connections: SpokeConnections, ends: SpokeConnections
    ) -> Comparison:
        per_hop = [connections.link(a, b) for a, b in hops]
        unmapped = [c for c in path.concepts if c not in mapped]
        n_connected = sum(link.connected for link in per_hop)
        notes: list[str] = []
        walk = None
        if hops and n_connected == len(hops):
            kept = [hops[0][0]] + [b for _, b in hops]
            walk = joined_walk(kept, connections)
            if walk is None:
                notes.append(NOT_JOINED)
            else:  # the evidence of each hop is the link between the chosen nodes
                per_hop = [connections.node_link(x, y) for x, y in zip(walk, walk[1:], strict=False)]
        spoke_hops = [
            SpokeHop(a, b, skip, link) for (a, b), skip, link in zip(hops, skipped, per_hop, strict=True)
        ]
        scenario = scenario_of(
            not unmapped, len(path.concepts) - len(unmapped), len(spoke_hops), n_connected, walk is not None
        )
        pair = ends.link(path.source, path.target)
        walk_length = shortest = None
        strict = scenario
        if walk is not None:
            walk_length = sum(int(hop.link.length or 0) for hop in spoke_hops)
            # the SPOKE distance between the collapsed path's ends: the walk is never shorter
            collapsed = ends.link(hops[0][0], hops[-1][1])
            if collapsed.connected:
                shortest = walk_length <= int(collapsed.length or 0)
            elif walk_length > self.scenario4_max_hops:
                notes.append(
                    f"the SPOKE walk has {walk_length} relationships, more than the cap of "
                    f"{self.scenario4_max_hops}: whether it is a shortest SPOKE path is not known"
                )
            if shortest is False:
                strict = STRICTER.get(scenario, scenario)
        elif spoke_hops:
            shortest = False  # no single SPOKE path: not a shortest one either
        return Comparison(
            path.source, path.target, scenario, list(path.concepts),
            {c: mapped[c] for c in dict.fromkeys(path.concepts) if c in mapped},
            list(dict.fromkeys(unmapped)), spoke_hops, path, None, self.hops, notes,
            None if walk is None else [ref.as_dict(self.spoke.name_of(ref)) for ref in walk],
            spoke_distance=pair.length if pair.connected else None, walk_length=walk_length,
            shortest_in_spoke=shortest, scenario_strict=strict,
        )  # fmt: skip


def same_node_pairs(
    pairs: Sequence[tuple[str, str]], mapping: CuiMapping, spoke: SpokeGraph
) -> set[tuple[str, str]]:
    """The pairs whose two CUIs map to one SPOKE node in Neo4j (e.g. two CUIs of one Disease
    node, or of one node with two labels, mapped under each): trivially connected in SPOKE, so
    the comparison reports them apart instead of classifying them. Decided on the nodes found in
    Neo4j and not obsolete, as every other step is: a shared node that is obsolete or missing
    joins nothing (the pair is classified), and the mapping's node names alone missed a node
    with two labels."""
    spoke.resolve({ref for pair in pairs for cui in pair for ref in mapping.nodes_of(cui)})
    present = {cui: [ref for ref in mapping.nodes_of(cui) if spoke.present(ref)] for pair in pairs for cui in pair}
    return {(a, b) for a, b in pairs if any(spoke.same_node(x, y) for x in present[a] for y in present[b])}


def query_pairs(concepts: Sequence[str], ordered: bool) -> list[tuple[str, str]]:
    """All pairs of distinct concepts, in query order: (a, b) and (b, a) when ``ordered``."""
    unique = list(dict.fromkeys(concepts))
    pairs = []
    for i, a in enumerate(unique):
        for j, b in enumerate(unique):
            if (ordered and i != j) or (not ordered and i < j):
                pairs.append((a, b))
    return pairs


__all__ = [
    "CAUSES", "DESCRIPTIONS", "NOT_JOINED", "PAPER_PHRASE", "READINGS", "SCENARIOS", "STRICTER", "Comparator",
    "Comparison", "SpokeHop", "description", "joined_walk", "query_pairs", "same_node_pairs", "scenario_of",
    "spoke_hops_of",
]  # fmt: skip
