"""The cores a workflow's solve job asks for (pipeline.solve.stage.solve_cores) and `litpath solve
--ranks`, with which the job runs a small solve on the one core it was given."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from support.random_graphs import assert_distances_equal, random_graph, read_distances

from pipeline.builds.layout import GraphFolder
from pipeline.solve.commands import solve
from pipeline.solve.stage import FEW_ROWS, solve_cores

REPO = Path(__file__).resolve().parents[2]
GIB = 1 << 30


def _graph(tmp_path: Path, n: int) -> Path:
    GraphFolder(tmp_path).counts.parent.mkdir(parents=True, exist_ok=True)
    GraphFolder(tmp_path).counts.write_text(json.dumps({"counts": {"vertices": n}}))
    return tmp_path


@pytest.mark.parametrize(
    ("method", "n", "sources", "want"),
    [
        ("auto", 10_000, 0, 4),  # the dense matrix (0.4 GB) fits 1 GiB: it may be solved dense
        ("auto", 277_137, 0, 1),  # 307 GB does not: on demand, nothing solved
        ("auto", 277_137, 18, 1),  # 18 rows
        ("auto", 277_137, FEW_ROWS, 1),
        ("auto", 277_137, FEW_ROWS + 1, 4),  # many rows: every rank
        ("rows", 277_137, FEW_ROWS + 1, 4),
        ("rows", 10_000, 5, 1),  # rows asked for: never dense
        ("dense", 277_137, 0, 4),  # dense asked for (the plan refuses it if it cannot fit)
        ("on-demand", 10_000, FEW_ROWS + 1, 1),
    ],
)
def test_a_solve_that_can_only_be_small_asks_for_one_core(tmp_path, method, n, sources, want):
    solver = {"ranks": 2, "threads": 2, "cooccurrence_graph": method}
    assert solve_cores(_graph(tmp_path, n), "cooccurrence", solver, sources, memory_bytes=GIB) == want


def test_the_full_graph_reads_its_own_setting(tmp_path):
    solver = {"ranks": 2, "threads": 1, "full_graph": "dense", "cooccurrence_graph": "on-demand"}
    graph = _graph(tmp_path, 277_137)
    assert solve_cores(graph, "full", solver, 0, memory_bytes=GIB) == 2
    assert solve_cores(graph, "cooccurrence", solver, 0, memory_bytes=GIB) == 1


def test_every_core_until_the_graph_s_record_is_there(tmp_path):
    assert solve_cores(tmp_path / "not-yet", "full", {"ranks": 3, "threads": 1}, 0, memory_bytes=GIB) == 3
    (tmp_path / "graph_counts.json").write_text("{")  # being written
    assert solve_cores(tmp_path, "full", {"ranks": 3, "threads": 1}, 0, memory_bytes=GIB) == 3


@pytest.mark.mpi
def test_solve_with_fewer_ranks_than_configured(tmp_path):
    """--ranks 1 where the config has 2 ranks in a 1x2 grid: the plan, the solver and the grid are
    of one rank, and the distances are scipy's."""
    graph = random_graph(60, seed=11)
    graph_bp = graph.write_bp(tmp_path / "graph" / "graph.bp", digest=hashlib.sha256(b"graph 11").hexdigest())
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"solver": {
        "ranks": 2, "grid": "1x2", "tile": 8, "threads": 1, "full_graph": "dense", "max_hours": 10,
        "machine": str(REPO / "config" / "machines" / "dev-vm-2core.yaml"),
    }}))  # fmt: skip
    distances = tmp_path / "graph" / "distances.bp"
    summary = tmp_path / "graph" / "solve_summary.json"
    result = CliRunner().invoke(solve, ["--input", str(graph_bp), "--distances", str(distances), "--config", str(config),
                                        "--summary", str(summary), "--ranks", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = json.loads((tmp_path / "graph" / "plan.json").read_text())
    assert plan["method"] == "dense" and plan["ranks"] == 1, plan
    got, _ = read_distances(distances)
    assert_distances_equal(got, graph.reference().astype(np.float32))
