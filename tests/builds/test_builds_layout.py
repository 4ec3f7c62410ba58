"""pipeline/builds/layout.py is the one place a results folder's file names are spelled."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pipeline.builds.layout import BuildLayout, ResultsLayout, results_of

REPO = Path(__file__).resolve().parents[2]
# Every name the layout owns (a folder or file of a results folder).
OWNED = {
    "config.yaml", "run_config.yaml", "build.json", "mongo_load.json", "tables", "counts.json",
    "quarantine.parquet", "graph", "cooccurrence", "graph.bp", "vertices.parquet", "edges.parquet",
    "graph_counts.json", "plan.json", "path_index.bp", "distances.bp", "solve_summary.json", "mapping", "compare",
    "cui_spoke_mapping.parquet", "cui_spoke_mapping.csv", "mapping_stats.json", "coverage.md",
    "query_concepts.txt", "query_set.json", "report.html", "report.md", "run.json", "paths.parquet",
    "hops.parquet", "scenarios.png", "builds", "latest", ".checksums.json", "load.json",
    "validation", "validation.json", "validation.md", "roc.png", "export", "cui_spoke_mapping.sssom.tsv",
    "export.json",
}  # fmt: skip
# Literals that are these words but not paths of a results folder: "config.yaml" is the sample's
# config/config.yaml, "compare"/"graph"/"mapping" are also command, scope and config-section names.
NOT_PATHS = {"compare", "graph", "mapping", "tables", "latest", "builds", "cooccurrence", "config.yaml", "export"}
# Texts that name a file for a reader, not a path: `litpath solve --input`'s metavar in --help.
ALLOWED = {("pipeline/solve/commands.py", "graph.bp")}


def _literals(path: Path) -> list[tuple[int, str]]:
    """String constants of a Python file that are not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    return [
        (node.lineno, node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]  # fmt: skip


def test_no_other_module_spells_a_results_file_name():
    offenders = []
    for path in sorted([*REPO.glob("pipeline/**/*.py"), *REPO.glob("services/**/*.py")]):
        if path == REPO / "pipeline" / "builds" / "layout.py":
            continue
        for line, text in _literals(path):
            if (str(path.relative_to(REPO)), text) in ALLOWED or text.startswith(("config/", "/")):
                continue  # config/config.yaml is the sample's config; "/..." are API routes
            if text in OWNED - NOT_PATHS or re.fullmatch(r"[\w./-]*/(" + "|".join(map(re.escape, OWNED)) + ")", text):
                offenders.append(f"{path.relative_to(REPO)}:{line}: {text!r}")
    for path in [REPO / "workflow" / "Snakefile", *REPO.glob("workflow/rules/*.smk")]:
        for number, text in enumerate(path.read_text().splitlines(), 1):
            code = text.split("#", 1)[0]
            for name in OWNED - NOT_PATHS:
                if re.search(r"[\"']" + re.escape(name) + r"[\"']", code):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {name!r}")
    assert not offenders, "spell these through pipeline.builds.layout:\n" + "\n".join(offenders)


def test_the_layout_of_a_build():
    results = ResultsLayout("/r")
    build = results.build("abc123")
    assert build.root == Path("/r/builds/abc123") and build.build_id == "abc123"
    assert results_of(build.root) == results and results.latest == Path("/r/latest")
    full, cooc = build.graph("full"), build.graph("cooccurrence")
    assert (full.graph_bp, full.distances, full.summary) == (
        Path("/r/builds/abc123/graph/graph.bp"), Path("/r/builds/abc123/distances.bp"),
        Path("/r/builds/abc123/solve_summary.json"),
    )  # fmt: skip
    assert (cooc.graph_bp.parent, cooc.distances.parent, cooc.summary.parent) == (build.root / "cooccurrence",) * 3
    assert build.tables.table("concepts") == build.root / "tables" / "concepts.parquet"
    assert build.mapping.table.parent == build.compare.report.parent.parent / "mapping"
    assert results.ingest("pubmed_xml", "f-1").counts == Path("/r/ingest/pubmed_xml/f-1/counts.json")
    assert results.rule_log("abc123", "solve", ".benchmark.tsv") == Path("/r/logs/abc123/solve.benchmark.tsv")
    with pytest.raises(ValueError, match="unknown graph 'other'"):
        build.graph("other")
    assert isinstance(BuildLayout("x").root, Path)


def test_an_ingest_folder_names_its_kinds_ingest_format():
    """A kind whose ingest changed (INGEST_FORMATS) gets new folder names, so an upgraded litpath
    ingests its files again instead of reusing folders an older one wrote (SENTENCE: the text,
    issue 31); the other kinds' folders keep their names and are reused."""
    from pathlib import Path

    from pipeline.builds.identity import INGEST_FORMATS, InputFile

    sha = "ab" * 32
    sentence = InputFile("semmeddb_sentence", Path("/d/semmedVER43_R_SENTENCE.csv.gz"), sha, 0)
    predication = InputFile("semmeddb_predication", Path("/d/semmedVER43_R_PREDICATION.csv.gz"), sha, 0)
    assert INGEST_FORMATS["semmeddb_sentence"] >= 2
    assert sentence.key == f"semmedVER43_R_SENTENCE.csv.gz-{sha[:12]}-f{INGEST_FORMATS['semmeddb_sentence']}"
    assert predication.key == f"semmedVER43_R_PREDICATION.csv.gz-{sha[:12]}"
