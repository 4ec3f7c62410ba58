"""A real single-node Slurm cluster on loopback, for tests and for trying the Slurm profile.

What litpath does on any Slurm cluster (the MPI launcher, the checks before submitting) is
production code and lives in :mod:`pipeline.solve.cluster`.

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

Default state directory: ``<repo>/.local-servers/slurm`` (``LITPATH_SLURM_STATE`` overrides).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import click
import psutil

from pipeline.runtime.process import PidFile, free_port, log_tail, terminate
from pipeline.solve.cluster import SYSTEM_CONF

LOCAL_DIR = Path(__file__).resolve().parent
REPO_ROOT = LOCAL_DIR.parents[1]
DEFAULT_STATE_DIR = REPO_ROOT / ".local-servers" / "slurm"

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


class SlurmError(RuntimeError):
    """The local cluster could not be started or stopped, or a Slurm command failed; says why."""


# ---------------------------------------------------------------------------------------------
# Small helpers


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

    def pid_file(self, daemon: str) -> PidFile:
        """``daemon``'s PID file; a PID counts only while it runs that daemon from this state dir."""

        def owns(command: list[str]) -> bool:
            # Debian's slurmd/slurmctld are symlinks to slurmd-wlm/slurmctld-wlm.
            return (
                bool(command)
                and Path(command[0]).name.startswith(daemon)
                and str(self.state_dir) in " ".join(command)
            )

        return PidFile(self.pid_path(daemon), owns)

    def env(self) -> dict[str, str]:
        """Environment for Slurm clients talking to this cluster (explicit SLURM_CONF as well)."""
        return client_env(self.conf_path)

    # -- state -----------------------------------------------------------------------------
    def pid(self, daemon: str) -> int | None:
        """PID of ``daemon`` if it runs from this state dir (stale PID files and reuse ignored)."""
        return self.pid_file(daemon).live_pid(self._processes.get(daemon))

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
        ctld_port, slurmd_port = free_port(), free_port()
        while slurmd_port == ctld_port:
            slurmd_port = free_port()
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
        self.pid_file(daemon).write(process.pid)

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
            f"{log_tail(self.log_path('munged'))}"
        )

    def _check_alive(self, daemon: str) -> None:
        process = self._processes.get(daemon)
        if process is not None and process.poll() is not None:
            raise SlurmError(
                f"{daemon} exited with status {process.returncode} while starting; last lines of "
                f"{self.log_path(daemon)}:\n{log_tail(self.log_path(daemon))}\n"
                f"and of {daemon}.out:\n{log_tail(self.state_dir / f'{daemon}.out')}"
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
                    f"node {NODE_NAME} is {state} ({reason}); slurmd log:\n{log_tail(self.log_path('slurmd'))}"
                )
            time.sleep(0.1)
        raise SlurmError(
            f"node {NODE_NAME} did not become idle (sinfo: {last}); slurmctld log:\n"
            f"{log_tail(self.log_path('slurmctld'))}\nslurmd log:\n{log_tail(self.log_path('slurmd'))}"
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
        terminate(self.pid(daemon), grace, child=self._processes.pop(daemon, None))
        self.pid_file(daemon).remove()

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
    """A local single-node Slurm cluster for tests (for any cluster: litpath check-cluster)."""


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


if __name__ == "__main__":
    sys.exit(cli())
