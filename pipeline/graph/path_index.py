"""The graph stage's last step: the path index of each graph just written (``path_index.bp``
beside graph.bp, :mod:`pipeline.query.path_index`), which the path service loads to answer
on-demand queries in milliseconds, and its record for graph_counts.json.

The record also holds what a query costs on this graph with the index (:func:`sample_queries`:
a few random pairs searched right after the build), which the solve stage's plan reports for
the on-demand method (:mod:`pipeline.solve.plan.methods`) -- measured on the graph itself, since
the cost depends on how the hubs are spread more than on the graph's size."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.query.path_index import build_path_index, load_path_index
from pipeline.runtime.progress import format_bytes, format_seconds

log = logging.getLogger("litpath.graph")

# Random pairs searched to tell the plan what a query costs: enough for a median and a 90th
# percentile to within a few milliseconds on the 10M and 30M graphs, about a second in all.
SAMPLE_PAIRS = 40
SAMPLE_SEED = 32
# Random concept pairs tried, after the sample, for the example query that `litpath describe`
# prints at the end of `make run`: found here from the index already loaded, it cost describe
# nothing; searched there, opening the whole graph to do it took 9 s of a 10M build's run.
EXAMPLE_TRIES = 200


def index_graph(graph_dir: Path) -> dict[str, Any]:
    """Build the path index of the graph in ``graph_dir``; returns its record (hubs, arcs, bytes,
    share of the graph's bytes, seconds)."""
    folder = GraphFolder(Path(graph_dir))
    record = build_path_index(folder.graph_bp, folder.path_index)
    log.info(
        "path index of %s: %d hub rows, %d arcs, %s (%.1f %% of the graph), built in %s",
        folder.path, record["hubs"], record["arcs"], format_bytes(record["bytes"]),
        100 * record["share_of_graph"], format_seconds(record["build_seconds"]),
    )  # fmt: skip
    return record


def sample_queries(graph_dir: Path, pairs: int = SAMPLE_PAIRS, seed: int = SAMPLE_SEED,
                   concepts: int = 0) -> dict[str, Any] | None:  # fmt: skip
    """Milliseconds of indexed pair searches between random vertices of the graph in
    ``graph_dir`` (p50, p90, max) and the seconds the sample took, reading graph.bp; None when the
    graph has no edges or its index cannot be used (the reason is logged). With ``concepts`` (how
    many concept vertices the graph has: vids below it), also ``example``: two concepts joined by
    a path of at least two hops (:func:`_example_query`), by key, or None when no pair tried is."""
    from pipeline.query import sssp
    from pipeline.query.paths import adjacency_from_graph_bp

    folder = GraphFolder(Path(graph_dir))
    started = time.perf_counter()
    adjacency, attributes = adjacency_from_graph_bp(folder.graph_bp)
    if adjacency.n < 2 or adjacency.nnz == 0:
        return None
    loaded = load_path_index(folder.path_index, adjacency, attributes.get("graph_digest"))
    if loaded.hubs is None:
        log.warning("no query sample for %s: %s", folder.path, loaded.reason)
        return None
    rng = np.random.default_rng(seed)
    samples = []
    for source, target in rng.integers(0, adjacency.n, size=(pairs, 2)).tolist():
        began = time.perf_counter()
        sssp.shortest_path(adjacency, source, target, hubs=loaded.hubs)
        samples.append(1e3 * (time.perf_counter() - began))
    example = _example_query(adjacency, loaded.hubs, concepts, rng) if concepts else None
    sssp.release_idle_workspaces(0)  # the stage is done searching: its O(n) workspace goes
    milliseconds = np.asarray(samples)
    record = {
        "pairs": len(samples),
        "p50_ms": round(float(np.percentile(milliseconds, 50)), 3),
        "p90_ms": round(float(np.percentile(milliseconds, 90)), 3),
        "max_ms": round(float(milliseconds.max()), 3),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if concepts:
        record["example"] = None
        if example is not None:
            source, target, hops = example
            keys = pq.read_table(folder.vertices, columns=["key"]).column("key")
            record["example"] = {"source": keys[source].as_py(), "target": keys[target].as_py(), "hops": hops}
    return record


def _example_query(adjacency: Any, hubs: Any, concepts: int, rng: np.random.Generator) -> tuple[int, int, int] | None:
    """(source, target, hops) of the first of up to :data:`EXAMPLE_TRIES` random pairs of concept
    vertices (vids below ``concepts``) that a path of at least two hops joins: a path worth
    looking at in the example query; None when none of them is."""
    from pipeline.query import sssp

    if concepts < 2:
        return None
    for source, target in rng.integers(0, concepts, size=(EXAMPLE_TRIES, 2)).tolist():
        if source != target:
            _, path = sssp.shortest_path(adjacency, source, target, hubs=hubs)
            if len(path) >= 3:
                return source, target, len(path) - 1
    return None


__all__ = ["SAMPLE_PAIRS", "index_graph", "sample_queries"]
