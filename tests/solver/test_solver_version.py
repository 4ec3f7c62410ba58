"""apsp-fw reports litpath's version (pipeline.__version__, read by solver/CMakeLists.txt): on
--version, in its JSON summary and in the attributes of the distances it writes."""

from __future__ import annotations

import json
import subprocess

from support.random_graphs import random_graph

from pipeline import __version__
from pipeline.store.bpfiles import bp_reader


def test_version_option_prints_the_package_version(apsp_fw) -> None:
    shown = subprocess.run(
        [str(apsp_fw), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert shown.stdout == f"apsp-fw {__version__}\n"


def test_summary_and_distances_carry_the_package_version(tmp_path, run_apsp) -> None:
    graph = random_graph(24, seed=5).write_bp(tmp_path / "graph.bp", digest="v")
    out, summary = tmp_path / "distances.bp", tmp_path / "summary.json"
    run = run_apsp(1, "--input", graph, "--output", out, "--tile", "8", "--summary-json", summary)
    assert run.returncode == 0, run.stderr
    assert json.loads(summary.read_text())["solver_version"] == __version__
    with bp_reader(out) as reader:
        assert reader.read_attribute("solver_version") == __version__
