"""Processes that litpath starts and must find and stop again later: the local MongoDB-wire and
Neo4j servers and the Slurm daemons (``services/local``), and the solver's MPI launcher
(:mod:`pipeline.solve.apsp_fw`).

- :class:`PidFile`: a PID kept on disk, trusted only while that PID still runs the program
  its owner started (PIDs are reused, and a stale file must not make us signal a stranger);
- :func:`terminate`: SIGTERM, a grace period, then SIGKILL;
- :func:`terminate_session`: the same for a launcher started in a session of its own and
  everything else in that session (the MPI ranks);
- :func:`run_command`: the one way a short child process runs (a build step, a probe, a Slurm
  query, a benchmark): its output captured, its wait bounded, its failure a :class:`CommandFailed`
  naming the command, the exit status and the output's tail;
- :func:`log_tail`: the last lines of a log, for error messages;
- :func:`free_port`: a loopback TCP port that nothing listens on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from pipeline.runtime.errors import LitpathError

LOOPBACK = "127.0.0.1"
# Seconds a SIGKILLed process may take to disappear before we give up on it.
KILL_WAIT_S = 10.0


class ProcessError(LitpathError, RuntimeError):
    """A process could not be stopped; the message names what survived."""


class CommandFailed(ProcessError):
    """A child process that could not be started, ran past its time, or failed (``check``)."""

    def __init__(self, message: str, returncode: int | None = None, output: str = "") -> None:
        super().__init__(message)
        self.returncode, self.output = returncode, output


def run_command(
    cmd: list[str], *, what: str, timeout: float | None = None, env: dict[str, str] | None = None,
    cwd: str | Path | None = None, check: bool = True, merge_stderr: bool = False, tail: int = 40,
) -> subprocess.CompletedProcess:
    """Run ``cmd`` (an argument list, never a shell string) with its output captured as text
    (undecodable bytes replaced) and return it. ``what`` says what it is for the messages.

    Raises :class:`CommandFailed` when the program is not found, when it runs past ``timeout``
    seconds (it is killed), and, with ``check``, when it exits non-zero: the message names the
    command, the exit status and the last ``tail`` lines of its output (stderr, or both streams
    with ``merge_stderr``). Without ``check`` the caller reads the status itself."""
    try:
        proc = subprocess.run(
            [str(c) for c in cmd], cwd=cwd, env=env, text=True, errors="replace", timeout=timeout, check=False,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise CommandFailed(f"{what}: {cmd[0]!r} not found ({exc.strerror})") from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandFailed(f"{what}: {' '.join(map(str, cmd))} did not finish within {timeout:.0f} s") from exc
    if check and proc.returncode != 0:
        output = proc.stdout if merge_stderr else (proc.stderr or proc.stdout)
        last = "\n".join(output.splitlines()[-tail:])
        raise CommandFailed(
            f"{what} failed (exit {proc.returncode}): {' '.join(map(str, cmd))}" + (f"\n{last}" if last else ""),
            proc.returncode, output,
        )  # fmt: skip
    return proc


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of ``path``, indented for an error message; says so when the
    file is missing or empty."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"    (no {path.name})"
    return "\n".join("    " + line for line in text.splitlines()[-lines:]) or f"    ({path.name} is empty)"


def runs_command(pid: int, owns: Callable[[list[str]], bool]) -> bool:
    """True when ``pid`` is alive (not a zombie) and ``owns`` accepts its command line."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return owns(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


@dataclass(frozen=True)
class PidFile:
    """The PID of a background process, at ``path``; ``owns`` tells its command line apart
    from any other program's (e.g. "a java process running our jar")."""

    path: Path
    owns: Callable[[list[str]], bool]

    def write(self, pid: int) -> None:
        self.path.write_text(f"{pid}\n")

    def live_pid(self, child: subprocess.Popen | None = None) -> int | None:
        """The recorded PID while that process runs our program, else None (no file, a dead
        process, a zombie, a reused PID). ``child``, a process this object's owner started
        itself, is trusted first while it runs."""
        if child is not None and child.poll() is None:
            return child.pid
        try:
            pid = int(self.path.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if runs_command(pid, self.owns) else None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def terminate(
    pid: int | None, grace: float, *, child: subprocess.Popen | None = None, kill_wait: float = KILL_WAIT_S
) -> bool:
    """Stop process ``pid``: SIGTERM, then SIGKILL when it is still there after ``grace``
    seconds. Returns True when SIGKILL was needed. ``pid`` None, or already gone: nothing to
    stop. ``child``, the Popen that started it when this process did, is reaped, so that no
    zombie keeps the PID."""
    forced = False
    if pid is not None:
        try:
            process = psutil.Process(pid)
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except psutil.TimeoutExpired:
                forced = True
                process.kill()
                process.wait(timeout=kill_wait)
        except psutil.NoSuchProcess:
            pass
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=1)
    return forced


def session_processes(session_id: int) -> list[int]:
    """PIDs of the live processes in session ``session_id``.

    Open MPI's mpirun puts every rank in a process group of its own, so killing mpirun's
    group misses them, and a rank whose mpirun died is reparented and keeps computing (and
    writing checkpoints). They all stay in the session mpirun was started in, though.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp session ...
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == session_id:
            found.append(int(entry.name))
    return found


def terminate_session(proc: subprocess.Popen, grace: float = 10.0, kill_wait: float = KILL_WAIT_S) -> None:
    """Stop a launcher started with ``start_new_session=True`` and every process it started.

    SIGTERM to the launcher first (mpirun and srun pass it on to the ranks and clean up); after
    ``grace`` seconds, SIGKILL to whatever is left in its session. Returns once all of it is
    gone, so that a rerun never races the old job (e.g. for its checkpoint directory); raises
    ProcessError when something survives SIGKILL for ``kill_wait`` seconds.
    """
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    deadline = time.monotonic() + kill_wait
    while True:
        left = session_processes(proc.pid)
        if proc.poll() is None:
            left.append(proc.pid)
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise ProcessError(f"could not stop job {proc.pid}: processes {left} survive SIGKILL")
        time.sleep(0.05)
    proc.wait()
