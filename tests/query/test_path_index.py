"""The path index beside graph.bp (pipeline/query/path_index.py): built from the graph, loaded only
when it belongs to it, and otherwise left out with the reason -- never a different answer."""

from __future__ import annotations

import logging
import math
import shutil

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.sparse.csgraph import dijkstra
from support.build_fixture import make_build

from pipeline.builds.layout import GraphFolder, ResultsLayout
from pipeline.graph.path_index import index_graph
from pipeline.query import sssp
from pipeline.query.graph import open_graph
from pipeline.query.path_index import (
    MAX_SHARE,
    MIN_DEGREE,
    build_path_index,
    graph_bytes,
    index_bytes,
    load_path_index,
)
from pipeline.store.adios import read_path_index_bp, write_path_index_bp
from services.api.main import create_app
from services.api.settings import Settings

BUILD_ID = "fixture00001"
MIN_DEGREE_HERE = 6  # the fixture's rows are small: index the larger ones


def _build(tmp_path, seed=7, build_id=BUILD_ID, abstracts=300):
    """An on-demand build (no distances.bp) of 60 concepts and 300 abstracts, dense enough that
    some rows reach MIN_DEGREE_HERE."""
    make_build(tmp_path, n_concepts=60, n_abstracts=abstracts, degree=6.0, seed=seed, build_id=build_id,
               distances=None, cooccurrence_distances=None)  # fmt: skip
    build_dir = ResultsLayout(tmp_path).build(build_id).root
    return build_dir, GraphFolder(ResultsLayout(tmp_path).build(build_id).graph("full").graph_dir)


def _scipy_distances(graph, sources):
    return dijkstra(graph.adjacency.to_scipy(), indices=sources)


def _assert_exact(graph, rng, pairs=80):
    """Every answered distance equals scipy's and the plain search's (to the last bit)."""
    sources = rng.choice(graph.n, 8, replace=False)
    reference = _scipy_distances(graph, sources)
    unreachable = 0
    for row, s in zip(reference, sources, strict=True):
        for t in rng.integers(0, graph.n, pairs // len(sources)):
            plain = sssp.shortest_path(graph.adjacency, int(s), int(t))
            distance, _ = graph.distance(int(s), int(t))
            assert distance == plain[0]
            if math.isinf(row[t]):
                unreachable += 1
                assert math.isinf(distance)
            else:
                assert distance == pytest.approx(row[t], rel=1e-6, abs=1e-9)
    return unreachable


def test_an_index_of_the_graph_is_loaded_and_answers_exactly(tmp_path):
    build_dir, folder = _build(tmp_path)
    degree = np.diff(open_graph(build_dir).adjacency.row_ptr)
    # Without a byte budget: every row of MIN_DEGREE_HERE arcs or more.
    record = build_path_index(folder.graph_bp, folder.path_index, min_degree=MIN_DEGREE_HERE, max_share=1.0)
    assert record["hubs"] == int((degree >= MIN_DEGREE_HERE).sum()) > 0
    assert record["arcs"] == int(degree[degree >= MIN_DEGREE_HERE].sum())
    # Within MAX_SHARE of the graph's bytes: the largest rows first, fewer of them.
    shutil.rmtree(folder.path_index)
    record = build_path_index(folder.graph_bp, folder.path_index, min_degree=MIN_DEGREE_HERE)
    assert 0 < record["hubs"] < int((degree >= MIN_DEGREE_HERE).sum())
    assert record["arcs"] * 8 <= MAX_SHARE * graph_bytes(len(degree), int(degree.sum()))
    hubs = read_path_index_bp(folder.path_index)[0]["vertex"]
    assert degree[hubs].min() >= np.delete(degree, hubs).max()
    assert record["bytes"] == index_bytes(record["hubs"], record["arcs"])
    assert record["share_of_graph"] == pytest.approx(
        record["bytes"] / graph_bytes(len(degree), int(degree.sum())), abs=1e-4
    )
    graph = open_graph(build_dir)
    assert graph.path_index is not None and graph.path_index_reason is None
    assert graph.path_index.rows == record["hubs"]
    assert _assert_exact(graph, np.random.default_rng(3)) > 0, "no unreachable pair was tried"
    plain = open_graph(build_dir)
    object.__setattr__(plain, "path_index", None)
    for source in range(0, graph.n, 37):
        assert graph.nearest_concepts(source, 5) == plain.nearest_concepts(source, 5)


def test_the_graph_stage_default_indexes_no_small_row(tmp_path):
    """index_graph (the graph stage's step) chooses rows of MIN_DEGREE arcs or more: none in a
    small graph, and the empty index still loads and searches plainly."""
    build_dir, folder = _build(tmp_path)
    record = index_graph(folder.path)
    assert MIN_DEGREE > MIN_DEGREE_HERE and record["hubs"] == 0 and record["arcs"] == 0
    assert folder.path_index.exists()
    graph = open_graph(build_dir)
    assert graph.path_index is not None and graph.path_index.rows == 0
    _assert_exact(graph, np.random.default_rng(4))


def _reason_and_answers(build_dir, rng):
    graph = open_graph(build_dir)
    assert graph.path_index is None
    _assert_exact(graph, rng)
    return graph.path_index_reason


def test_a_missing_index_falls_back_to_the_plain_search(tmp_path):
    build_dir, folder = _build(tmp_path)
    assert not folder.path_index.exists()
    assert "no path_index.bp" in _reason_and_answers(build_dir, np.random.default_rng(5))


def test_an_index_of_another_graph_is_refused(tmp_path):
    build_dir, folder = _build(tmp_path)
    _, other = _build(tmp_path / "other", seed=8)
    build_path_index(other.graph_bp, other.path_index, min_degree=MIN_DEGREE_HERE)
    shutil.copytree(other.path_index, folder.path_index)
    reason = _reason_and_answers(build_dir, np.random.default_rng(6))
    assert "built for another graph" in reason


def test_an_index_whose_rows_differ_from_the_graph_is_refused(tmp_path):
    """The same attributes (digest, sizes) over rows that are not the graph's: the compiled check
    compares every row, so a damaged index is never searched."""
    build_dir, folder = _build(tmp_path)
    build_path_index(folder.graph_bp, folder.path_index, min_degree=MIN_DEGREE_HERE)
    arrays, attributes = read_path_index_bp(folder.path_index)
    arrays["cost"] = arrays["cost"].copy()
    first_row_end = int(arrays["start"][1])
    arrays["cost"][first_row_end - 1] += 0.5  # the dearest arc of the first hub: still sorted
    shutil.rmtree(folder.path_index)
    write_path_index_bp(folder.path_index, arrays, attributes)
    reason = _reason_and_answers(build_dir, np.random.default_rng(7))
    assert "does not match the graph" in reason


def test_an_unreadable_index_is_refused(tmp_path):
    build_dir, folder = _build(tmp_path)
    build_path_index(folder.graph_bp, folder.path_index, min_degree=MIN_DEGREE_HERE)
    for part in folder.path_index.iterdir():
        if part.is_file():
            part.write_bytes(part.read_bytes()[:7])  # truncated
    reason = _reason_and_answers(build_dir, np.random.default_rng(8))
    assert "path_index.bp" in reason


def test_the_service_logs_a_missing_index_and_answers_anyway(tmp_path, caplog):
    build_dir, folder = _build(tmp_path)
    settings = Settings(results_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="litpath.api"), TestClient(create_app(settings)) as client:
        body = client.get("/v1/path", params={"source": "C0000001", "target": "C0000002"})
    assert body.status_code == 200
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("full graph: no path index (no path_index.bp" in m for m in warned), warned
    caplog.clear()
    build_path_index(folder.graph_bp, folder.path_index, min_degree=MIN_DEGREE_HERE)
    with caplog.at_level(logging.INFO, logger="litpath.api"), TestClient(create_app(settings)) as client:
        indexed = client.get("/v1/path", params={"source": "C0000001", "target": "C0000002"})
    assert indexed.status_code == 200
    assert indexed.json()["total_cost"] == body.json()["total_cost"]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("full graph: path index of" in m for m in infos), infos


def test_load_path_index_names_the_graph_it_was_built_for(tmp_path):
    build_dir, folder = _build(tmp_path)
    build_path_index(folder.graph_bp, folder.path_index, min_degree=MIN_DEGREE_HERE)
    graph = open_graph(build_dir)
    loaded = load_path_index(folder.path_index, graph.adjacency, graph.graph_digest)
    assert loaded.hubs is not None and loaded.attributes["n"] == graph.n
    loaded = load_path_index(folder.path_index, graph.adjacency, "not-the-digest")
    assert loaded.hubs is None and "built for another graph" in loaded.reason
    smaller = open_graph(_build(tmp_path / "smaller", abstracts=250)[0])
    loaded = load_path_index(folder.path_index, smaller.adjacency, graph.graph_digest)
    assert loaded.hubs is None and f"the graph has {smaller.n}" in loaded.reason
