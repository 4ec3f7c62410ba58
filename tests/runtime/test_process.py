"""The process helpers the local servers, the local Slurm cluster and the solver launcher share
(pipeline/runtime/process.py), on real child processes."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pipeline.runtime.process import (
    PidFile,
    ProcessError,
    free_port,
    log_tail,
    session_processes,
    terminate,
    terminate_session,
)

# A child that says it is ready once its SIGTERM handler is in place (or SIGTERM is ignored).
SLEEPER = """\
import signal, sys, time
if sys.argv[1] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(120)
"""


def start_sleeper(on_term: str = "exit", **popen: object) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, on_term], stdout=subprocess.PIPE, text=True, **popen
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[str]]:
    child = start_sleeper()
    yield child
    child.kill()
    child.wait()


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def owned_by_sleeper(command: list[str]) -> bool:
    return any("time.sleep(120)" in arg for arg in command)


def test_free_port_can_be_bound() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", port))


def test_log_tail_keeps_the_last_lines_and_says_when_there_are_none(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(30)))
    assert log_tail(log, lines=2) == "    line 28\n    line 29"
    assert log_tail(tmp_path / "missing.log") == "    (no missing.log)"
    (tmp_path / "empty.log").write_text("")
    assert log_tail(tmp_path / "empty.log") == "    (empty.log is empty)"


def test_pid_file_trusts_only_a_live_process_running_our_program(
    tmp_path: Path, sleeper: subprocess.Popen[str]
) -> None:
    pid_file = PidFile(tmp_path / "x.pid", owned_by_sleeper)
    assert pid_file.live_pid() is None  # no file yet
    pid_file.write(sleeper.pid)
    assert pid_file.live_pid() == sleeper.pid
    # A reused PID: the process runs something else, so it is not ours.
    assert PidFile(pid_file.path, lambda command: False).live_pid() is None
    pid_file.path.write_text("not a pid\n")
    assert pid_file.live_pid() is None
    # The child we started ourselves counts while it runs, whatever the file says.
    assert pid_file.live_pid(child=sleeper) == sleeper.pid
    pid_file.remove()
    pid_file.remove()  # twice is fine
    assert not pid_file.path.exists()


def test_pid_file_ignores_a_dead_process(tmp_path: Path) -> None:
    child = start_sleeper()
    pid_file = PidFile(tmp_path / "x.pid", owned_by_sleeper)
    pid_file.write(child.pid)
    child.kill()
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:  # dead, not yet reaped
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert pid_file.live_pid() is None
    child.wait()
    assert pid_file.live_pid(child=child) is None


def test_terminate_stops_with_sigterm_within_the_grace(sleeper: subprocess.Popen[str]) -> None:
    assert terminate(sleeper.pid, grace=10, child=sleeper) is False
    assert sleeper.poll() is not None  # stopped and reaped: no zombie keeps the PID


def test_terminate_kills_what_ignores_sigterm() -> None:
    child = start_sleeper("ignore")
    started = time.monotonic()
    assert terminate(child.pid, grace=0.5, child=child) is True
    assert child.poll() is not None
    assert time.monotonic() - started < 10


def test_terminate_without_a_process_does_nothing(sleeper: subprocess.Popen[str]) -> None:
    assert terminate(None, grace=1) is False
    sleeper.kill()
    sleeper.wait()
    assert terminate(sleeper.pid, grace=1) is False  # already gone


def test_terminate_session_stops_the_launcher_and_what_it_left_behind() -> None:
    # A launcher whose child ignores SIGTERM and outlives it, as an MPI rank can.
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; "
            f"child = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}, 'ignore'], stdout=subprocess.PIPE, text=True); "
            "print(child.stdout.readline().strip(), child.pid, flush=True); "
            "import time; time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert launcher.stdout is not None
    ready, rank = launcher.stdout.readline().split()
    assert ready == "ready"
    assert set(session_processes(launcher.pid)) == {launcher.pid, int(rank)}
    terminate_session(launcher, grace=0.5)
    assert launcher.returncode is not None
    assert gone(int(rank))
    assert session_processes(launcher.pid) == []


def test_terminate_session_reports_survivors(monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.runtime.process as process

    launcher = start_sleeper(start_new_session=True)
    # A process the session scan keeps finding however often it is SIGKILLed (stuck in the
    # kernel, say): a PID beyond any pid_max, which os.kill answers with ProcessLookupError.
    phantom = 2**22 + 7
    monkeypatch.setattr(process, "session_processes", lambda session: [phantom])
    with pytest.raises(
        ProcessError, match=rf"could not stop job {launcher.pid}: processes \[{phantom}\] survive"
    ):
        terminate_session(launcher, grace=5, kill_wait=0.3)
    assert launcher.poll() is not None  # the launcher itself went on SIGTERM
