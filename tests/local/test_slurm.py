"""A real single-node Slurm cluster (services/local/slurm.py): it starts, runs plain and MPI jobs
(srun --mpi=pmix, and the solver's launcher choice inside an allocation), and a Snakefile runs
through config/profiles/slurm, its start-up check refusing a job that does not fit. The launcher
and the checks themselves (pipeline/solve/cluster.py) are tested in tests/solve/test_cluster.py.

The ``slurm_cluster`` fixture (tests/conftest.py) is session-scoped and shared with other test
modules; it skips only where Slurm is not
installed, and stops the cluster (restoring /etc/slurm/slurm.conf) when the session ends.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipeline.solve.cluster import LAUNCHER_ENV, SYSTEM_CONF
from services.local.slurm import (
    CONF_MARKER,
    PARTITION,
    REPO_ROOT,
    SlurmCluster,
    SlurmError,
    client_env,
)

SLURM_PROFILE = REPO_ROOT / "config" / "profiles" / "slurm"
JOB_TIMEOUT_S = 120.0

MPI_HELLO = """\
from mpi4py import MPI

world = MPI.COMM_WORLD
print(f"hello from rank {world.Get_rank()} of {world.Get_size()}", flush=True)
"""

# What Snakemake's Slurm job step does before it runs a rule: drop SLURM_* but SLURM_JOB_ID, so the
# job's own srun must find slurm.conf without SLURM_CONF and may not inherit the batch geometry.
STRIP_SLURM_ENV = (
    'for name in $(env | grep -o "^SLURM_[A-Z_]*"); do [ "$name" = SLURM_JOB_ID ] || unset "$name"; done'
)


@pytest.fixture(scope="session")
def mpi_hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mpi-hello") / "hello.py"
    path.write_text(MPI_HELLO)
    return path


def job_env() -> dict[str, str]:
    """Client environment as a user has it: no SLURM_CONF (the cluster is found at /etc/slurm)."""
    env = client_env()
    env.pop("SLURM_CONF", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


def run_batch(
    script: Path, workdir: Path, *sbatch_args: str, timeout: float = JOB_TIMEOUT_S
) -> tuple[str, str]:
    """Submit ``script`` with sbatch, poll until it ends; returns (final state, job output)."""
    output = workdir / f"{script.stem}.out"
    submitted = subprocess.run(
        ["sbatch", "--parsable", "-o", str(output), "-D", str(workdir), *sbatch_args, str(script)],
        capture_output=True,
        text=True,
        env=job_env(),
        check=True,
        timeout=30,
    )
    job_id = submitted.stdout.strip().split(";")[0]
    deadline = time.monotonic() + timeout
    state = "UNKNOWN"
    while time.monotonic() < deadline:
        shown = subprocess.run(
            ["scontrol", "-o", "show", "job", job_id],
            capture_output=True,
            text=True,
            env=job_env(),
            timeout=30,
        )
        match = re.search(r"JobState=(\S+)", shown.stdout)
        state = match.group(1) if match else "UNKNOWN"
        if state in (
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "BOOT_FAIL",
        ):
            break
        time.sleep(0.2)
    else:
        subprocess.run(["scancel", job_id], env=job_env(), check=False)
        pytest.fail(f"job {job_id} did not finish within {timeout} s (last state {state})")
    return state, output.read_text() if output.exists() else ""


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/bash\nset -euo pipefail\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def ranks_reported(output: str) -> set[tuple[int, int]]:
    return {(int(rank), int(size)) for rank, size in re.findall(r"hello from rank (\d+) of (\d+)", output)}


# --- the cluster ------------------------------------------------------------------------------


@pytest.mark.slurm
def test_cluster_starts_with_node_idle(slurm_cluster: SlurmCluster) -> None:
    assert slurm_cluster.startup_seconds is not None and slurm_cluster.startup_seconds < 30
    assert SYSTEM_CONF.read_text().startswith(f"{CONF_MARKER}{slurm_cluster.state_dir}")
    # Found without SLURM_CONF, as inside a Snakemake job step.
    shown = subprocess.run(
        ["sinfo", "-h", "-o", "%P %a %T %N"], capture_output=True, text=True, env=job_env(), check=True
    )
    assert shown.stdout.split() == [f"{PARTITION}*", "up", "idle", "localhost"]
    status = slurm_cluster.status()
    assert all(status["pids"][daemon] for daemon in ("munged", "slurmctld", "slurmd"))  # type: ignore[index]


@pytest.mark.slurm
def test_second_cluster_refuses_to_take_over(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match=f"another local Slurm cluster runs from {slurm_cluster.state_dir}"):
        SlurmCluster(tmp_path / "second").start()
    assert SYSTEM_CONF.read_text().startswith(f"{CONF_MARKER}{slurm_cluster.state_dir}")


@pytest.mark.slurm
def test_sbatch_wait_runs_plain_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    script = write_script(tmp_path / "plain.sh", 'echo "job $SLURM_JOB_ID on $SLURMD_NODENAME"\n')
    result = subprocess.run(
        [
            "sbatch",
            "--wait",
            "--parsable",
            "-o",
            str(tmp_path / "plain.out"),
            "-D",
            str(tmp_path),
            str(script),
        ],
        capture_output=True,
        text=True,
        env=job_env(),
        timeout=JOB_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert (tmp_path / "plain.out").read_text().strip() == f"job {job_id} on localhost"


@pytest.mark.slurm
def test_srun_pmix_runs_two_mpi_ranks(slurm_cluster: SlurmCluster, tmp_path: Path, mpi_hello: Path) -> None:
    script = write_script(
        tmp_path / "mpi.sh",
        f"{STRIP_SLURM_ENV}\nsrun -n 2 --mpi=pmix {sys.executable} {mpi_hello}\n",
    )
    state, output = run_batch(script, tmp_path, "--ntasks=2")
    assert state == "COMPLETED", output
    assert ranks_reported(output) == {(0, 2), (1, 2)}


@pytest.mark.slurm
@pytest.mark.parametrize("launcher", ["auto", "mpirun"])
def test_launcher_command_starts_ranks_inside_allocation(
    slurm_cluster: SlurmCluster, tmp_path: Path, mpi_hello: Path, launcher: str
) -> None:
    """What solve.py will do: launcher_command() inside the job, auto (srun) or forced mpirun."""
    launch = tmp_path / "launch.py"
    launch.write_text(
        textwrap.dedent(
            f"""\
            import os, subprocess, sys
            from pipeline.solve.cluster import launcher_command
            command = launcher_command(2, os.environ) + [sys.executable, {str(mpi_hello)!r}]
            print("launcher:", " ".join(command), flush=True)
            sys.exit(subprocess.call(command))
            """
        )
    )
    script = write_script(
        tmp_path / "launch.sh",
        f"{STRIP_SLURM_ENV}\nexport {LAUNCHER_ENV}={launcher}\n{sys.executable} {launch}\n",
    )
    state, output = run_batch(script, tmp_path, "--ntasks=2")
    assert state == "COMPLETED", output
    expected = "launcher: srun -n 2 --mpi=pmix" if launcher == "auto" else "launcher: mpirun -n 2"
    assert expected in output
    assert ranks_reported(output) == {(0, 2), (1, 2)}


# --- Snakemake through the slurm profile ------------------------------------------------------

MINIMAL_SNAKEFILE = """\
onstart:
    from pipeline.solve.cluster import check_workflow_jobs

    check_workflow_jobs(workflow)


rule all:
    input:
        "plain.txt",
        "solve.txt",


rule plain:
    output:
        "plain.txt",
    log:
        "logs/plain.log",
    shell:
        "echo job=$SLURM_JOB_ID node=$SLURMD_NODENAME > {output} 2> {log}"


# Named like the workflow's MPI rule, so the profile's set-resources for `solve` (mpi: srun)
# apply; like workflow/rules/solve.smk it asks for one task per rank with cpus_per_task CPUs
# each, and launches the ranks itself, as `litpath solve` does.
rule solve:
    output:
        "solve.txt",
    log:
        "logs/solve.log",
    threads: RANKS
    resources:
        mpi="mpirun",
        tasks=RANKS,
        cpus_per_task=1,
    shell:
        "python launch.py {resources.tasks} > {output} 2> {log}"
"""

LAUNCH_SCRIPT = """\
import os, subprocess, sys
from pipeline.solve.cluster import launcher_command

command = launcher_command(int(sys.argv[1]), os.environ) + [sys.executable, "hello.py"]
print("launcher:", " ".join(command), flush=True)
sys.exit(subprocess.call(command))
"""


def _snakemake(workdir: Path, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--profile",
        str(SLURM_PROFILE),
        # Fast polling for a test (the profile's 20 s suits real clusters); MinJobAge 300 >= 3 x 1.
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--latency-wait",
        "5",
        *extra,
    ]
    process = subprocess.Popen(
        command, cwd=workdir, env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # Snakemake ignores SIGTERM while jobs run; SIGINT cancels them
        out, _ = process.communicate(timeout=60)
        pytest.fail(f"snakemake did not finish within {timeout} s:\n{out[-4000:]}")
    return subprocess.CompletedProcess(command, process.returncode, out, "")


def _minimal_workflow(workdir: Path, ranks: int) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "Snakefile").write_text(MINIMAL_SNAKEFILE.replace("RANKS", str(ranks)))
    (workdir / "launch.py").write_text(LAUNCH_SCRIPT)
    (workdir / "hello.py").write_text(MPI_HELLO)


@pytest.mark.slurm
@pytest.mark.workflow
@pytest.mark.slow
def test_snakemake_profile_runs_plain_and_mpi_rules(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    _minimal_workflow(tmp_path, ranks=2)
    result = _snakemake(tmp_path)
    assert result.returncode == 0, result.stdout[-6000:]
    plain = (tmp_path / "plain.txt").read_text()
    assert re.fullmatch(r"job=\d+ node=localhost\n", plain), plain
    solve = (tmp_path / "solve.txt").read_text()
    assert "launcher: srun -n 2 --mpi=pmix" in solve
    assert ranks_reported(solve) == {(0, 2), (1, 2)}
    # One Slurm log per job, kept after success.
    logs = sorted(
        p.relative_to(tmp_path).parts[:4] for p in (tmp_path / "results" / "logs" / "slurm").rglob("*.log")
    )
    assert [parts[3] for parts in logs] == ["rule_plain", "rule_solve"]


@pytest.mark.slurm
@pytest.mark.workflow
def test_snakemake_profile_refuses_oversized_solve_before_submitting(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    ranks = (os.cpu_count() or 1) + 1
    _minimal_workflow(tmp_path, ranks=ranks)
    before = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%i"], capture_output=True, text=True, env=job_env(), check=True
    ).stdout.split()
    result = _snakemake(tmp_path, timeout=120)
    assert result.returncode != 0
    assert f"rule solve: the job needs {ranks} tasks x 1 CPUs" in result.stdout
    assert "Nothing was submitted" in result.stdout
    after = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%i"], capture_output=True, text=True, env=job_env(), check=True
    ).stdout.split()
    assert after == before
    assert not (tmp_path / "plain.txt").exists()


def test_start_without_slurm_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the daemons, start() names them and the install command (nothing is started)."""
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    with pytest.raises(
        SlurmError, match=r"munged, slurmctld, slurmd not found.*apt-get install -y slurm-wlm munge"
    ):
        SlurmCluster(tmp_path / "state").start()
