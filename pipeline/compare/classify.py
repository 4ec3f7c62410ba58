"""Classify literature paths against SPOKE (DESIGN section 6; seed paper section VIII, Table VI).

A literature path is its concept sequence c0..ck (abstracts on it are evidence, not concepts).
A concept is *mapped* when the mapping names at least one SPOKE node that exists in Neo4j.
A *hop* is a consecutive pair, connected when the two concepts connect in SPOKE within ``h``
hops (see :mod:`pipeline.compare.spoke`). With every concept mapped, the hops are those of
the path; otherwise the unmapped concepts are collapsed out and the hops are those of the
collapsed path.

======  ====================================================================================
``1``   every concept maps and every hop is connected (exact match)
``2a``  every concept maps, some but not all hops connected
``2b``  every concept maps, no hop connected
``3a``  some concepts unmapped; every hop of the collapsed path connected
``3b``  some unmapped; the collapsed path partially connected
``3c``  some unmapped; the collapsed path not connected at all, or fewer than two mapped
``4``   no literature path between the pair, but the pair connects in SPOKE
``none`` no literature path and no SPOKE connection (within the pair hop bound)
======  ====================================================================================

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
from pipeline.compare.spoke import CuiMapping, SpokeGraph, SpokeLink, link_for

SCENARIOS = ("1", "2a", "2b", "3a", "3b", "3c", "4", "none")
DESCRIPTIONS = {
    "1": "Exact match: every concept maps to SPOKE and every hop is connected in SPOKE",
    "2a": "All concepts map; the path is partly connected in SPOKE",
    "2b": "All concepts map; no hop is connected in SPOKE",
    "3a": "Some concepts unmapped; the collapsed path is connected in SPOKE",
    "3b": "Some concepts unmapped; the collapsed path is partly connected in SPOKE",
    "3c": "Some concepts unmapped; the collapsed path is not connected in SPOKE (or < 2 mapped)",
    "4": "Connected in SPOKE, no path in the literature graph",
    "none": "No path in the literature graph and not connected in SPOKE",
}


def scenario_of(all_mapped: bool, n_mapped: int, n_hops: int, n_connected: int) -> str:
    """The scenario of a literature path from its counts (``n_hops``: hops checked in SPOKE)."""
    if all_mapped:
        if n_hops == 0:
            raise ValueError("a path needs at least two concepts to be classified")
        return "1" if n_connected == n_hops else ("2b" if n_connected == 0 else "2a")
    if n_mapped < 2 or n_connected == 0:
        return "3c"
    return "3a" if n_connected == n_hops else "3b"


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
    hops: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def n_connected(self) -> int:
        return sum(hop.link.connected for hop in self.spoke_hops)

    def as_dict(self) -> dict[str, Any]:
        lit = self.literature
        return {
            "source": self.source,
            "target": self.target,
            "scenario": self.scenario,
            "description": DESCRIPTIONS[self.scenario],
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
            },
            "pair_link": None if self.pair_link is None else self.pair_link.as_dict(),
            "notes": self.notes,
        }


class Comparator:
    """Classifies sets of literature paths (or caller-given concept sequences) against SPOKE."""

    def __init__(self, mapping: CuiMapping, spoke: SpokeGraph, hops: int = 1, pair_hops: int | None = None):
        self.mapping = mapping
        self.spoke = spoke
        self.hops = int(hops)
        self.pair_hops = int(pair_hops or hops)

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
        """Classify literature paths; unreachable ones are checked as pairs (scenario 4 or none)."""
        concepts = {c for p in paths for c in (p.concepts if p.reachable else (p.source, p.target))}
        mapped = self._mapped_nodes(concepts)
        plans = []
        hop_pairs: set[tuple[str, str]] = set()
        pair_pairs: set[tuple[str, str]] = set()
        for path in paths:
            if path.reachable:
                hops, skipped = spoke_hops_of(path.concepts, set(mapped))
                hop_pairs.update(hops)
                plans.append((path, hops, skipped))
            else:
                pair_pairs.add((path.source, path.target))
                plans.append((path, None, None))
        if self.pair_hops == self.hops:  # one batch for both kinds
            links = self.spoke.links(hop_pairs | pair_pairs, self.mapping, self.hops)
            pair_links = links
        else:
            links = self.spoke.links(hop_pairs, self.mapping, self.hops)
            pair_links = self.spoke.links(pair_pairs, self.mapping, self.pair_hops)

        out = []
        for path, hops, skipped in plans:
            if hops is None:
                link = link_for(pair_links, path.source, path.target)
                ends = [path.source, path.target]
                out.append(
                    Comparison(
                        path.source,
                        path.target,
                        "4" if link.connected else "none",
                        ends,
                        {c: mapped[c] for c in ends if c in mapped},
                        [c for c in ends if c not in mapped],
                        [],
                        path,
                        link,
                        self.pair_hops,
                    )  # fmt: skip
                )
                continue
            spoke_hops = [
                SpokeHop(a, b, skip, link_for(links, a, b))
                for (a, b), skip in zip(hops, skipped, strict=True)
            ]
            unmapped = [c for c in path.concepts if c not in mapped]
            all_mapped = not unmapped
            n_mapped = len(path.concepts) - len(unmapped)
            scenario = scenario_of(
                all_mapped, n_mapped, len(spoke_hops), sum(h.link.connected for h in spoke_hops)
            )
            out.append(
                Comparison(
                    path.source,
                    path.target,
                    scenario,
                    list(path.concepts),
                    {c: mapped[c] for c in dict.fromkeys(path.concepts) if c in mapped},
                    list(dict.fromkeys(unmapped)),
                    spoke_hops,
                    path,
                    None,
                    self.hops,
                )  # fmt: skip
            )
        return out


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
    "DESCRIPTIONS", "SCENARIOS", "Comparator", "Comparison", "SpokeHop", "query_pairs", "scenario_of",
    "spoke_hops_of",
]  # fmt: skip
