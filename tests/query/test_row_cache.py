"""The stored distance rows a graph keeps in memory (Graph.stored_row): the last ones read, at
most ROW_CACHE of them and ROW_CACHE_BYTES in all, never fewer than the row just read; every
row handed out is the stored one, cached or not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra
from support.build_fixture import make_build

from pipeline.query import graph as graph_module
from pipeline.query.graph import open_graph

SOURCES = list(range(0, 40, 3))


@pytest.fixture(scope="module")
def rows_build(tmp_path_factory):
    build = make_build(tmp_path_factory.mktemp("rows"), n_concepts=30, n_abstracts=20, seed=5,
                       distances="rows", sources=SOURCES)  # fmt: skip
    reference = dijkstra(build.adjacency.to_scipy(), directed=True).astype(np.float32)
    return build, reference


@pytest.mark.parametrize("rows_that_fit", [0.5, 1, 3, 1000])
def test_the_rows_kept_stay_within_the_byte_cap(rows_build, monkeypatch, rows_that_fit):
    build, reference = rows_build
    graph = open_graph(build.build_dir)
    row_bytes = graph.n * 4
    monkeypatch.setattr(graph_module, "ROW_CACHE_BYTES", int(rows_that_fit * row_bytes))
    try:
        order = SOURCES + SOURCES[::-1] + SOURCES[::2]
        for step, vid in enumerate(order):
            row = graph.stored_row(vid)
            assert np.array_equal(row, reference[vid])
            kept = list(graph._row_cache)
            assert kept[-1] == vid  # the row just read is always kept
            expected = max(1, min(int(rows_that_fit), len(set(order[: step + 1]))))
            assert len(kept) == expected
            assert sum(r.nbytes for r in graph._row_cache.values()) <= max(row_bytes, rows_that_fit * row_bytes)
        assert graph.stored_row(1) is None  # not a stored row
    finally:
        graph.close()


def test_the_count_cap_still_holds(rows_build, monkeypatch):
    build, _ = rows_build
    graph = open_graph(build.build_dir)
    monkeypatch.setattr(graph_module, "ROW_CACHE", 2)
    try:
        for vid in SOURCES[:5]:
            graph.stored_row(vid)
        assert list(graph._row_cache) == SOURCES[3:5]
    finally:
        graph.close()
