"""What litpath does on any Slurm cluster (pipeline/solve/cluster.py): the MPI launcher it picks for the
solver, and the checks that refuse a job the cluster cannot run before anything is submitted.

The checks run against the real local cluster of the ``slurm_cluster`` fixture (tests/conftest.py,
services/local/slurm.py); the launcher choice needs no cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.solve.cluster import (
    LAUNCHER_ENV,
    SRUN_MPI_ENV,
    ClusterCheckError,
    ClusterFit,
    check_cluster,
    launcher_command,
)
from services.local.slurm import PARTITION, SlurmCluster, client_env

# --- launcher choice (no cluster needed) ------------------------------------------------------


def test_launcher_outside_allocation_is_mpirun() -> None:
    command = launcher_command(4, {})
    assert command[:3] == ["mpirun", "-n", "4"]
    assert "--oversubscribe" in command
    assert "^slurm" not in command


def test_launcher_gives_threaded_ranks_their_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    # Open MPI's default binds a rank to one core: its threads would share it.
    import psutil

    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 16 if logical else 8)
    assert "--map-by" not in launcher_command(2, {})
    fits = launcher_command(2, {}, threads_per_rank=4)
    assert fits[fits.index("--map-by") + 1] == "slot:PE=4"
    assert "--use-hwthread-cpus" not in fits
    hyperthreads = launcher_command(2, {}, threads_per_rank=8)
    assert "--use-hwthread-cpus" in hyperthreads
    assert hyperthreads[hyperthreads.index("--map-by") + 1] == "slot:PE=8"
    too_many = launcher_command(4, {}, threads_per_rank=8)
    assert too_many[too_many.index("--bind-to") + 1] == "none"


def test_threaded_rank_runs_on_as_many_cpus_as_threads() -> None:
    """The real mpirun with our flags: a 1-rank, 2-thread job may use 2 CPUs, not 1."""
    if shutil.which("mpirun") is None or (os.cpu_count() or 1) < 2:
        pytest.skip("needs mpirun and 2 CPUs")
    command = launcher_command(1, {}, threads_per_rank=2)
    out = subprocess.run(
        [*command, "grep", "Cpus_allowed_list", "/proc/self/status"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    allowed = out.split(":")[1].strip()
    cpus = sum(
        int(b) - int(a) + 1 if "-" in part else 1
        for part in allowed.split(",")
        for a, _, b in [part.partition("-")]
    )
    assert cpus >= 2, out


def test_launcher_inside_allocation_is_srun_with_pmix() -> None:
    assert launcher_command(2, {"SLURM_JOB_ID": "17"}) == ["srun", "-n", "2", "--mpi=pmix"]
    assert launcher_command(2, {"SLURM_JOB_ID": "17"}, threads_per_rank=4)[-1] == "--cpus-per-task=4"
    assert launcher_command(2, {"SLURM_JOB_ID": "17", SRUN_MPI_ENV: ""}) == ["srun", "-n", "2"]


def test_launcher_override_by_environment() -> None:
    forced_mpirun = launcher_command(2, {"SLURM_JOB_ID": "17", LAUNCHER_ENV: "mpirun"})
    assert forced_mpirun[0] == "mpirun"
    assert forced_mpirun[-6:] == ["--mca", "ras", "^slurm", "--mca", "plm", "^slurm"]
    assert launcher_command(2, {LAUNCHER_ENV: "srun"})[0] == "srun"
    with pytest.raises(ValueError, match="LITPATH_MPI_LAUNCHER"):
        launcher_command(2, {LAUNCHER_ENV: "aprun"})
    with pytest.raises(ValueError, match="ranks"):
        launcher_command(0, {})


# --- checks before submitting -----------------------------------------------------------------


@pytest.mark.slurm
def test_check_cluster_accepts_a_job_that_fits(slurm_cluster: SlurmCluster) -> None:
    cpus = os.cpu_count() or 1
    fit = check_cluster(None, None, tasks=2)
    assert fit == ClusterFit(partition=PARTITION, tasks=2, cpus_per_task=1, task_slots=cpus)
    fit = check_cluster(PARTITION, None, tasks=1, cpus_per_task=2)
    assert (fit.partition, fit.task_slots) == (PARTITION, cpus // 2)


@pytest.mark.slurm
def test_check_cluster_rejects_unknown_partition(slurm_cluster: SlurmCluster) -> None:
    with pytest.raises(ClusterCheckError, match=r"partition 'bogus' does not exist; available: debug"):
        check_cluster("bogus", None, tasks=1)


@pytest.mark.slurm
def test_check_cluster_rejects_more_tasks_than_cpus(slurm_cluster: SlurmCluster) -> None:
    cpus = os.cpu_count() or 1
    with pytest.raises(
        ClusterCheckError, match=rf"needs {cpus + 1} tasks x 1 CPUs .* at most {cpus} such tasks"
    ):
        check_cluster(None, None, tasks=cpus + 1)
    with pytest.raises(ClusterCheckError, match="tasks x 2 CPUs"):
        check_cluster(None, None, tasks=cpus, cpus_per_task=2)


@pytest.mark.slurm
def test_check_cluster_rejects_missing_or_wrong_account(slurm_cluster: SlurmCluster) -> None:
    env = slurm_cluster.env()
    subprocess.run(
        ["scontrol", "update", f"PartitionName={PARTITION}", "AllowAccounts=litpath_hpc"], env=env, check=True
    )
    try:
        with pytest.raises(
            ClusterCheckError, match="only accepts accounts litpath_hpc, and no account was given"
        ):
            check_cluster(None, None, tasks=1)
        with pytest.raises(ClusterCheckError, match="account 'someone_else' may not use partition 'debug'"):
            check_cluster(None, "someone_else", tasks=1)
        check_cluster(None, "litpath_hpc", tasks=1)
    finally:
        subprocess.run(
            ["scontrol", "update", f"PartitionName={PARTITION}", "AllowAccounts=ALL"], env=env, check=True
        )


@pytest.mark.slurm
def test_check_cluster_reports_unreachable_controller(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    dead_conf = tmp_path / "slurm.conf"
    dead_conf.write_text(
        re.sub(
            r"^SlurmctldPort=\d+", "SlurmctldPort=9", slurm_cluster.conf_path.read_text(), flags=re.MULTILINE
        )
        + "MessageTimeout=2\n"
    )
    started = time.monotonic()
    with pytest.raises(ClusterCheckError, match=r"Slurm cluster unreachable: 'sinfo -h -o %P'"):
        check_cluster(None, None, tasks=1, env=client_env(dead_conf))
    assert time.monotonic() - started < 60


@pytest.mark.slurm
def test_check_cluster_command_exits_with_message(slurm_cluster: SlurmCluster) -> None:
    result = CliRunner().invoke(cli, ["check-cluster", "--partition", "bogus", "--tasks", "2"])
    assert result.exit_code == 1
    assert "Error: Slurm partition 'bogus' does not exist" in result.output
    ok = CliRunner().invoke(
        cli, ["check-cluster", "--tasks", "1"], env={"LITPATH_SLURM_PARTITION": PARTITION}
    )
    assert ok.exit_code == 0, ok.output
    assert f"ok: 1 task(s) x 1 CPU(s) fit partition {PARTITION}" in ok.output
