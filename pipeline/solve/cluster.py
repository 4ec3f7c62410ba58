"""How litpath runs on a Slurm cluster: which MPI launcher starts the solver's ranks, and the
checks that refuse, before anything is submitted, a job the cluster cannot run.

- :func:`launcher_command`: ``srun`` inside a Slurm allocation, else ``mpirun`` with the
  binding flags Open MPI needs (``LITPATH_MPI_LAUNCHER`` forces one);
- :func:`check_cluster`: partition, account and size of one job against the cluster's own
  answers (``sinfo``, ``scontrol``, ``sacctmgr``);
- :func:`check_workflow_jobs`: :func:`check_cluster` for every job a Snakemake run is about to
  submit (the Snakefile's ``onstart``).

``litpath check-cluster`` and ``litpath mpi-launcher`` give both to a shell. The single-node
Slurm cluster the tests run on is test infrastructure and lives in ``services/local/slurm.py``.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import psutil

from pipeline.runtime.errors import LitpathError
from pipeline.runtime.process import CommandFailed, run_command

# Where Slurm's clients look for the cluster's configuration when SLURM_CONF is unset (Debian's
# compiled-in default).
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")

# Which MPI launcher the solver uses: auto (srun inside a Slurm allocation, else mpirun), srun, mpirun.
LAUNCHER_ENV = "LITPATH_MPI_LAUNCHER"
# srun's --mpi plugin; Debian's Open MPI has no PMI2, so pmix. Empty: the site's MpiDefault.
SRUN_MPI_ENV = "LITPATH_SRUN_MPI"
DEFAULT_SRUN_MPI = "pmix"
PARTITION_ENV = "LITPATH_SLURM_PARTITION"
ACCOUNT_ENV = "LITPATH_SLURM_ACCOUNT"


class ClusterCheckError(LitpathError, RuntimeError):
    """The cluster cannot run the requested job (unreachable, partition, account, size)."""


@dataclass(frozen=True)
class ClusterFit:
    """A job that :func:`check_cluster` found the cluster can run: where, and with what room."""

    partition: str  # the one given, or the cluster's default
    tasks: int
    cpus_per_task: int
    task_slots: int  # how many such tasks the partition could run at once (>= tasks)


# ---------------------------------------------------------------------------------------------
# MPI launcher for the solver


def in_slurm_allocation(env: Mapping[str, str]) -> bool:
    """True inside a Slurm job (sbatch/salloc/srun). Snakemake's job step keeps SLURM_JOB_ID."""
    return bool(env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID"))


def launcher_command(ranks: int, env: Mapping[str, str], threads_per_rank: int = 1) -> list[str]:
    """The command prefix that starts ``ranks`` MPI processes; append the program and its args.

    - ``srun -n R --mpi=pmix [-c T]`` inside a Slurm allocation (``SLURM_JOB_ID`` set): Slurm
      places the ranks on the allocated nodes; nothing else is needed.
    - otherwise ``mpirun -n R --oversubscribe`` (plus ``--allow-run-as-root`` as root); with
      T > 1 threads a rank, ``--map-by slot:PE=T`` (each rank bound to T cores; with
      ``--use-hwthread-cpus`` when only hardware threads make room) or, when the node has
      fewer than R x T CPUs, ``--bind-to none``. When
      ``mpirun`` is chosen inside an allocation it gets ``--mca ras ^slurm --mca plm ^slurm``, so
      Open MPI does not try to launch its daemons through Slurm (single node only then).

    ``LITPATH_MPI_LAUNCHER=srun|mpirun`` forces the choice (``auto`` or unset: as above);
    ``LITPATH_SRUN_MPI`` sets srun's ``--mpi`` plugin (default pmix; empty: the site's default).
    """
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    choice = (env.get(LAUNCHER_ENV) or "auto").strip().lower()
    if choice not in ("auto", "srun", "mpirun"):
        raise ValueError(f"{LAUNCHER_ENV}={env.get(LAUNCHER_ENV)!r}: expected srun, mpirun or auto")
    allocated = in_slurm_allocation(env)
    if choice == "auto":
        choice = "srun" if allocated else "mpirun"
    if choice == "srun":
        command = ["srun", "-n", str(ranks)]
        mpi_plugin = env.get(SRUN_MPI_ENV, DEFAULT_SRUN_MPI).strip()
        if mpi_plugin:
            command.append(f"--mpi={mpi_plugin}")
        if threads_per_rank > 1:
            command.append(f"--cpus-per-task={threads_per_rank}")
        return command
    command = ["mpirun", "-n", str(ranks), "--oversubscribe"]
    if threads_per_rank > 1:
        # Open MPI binds each rank to ONE core by default (for up to 2 ranks), so a rank's
        # OpenMP threads would share that core. Give each rank its T cores (PE counts
        # cores; hardware threads when they are needed to fit), or no binding when the
        # node has fewer than ranks x T CPUs.
        wanted = ranks * threads_per_rank
        if wanted <= (psutil.cpu_count(logical=False) or 1):
            command += ["--map-by", f"slot:PE={threads_per_rank}"]
        elif wanted <= (psutil.cpu_count(logical=True) or 1):
            command += ["--use-hwthread-cpus", "--map-by", f"slot:PE={threads_per_rank}"]
        else:
            command += ["--bind-to", "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    if allocated:
        command += ["--mca", "ras", "^slurm", "--mca", "plm", "^slurm"]
    return command


# ---------------------------------------------------------------------------------------------
# Checks before submitting


def _parse_records(text: str) -> list[dict[str, str]]:
    """``scontrol show ... -o`` output: one record a line of Key=Value pairs."""
    records = []
    for line in text.splitlines():
        if line.strip():
            records.append(dict(re.findall(r"(\w+)=(\S*)", line)))
    return records


def _slurm(command: Sequence[str], env: Mapping[str, str], what: str, timeout: float) -> str:
    if shutil.which(command[0], path=env.get("PATH")) is None:
        raise ClusterCheckError(
            f"Slurm's '{command[0]}' is not on PATH: this machine is not a Slurm submit host"
        )
    try:
        result = run_command(list(command), what=what, env=dict(env), timeout=timeout, check=False)
    except CommandFailed as error:
        raise ClusterCheckError(
            f"Slurm cluster unreachable: '{shlex.join(command)}' ({what}) did not answer "
            f"within {timeout:.0f} s"
        ) from error
    if result.returncode != 0:
        raise ClusterCheckError(
            f"Slurm cluster unreachable: '{shlex.join(command)}' ({what}) failed with exit {result.returncode}: "
            f"{result.stderr.strip() or result.stdout.strip()}. Is slurmctld running, and is slurm.conf found "
            f"(SLURM_CONF={env.get('SLURM_CONF', '(unset)')}, else {SYSTEM_CONF})?"
        )
    return result.stdout


def _names(value: str | None) -> set[str]:
    return {name for name in (value or "").split(",") if name and name != "(null)"}


def check_cluster(
    partition: str | None,
    account: str | None,
    tasks: int,
    *,
    cpus_per_task: int = 1,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> ClusterFit:
    """Raise ClusterCheckError, before anything is submitted, when the cluster cannot run a job
    of ``tasks`` x ``cpus_per_task`` CPUs in ``partition`` (None: the default) under ``account``;
    else say where it fits.

    Checks: the controller answers (``sinfo``); the partition exists and is up; the account is
    accepted (partition AllowAccounts/DenyAccounts, and the user's associations when the cluster
    enforces them); the job fits in the partition's CPUs, node count and per-node limits.
    """
    if tasks < 1 or cpus_per_task < 1:
        raise ClusterCheckError(f"tasks ({tasks}) and cpus per task ({cpus_per_task}) must be >= 1")
    env = dict(os.environ if env is None else env)
    _slurm(["sinfo", "-h", "-o", "%P"], env, "is the controller there", timeout)
    partitions = _parse_records(_slurm(["scontrol", "-o", "show", "partition"], env, "partitions", timeout))
    by_name = {record.get("PartitionName", ""): record for record in partitions}
    available = ", ".join(sorted(by_name)) or "(none)"
    if not partition:
        defaults = [name for name, record in by_name.items() if record.get("Default") == "YES"]
        if not defaults:
            raise ClusterCheckError(
                f"no Slurm partition given and the cluster has no default partition; available: {available}. "
                f"Set {PARTITION_ENV} or --default-resources slurm_partition=NAME"
            )
        partition = defaults[0]
    record = by_name.get(partition)
    if record is None:
        raise ClusterCheckError(f"Slurm partition '{partition}' does not exist; available: {available}")
    if record.get("State", "UP") != "UP":
        raise ClusterCheckError(f"Slurm partition '{partition}' is {record.get('State')}, not UP")

    _check_account(partition, record, account, env, timeout)

    # Nodes of the partition with their CPU counts (sinfo expands node ranges for us).
    nodes_text = _slurm(["sinfo", "-h", "-N", "-p", partition, "-o", "%N %c"], env, "nodes", timeout)
    node_cpus: dict[str, int] = {}
    for line in nodes_text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            node_cpus[parts[0]] = int(parts[1])
    per_node_cap = record.get("MaxCPUsPerNode", "UNLIMITED")
    cpus = sorted(
        (min(count, int(per_node_cap)) if per_node_cap.isdigit() else count for count in node_cpus.values()),
        reverse=True,
    )
    max_nodes = record.get("MaxNodes", "UNLIMITED")
    if max_nodes.isdigit():
        cpus = cpus[: int(max_nodes)]
    # A task's CPUs sit on one node: count whole tasks per node.
    task_slots = sum(count // cpus_per_task for count in cpus)
    needed = tasks * cpus_per_task
    if tasks > task_slots:
        raise ClusterCheckError(
            f"the job needs {tasks} tasks x {cpus_per_task} CPUs = {needed} CPUs, but partition '{partition}' "
            f"can give at most {task_slots} such tasks ({sum(cpus)} CPUs on {len(cpus)} usable node(s)). "
            "Ask for fewer tasks or CPUs per task (for solve: solver.ranks, solver.threads), or use a larger partition"
        )
    return ClusterFit(partition, tasks, cpus_per_task, task_slots)


def check_workflow_jobs(workflow: object) -> None:
    """Run ``check_cluster`` for every job a Snakemake run is about to submit to Slurm.

    Call it from the Snakefile's ``onstart:`` (which runs after the DAG is built, before the
    first submission, and not in dry runs or inside jobs)::

        onstart:
            from pipeline.solve.cluster import check_workflow_jobs
            check_workflow_jobs(workflow)

    It does nothing unless the executor is ``slurm``. Partition, account, tasks and CPUs per task
    are read from each job's resources as the profile and command line set them (``tasks``,
    ``cpus_per_task`` else ``threads``, ``slurm_partition``, ``slurm_account``).
    """
    plugin = getattr(workflow, "executor_plugin", None)
    if plugin is None or getattr(plugin, "name", None) != "slurm":
        return
    shapes: dict[tuple[str | None, str | None, int, int], list[str]] = {}
    for job in workflow.dag.needrun_jobs():  # type: ignore[attr-defined]
        if job.is_local:
            continue
        resources = job.resources
        tasks = int(resources.get("tasks") or 1)
        cpus_per_task = int(resources.get("cpus_per_task") or job.threads or 1)
        key = (
            resources.get("slurm_partition") or None,
            resources.get("slurm_account") or None,
            tasks,
            cpus_per_task,
        )
        shapes.setdefault(key, []).append(job.rule.name)
    for (partition, account, tasks, cpus_per_task), rules in sorted(
        shapes.items(), key=lambda item: -item[0][2] * item[0][3]
    ):
        try:
            check_cluster(partition, account, tasks, cpus_per_task=cpus_per_task)
        except ClusterCheckError as error:
            names = ", ".join(sorted(set(rules)))
            raise ClusterCheckError(f"rule {names}: {error}. Nothing was submitted") from None


def _check_account(
    partition: str, record: Mapping[str, str], account: str | None, env: Mapping[str, str], timeout: float
) -> None:
    allowed = _names(record.get("AllowAccounts"))
    denied = _names(record.get("DenyAccounts"))
    if allowed and "ALL" not in allowed:
        if not account:
            raise ClusterCheckError(
                f"Slurm partition '{partition}' only accepts accounts {', '.join(sorted(allowed))}, and no "
                f"account was given. Set {ACCOUNT_ENV} or --default-resources slurm_account=NAME"
            )
        if account not in allowed:
            raise ClusterCheckError(
                f"Slurm account '{account}' may not use partition '{partition}' "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
    if account and account in denied:
        raise ClusterCheckError(f"Slurm account '{account}' is denied on partition '{partition}'")

    config = dict(
        re.findall(
            r"^(\w+)\s*=\s*(.*?)\s*$",
            _slurm(["scontrol", "show", "config"], env, "config", timeout),
            re.MULTILINE,
        )
    )
    enforce = config.get("AccountingStorageEnforce", "none").lower()
    if config.get("AccountingStorageType", "accounting_storage/none") == "accounting_storage/none" or not any(
        word in enforce for word in ("associations", "limits", "qos", "safe")
    ):
        return  # no association enforcement: Slurm takes any account string (or none)
    user = env.get("USER") or getpass.getuser()
    listing = _slurm(
        ["sacctmgr", "-n", "-P", "show", "associations", f"user={user}", "format=account"],
        env,
        "accounts",
        timeout,
    )
    accounts = {line.strip() for line in listing.splitlines() if line.strip()}
    if account and account not in accounts:
        raise ClusterCheckError(
            f"Slurm account '{account}' is not one of user {user}'s accounts: {', '.join(sorted(accounts)) or '(none)'}"
        )
    if not account:
        default = _slurm(
            ["sacctmgr", "-n", "-P", "show", "user", user, "format=defaultaccount"],
            env,
            "default account",
            timeout,
        ).strip()
        if not default:
            raise ClusterCheckError(
                f"this cluster requires a Slurm account and user {user} has no default one; set {ACCOUNT_ENV} "
                f"or --default-resources slurm_account=NAME (yours: {', '.join(sorted(accounts)) or '(none)'})"
            )


# ---------------------------------------------------------------------------------------------
# Command line (registered in pipeline/cli/__init__.py)


@click.command("check-cluster")
@click.option(
    "--partition",
    envvar=PARTITION_ENV,
    default=None,
    help=f"Partition (default: ${PARTITION_ENV}, else the cluster's default).",
)
@click.option("--account", envvar=ACCOUNT_ENV, default=None, help=f"Account (default: ${ACCOUNT_ENV}).")
@click.option(
    "--tasks", type=click.IntRange(min=1), required=True, help="MPI tasks of the largest job (solver.ranks)."
)
@click.option(
    "--cpus-per-task",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="CPUs per task (solver.threads).",
)
def check_cluster_command(partition: str | None, account: str | None, tasks: int, cpus_per_task: int) -> None:
    """Fail with a clear message, before submitting, if the cluster cannot run the job."""
    try:
        fit = check_cluster(partition, account, tasks, cpus_per_task=cpus_per_task)
    except ClusterCheckError as error:
        raise click.ClickException(str(error)) from error
    click.echo(
        f"ok: {tasks} task(s) x {cpus_per_task} CPU(s) fit partition {fit.partition} "
        f"(room for {fit.task_slots} such tasks)"
    )


@click.command("mpi-launcher")
@click.option("--ranks", type=click.IntRange(min=1), required=True)
@click.option("--threads-per-rank", type=click.IntRange(min=1), default=1, show_default=True)
def mpi_launcher_command(ranks: int, threads_per_rank: int) -> None:
    """Print the MPI launcher command the solver would use in this environment."""
    try:
        click.echo(shlex.join(launcher_command(ranks, os.environ, threads_per_rank)))
    except ValueError as error:
        raise click.ClickException(str(error)) from error
