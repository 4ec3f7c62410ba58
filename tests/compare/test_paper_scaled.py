"""The comparison report sets the compared graph beside the COAST paper's counts, scaled (issue 27,
item 2; science review S5): read from that graph's graph_counts.json, written as one sentence;
`litpath describe` sets the full graph beside them."""

from __future__ import annotations

import json
from pathlib import Path

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


def _graph_counts(build: Path, scope: str, counts: dict) -> None:
    counts_file = BuildLayout(build).graph(scope).counts
    counts_file.parent.mkdir(parents=True, exist_ok=True)
    counts_file.write_text(json.dumps({"scope": scope, "counts": counts}))


def test_read_from_the_compared_graphs_counts_only(tmp_path):
    """The sentence is the compared graph's: the comparison's own input, there whenever it runs.
    The full graph's counts, there or not yet (the workflow builds it beside the comparison), change
    nothing: a citation rerun's report had lost the sentence when the full graph finished last."""
    build = tmp_path / "builds" / "abc"
    assert paper_scaled_counts(build, "cooccurrence") == {}  # no graph_counts.json: no sentence
    (tables := BuildLayout(build).tables.counts).parent.mkdir(parents=True)
    tables.write_text(json.dumps({"files": [{"kind": "semmeddb_predication", "rows_accepted": 1000}]}))
    cooccurrence = {"concept_vertices": 50, "edges_concept_concept": 70}
    # the co-occurrence graph's record counts no abstract: 0 there is no finding to set beside the paper
    _graph_counts(build, "cooccurrence", {**cooccurrence, "abstract_vertices": 0, "edges_concept_abstract": 0})
    before = paper_scaled_counts(build, "cooccurrence")
    assert before == {"paper_scaled": paper_scaled(cooccurrence, 1000), "paper_scaled_graph": "cooccurrence"}
    _graph_counts(build, "full", {"abstract_vertices": 10, "edges_concept_abstract": 40, **cooccurrence})
    assert paper_scaled_counts(build, "cooccurrence") == before
    text = scale_sentence(before)
    assert "(the co-occurrence graph compared here)" in text and "concepts 50 (paper, whole release" in text
    assert "abstracts" not in text.split(" The full graph")[0]
    assert "`litpath describe`" in text  # where the full graph's figures are
    full = paper_scaled_counts(build, "full")
    assert full["paper_scaled"]["abstract_vertices"]["build"] == 10
    assert "(the full graph)" in scale_sentence(full) and "`litpath describe`" not in scale_sentence(full)


def test_describe_sets_the_full_graph_beside_the_paper():
    from pipeline.query.describe import beside_the_paper

    scaled = paper_scaled({"abstract_vertices": 1000, "edges_concept_abstract": 20_000, "concept_vertices": 5}, 1_262_680)
    text = beside_the_paper({"paper_scaled": scaled})
    row = scaled["edges_concept_abstract"]
    assert f"paper–concept relations 20,000 (paper, scaled: {row['paper_scaled']:,}, ratio 0.01)" in text
    assert text.startswith("abstracts 1,000 (paper, scaled: ") and "concepts" not in text.replace("–concept", "")
    assert beside_the_paper(None) == "" and beside_the_paper({}) == ""
