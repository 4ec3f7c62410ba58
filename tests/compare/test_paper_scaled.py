"""The comparison report sets the build's graph beside the COAST paper's counts, scaled (issue 27,
item 2; science review S5): read from the build's graph_counts.json, written as one sentence."""

from __future__ import annotations

import json

from pipeline.builds.layout import BuildLayout
from pipeline.compare.report import scale_sentence
from pipeline.compare.run import paper_scaled_counts
from pipeline.graph.paper_figures import paper_scaled


def test_the_sentence_states_each_count_beside_the_papers():
    # A build that read 1,262,680 predications: 1 % of a release (126,268,045 rows).
    counts = {"abstract_vertices": 1000, "edges_concept_abstract": 20_000, "edges_abstract_abstract": 300,
              "concept_vertices": 5000, "edges_concept_concept": 70_000}  # fmt: skip
    scaled = paper_scaled(counts, 1_262_680)
    text = scale_sentence({"paper_scaled": scaled})
    assert "read 1,262,680 PREDICATION rows, 1.0 % of a release" in text
    # 196M paper-concept relations in the paper, 1 % of them scaled: about 1.96M; ours 20,000.
    row = scaled["edges_concept_abstract"]
    assert 1.9e6 < row["paper_scaled"] < 2.0e6
    assert f"paper–concept relations 20,000 (paper, scaled: {row['paper_scaled']:,}, ratio 0.01)" in text
    assert "concepts 5,000 (paper, whole release: 290,000)" in text
    assert "concept–concept relations 70,000 (paper, whole release: 14,000,000)" in text


def test_no_sentence_without_the_counts():
    assert scale_sentence({}) == ""
    assert scale_sentence({"paper_scaled": {"predication_rows": 0, "note": "no predications"}}) == ""


def test_read_from_the_full_graphs_counts(tmp_path):
    build = tmp_path / "builds" / "abc"
    assert paper_scaled_counts(build) == {}  # a build from before graph_counts.json had them
    counts_file = BuildLayout(build).graph("full").counts
    counts_file.parent.mkdir(parents=True)
    scaled = paper_scaled({"abstract_vertices": 10}, 1000)
    counts_file.write_text(json.dumps({"abstract_vertices": 10, "paper_scaled": scaled}))
    assert paper_scaled_counts(build) == {"paper_scaled": scaled}
