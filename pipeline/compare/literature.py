"""The literature side: shortest paths of a build, as concept sequences with per-hop evidence.

Paths come from :func:`pipeline.paths.reconstruct_path` on the build's own graph (whatever
edge kinds its config selected) and ``distances.bp`` -- the same reconstruction the path
service uses. The comparison is over *concepts*: abstracts on a path (when the build has
occurrence or citation edges) are not SPOKE concepts, so a literature hop is the stretch
between two consecutive concepts, and the abstracts on it are that hop's documents. The
documents of a direct concept--concept edge come from the MongoDB evidence store when one
is configured (:func:`attach_evidence`); without one, the hop says so instead of failing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pipeline.paths import DEFAULT_TOLERANCE, Adjacency, Tolerance, adjacency_from_graph_bp, reconstruct_path

log = logging.getLogger(__name__)

NO_STORE = "no evidence store configured"
STORE_FAILED = "evidence store unavailable"


@dataclass
class LiteratureHop:
    """Consecutive concepts of a literature path; ``via`` are the abstracts between them."""

    source: str
    target: str
    cost: float
    via: list[str] = field(default_factory=list)
    documents: list[str] | None = None  # None: unknown (no store, or the store failed)
    n_predications: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "cost": self.cost,
            "via": self.via,
            "documents": self.documents,
            "n_predications": self.n_predications,
        }


@dataclass
class LiteraturePath:
    source: str
    target: str
    reachable: bool
    vertices: list[str] = field(default_factory=list)  # every vertex key, abstracts included
    concepts: list[str] = field(default_factory=list)  # the concept keys, in path order
    hops: list[LiteratureHop] = field(default_factory=list)  # one per consecutive concept pair
    total_cost: float | None = None
    consistent: bool = True
    in_graph: bool = True  # both ends are vertices of the build
    evidence_status: str = NO_STORE


@dataclass
class BuildGraph:
    """What path extraction needs from a build (the service's ``LoadedBuild`` has the same fields)."""

    build_id: str
    build_dir: Path
    adjacency: Adjacency
    distances: Any  # pipeline.store.adios.DistanceMatrix
    keys: list[str]
    names: list[str | None]
    is_concept: np.ndarray
    vid_of: dict[str, int]
    graph_digest: str | None
    tolerance: Tolerance = DEFAULT_TOLERANCE
    edge_kinds: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    semtypes: dict[str, list[str]] = field(default_factory=dict)

    def name_of(self, key: str) -> str | None:
        vid = self.vid_of.get(key)
        return None if vid is None else self.names[vid]

    def close(self) -> None:
        self.distances.close()


def open_build(build_dir: str | Path, tolerance: Tolerance = DEFAULT_TOLERANCE) -> BuildGraph:
    """Open a build folder; refuses distances computed for another graph (digest mismatch)."""
    from pipeline.store.adios import DistanceMatrix

    build_dir = Path(build_dir).resolve()
    graph_dir = build_dir / "graph"
    for needed in (graph_dir / "vertices.parquet", graph_dir / "graph.bp", build_dir / "distances.bp"):
        if not needed.exists():
            raise FileNotFoundError(f"build {build_dir} is incomplete: {needed.name} missing ({needed})")
    vertices = pq.read_table(graph_dir / "vertices.parquet", columns=["vid", "kind", "key", "name"])
    keys = vertices.column("key").to_pylist()
    if not np.array_equal(vertices.column("vid").to_numpy(), np.arange(len(keys))):
        raise ValueError(f"{graph_dir / 'vertices.parquet'}: vid must be 0..n-1 in order")
    adjacency, attributes = adjacency_from_graph_bp(graph_dir / "graph.bp", graph_dir / "edges.parquet")
    distances = DistanceMatrix(build_dir / "distances.bp")
    digest = attributes.get("graph_digest")
    if distances.n != len(keys) or adjacency.n != len(keys):
        distances.close()
        raise ValueError(
            f"build {build_dir.name}: {len(keys)} vertices, graph.bp has {adjacency.n}, distances.bp {distances.n}"
        )
    if not digest or distances.attributes.get("graph_digest") != digest:
        distances.close()
        raise ValueError(
            f"build {build_dir.name}: distances.bp was computed for another graph "
            f"(digest {str(distances.attributes.get('graph_digest'))[:12]}... != {str(digest)[:12]}...); "
            "re-run the solve stage"
        )
    record = {}
    for name in ("build.json",):
        if (build_dir / name).exists():
            record = json.loads((build_dir / name).read_text())
    config = record.get("config") or {}
    if not config and (build_dir / "config.yaml").exists():
        import yaml

        config = yaml.safe_load((build_dir / "config.yaml").read_text()) or {}
        config.pop("resolved_inputs", None)
    semtypes: dict[str, list[str]] = {}
    concepts_path = build_dir / "tables" / "concepts.parquet"
    if concepts_path.exists():
        table = pq.read_table(concepts_path, columns=["cui", "semtypes"])
        semtypes = dict(
            zip(table.column("cui").to_pylist(), table.column("semtypes").to_pylist(), strict=True)
        )
    return BuildGraph(
        build_id=str(record.get("build_id") or build_dir.name),
        build_dir=build_dir,
        adjacency=adjacency,
        distances=distances,
        keys=keys,
        names=vertices.column("name").to_pylist(),
        is_concept=(np.asarray(vertices.column("kind").to_pylist(), dtype=object) == "concept").astype(bool),
        vid_of={key: i for i, key in enumerate(keys)},
        graph_digest=digest,
        tolerance=tolerance,
        edge_kinds=list(attributes.get("edge_kinds") or []),
        config=config,
        semtypes=semtypes,
    )


class PathFinder:
    """Literature paths between concepts of one build; rows of ``distances.bp`` cached per target."""

    def __init__(self, build: BuildGraph | Any, cache_rows: int = 256):
        self.build = build
        self._rows: dict[int, np.ndarray] = {}
        self._cache_rows = cache_rows

    def _row(self, vid: int) -> np.ndarray:
        row = self._rows.get(vid)
        if row is None:
            if len(self._rows) >= self._cache_rows:
                self._rows.pop(next(iter(self._rows)))
            row = self._rows[vid] = self.build.distances.row(vid)
        return row

    def path(self, source: str, target: str) -> LiteraturePath:
        build = self.build
        s, t = build.vid_of.get(source), build.vid_of.get(target)
        if s is None or t is None:
            return LiteraturePath(source, target, reachable=False, in_graph=False)
        result = reconstruct_path(build.adjacency, self._row(t), s, t, build.tolerance)
        if not result.reachable or not result.vertices:
            return LiteraturePath(source, target, reachable=False)
        keys = [build.keys[v] for v in result.vertices]
        concept_at = [i for i, v in enumerate(result.vertices) if build.is_concept[v]]
        hops = []
        for i, j in zip(concept_at, concept_at[1:], strict=False):
            hops.append(
                LiteratureHop(
                    keys[i],
                    keys[j],
                    float(sum(result.hop_costs[i:j])),
                    via=keys[i + 1 : j],
                    documents=list(keys[i + 1 : j]) if j > i + 1 else None,
                )  # fmt: skip
            )
        return LiteraturePath(
            source, target, True, keys, [keys[i] for i in concept_at], hops,
            result.total_cost, result.consistent,
        )  # fmt: skip


def attach_evidence(paths: list[LiteraturePath], mongo_db, build_id: str) -> str:
    """Fill the documents of direct concept--concept hops of all paths in one store query.

    Returns the evidence status written on every path: ``"ok"``, :data:`NO_STORE` or
    :data:`STORE_FAILED` (hops then keep ``documents=None``: unknown, not none).
    """
    from services.api.evidence import evidence_for_pairs

    direct = [hop for path in paths for hop in path.hops if not hop.via]
    if mongo_db is None:
        status = NO_STORE
    else:
        found = evidence_for_pairs(mongo_db, build_id, sorted({(h.source, h.target) for h in direct}))
        if found is None:
            status = STORE_FAILED
        else:
            status = "ok"
            for hop in direct:
                record = found.get(tuple(sorted((hop.source, hop.target)))) or {}
                hop.documents = list(record.get("documents") or [])
                hop.n_predications = int(record.get("n_predications") or 0)
    for path in paths:
        path.evidence_status = status
    return status


__all__ = [
    "NO_STORE", "STORE_FAILED", "BuildGraph", "LiteratureHop", "LiteraturePath", "PathFinder",
    "attach_evidence", "open_build",
]  # fmt: skip
