"""graph_counts.json's ``paper_scaled``: the build's counts beside the COAST paper's, and the
default mention source reproducing the paper's paper--concept relations on the calibrated corpus."""

from __future__ import annotations

import json

import pytest
from support.pipeline_runs import ingested

from pipeline.builds.layout import GraphFolder
from pipeline.graph.build import build_graph
from pipeline.graph.paper_figures import paper_scaled
from pipeline.merge import merge_ingested


def test_scaling_by_hand():
    # 1,262,680.45 predications is 1 % of a release's 126,268,045: 1 % of 196M, 3M and 18.21M
    counts = {"abstract_vertices": 182_100, "edges_concept_abstract": 980_000, "edges_abstract_abstract": 60_000,
              "concept_vertices": 5, "edges_concept_concept": 7}  # fmt: skip
    out = paper_scaled(counts, 1_262_680)
    assert out["share_of_release"] == pytest.approx(0.01, rel=1e-6)
    assert out["edges_concept_abstract"]["paper_scaled"] == pytest.approx(1_960_000, abs=2)
    assert out["edges_concept_abstract"]["ratio"] == pytest.approx(0.5, abs=1e-3)
    assert out["edges_abstract_abstract"]["ratio"] == pytest.approx(2.0, abs=1e-3)
    assert out["abstract_vertices"]["paper_scaled"] == pytest.approx(182_100, abs=2)  # 18.5M - 290k
    assert out["concept_vertices"] == {"build": 5, "paper_full_release": 290_000}
    assert paper_scaled(counts, 0)["note"]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    return root, ingested(root, scale=40_000, seed=6, profile="calibrated")


# slow: a calibrated corpus ingested, merged and built twice (about 10 s), beyond the fast tier
@pytest.mark.slow
@pytest.mark.parametrize(("mention_source", "low", "high"), [(None, 0.95, 1.05), ("entities", 3.0, None)])
def test_default_mentions_reproduce_the_papers_paper_concept_relations(calibrated, mention_source, low, high):
    root, folders = calibrated
    name = mention_source or "default"
    config = {} if mention_source is None else {"mention_source": mention_source}
    merge_ingested(folders, root / f"tables-{name}", config)
    build_graph(root / f"tables-{name}", root / f"graph-{name}", {})
    scaled = json.loads(GraphFolder(root / f"graph-{name}").counts.read_text())["paper_scaled"]
    ratio = scaled["edges_concept_abstract"]["ratio"]
    assert ratio >= low and (high is None or ratio <= high), scaled
    if mention_source is None:  # the abstracts that have predications: the paper's 18.2M, scaled
        assert 0.97 <= scaled["abstract_vertices"]["ratio"] <= 1.03, scaled
