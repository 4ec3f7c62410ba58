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
The hop evidence (PMIDs of concept-concept hops) lives in MongoDB and is not read here; the
service's ``/v1/path?evidence=true`` adds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pipeline.builds.layout import SCOPES
from pipeline.query.build import Build, open_build, resolve_build_dir
from pipeline.query.graph import Graph
from pipeline.query.paths import edge_kind
from pipeline.runtime.errors import LitpathError


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


class BuildPaths:
    """An opened build answering queries; close it (or use ``with``) to release its files."""

    def __init__(self, build: Build) -> None:
        self.build = build

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
            scope=scope,
            reachable=result.reachable,
            cost=float(result.total_cost) if result.reachable else math.inf,
            vertices=[_vertex(graph, v) for v in result.vertices],
            hops=hops,
            distances=where,
        )

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

    def close(self) -> None:
        self.build.close()

    def __enter__(self) -> BuildPaths:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _vertex(graph: Graph, vid: int) -> Vertex:
    return Vertex(graph.keys[vid], graph.names[vid], "concept" if graph.is_concept[vid] else "abstract")


def open_paths(
    build_dir: str | Path | None = None, *, results_dir: str | Path = "results", build: str = "latest"
) -> BuildPaths:
    """Open a finished build: ``build_dir`` itself, or ``build`` (an id, or ``latest``) under
    ``results_dir``. Its co-occurrence graph is opened when the build has one. Raises
    FileNotFoundError for a missing or unfinished build, and
    :class:`pipeline.query.build.BuildMismatch` when its distances belong to another graph."""
    folder = Path(build_dir) if build_dir is not None else resolve_build_dir(results_dir, build)
    return BuildPaths(open_build(folder, on_mismatch="raise", scopes=SCOPES, optional=("cooccurrence",)))


__all__ = ["BuildPaths", "Hop", "InconsistentPath", "PathAnswer", "Vertex", "open_paths"]
