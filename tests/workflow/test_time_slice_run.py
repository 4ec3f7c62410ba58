"""A run with ``ingest.until_year`` builds the slice end to end through the workflow: the merge reads
the year from the run's settings, cuts the tables, and the build has an id of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.builds.identity import build_id, resolve_inputs
from pipeline.builds.layout import ResultsLayout
from pipeline.config import validate_config

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = [pytest.mark.workflow, pytest.mark.mpi]


def test_a_run_with_until_year_builds_the_slice(tmp_path):
    shutil.copytree(REPO / "config" / "sample", tmp_path / "data")
    text = (REPO / "config" / "config.yaml").read_text().replace("config/sample/", f"{tmp_path / 'data'}/")
    # no servers: the stages the slice changes are the merge, the graph and the solve
    text = text.replace("  until_year: null\n", "  until_year: 2010\n").replace(
        "  enabled: true\n", "  enabled: false\n"
    )
    config = tmp_path / "slice.yaml"
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITPATH_")}
    env["LITPATH_MACHINE"] = str(REPO / "config" / "machines" / "dev-vm-2core.yaml")
    env["PATH"] = f"{SNAKEMAKE.parent}:{env['PATH']}"
    run = subprocess.run(
        [str(SNAKEMAKE), "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp_path),
         "--configfile", str(config), "--cores", "2"],
        env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    results = ResultsLayout(tmp_path / "results")
    build = results.build(results.latest.resolve().name)
    counts = json.loads(build.tables.counts.read_text())
    assert counts["time_slice"]["until_year"] == 2010 and counts["time_slice"]["papers_after_year"] > 0
    assert yaml.safe_load(build.config.read_text())["ingest"]["until_year"] == 2010
    settings = validate_config(yaml.safe_load(text))
    inputs = resolve_inputs(settings)
    assert build.build_id == build_id(inputs, settings)
    whole = validate_config({**settings, "ingest": {**settings["ingest"], "until_year": None}})
    assert build_id(inputs, whole) != build.build_id
