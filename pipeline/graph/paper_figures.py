"""A build's graph beside the COAST paper's, scaled to the build (``graph_counts.json``'s
``paper_scaled``; science review S5).

The paper (Kannan et al., SC22, appendix XI-E) reports, for its whole SemMedDB: "over 290,000
unique concepts", "18.5 million vertices and 213 million relations ... 14 million relations between
concepts, 196 million relations between papers and concepts, and 3 million citation relations
between papers". The relations that grow in proportion with the corpus (abstract vertices,
paper--concept and citation relations) are scaled by the build's share of a release's 126,268,045
predications (:func:`pipeline.ingest.synth_release.scaled_paper_graph`); concepts and
concept--concept relations saturate, so they are given at the full size only. A ratio far from 1
on a calibrated or real corpus says the build counts something else than the paper did -- above
all the mention source (``ingest.mention_source``): predication arguments reproduce the paper's
196M paper--concept relations, ENTITY rows give several times as many (README, "What a mention is").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.builds.layout import TableFolder
from pipeline.graph.inputs import row_count
from pipeline.ingest.synth_release import scaled_paper_graph

# graph_counts.json count -> the paper's figure it stands beside
SCALED = {
    "abstract_vertices": "abstracts",
    "edges_concept_abstract": "paper_concept",
    "edges_abstract_abstract": "citation",
}
FULL_SIZE = {"concept_vertices": "concepts_full_release", "edges_concept_concept": "concept_concept_full_release"}


def predication_rows(tables_dir: Path) -> int:
    """The PREDICATION rows the build read (accepted), from the merge's counts.json; else the
    predications table's rows (a gene-list argument counts once per gene there: a few % more)."""
    counts_file = TableFolder(tables_dir).counts
    if counts_file.exists():
        files = json.loads(counts_file.read_text()).get("files") or []
        accepted = [f.get("rows_accepted", 0) for f in files if f.get("kind") == "semmeddb_predication"]
        if accepted:
            return int(sum(accepted))
    return row_count(tables_dir, "predications")


def paper_scaled(counts: dict[str, Any], predication_rows: int) -> dict[str, Any]:
    """The build's counts beside the paper's, scaled to ``predication_rows`` (PREDICATION rows)."""
    if predication_rows <= 0:
        return {"predication_rows": predication_rows, "note": "no predications: nothing to scale"}
    paper = scaled_paper_graph(predication_rows)
    out: dict[str, Any] = {"predication_rows": predication_rows, "share_of_release": paper["share_of_release"]}
    for ours, theirs in SCALED.items():
        if ours in counts:
            out[ours] = {"build": counts[ours], "paper_scaled": round(paper[theirs]),
                         "ratio": round(counts[ours] / paper[theirs], 3) if paper[theirs] else None}  # fmt: skip
    for ours, theirs in FULL_SIZE.items():
        if ours in counts:
            out[ours] = {"build": counts[ours], "paper_full_release": paper[theirs]}
    return out
