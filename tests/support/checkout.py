"""A fresh checkout of this working tree for the tests that run `make` as a user would
(tests/test_readme.py, tests/test_make_run_servers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pipeline.runtime.process import free_port

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def fresh_shell_env() -> dict[str, str]:
    """A user's shell: nothing of litpath's set (but its cache), no virtual environment on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITPATH_", "VIRTUAL_ENV"))}
    if "LITPATH_CACHE" in os.environ:
        env["LITPATH_CACHE"] = os.environ["LITPATH_CACHE"]
    venvs = {str(VENV_BIN), str(REPO / ".venv" / "bin")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p not in venvs)
    # The copy's own local servers, away from any that run for the repository itself.
    env["LITPATH_MONGO_PORT"] = str(free_port())
    env["LITPATH_NEO4J_PORT"] = str(free_port())
    env["LITPATH_PORT"] = str(free_port())  # `litpath serve`'s port (SUBSTITUTIONS)
    return env


def copy_working_tree(root: Path) -> None:
    """A fresh checkout in ``root``: the files git tracks or would track, copied; `.venv/` and
    `solver/build/` (what the set-up builds, minutes) shared as links."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source, target = REPO / name, root / name
        if not source.is_symlink() and not source.is_file():
            continue  # deleted in the working tree, not yet in the index
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    # What the set-up builds and caches, shared rather than built again (minutes).
    (root / ".venv").symlink_to(REPO / ".venv")
    (root / "solver" / "build").symlink_to(REPO / "solver" / "build")
