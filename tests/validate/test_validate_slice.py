"""The time-slice validation: its scores against brute force on random inputs, and the report
of the bundled sample cut at 2010 against the whole sample, checked from the graphs' files."""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.corpus_build import sample_build

from pipeline.builds.layout import BuildLayout
from pipeline.cli import cli
from pipeline.validate.time_slice import precision_at_k, ranking, roc_auc, validate_slice


def _brute_auc(cost, positive):
    wins = 0.0
    pairs = 0
    for p in np.flatnonzero(positive):
        for n in np.flatnonzero(~positive):
            pairs += 1
            if cost[p] < cost[n]:
                wins += 1
            elif cost[p] == cost[n]:  # inf == inf: two unreachable pairs tie
                wins += 0.5
    return wins / pairs


@pytest.mark.parametrize("seed", range(8))
def test_roc_auc_is_the_share_of_positive_negative_pairs_ranked_right(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    cost = rng.integers(0, 6, n).astype(float)  # few values: many ties
    cost[rng.random(n) < 0.2] = math.inf  # unreachable pairs tie with each other
    positive = rng.random(n) < 0.3
    if positive.all() or not positive.any():
        assert roc_auc(cost, positive) is None
        return
    assert roc_auc(cost, positive) == pytest.approx(_brute_auc(cost, positive))


def test_roc_auc_extremes():
    positive = np.array([True, True, False, False])
    assert roc_auc(np.array([1.0, 2.0, 3.0, 4.0]), positive) == 1.0
    assert roc_auc(np.array([3.0, 4.0, 1.0, 2.0]), positive) == 0.0
    assert roc_auc(np.array([1.0, 1.0, 1.0, 1.0]), positive) == 0.5


def test_precision_at_k_breaks_ties_by_the_pairs_ends():
    cost = np.array([2.0, 1.0, 1.0, math.inf])
    positive = np.array([True, False, True, True])
    first, second = np.array([0, 1, 0, 0]), np.array([3, 2, 2, 1])
    # order: (1.0, 0-2: pos), (1.0, 1-2: neg), (2.0: pos), (inf: pos)
    order = ranking(cost, first, second)
    assert order.tolist() == [2, 1, 0, 3]
    assert precision_at_k(order, positive, (1, 2, 3, 4, 5)) == {1: 1.0, 2: 0.5, 3: 2 / 3, 4: 0.75}


@pytest.fixture(scope="module")
def builds(tmp_path_factory, sample_results):
    whole = (sample_results / "latest").resolve()
    cut = sample_build(tmp_path_factory.mktemp("cut"), ingest={"until_year": 2010})
    return cut, whole


def _concept_graph(build_dir, scope="cooccurrence") -> nx.Graph:
    files = BuildLayout(build_dir).graph(scope)
    keys = pq.read_table(files.vertices, columns=["key"]).column("key").to_pylist()
    edges = pq.read_table(files.folder.edges).to_pylist()
    graph = nx.Graph()
    graph.add_nodes_from(keys)
    graph.add_weighted_edges_from((keys[e["src"]], keys[e["dst"]], float(e["cost"])) for e in edges)
    return graph


def test_validation_of_the_sample_against_networkx(builds):
    cut, whole = builds
    record = validate_slice(cut, whole)
    at_year, later = _concept_graph(cut), _concept_graph(whole)
    concepts = sorted(at_year.nodes)
    candidates = [(a, b) for a, b in itertools.combinations(concepts, 2) if not at_year.has_edge(a, b)]
    positives = [pair for pair in candidates if later.has_edge(*pair)]
    assert record["until_year"] == 2010 and record["later_until_year"] is None
    assert record["concepts"] == len(concepts) and record["sources"] == len(concepts)
    assert record["candidates"] == len(candidates)
    assert record["adjacent_at_year"] == at_year.number_of_edges()
    assert record["positives"] == len(positives) > 0
    # the scores from networkx's Dijkstra on the same edges
    lengths = dict(nx.all_pairs_dijkstra_path_length(at_year))
    cost = np.array([lengths[a].get(b, math.inf) for a, b in candidates])
    labels = np.array([later.has_edge(a, b) for a, b in candidates])
    assert record["roc_auc"] == pytest.approx(_brute_auc(cost, labels), abs=1e-9)
    assert record["reachable_candidates"] == int(np.isfinite(cost).sum())
    order = sorted(range(len(cost)), key=lambda i: (cost[i], candidates[i]))
    for k in (10, 100, 1000):
        assert record["precision_at_k"][str(k)] == pytest.approx(labels[order[:k]].mean())


def test_validation_with_sampled_sources_scores_only_their_pairs(builds):
    cut, whole = builds
    record = validate_slice(cut, whole, sources=5, seed=3)
    assert record["sources"] == 5
    assert "5 concepts drawn with seed 3" in record["method"]["sources"]
    n = record["concepts"]
    assert record["candidates"] + record["adjacent_at_year"] == 5 * (n - 1) - 10  # pairs of two sources once


def test_validate_slice_command_writes_the_report(builds, tmp_path):
    cut, whole = builds
    result = CliRunner().invoke(
        cli,
        ["validate-slice", "--build-dir", str(cut), "--later-build-dir", str(whole), "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "validation.json").read_text())
    report = (tmp_path / "validation.md").read_text()
    assert "literature up to 2010" in report
    assert f"| candidate pairs (not adjacent at 2010) | {record['candidates']:,} |" in report
    assert f"| positives (adjacent in the later build) | {record['positives']:,} |" in report
    assert f"**ROC AUC** | **{record['roc_auc']:.3f}**" in report
    assert (tmp_path / "roc.png").stat().st_size > 1000
    assert "ROC AUC" in result.output


def test_validate_slice_refuses_a_build_without_a_cut(builds):
    _, whole = builds
    result = CliRunner().invoke(
        cli, ["validate-slice", "--build-dir", str(whole), "--later-build-dir", str(whole)]
    )
    assert result.exit_code != 0 and "not a time slice" in result.output


def test_validate_slice_refuses_a_later_build_that_is_not_later(builds, tmp_path_factory):
    cut, _ = builds
    earlier = sample_build(tmp_path_factory.mktemp("earlier"), ingest={"until_year": 2005})
    result = CliRunner().invoke(
        cli, ["validate-slice", "--build-dir", str(cut), "--later-build-dir", str(earlier)]
    )
    assert result.exit_code != 0 and "cut at 2005, not after the slice's 2010" in result.output


def test_validate_slice_refuses_a_later_build_with_other_graph_settings(builds, tmp_path_factory):
    cut, _ = builds
    other = sample_build(tmp_path_factory.mktemp("other"), graph={"min_support": 2})
    result = CliRunner().invoke(
        cli, ["validate-slice", "--build-dir", str(cut), "--later-build-dir", str(other)]
    )
    assert result.exit_code != 0 and "graph.min_support" in result.output


def test_distances_searched_one_source_at_a_time_are_the_same(builds, monkeypatch):
    from pipeline.validate import time_slice

    cut, whole = builds
    together = validate_slice(cut, whole)
    monkeypatch.setattr(time_slice, "DISTANCE_ROWS_BYTES", 1)  # one source per search
    assert validate_slice(cut, whole) == together
