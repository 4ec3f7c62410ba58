"""Fixtures for the apsp-fw tests: run the built solver (``apsp_fw``, in tests/conftest.py) on
real MPI ranks. The random graphs and their references are in tests/support/random_graphs.py."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.solve.apsp_fw import mpirun_command


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_apsp(apsp_fw: Path):
    """Run `mpirun -n ranks apsp-fw args...` and return (returncode, stdout, stderr)."""

    def run(ranks: int, *args: str | os.PathLike, timeout: float = 120) -> Run:
        cmd = mpirun_command(ranks) + [str(apsp_fw), *map(str, args)]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


