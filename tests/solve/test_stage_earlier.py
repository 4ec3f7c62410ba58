"""`litpath solve` in a build whose merge started from an earlier build: the distances of a graph
the earlier build solved -- the same graph (digest), method and sources -- are taken from it, not
solved again (a citation file leaves the co-occurrence graph as it was); another graph is solved."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from support.random_graphs import random_graph, read_matrix

from pipeline.builds.layout import BuildLayout
from pipeline.solve.stage import solve_graph

pytestmark = pytest.mark.mpi

REPO = Path(__file__).resolve().parents[2]
SOLVER = {
    "ranks": 2, "grid": "1x2", "tile": 8, "broadcast": "ring", "lookahead": True, "threads": 1,
    "validate_rows": 0, "full_graph": "dense", "max_hours": 10, "checkpoint_every": 0,
    "machine": str(REPO / "config" / "machines" / "dev-vm-2core.yaml"),
}  # fmt: skip


def _build(root: Path, seed: int, earlier: Path | None) -> BuildLayout:
    """A build folder with a co-occurrence graph.bp and, on top of ``earlier``, the counts.json of
    a merge on its delta."""
    build = BuildLayout(root)
    digest = hashlib.sha256(f"graph {seed}".encode()).hexdigest()
    random_graph(80, seed=seed).write_bp(build.graph("cooccurrence").graph_bp, digest=digest)
    build.tables.path.mkdir(parents=True)
    incremental = {} if earlier is None else {
        "incremental": {"used": True, "previous_tables": str(BuildLayout(earlier).tables.path),
                        "tables_unchanged": ["predications", "concepts"]},
    }  # fmt: skip
    build.tables.counts.write_text(json.dumps(incremental))
    return build


def _solve(build: BuildLayout, log: list[str]) -> dict:
    files = build.graph("cooccurrence")
    return solve_graph(files.graph_bp, files.distances, SOLVER, scope="cooccurrence", log=log.append)


def test_the_earlier_build_s_distances_of_the_same_graph_are_taken(tmp_path):
    log: list[str] = []
    one = _build(tmp_path / "one", seed=5, earlier=None)
    first = _solve(one, log)
    assert first["method"] == "dense" and "taken_from" not in first and first["solver"] is not None
    two = _build(tmp_path / "two", seed=5, earlier=one.root)
    second = _solve(two, log)
    assert second["taken_from"] == "one" and second["reused"] and second["solver"] is None, second
    assert any("taken from build one" in line for line in log)
    np.testing.assert_array_equal(read_matrix(two.graph("cooccurrence").distances),
                                  read_matrix(one.graph("cooccurrence").distances))  # fmt: skip
    # another graph on top of the same earlier build: solved, not taken
    three = _build(tmp_path / "three", seed=6, earlier=one.root)
    third = _solve(three, log)
    assert "taken_from" not in third and third["solver"] is not None, third


def test_a_distances_path_that_is_no_bp_output_is_refused(tmp_path):
    """--distances naming a build folder (or any folder or file a solve did not write) had it
    removed whole before the solve wrote its own (found in review); a stale BP output is still
    replaced."""
    from pipeline.solve.stage import DistancesPathTaken

    build = _build(tmp_path / "one", seed=5, earlier=None)
    graph_bp = build.graph("cooccurrence").graph_bp
    mine = tmp_path / "my-results"
    (mine / "sub").mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine too")
    for taken in (mine, a_file):
        with pytest.raises(DistancesPathTaken, match=f"--distances {taken}: exists and is a"):
            solve_graph(graph_bp, taken, SOLVER, scope="cooccurrence", log=[].append)
    assert (mine / "notes.txt").read_text() == "mine" and a_file.read_text() == "mine too"
    output = tmp_path / "distances.bp"
    first = solve_graph(graph_bp, output, SOLVER, scope="cooccurrence", log=[].append)
    other = _build(tmp_path / "two", seed=6, earlier=None)  # another graph: the BP output is replaced
    log: list[str] = []
    second = solve_graph(other.graph("cooccurrence").graph_bp, output, SOLVER, scope="cooccurrence", log=log.append)
    assert first["solver"] is not None and second["solver"] is not None
    assert any(f"removing {output}" in line for line in log)
