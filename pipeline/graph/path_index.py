"""The graph stage's last step: the path index of each graph just written (``path_index.bp``
beside graph.bp, :mod:`pipeline.query.path_index`), which the path service loads to answer
on-demand queries in milliseconds, and its record for graph_counts.json."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pipeline.builds.layout import GraphFolder
from pipeline.query.path_index import build_path_index
from pipeline.runtime.progress import format_bytes, format_seconds

log = logging.getLogger("litpath.graph")


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


__all__ = ["index_graph"]
