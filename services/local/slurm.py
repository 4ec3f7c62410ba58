"""A real single-node Slurm cluster on loopback for runs and tests, and the Slurm helpers the
workflow uses on any cluster (which MPI launcher to use, checks before submitting).

The local cluster is Debian's ``slurm-wlm`` and ``munge`` started by hand (no systemd, no
cgroups, no accounting database): ``munged`` + ``slurmctld`` + ``slurmd`` with their state,
logs and PID files in one state directory, one node ``localhost`` with this machine's real CPUs
and memory, one default partition ``debug``. It installs nothing; it says how when the daemons
are missing. It must run as root (slurmd launches jobs as their owner).

Why ``/etc/slurm/slurm.conf``: Slurm's clients (``srun``, ``sbatch``, ``squeue``) find the cluster
through ``SLURM_CONF`` or that compiled-in path, and Snakemake's Slurm job step strips every
``SLURM_*`` variable before it runs the rule, so an ``srun`` inside a job would not find a
``SLURM_CONF``-only cluster. ``start()`` therefore writes the configuration to
``/etc/slurm/slurm.conf`` (first moving any file already there into the state directory) and
``stop()`` puts the previous file back. One such cluster runs on a machine at a time.

Command line::

    python -m services.local.slurm start [--state-dir D]     # prints the state dir and start-up time
    python -m services.local.slurm status [--state-dir D]
    python -m services.local.slurm stop [--state-dir D]
    python -m services.local.slurm check-cluster [--partition P] [--account A] --tasks N [--cpus-per-task C]
    python -m services.local.slurm launcher --ranks N        # the MPI launcher solve would use here

Default state directory: ``<repo>/.local-servers/slurm`` (``LITPATH_SLURM_STATE`` overrides).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import click
import psutil

LOCAL_DIR = Path(__file__).resolve().parent
REPO_ROOT = LOCAL_DIR.parents[1]
DEFAULT_STATE_DIR = REPO_ROOT / ".local-servers" / "slurm"

# Where Slurm's clients look when SLURM_CONF is unset (Debian's compiled-in default).
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
# First line of every slurm.conf we write; a file without it is someone else's and is kept safe.
CONF_MARKER = "# litpath local Slurm cluster; state_dir="

NODE_NAME = "localhost"
PARTITION = "debug"
CLUSTER_NAME = "litpath"
# Finished jobs stay visible to squeue this long. Snakemake's Slurm plugin polls with squeue only
# while MinJobAge >= 3 x its first status-check delay (else it falls back to sacct, which fails
# without slurmdbd, and then waits forever); its polling interval grows to at most 180 s.
MIN_JOB_AGE_S = 300

DAEMONS = ("munged", "slurmctld", "slurmd")
INSTALL_HINT = (
    "install them with: apt-get install -y slurm-wlm munge   "
    "(Debian/Ubuntu; the daemons are slurmctld, slurmd and munged)"
)
LOG_TAIL_LINES = 20

# Which MPI launcher the solver uses: auto (srun inside a Slurm allocation, else mpirun), srun, mpirun.
LAUNCHER_ENV = "LITPATH_MPI_LAUNCHER"
# srun's --mpi plugin; Debian's Open MPI has no PMI2, so pmix. Empty: the site's MpiDefault.
SRUN_MPI_ENV = "LITPATH_SRUN_MPI"
DEFAULT_SRUN_MPI = "pmix"
PARTITION_ENV = "LITPATH_SLURM_PARTITION"
ACCOUNT_ENV = "LITPATH_SLURM_ACCOUNT"


class SlurmError(RuntimeError):
    """The local cluster could not be started or stopped, or a Slurm command failed; says why."""


class ClusterCheckError(SlurmError):
    """The cluster cannot run the requested job (unreachable, partition, account, size)."""


# ---------------------------------------------------------------------------------------------
# Small helpers


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"    (no {path.name})"
    return "\n".join("    " + line for line in text.splitlines()[-lines:]) or f"    ({path.name} is empty)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def client_env(conf: Path | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for Slurm client commands: no inherited ``SLURM_*``/``SBATCH_*``/``SRUN_*``
    job settings (they would leak an outer job's geometry), ``SLURM_CONF`` set when given."""
    env = {
        key: value
        for key, value in (os.environ if base is None else base).items()
        if not key.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))
    }
    if conf is not None:
        env["SLURM_CONF"] = str(conf)
    return env


def missing_daemons() -> list[str]:
    """The Slurm/munge daemons not found on PATH or in /usr/sbin."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [name for name in DAEMONS if shutil.which(name, path=search) is None]


def _daemon_path(name: str) -> str:
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = shutil.which(name, path=search)
    if found is None:
        raise SlurmError(f"'{name}' is not installed; {INSTALL_HINT}")
    return found


def node_hardware() -> tuple[int, int]:
    """(CPUs, RealMemory in MB) of this machine as slurmd itself measures them (``slurmd -C``)."""
    result = subprocess.run(
        [_daemon_path("slurmd"), "-C"], capture_output=True, text=True, check=False, env=client_env()
    )
    fields = dict(re.findall(r"(\w+)=(\S+)", result.stdout))
    try:
        return int(fields["CPUs"]), int(fields["RealMemory"])
    except (KeyError, ValueError):
        # slurmd -C failed: fall back to what the OS reports.
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return cpus, int(psutil.virtual_memory().total // (1024 * 1024))


# ---------------------------------------------------------------------------------------------
# The local cluster


class SlurmCluster:
    """munged + slurmctld + slurmd on 127.0.0.1, state in ``state_dir``; see the module docstring.

    ``start()`` returns once ``sinfo`` shows the node idle; ``stop()`` cancels remaining jobs,
    stops the daemons by PID and restores ``/etc/slurm/slurm.conf``. Also a context manager.
    """

    def __init__(self, state_dir: str | os.PathLike[str], system_conf: Path = SYSTEM_CONF) -> None:
        self.state_dir = Path(state_dir).resolve()
        self.system_conf = Path(system_conf)
        self.startup_seconds: float | None = None
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    # -- paths -----------------------------------------------------------------------------
    @property
    def conf_path(self) -> Path:
        """Our copy of slurm.conf (the installed one at ``system_conf`` is identical)."""
        return self.state_dir / "slurm.conf"

    @property
    def backup_path(self) -> Path:
        """Where a pre-existing ``/etc/slurm/slurm.conf`` is kept while we run."""
        return self.state_dir / "slurm.conf.before-litpath"

    @property
    def state_path(self) -> Path:
        return self.state_dir / "cluster.json"

    @property
    def munge_socket(self) -> Path:
        return self.state_dir / "munge" / "munge.socket"

    def log_path(self, daemon: str) -> Path:
        return self.state_dir / f"{daemon}.log"

    def pid_path(self, daemon: str) -> Path:
        return self.state_dir / f"{daemon}.pid"

    def env(self) -> dict[str, str]:
        """Environment for Slurm clients talking to this cluster (explicit SLURM_CONF as well)."""
        return client_env(self.conf_path)

    # -- state -----------------------------------------------------------------------------
    def pid(self, daemon: str) -> int | None:
        """PID of ``daemon`` if it runs from this state dir (stale PID files and reuse ignored)."""
        process = self._processes.get(daemon)
        if process is not None and process.poll() is None:
            return process.pid
        try:
            pid = int(self.pid_path(daemon).read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if self._is_our_daemon(daemon, pid) else None

    def _is_our_daemon(self, daemon: str, pid: int) -> bool:
        try:
            process = psutil.Process(pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                return False
            command = process.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False
        # Debian's slurmd/slurmctld are symlinks to slurmd-wlm/slurmctld-wlm.
        return (
            bool(command)
            and Path(command[0]).name.startswith(daemon)
            and str(self.state_dir) in " ".join(command)
        )

    def running(self) -> bool:
        return self.pid("slurmctld") is not None

    def status(self) -> dict[str, object]:
        """Daemons' PIDs, the conf in use, and sinfo's view of the node (when reachable)."""
        info: dict[str, object] = {
            "state_dir": str(self.state_dir),
            "conf": str(self.system_conf),
            "pids": {daemon: self.pid(daemon) for daemon in DAEMONS},
        }
        if self.running():
            result = self._run_client(["sinfo", "-h", "-N", "-o", "%N %P %T %c %m"], check=False)
            info["sinfo"] = result.stdout.strip() or result.stderr.strip()
        return info

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> SlurmCluster:
        """Write the config, start the three daemons, wait until the node is idle."""
        missing = missing_daemons()
        if missing:
            raise SlurmError(f"Slurm is not installed here ({', '.join(missing)} not found); {INSTALL_HINT}")
        if os.geteuid() != 0:
            raise SlurmError(
                "the local Slurm cluster must be started as root (slurmd launches jobs as their owner, "
                f"and the config goes to {self.system_conf}); run it with sudo"
            )
        if self.running():
            raise SlurmError(f"a local Slurm cluster already runs from {self.state_dir}")
        started = time.monotonic()
        self._claim_system_conf()
        try:
            self._prepare_state_dir()
            self._start_munged(started + timeout)
            self._spawn("slurmctld", [_daemon_path("slurmctld"), "-D", "-i", "-f", str(self.conf_path)])
            self._spawn("slurmd", [_daemon_path("slurmd"), "-D", "-N", NODE_NAME, "-f", str(self.conf_path)])
            self._wait_node_idle(started + timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _claim_system_conf(self) -> None:
        """Move an existing foreign slurm.conf aside; refuse if another litpath cluster runs."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if not self.system_conf.exists():
            return
        owner = _marked_state_dir(self.system_conf)
        if owner is None:  # someone else's configuration: keep it to restore on stop
            if not self.backup_path.exists():
                shutil.copy2(self.system_conf, self.backup_path)
            return
        if owner == self.state_dir:
            return
        other = SlurmCluster(owner, self.system_conf)
        if other.running():
            raise SlurmError(
                f"another local Slurm cluster runs from {owner} and owns {self.system_conf}; stop it first: "
                f"python -m services.local.slurm stop --state-dir {shlex.quote(str(owner))}"
            )
        # A stale file from a cluster that died without stop(): hand its backup over to us.
        if other.backup_path.exists() and not self.backup_path.exists():
            shutil.copy2(other.backup_path, self.backup_path)

    def _prepare_state_dir(self) -> None:
        cpus, memory_mb = node_hardware()
        for sub in ("munge", "ctld", "spool"):
            (self.state_dir / sub).mkdir(parents=True, exist_ok=True)
        # munged refuses group/world-accessible key and socket directories.
        os.chmod(self.state_dir / "munge", 0o700)
        key = self.state_dir / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        ctld_port, slurmd_port = _free_port(), _free_port()
        while slurmd_port == ctld_port:
            slurmd_port = _free_port()
        self.conf_path.write_text(self._render_conf(cpus, memory_mb, ctld_port, slurmd_port))
        self.system_conf.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.conf_path, self.system_conf)
        self.state_path.write_text(
            json.dumps(
                {
                    "conf": str(self.system_conf),
                    "cpus": cpus,
                    "memory_mb": memory_mb,
                    "slurmctld_port": ctld_port,
                    "slurmd_port": slurmd_port,
                },
                indent=2,
            )
            + "\n"
        )

    def _render_conf(self, cpus: int, memory_mb: int, ctld_port: int, slurmd_port: int) -> str:
        state = self.state_dir
        lines = [
            f"{CONF_MARKER}{state}",
            "# Written by services/local/slurm.py; the previous file (if any) is restored on stop.",
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost={NODE_NAME}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={state / 'ctld'}",
            f"SlurmdSpoolDir={state / 'spool'}",
            f"SlurmctldPidFile={self.pid_path('slurmctld')}",
            f"SlurmdPidFile={self.pid_path('slurmd')}",
            f"SlurmctldLogFile={self.log_path('slurmctld')}",
            f"SlurmdLogFile={self.log_path('slurmd')}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # Debian's Open MPI 4.1 speaks PMIx, not PMI2.
            "MpiDefault=pmix",
            # No cgroups and no systemd here: track job processes through /proc, bind nothing.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SwitchType=switch/none",
            "SelectType=select/cons_tres",
            # CPUs (not cores) and memory are what jobs consume, so --mem and -c are enforced.
            "SelectTypeParameters=CR_CPU_Memory",
            "SchedulerType=sched/backfill",
            # No slurmdbd: no accounting, sacct does not work, squeue is the status command.
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            f"MinJobAge={MIN_JOB_AGE_S}",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=5",
            "Waittime=0",
            "SlurmdParameters=config_overrides",
            f"NodeName={NODE_NAME} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={NODE_NAME} Default=YES MaxTime=INFINITE State=UP "
            f"DefMemPerCPU={max(100, memory_mb // max(cpus, 1) // 4)}",
        ]
        return "\n".join(lines) + "\n"

    def _spawn(self, daemon: str, command: list[str]) -> None:
        out_path = self.state_dir / f"{daemon}.out"
        with open(out_path, "ab") as out:
            out.write(f"=== {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {shlex.join(command)}\n".encode())
            out.flush()
            process = subprocess.Popen(
                command,
                cwd=self.state_dir,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives the CLI that started it; Ctrl-C does not reach it
            )
        self._processes[daemon] = process
        self.pid_path(daemon).write_text(f"{process.pid}\n")

    def _start_munged(self, deadline: float) -> None:
        munge_dir = self.state_dir / "munge"
        self._spawn(
            "munged",
            [
                _daemon_path("munged"),
                "--foreground",
                "--force",  # as root, with the key and socket in our own directory
                f"--key-file={munge_dir / 'munge.key'}",
                f"--socket={self.munge_socket}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--log-file={self.log_path('munged')}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
        )
        while time.monotonic() < deadline:
            self._check_alive("munged")
            if self.munge_socket.exists():
                return
            time.sleep(0.05)
        raise SlurmError(
            f"munged did not create {self.munge_socket}; last lines of its log:\n"
            f"{_tail(self.log_path('munged'))}"
        )

    def _check_alive(self, daemon: str) -> None:
        process = self._processes.get(daemon)
        if process is not None and process.poll() is not None:
            raise SlurmError(
                f"{daemon} exited with status {process.returncode} while starting; last lines of "
                f"{self.log_path(daemon)}:\n{_tail(self.log_path(daemon))}\n"
                f"and of {daemon}.out:\n{_tail(self.state_dir / f'{daemon}.out')}"
            )

    def _wait_node_idle(self, deadline: float) -> None:
        last = "no answer yet"
        while time.monotonic() < deadline:
            for daemon in DAEMONS:
                self._check_alive(daemon)
            result = self._run_client(["sinfo", "-h", "-N", "-o", "%N %T"], check=False)
            last = (result.stdout or result.stderr).strip() or last
            states = dict(line.split(None, 1) for line in result.stdout.splitlines() if " " in line)
            state = states.get(NODE_NAME, "")
            if state == "idle":
                return
            if state.startswith(("drain", "down", "fail")) and "*" not in state:
                reason = self._run_client(["sinfo", "-h", "-R", "-o", "%n: %E"], check=False).stdout.strip()
                raise SlurmError(
                    f"node {NODE_NAME} is {state} ({reason}); slurmd log:\n{_tail(self.log_path('slurmd'))}"
                )
            time.sleep(0.1)
        raise SlurmError(
            f"node {NODE_NAME} did not become idle (sinfo: {last}); slurmctld log:\n"
            f"{_tail(self.log_path('slurmctld'))}\nslurmd log:\n{_tail(self.log_path('slurmd'))}"
        )

    def _run_client(
        self, command: list[str], check: bool = True, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            command, capture_output=True, text=True, env=self.env(), timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise SlurmError(
                f"{shlex.join(command)} failed (exit {result.returncode}): {result.stderr.strip()}"
            )
        return result

    def stop(self, grace: float = 15.0) -> bool:
        """Cancel jobs, stop the daemons by PID, restore ``/etc/slurm/slurm.conf``.

        Returns True if any daemon was running. Safe to call twice.
        """
        was_running = any(self.pid(daemon) is not None for daemon in DAEMONS)
        if self.running():
            self._cancel_jobs(grace)
        # slurmd first (it hands back its jobs' steps), munged last (the others use it to talk).
        for daemon in ("slurmd", "slurmctld", "munged"):
            self._terminate(daemon, grace)
        self._restore_system_conf()
        return was_running

    def _cancel_jobs(self, grace: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            jobs = self._run_client(["squeue", "-h", "-o", "%i", "-t", "PD,R,CG,S"], check=False, timeout=10)
            ids = jobs.stdout.split()
            if not ids:
                return
            self._run_client(["scancel", *ids], check=False, timeout=10)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                left = self._run_client(
                    ["squeue", "-h", "-o", "%i", "-t", "PD,R,CG,S"], check=False, timeout=10
                )
                if not left.stdout.split():
                    return
                time.sleep(0.2)

    def _terminate(self, daemon: str, grace: float) -> None:
        pid = self.pid(daemon)
        if pid is not None:
            try:
                process = psutil.Process(pid)
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=grace)
                except psutil.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            except psutil.NoSuchProcess:
                pass
        child = self._processes.pop(daemon, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=1)  # reap, so no zombie keeps the PID
        self.pid_path(daemon).unlink(missing_ok=True)

    def _restore_system_conf(self) -> None:
        if _marked_state_dir(self.system_conf) == self.state_dir:
            if self.backup_path.exists():
                shutil.copy2(self.backup_path, self.system_conf)
                self.backup_path.unlink()
            else:
                self.system_conf.unlink()
        self.state_path.unlink(missing_ok=True)

    def __enter__(self) -> SlurmCluster:
        if not self.running():
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SlurmCluster(state_dir={str(self.state_dir)!r})"


def _marked_state_dir(conf: Path) -> Path | None:
    """The state dir named in a slurm.conf we wrote, or None for anyone else's file."""
    try:
        with open(conf) as handle:
            first = handle.readline().strip()
    except OSError:
        return None
    return Path(first[len(CONF_MARKER) :]) if first.startswith(CONF_MARKER) else None


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
    try:
        result = subprocess.run(
            list(command), capture_output=True, text=True, env=dict(env), timeout=timeout, check=False
        )
    except FileNotFoundError as error:
        raise ClusterCheckError(
            f"Slurm's '{command[0]}' is not on PATH: this machine is not a Slurm submit host ({error})"
        ) from error
    except subprocess.TimeoutExpired as error:
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
) -> None:
    """Raise ClusterCheckError, before anything is submitted, when the cluster cannot run a job
    of ``tasks`` x ``cpus_per_task`` CPUs in ``partition`` (None: the default) under ``account``.

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


def check_workflow_jobs(workflow: object) -> None:
    """Run ``check_cluster`` for every job a Snakemake run is about to submit to Slurm.

    Call it from the Snakefile's ``onstart:`` (which runs after the DAG is built, before the
    first submission, and not in dry runs or inside jobs)::

        onstart:
            from services.local.slurm import check_workflow_jobs
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
# Command line


def _state_dir_option(function):  # type: ignore[no-untyped-def]
    return click.option(
        "--state-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=lambda: os.environ.get("LITPATH_SLURM_STATE", str(DEFAULT_STATE_DIR)),
        show_default="<repo>/.local-servers/slurm or $LITPATH_SLURM_STATE",
        help="Where the cluster keeps its config, logs and PID files.",
    )(function)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """A local single-node Slurm cluster, and checks and launcher choice for any Slurm cluster."""


@cli.command()
@_state_dir_option
@click.option(
    "--timeout", default=60.0, show_default=True, help="Seconds to wait for the node to become idle."
)
def start(state_dir: Path, timeout: float) -> None:
    """Start munged, slurmctld and slurmd; return when the node is idle."""
    cluster = SlurmCluster(state_dir)
    try:
        cluster.start(timeout=timeout)
    except SlurmError as error:
        raise click.ClickException(str(error)) from error
    click.echo(
        f"local Slurm cluster up in {cluster.startup_seconds:.2f} s: partition '{PARTITION}', "
        f"config {cluster.system_conf}, state {cluster.state_dir}"
    )


@cli.command()
@_state_dir_option
def stop(state_dir: Path) -> None:
    """Cancel jobs, stop the daemons, restore /etc/slurm/slurm.conf."""
    cluster = SlurmCluster(state_dir)
    click.echo(
        "stopped" if cluster.stop() else f"no local Slurm cluster was running from {cluster.state_dir}"
    )


@cli.command()
@_state_dir_option
def status(state_dir: Path) -> None:
    """Print the daemons' PIDs and the node's state as JSON."""
    click.echo(json.dumps(SlurmCluster(state_dir).status(), indent=2))


@cli.command("check-cluster")
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
        check_cluster(partition, account, tasks, cpus_per_task=cpus_per_task)
    except ClusterCheckError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"ok: {tasks} task(s) x {cpus_per_task} CPU(s) fit partition {partition or '(default)'}")


@cli.command()
@click.option("--ranks", type=click.IntRange(min=1), required=True)
@click.option("--threads-per-rank", type=click.IntRange(min=1), default=1, show_default=True)
def launcher(ranks: int, threads_per_rank: int) -> None:
    """Print the MPI launcher command the solver would use in this environment."""
    try:
        click.echo(shlex.join(launcher_command(ranks, os.environ, threads_per_rank)))
    except ValueError as error:
        raise click.ClickException(str(error)) from error


if __name__ == "__main__":
    sys.exit(cli())
