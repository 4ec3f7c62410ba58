"""A finished build folder opened for queries: the one way the compare CLI and the path service
open a build (:mod:`pipeline.builds.record` makes a build's identity and provenance; this reads it).

:func:`resolve_build_dir` finds the folder (``<results>/latest`` or ``<results>/builds/<id>``,
complete builds only); :func:`open_build` opens its graphs (:func:`pipeline.query.graph.open_graph`,
one per scope) and gives a :class:`Build`, which also reads the build's concepts table.

Stored distances that belong to another graph (another digest or size) are a *mismatch*, and
the caller says once what it means (``on_mismatch``):

``"raise"``
    :class:`BuildMismatch`, naming the graph and how the distances differ. The comparison
    does this: a report built from mismatched artifacts is worse than none.
``"mark_stale"``
    the graph opens with ``stale_reason`` set, and every distance query on it raises
    :class:`pipeline.query.graph.GraphStale`. The path service does this: it stays up, reports the
    build as not ready, and answers distance queries with 503 and the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq

from pipeline.builds.layout import SCOPES, BuildLayout, ResultsLayout
from pipeline.query.graph import Graph, open_graph, read_build_record
from pipeline.query.paths import DEFAULT_TOLERANCE, Tolerance

OnMismatch = Literal["raise", "mark_stale"]
ON_MISMATCH = ("raise", "mark_stale")


class BuildMismatch(ValueError):
    """A graph's stored distances were computed for another graph (``on_mismatch="raise"``)."""


class GraphUnavailable(LookupError):
    """The build has no usable graph of this scope; the message says why."""


def resolve_build_dir(results_dir: str | Path, build: str = "latest") -> Path:
    """The folder of a complete build: ``<results>/latest`` or ``<results>/builds/<build>``.

    Raises FileNotFoundError when there is none, or when it has no ``build.json`` (a build is
    complete only once ``litpath finish-build`` wrote it).
    """
    results = Path(results_dir)
    if build == "latest":
        latest = ResultsLayout(results).latest
        if not latest.exists():
            raise FileNotFoundError(f"no complete build: {latest} does not exist")
        build_dir = latest.resolve()
    else:
        build_dir = ResultsLayout(results).build(build).root.resolve()
        if not build_dir.is_dir():
            raise FileNotFoundError(f"build {build!r} not found under {results / 'builds'}")
    if not BuildLayout(build_dir).record.exists():
        raise FileNotFoundError(f"build {build_dir.name} is incomplete (no build.json)")
    return build_dir


@dataclass(frozen=True)
class ConceptTable:
    """The build's ``tables/concepts.parquet``: one row per concept, in file order."""

    cuis: list[str]
    names: list[str | None]
    semtypes: list[list[str]]

    def semtypes_by_cui(self) -> dict[str, list[str]]:
        return dict(zip(self.cuis, self.semtypes, strict=True))


@dataclass
class Build:
    """One opened build: its graphs by scope, and why any graph asked for could not be opened."""

    build_id: str
    build_dir: Path
    graphs: dict[str, Graph]
    tolerance: Tolerance = DEFAULT_TOLERANCE
    graph_errors: dict[str, str] = field(default_factory=dict)  # scope -> why it did not open
    record: dict[str, Any] = field(default_factory=dict)  # build.json; {} before finish-build

    def graph(self, scope: str = "full") -> Graph:
        found = self.graphs.get(scope)
        if found is None:
            reason = self.graph_errors.get(scope, "not in this build")
            raise GraphUnavailable(f"build {self.build_id} cannot answer on the {scope} graph: {reason}")
        return found

    @property
    def stale(self) -> dict[str, str]:
        """Why each stale graph cannot answer distance queries, by scope (empty when none is)."""
        return {scope: graph.stale_reason for scope, graph in self.graphs.items() if graph.stale_reason}

    def concepts(self) -> ConceptTable | None:
        """The concepts table (CUI, name, semantic types), or None when the build has none."""
        path = BuildLayout(self.build_dir).tables.table("concepts")
        if not path.exists():
            return None
        table = pq.read_table(path, columns=["cui", "name", "semtypes"])
        return ConceptTable(
            table.column("cui").to_pylist(),
            table.column("name").to_pylist(),
            [list(types or []) for types in table.column("semtypes").to_pylist()],
        )

    def close(self) -> None:
        for graph in self.graphs.values():
            graph.close()


def open_build(
    build_dir: str | Path,
    *,
    on_mismatch: OnMismatch = "raise",
    scopes: Sequence[str] = SCOPES,
    optional: Sequence[str] = (),
    tolerance: Tolerance = DEFAULT_TOLERANCE,
) -> Build:
    """Open the graphs ``scopes`` of a build folder; see the module docstring for ``on_mismatch``.

    A graph of ``optional`` that fails to open (builds made before the co-occurrence graph
    existed have none) is left out, with the reason in ``graph_errors``; any other graph that
    fails raises what :func:`pipeline.query.graph.open_graph` raised (FileNotFoundError, the ADIOS2
    readers' corrupt-file errors).
    """
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {', '.join(ON_MISMATCH)}, not {on_mismatch!r}")
    build_dir = Path(build_dir).resolve()
    record = read_build_record(build_dir)
    build = Build(
        build_id=str(record.get("build_id") or build_dir.name),
        build_dir=build_dir,
        graphs={},
        tolerance=tolerance,
        record=record,
    )
    try:
        for scope in scopes:
            try:
                build.graphs[scope] = open_graph(build_dir, scope, tolerance, build_id=build.build_id)
            except Exception as exc:  # noqa: BLE001 -- an optional graph's reason is kept
                if scope not in optional:
                    raise
                build.graph_errors[scope] = f"{type(exc).__name__}: {exc}"
        if on_mismatch == "raise" and build.stale:
            scope, reason = next(iter(build.stale.items()))
            raise BuildMismatch(f"build {build_dir.name}, {scope} graph: {reason}")
    except BaseException:
        build.close()
        raise
    return build


__all__ = [
    "ON_MISMATCH", "Build", "BuildMismatch", "ConceptTable", "GraphUnavailable", "OnMismatch", "open_build",
    "resolve_build_dir",
]  # fmt: skip
