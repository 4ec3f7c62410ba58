"""A small build folder in the pipeline's layout, with distances from scipy instead of the solver.

Used by the path-service tests and ``bench/path_service.py``. The layout is the build
contract (pipeline/query/graph.py, docs/design.md §4):

    <results>/builds/<build_id>/graph/{vertices,edges}.parquet, graph/graph.bp, distances.bp,
    cooccurrence/{vertices,edges}.parquet, cooccurrence/graph.bp, cooccurrence/distances.bp,
    tables/concepts.parquet, build.json;  <results>/latest -> builds/<build_id>

Each graph's distances are dense (the default), the rows of a source set, or absent (the
service then answers on demand), as a solve's plan would have left them.

The graph is random but deterministic for a seed: concepts ``C0000000``..., abstracts
``PMID:...`` and ``CORD:...``, all three edge kinds, a few zero-cost (weight 1) edges and
some isolated vertices (unreachable pairs). The distances are scipy's Dijkstra in float64
rounded to float32, written with the same tiled ADIOS2 writer the solver's layout uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder, ResultsLayout
from pipeline.builds.tables import CONCEPTS, EDGE_KINDS, EDGES, VERTICES
from pipeline.graph.csr import graph_digest, kind_codes
from pipeline.query.paths import Adjacency, adjacency_from_edges
from pipeline.store.adios import write_distances_bp, write_graph_bp

WORDS = (
    "interleukin receptor kinase protein coronavirus infection syndrome respiratory acute "
    "inflammation cytokine lymphocyte antibody vaccine hepatic renal cardiac tumor growth factor "
    "insulin glucose diabetes neuron synapse dopamine serotonin"
).split()


@dataclass
class FixtureBuild:
    results_dir: Path
    build_dir: Path
    build_id: str
    keys: list[str]
    names: list[str]
    n_concepts: int
    adjacency: Adjacency
    digest: str
    edges: pa.Table


def random_graph(n_concepts: int, n_abstracts: int, seed: int = 7, degree: float = 4.0, isolated: int = 3):
    """(keys, names, src, dst, kind, weight) of a random literature-like graph, src < dst."""
    rng = np.random.default_rng(seed)
    n = n_concepts + n_abstracts
    concept_keys = [f"C{i:07d}" for i in range(n_concepts)]
    abstract_keys = sorted(
        [f"PMID:{1000 + i}" for i in range(n_abstracts - n_abstracts // 4)]
        + [f"CORD:ab{i:06x}" for i in range(n_abstracts // 4)]
    )
    keys = concept_keys + abstract_keys
    names = [" ".join(rng.choice(WORDS, size=2)) + f" {i}" for i in range(n_concepts)]
    names += [f"Title of {k}" for k in abstract_keys]
    live = np.arange(n - isolated) if isolated else np.arange(n)  # the last `isolated` vertices have no edge
    m = int(degree * len(live) / 2)
    a = rng.choice(live, size=m)
    b = rng.choice(live, size=m)
    src, dst = np.minimum(a, b), np.maximum(a, b)
    keep = src != dst
    pairs = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)
    src, dst = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    is_concept = np.arange(n) < n_concepts
    kind = np.where(
        is_concept[src] & is_concept[dst],
        EDGE_KINDS[0],
        np.where(is_concept[src] | is_concept[dst], EDGE_KINDS[1], EDGE_KINDS[2]),
    )
    weight = rng.uniform(0.01, 1.0, size=len(src))
    weight[rng.random(len(src)) < 0.03] = 1.0  # zero-cost edges
    return keys, names, src, dst, kind, weight


def write_graph_scope(
    graph_dir: Path,
    distances_path: Path,
    keys: list[str],
    names: list[str],
    n_concepts: int,
    src: np.ndarray,
    dst: np.ndarray,
    kind: np.ndarray,
    weight: np.ndarray,
    *,
    edge_kinds: list[str],
    distances: str | None = "dense",
    sources: list[int] | None = None,
    stale: bool = False,
    block_size: int = 256,
) -> tuple[Adjacency, str, pa.Table]:
    """vertices, edges and graph.bp in ``graph_dir`` and (unless ``distances`` is None) the
    distances: ``dense`` (n x n) or ``rows`` (of ``sources``), scipy's Dijkstra rounded to float32."""
    from scipy.sparse.csgraph import dijkstra

    graph_dir.mkdir(parents=True, exist_ok=True)
    n = len(keys)
    cost = (-np.log(weight)).astype(np.float32)
    cost[weight == 1.0] = 0.0
    vertices = pa.table(
        {
            "vid": pa.array(np.arange(n), pa.int64()),
            "kind": ["concept"] * n_concepts + ["abstract"] * (n - n_concepts),
            "key": keys,
            "name": names,
        },
        schema=VERTICES,
    )
    edges = pa.table({"src": src, "dst": dst, "kind": list(kind), "weight": weight, "cost": cost}, schema=EDGES)
    pq.write_table(vertices, GraphFolder(graph_dir).vertices)
    pq.write_table(edges, GraphFolder(graph_dir).edges)
    digest = graph_digest(keys, src, dst, kind_codes(list(kind)), cost)
    adjacency = adjacency_from_edges(n, src, dst, cost, weight)
    write_graph_bp(
        GraphFolder(graph_dir).graph_bp, n, adjacency.row_ptr, adjacency.col_idx, adjacency.cost,
        {"graph_digest": digest, "weight_scheme": "fixture", "edge_kinds": edge_kinds},
    )  # fmt: skip
    attributes = {
        "graph_digest": ("0" * 64) if stale else digest,
        "process_grid": "1x1",
        "algorithm": "scipy-dijkstra (test fixture)",
        "solver_version": "fixture",
    }
    if distances == "dense":
        # float32 distances as the solver would produce them (float64 Dijkstra, rounded once).
        matrix = dijkstra(adjacency.to_scipy(), directed=True).astype(np.float32)
        write_distances_bp(distances_path, matrix, attributes, block_size=block_size)
    elif distances == "rows":
        from pipeline.store.adios import write_distance_rows_bp

        chosen = np.asarray(sorted(set(sources or [])), dtype=np.int64)
        rows = dijkstra(adjacency.to_scipy(), directed=True, indices=chosen).astype(np.float32)
        write_distance_rows_bp(distances_path, rows.reshape(len(chosen), n), chosen, attributes)
    elif distances is not None:
        raise ValueError(f"distances must be dense, rows or None, not {distances!r}")
    return adjacency, digest, edges


def make_build(
    results_dir: Path | str,
    n_concepts: int = 60,
    n_abstracts: int = 40,
    seed: int = 7,
    degree: float = 4.0,
    isolated: int = 3,
    build_id: str = "fixture00001",
    block_size: int = 256,
    stale: bool = False,
    distances: str | None = "dense",
    sources: list[int] | None = None,
    cooccurrence_distances: str | None = "dense",
) -> FixtureBuild:
    """Write a complete build folder; ``stale=True`` gives distances.bp a different graph digest.

    ``distances``/``sources`` choose the full graph's stored distances and
    ``cooccurrence_distances`` the co-occurrence graph's (dense, rows of ``sources`` that are
    concepts, or None: on demand).
    """
    results_dir = Path(results_dir)
    layout = ResultsLayout(results_dir).build(build_id)
    build_dir = layout.root
    layout.tables.path.mkdir(parents=True, exist_ok=True)
    full, cooccurrence = layout.graph("full"), layout.graph("cooccurrence")
    keys, names, src, dst, kind, weight = random_graph(n_concepts, n_abstracts, seed, degree, isolated)
    adjacency, digest, edges = write_graph_scope(
        full.graph_dir, full.distances, keys, names, n_concepts, src, dst, kind, weight,
        edge_kinds=list(EDGE_KINDS), distances=distances, sources=sources, stale=stale, block_size=block_size,
    )  # fmt: skip
    # The co-occurrence graph: the concepts (ids 0..n_concepts-1 in both graphs) and their edges.
    cc = kind == EDGE_KINDS[0]
    write_graph_scope(
        cooccurrence.graph_dir, cooccurrence.distances, keys[:n_concepts],
        names[:n_concepts], n_concepts, src[cc], dst[cc], kind[cc], weight[cc], edge_kinds=[EDGE_KINDS[0]],
        distances=cooccurrence_distances, sources=[v for v in (sources or []) if v < n_concepts],
        block_size=block_size,
    )  # fmt: skip
    semtypes = [["gngm", "aapp"] if i % 3 == 0 else ["dsyn"] for i in range(n_concepts)]
    concepts = pa.table(
        {"cui": keys[:n_concepts], "name": names[:n_concepts], "semtypes": semtypes}, schema=CONCEPTS
    )
    pq.write_table(concepts, layout.tables.table("concepts"))
    n = len(keys)
    layout.record.write_text(
        json.dumps({"build_id": build_id, "graph": {"n_vertices": n}}) + "\n"
    )
    latest = ResultsLayout(results_dir).latest
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(build_dir.relative_to(results_dir))
    return FixtureBuild(results_dir, build_dir, build_id, keys, names, n_concepts, adjacency, digest, edges)
