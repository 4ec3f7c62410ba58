"""Alternative paths between two vertices of a graph: the k shortest loopless paths, a filter on
the concepts a path may pass through (by semantic type), and the count of shortest-path ties.

All three run on demand in compiled code (:mod:`pipeline.query.sssp`,
``solver/core/sssp_k_paths.hpp``), with the graph's path index, whether or not the graph has
stored distances (a distance matrix answers one shortest path, not the next ones):

``alternative_paths(graph, s, t, k, allowed=None)``
    Yen's k shortest loopless paths, cheapest first, as :class:`PathResult` (method
    ``"yen"``); the first is the bidirectional search's path on the filtered graph.
``tie_count(graph, s, t, allowed=None)``
    how many distinct loopless paths share the shortest cost (:class:`Ties`).
``SemanticTypes(graph, semtypes_by_cui).allowed(TypeFilter(include, exclude))``
    the vertex mask of a filter on the intermediate concepts.

Filter semantics (docs/design.md §9). ``include``: an intermediate concept must carry at least
one of these semantic types; ``exclude``: it may carry none of them; both may be given. The two
endpoints are never filtered. Abstracts carry no semantic type and are never filtered: on the
full graph they are the documents that join a path's concepts, and a filter on concept types
says nothing about them. A type no concept of the build carries is refused
(:class:`UnknownSemanticType`), so that a misspelt type does not silently filter nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.query.graph import Graph
from pipeline.query.paths import PathResult
from pipeline.runtime.errors import LitpathError


class UnknownSemanticType(LitpathError, ValueError):
    """A filter names a semantic type that no concept of the build carries."""


@dataclass(frozen=True)
class Ties:
    count: int  # distinct loopless paths of the shortest cost; 0 when unreachable
    saturated: bool  # True: count is a lower bound (solver/core/sssp_k_paths.hpp)


@dataclass(frozen=True)
class TypeFilter:
    """Semantic types (SemMedDB abbreviations such as ``dsyn``; any case) that the intermediate
    concepts of a path must include one of, or must not carry."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> TypeFilter:
        def clean(types: Iterable[str] | None) -> tuple[str, ...]:
            return tuple(sorted({t.strip().lower() for t in types or () if t.strip()}))

        return cls(clean(include), clean(exclude))

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude)


class SemanticTypes:
    """Each concept vertex's semantic types, as small integer codes, so that a filter becomes a
    vertex mask with a few numpy passes over the (concept, type) pairs."""

    def __init__(self, graph: Graph, semtypes_by_cui: Mapping[str, Sequence[str]]):
        self.n = graph.n
        self.is_concept = graph.is_concept
        concept_vids = np.flatnonzero(graph.is_concept)
        codes: dict[str, int] = {}
        pair_vid: list[int] = []
        pair_code: list[int] = []
        for vid in concept_vids:
            for semtype in semtypes_by_cui.get(graph.keys[vid]) or ():
                code = codes.setdefault(semtype.lower(), len(codes))
                pair_vid.append(int(vid))
                pair_code.append(code)
        self.codes = codes
        self.pair_vid = np.asarray(pair_vid, dtype=np.int64)
        self.pair_code = np.asarray(pair_code, dtype=np.int32)

    def _code_set(self, types: tuple[str, ...], what: str) -> np.ndarray:
        unknown = [t for t in types if t not in self.codes]
        if unknown:
            known = ", ".join(sorted(self.codes)) or "none"
            raise UnknownSemanticType(
                f"{what}: no concept of this build has semantic type {', '.join(map(repr, unknown))} "
                f"(the build's types: {known})"
            )
        return np.array([self.codes[t] for t in types], dtype=np.int32)

    def carrying(self, types: tuple[str, ...], what: str) -> np.ndarray:
        """bool[n]: the concept vertices that carry at least one of ``types``."""
        chosen = np.isin(self.pair_code, self._code_set(types, what))
        mask = np.zeros(self.n, dtype=bool)
        mask[self.pair_vid[chosen]] = True
        return mask

    def allowed(self, type_filter: TypeFilter) -> np.ndarray | None:
        """bool[n]: the vertices a path may pass through under the filter (abstracts always;
        the endpoints are exempted by the search itself), or None for no filter."""
        if not type_filter.active:
            return None
        allowed = np.ones(self.n, dtype=bool)
        if type_filter.include:
            allowed &= ~self.is_concept | self.carrying(type_filter.include, "include_types")
        if type_filter.exclude:
            allowed &= ~self.carrying(type_filter.exclude, "exclude_types")
        return allowed


def _path_result(graph: Graph, source: int, target: int, cost: float, vertices: list[int]) -> PathResult:
    hop_costs = [graph.adjacency.edge_cost(u, v) for u, v in zip(vertices, vertices[1:], strict=False)]
    return PathResult(
        source, target, True, float(cost), list(vertices), hop_costs, float(cost), True, "yen",
    )  # fmt: skip


def alternative_paths(
    graph: Graph, source: int, target: int, k: int, allowed: np.ndarray | None = None
) -> list[PathResult]:
    """The k shortest loopless paths (fewer when fewer exist; [] when unreachable), cheapest
    first; each one's ``total_cost`` is its hop costs summed in double in path order. The
    search deadline is the scoped one (:func:`pipeline.query.sssp.search_deadline`)."""
    from pipeline.query import sssp

    found = sssp.k_shortest_paths(graph.adjacency, source, target, k, allowed=allowed, hubs=graph.path_index)
    return [_path_result(graph, source, target, cost, vertices) for cost, vertices in found]


def tie_count(
    graph: Graph, source: int, target: int, allowed: np.ndarray | None = None, *, deadline: float | None = None
) -> Ties:
    """How many distinct loopless paths share the shortest cost (on the filtered graph)."""
    from pipeline.query import sssp

    distance, count, saturated = sssp.count_shortest_paths(
        graph.adjacency, source, target, allowed=allowed, deadline=deadline, hubs=graph.path_index
    )
    return Ties(count if math.isfinite(distance) else 0, saturated)


__all__ = [
    "SemanticTypes", "Ties", "TypeFilter", "UnknownSemanticType", "alternative_paths", "tie_count",
]  # fmt: skip
