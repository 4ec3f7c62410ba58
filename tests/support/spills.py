"""A spill folder as a killed stage leaves it, for the tests of the sweep at stage start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pipeline.runtime import resources


def dead_pid() -> int:
    """The PID of a process that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def stale_spill_folder(parent: Path, prefix: str, size: int = 1000) -> Path:
    """A spill folder in ``parent`` whose owner (a process of this host) has exited, holding
    ``size`` bytes: what a SIGKILLed stage leaves behind."""
    folder = Path(parent) / f"{prefix}killed"
    folder.mkdir(parents=True)
    (folder / "part-0000.bin").write_bytes(b"z" * size)
    owner = {**resources._this_process(), "pid": dead_pid()}
    (folder / resources.SPILL_OWNER).write_text(json.dumps(owner))
    return folder
