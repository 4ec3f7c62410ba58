"""The workflow end to end through Snakemake's Slurm executor on a real (local) Slurm cluster.

Every stage is a Slurm job; the solver is one 2-task MPI job whose ranks `litpath solve`
starts with `srun` inside the allocation. The distances must equal a local run's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline.ingest.synth import generate_corpus
from pipeline.store.adios import DistanceMatrix
from services.local.slurm import client_env

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.workflow, pytest.mark.slurm, pytest.mark.mpi, pytest.mark.slow]


def write_config(workdir: Path, corpus: Path) -> Path:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["results_dir"] = str(workdir / "results")
    manifest = yaml.safe_load((corpus / "manifest.json").read_text())
    config["inputs"] = {kind: [] for kind in config["inputs"]}
    for entry in manifest["files"]:
        config["inputs"][entry["kind"]].append(str(corpus / entry["path"]))
    # The stages that need no database: this test is about the scheduler and MPI under srun.
    config["mongo"]["enabled"] = False
    config["spoke"]["enabled"] = False
    config["compare"]["enabled"] = False
    config["solver"].update(
        ranks=2, grid="1x2", tile=32, threads=1, machine=str(REPO / "config" / "machines" / "dev-vm-2core.yaml")
    )
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def snakemake(workdir: Path, config: Path, *profile_args: str, timeout: float = 600) -> str:
    env = client_env()
    env.pop("SLURM_CONF", None)  # the cluster must be found the way a user's shell finds it
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    command = [
        str(BIN / "snakemake"), "-s", str(REPO / "workflow" / "Snakefile"),
        "--directory", str(workdir), "--configfile", str(config), *profile_args,
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # Snakemake ignores SIGTERM while jobs run
        output, _ = process.communicate(timeout=60)
        pytest.fail(f"snakemake did not finish in {timeout} s:\n{output[-4000:]}")
    assert process.returncode == 0, output[-6000:]
    return output


def test_sample_build_through_slurm_equals_local_run(tmp_path: Path, slurm_cluster) -> None:
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, scale=300, seed=11, n_update_files=1)

    local_dir = tmp_path / "local"
    local_dir.mkdir()
    snakemake(local_dir, write_config(local_dir, corpus), "--cores", "2")

    slurm_dir = tmp_path / "slurm"
    slurm_dir.mkdir()
    output = snakemake(
        slurm_dir,
        write_config(slurm_dir, corpus),
        "--workflow-profile", str(REPO / "config" / "profiles" / "slurm"),
        "--slurm-init-seconds-before-status-checks", "1",
        "--latency-wait", "5",
        # This one-node test cluster has 2 CPUs and the machine's memory: small requests.
        "--set-resources", "ingest_batch:mem_mb=500", "merge_tables:mem_mb=1000",
        "build_graph:mem_mb=1000", "solve:mem_mb=1000",
    )  # fmt: skip

    # The solve ran as a Slurm job and its ranks were started by srun inside it.
    solve_logs = list((slurm_dir / "results" / "logs" / "slurm" / "rule_solve").rglob("*.log"))
    assert solve_logs, output[-3000:]
    solve_log = next((slurm_dir / "results" / "logs").rglob("solve.log")).read_text()
    assert "srun" in solve_log, solve_log[-2000:]

    local_build = (local_dir / "results" / "latest").resolve()
    slurm_build = (slurm_dir / "results" / "latest").resolve()
    assert local_build.name == slurm_build.name  # same inputs and config: same build id
    with (
        DistanceMatrix(local_build / "distances.bp") as local,
        DistanceMatrix(slurm_build / "distances.bp") as remote,
    ):
        assert local.attributes["graph_digest"] == remote.attributes["graph_digest"]
        for row in range(local.n):
            np.testing.assert_array_equal(local.row(row), remote.row(row))
