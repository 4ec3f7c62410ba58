"""The workflow passes Snakemake's own linter and snakefmt, and the Python code passes ruff and
the import contracts (what `make lint` runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_snakemake_lint_is_clean() -> None:
    done = run(str(BIN / "snakemake"), "-s", "workflow/Snakefile", "--lint")
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Lints for" not in output, output[-4000:]


def test_snakefmt_check_is_clean() -> None:
    done = run(str(BIN / "snakefmt"), "--check", "workflow")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_is_clean() -> None:
    done = run(str(BIN / "ruff"), "check", "pipeline", "services", "tests", "bench")
    assert done.returncode == 0, done.stdout + done.stderr


def test_import_contracts_hold() -> None:
    """The layers and no-circle contracts of .importlinter (services above pipeline, ...)."""
    done = run(str(BIN / "lint-imports"), "--no-cache", "--no-logo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
