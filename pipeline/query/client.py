"""litpath in-process: open a finished build and ask it for paths, distances and neighbours from
Python, without the HTTP service.

    from pipeline.query import open_paths

    with open_paths("results/latest") as paths:
        answer = paths.path("C0011849", "C0020538")
        print(answer.cost, " -> ".join(vertex.label for vertex in answer.vertices))

This is the same read side the path service (services/api) and the comparison use
(:func:`pipeline.query.build.open_build`, :class:`pipeline.query.graph.Graph`), with plain
dataclasses instead of JSON: a vertex is named by its key (a CUI, or a paper's doc_id such as
``PMID:123``), and every answer says whether its distances were ``stored`` (the build's
distances.bp) or computed ``on-demand`` (an exact Dijkstra). Answers are exact either way.
The hop evidence lives in MongoDB: given ``mongo_uri`` (and ``mongo_database``), ``open_paths``
reads it as the service's ``/v1/path`` does, and each hop carries its ``documents``,
``predicates`` ([{predicate, count}]) and ``sentences`` ([{text, pmid, year, predicate, subject,
sentence_id}]); without a store (or when it fails) they are None, unknown:

    with open_paths("results/latest", mongo_uri=os.environ["LITPATH_MONGO_URI"]) as paths:
        for hop in paths.path("C0011849", "C0020538", scope="cooccurrence").hops:
            print(hop.source, hop.target, hop.predicates, hop.sentences[:1])

Alternatives: ``paths.alternatives(source, target, k=5, include_types=[...], exclude_types=[...])``
gives the k shortest loopless paths, cheapest first, optionally only through concepts of (or not
of) some semantic types (:mod:`pipeline.query.alternatives`). Every path answer carries ``ties``:
how many distinct paths share the shortest cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline.builds.layout import SCOPES
from pipeline.query.alternatives import SemanticTypes, Ties, TypeFilter, alternative_paths, tie_count
from pipeline.query.build import Build, open_build, resolve_build_dir
from pipeline.query.graph import Graph
from pipeline.query.paths import PathResult, edge_kind
from pipeline.runtime.errors import LitpathError
from pipeline.store.evidence import evidence_for_pairs, paper_evidence_for
from pipeline.store.mongo import connect


class InconsistentPath(LitpathError):
    """The build's stored distances and its graph disagree about a path (a damaged build)."""


@dataclass(frozen=True)
class Vertex:
    key: str  # CUI or doc_id
    name: str | None  # the concept's name or the paper's title
    kind: str  # "concept" | "abstract"

    @property
    def label(self) -> str:
        return f"{self.name} ({self.key})" if self.name else self.key


@dataclass(frozen=True)
class Hop:
    source: str
    target: str
    cost: float  # -log(weight), the edge's length
    weight: float
    edge_kind: str  # concept_concept | concept_abstract | abstract_abstract
    # The evidence (with a store, see open_paths; None: unknown): the supporting papers, and the
    # predicates and quoted sentences of a concept-concept hop, or of a concept-abstract hop's paper
    # naming its concept (as /v1/path gives them).
    documents: list[str] | None = None
    n_predications: int | None = None
    predicates: list[dict] | None = None
    sentences: list[dict] | None = None


@dataclass(frozen=True)
class PathAnswer:
    source: str
    target: str
    scope: str  # "full" | "cooccurrence"
    reachable: bool
    cost: float  # the path's summed cost; inf when unreachable
    vertices: list[Vertex]
    hops: list[Hop]
    distances: str  # "stored" | "on-demand"
    ties: int | None = None  # distinct loopless paths of the shortest cost (0: unreachable)
    ties_saturated: bool = False  # True: ties is a lower bound


@dataclass(frozen=True)
class AlternativesAnswer:
    source: str
    target: str
    scope: str
    paths: list[PathAnswer]  # the k shortest loopless paths, cheapest first ([] when unreachable)
    ties: int  # distinct loopless paths of the shortest cost (on the filtered graph)
    ties_saturated: bool


class BuildPaths:
    """An opened build answering queries; close it (or use ``with``) to release its files."""

    def __init__(self, build: Build, mongo_db=None) -> None:
        self.build = build
        self.mongo_db = mongo_db  # the evidence store's database, or None
        self._semantic_types: dict[str, SemanticTypes] = {}

    @property
    def build_id(self) -> str:
        return self.build.build_id

    def graph(self, scope: str = "full") -> Graph:
        return self.build.graph(scope)

    def path(self, source: str, target: str, scope: str = "full") -> PathAnswer:
        """The shortest path from ``source`` to ``target`` (keys); KeyError
        (:class:`pipeline.query.graph.UnknownVertex`) for a key the graph does not have."""
        graph = self.graph(scope)
        s, t = graph.vid(source), graph.vid(target)
        result, where = graph.path(s, t)
        if result.reachable and not result.consistent:
            raise InconsistentPath(
                f"build {self.build_id}, {scope} graph: the stored distance {result.stored_distance} and the "
                f"path's cost {result.total_cost} of {source} -> {target} disagree"
            )
        return self._with_evidence(_answer(graph, result, where, source, target, tie_count(graph, s, t)))

    def alternatives(
        self,
        source: str,
        target: str,
        k: int = 5,
        *,
        include_types: list[str] | tuple[str, ...] = (),
        exclude_types: list[str] | tuple[str, ...] = (),
        scope: str = "full",
    ) -> AlternativesAnswer:
        """The ``k`` shortest loopless paths from ``source`` to ``target``, cheapest first, whose
        intermediate concepts carry one of ``include_types`` (when given) and none of
        ``exclude_types`` (SemMedDB abbreviations such as ``dsyn``); the endpoints and abstracts
        are never filtered. :class:`pipeline.query.alternatives.UnknownSemanticType` for a type no
        concept of the build carries."""
        graph = self.graph(scope)
        s, t = graph.vid(source), graph.vid(target)
        allowed = self.semantic_types(scope).allowed(TypeFilter.of(include_types, exclude_types))
        found = alternative_paths(graph, s, t, k, allowed)
        ties = tie_count(graph, s, t, allowed)
        return AlternativesAnswer(
            source=source,
            target=target,
            scope=scope,
            paths=[self._with_evidence(_answer(graph, result, "on-demand", source, target, ties)) for result in found],
            ties=ties.count,
            ties_saturated=ties.saturated,
        )

    def semantic_types(self, scope: str = "full") -> SemanticTypes:
        """The concept vertices' semantic types of graph ``scope`` (read once)."""
        if scope not in self._semantic_types:
            table = self.build.concepts()
            by_cui = table.semtypes_by_cui() if table is not None else {}
            self._semantic_types[scope] = SemanticTypes(self.graph(scope), by_cui)
        return self._semantic_types[scope]

    def distance(self, source: str, target: str, scope: str = "full") -> float:
        """The shortest distance (inf when unreachable)."""
        graph = self.graph(scope)
        value, _ = graph.distance(graph.vid(source), graph.vid(target))
        return float(value)

    def neighbors(self, key: str, k: int = 10, scope: str = "full") -> list[tuple[Vertex, float]]:
        """The ``k`` concepts nearest to ``key`` (itself excluded), nearest first."""
        graph = self.graph(scope)
        chosen, _ = graph.nearest_concepts(graph.vid(key), k)
        return [(_vertex(graph, vid), distance) for vid, distance in chosen]

    def _with_evidence(self, answer: PathAnswer) -> PathAnswer:
        """``answer`` with its hops' evidence from the store (unchanged, None, without one)."""
        if self.mongo_db is None or not answer.hops:
            return answer
        return replace(answer, hops=hops_with_evidence(answer.hops, self.mongo_db, self.build_id))

    def close(self) -> None:
        self.build.close()
        if self.mongo_db is not None:
            self.mongo_db.client.close()

    def __enter__(self) -> BuildPaths:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _answer(graph: Graph, result: PathResult, where: str, source: str, target: str, ties: Ties) -> PathAnswer:
    hops = [
        Hop(
            graph.keys[u],
            graph.keys[v],
            float(cost),
            graph.adjacency.edge_weight(u, v),
            edge_kind(bool(graph.is_concept[u]), bool(graph.is_concept[v])),
        )  # fmt: skip
        for u, v, cost in zip(result.vertices, result.vertices[1:], result.hop_costs, strict=False)
    ]
    return PathAnswer(
        source=source,
        target=target,
        scope=graph.scope,
        reachable=result.reachable,
        cost=float(result.total_cost) if result.reachable else math.inf,
        vertices=[_vertex(graph, v) for v in result.vertices],
        hops=hops,
        distances=where,
        ties=ties.count,
        ties_saturated=ties.saturated,
    )


def hops_with_evidence(hops: list[Hop], mongo_db, build_id: str) -> list[Hop]:
    """The hops with the store's evidence: a concept-concept hop's documents, predicates and
    sentences (:func:`pipeline.store.evidence.evidence_for_pairs`), a concept-abstract hop's paper
    and what it says naming the concept (:func:`pipeline.store.evidence.paper_evidence_for`); a
    hop whose evidence is unknown keeps None."""
    pairs = [(hop.source, hop.target) for hop in hops if hop.edge_kind == "concept_concept"]
    papers = [_concept_and_paper(hop) for hop in hops if hop.edge_kind == "concept_abstract"]
    between = evidence_for_pairs(mongo_db, build_id, pairs) if pairs else {}
    said = paper_evidence_for(mongo_db, build_id, papers) if papers else {}
    out = []
    for hop in hops:
        if hop.edge_kind == "concept_concept" and between is not None:
            record = between[tuple(sorted((hop.source, hop.target)))]
            hop = replace(hop, documents=record["documents"], n_predications=record["n_predications"],
                          predicates=record["predicates"], sentences=record["sentences"])  # fmt: skip
        elif hop.edge_kind == "concept_abstract":
            cui, paper = _concept_and_paper(hop)
            known = said[(cui, paper)] if said is not None else {"predicates": None, "sentences": None}
            hop = replace(hop, documents=[paper], predicates=known["predicates"], sentences=known["sentences"])
        out.append(hop)
    return out


def _concept_and_paper(hop: Hop) -> tuple[str, str]:
    return (hop.target, hop.source) if hop.source.startswith(("PMID:", "CORD:")) else (hop.source, hop.target)


def _vertex(graph: Graph, vid: int) -> Vertex:
    return Vertex(graph.keys[vid], graph.names[vid], "concept" if graph.is_concept[vid] else "abstract")


def open_paths(
    build_dir: str | Path | None = None,
    *,
    results_dir: str | Path = "results",
    build: str = "latest",
    mongo_uri: str | None = None,
    mongo_database: str = "litpath",
) -> BuildPaths:
    """Open a finished build: ``build_dir`` itself, or ``build`` (an id, or ``latest``) under
    ``results_dir``. Its co-occurrence graph is opened when the build has one. With ``mongo_uri``,
    paths carry the hops' evidence from that store's ``mongo_database``. Raises
    FileNotFoundError for a missing or unfinished build, and
    :class:`pipeline.query.build.BuildMismatch` when its distances belong to another graph."""
    folder = Path(build_dir) if build_dir is not None else resolve_build_dir(results_dir, build)
    opened = open_build(folder, on_mismatch="raise", scopes=SCOPES, optional=("cooccurrence",))
    mongo_db = connect(mongo_uri, app="litpath-client")[mongo_database] if mongo_uri else None
    return BuildPaths(opened, mongo_db)


__all__ = [
    "AlternativesAnswer", "BuildPaths", "Hop", "InconsistentPath", "PathAnswer", "Vertex", "hops_with_evidence",
    "open_paths",
]  # fmt: skip
