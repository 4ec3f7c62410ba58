"""`litpath solve`, the command the workflow's solve rules run, killed during a dense solve and run
again: it resumes from the checkpoints it kept and gives the distances of an uninterrupted solve
bit for bit; run once more, it keeps the stored distances without starting the solver.

The graph (n = 600, tile 4 on a 1x2 grid: 150 iterations, a checkpoint after each) solves in a few
seconds, long enough to kill the whole job (litpath, mpirun and the ranks, as Slurm's walltime
does) once a checkpoint exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.random_graphs import checkpoints, random_graph, read_matrix

from pipeline.runtime.process import session_processes

pytestmark = [pytest.mark.faults, pytest.mark.mpi]

REPO = Path(__file__).resolve().parents[2]
N = 600
DIGEST = hashlib.sha256(b"the solve stage's test graph").hexdigest()
SOLVER = {
    "ranks": 2, "grid": "1x2", "tile": 4, "broadcast": "ring", "lookahead": True, "threads": 1,
    "validate_rows": 0, "full_graph": "dense", "max_hours": 10, "checkpoint_every": 1,
    "machine": str(REPO / "config" / "machines" / "dev-vm-2core.yaml"),
}  # fmt: skip


def litpath_solve(graph: Path, distances: Path, config: Path, *extra: str, **popen) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "solve", "--input", str(graph), "--distances", str(distances),
            "--config", str(config), "--summary", str(distances.parent / "solve_summary.json"), *extra]  # fmt: skip


@pytest.fixture
def stage(tmp_path: Path) -> tuple[Path, Path, Path]:
    graph = random_graph(N, seed=11).write_bp(tmp_path / "graph" / "graph.bp", digest=DIGEST)
    config = tmp_path / "run_config.yaml"
    config.write_text(yaml.safe_dump({"solver": SOLVER}))
    return graph, tmp_path / "distances.bp", config


def kill_job_after_a_checkpoint(command: list[str], checkpoint_dir: Path) -> None:
    """Run ``command`` and SIGKILL it and every process it started (mpirun leads a session of its
    own, pipeline.solve.apsp_fw.run_solver) once a complete checkpoint exists."""
    import psutil

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while not checkpoints(checkpoint_dir):
            assert proc.poll() is None, f"litpath solve ended (exit {proc.returncode}) before any checkpoint"
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.005)
        job = psutil.Process(proc.pid).children(recursive=True)
        sessions = {os.getsid(p.pid) for p in job if p.is_running()}
        proc.kill()
        for pid in {pid for s in sessions for pid in session_processes(s)} | {p.pid for p in job}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        proc.wait(timeout=60)


def test_killed_solve_stage_resumes_and_a_rerun_reuses(stage, tmp_path):
    graph, distances, config = stage
    reference = tmp_path / "reference" / "distances.bp"
    reference.parent.mkdir()
    done = subprocess.run(litpath_solve(graph, reference, config), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    want = read_matrix(reference)

    ckpt = distances.with_name("distances.bp.checkpoints")
    kill_job_after_a_checkpoint(litpath_solve(graph, distances, config), ckpt)
    kept = checkpoints(ckpt)
    assert kept and not distances.exists(), "a killed solve must leave checkpoints and no distances.bp"

    again = subprocess.run(litpath_solve(graph, distances, config), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"resuming the dense solve from {ckpt}" in again.stderr
    assert "apsp-fw: resuming from checkpoint" in again.stderr
    got = read_matrix(distances)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), "the resumed solve differs in some bits"
    assert not ckpt.exists(), "a finished solve's checkpoints are removed"
    summary = json.loads((distances.parent / "solve_summary.json").read_text())
    assert summary["graph_digest"] == DIGEST  # whole, not its first character
    # One line on the terminal; the record is the summary file.
    assert again.stdout.startswith("litpath solve: full graph, n = 600: dense (grid 1x2, tile 4)")

    # The same graph and settings once more: the stored distances are kept; no solver starts.
    before = distances.stat().st_mtime_ns
    reuse = subprocess.run(litpath_solve(graph, distances, config), capture_output=True, text=True, timeout=300)
    assert reuse.returncode == 0, reuse.stderr
    assert "already holds the dense distances of this graph; kept" in reuse.stderr
    assert "launching:" not in reuse.stderr and distances.stat().st_mtime_ns == before
    assert json.loads((distances.parent / "solve_summary.json").read_text())["reused"] is True

    # --fresh solves again, from the start.
    fresh = subprocess.run(litpath_solve(graph, distances, config, "--fresh"), capture_output=True, text=True,
                           timeout=300)  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    assert f"removing {distances}: a fresh solve was asked for" in fresh.stderr and "launching:" in fresh.stderr


def test_checkpoints_of_another_layout_are_removed_with_a_reason(stage):
    """Checkpoints written with another tile cannot be resumed (apsp-fw would refuse them): the
    stage removes them, says why, and solves from the start."""
    graph, distances, config = stage
    ckpt = distances.with_name("distances.bp.checkpoints")
    kill_job_after_a_checkpoint(litpath_solve(graph, distances, config), ckpt)
    assert checkpoints(ckpt)
    config.write_text(yaml.safe_dump({"solver": {**SOLVER, "tile": 5}}))
    run = subprocess.run(litpath_solve(graph, distances, config), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert f"removing {ckpt}: its checkpoints are of another solve: tile '4' (now '5')" in run.stderr
    assert "resuming" not in run.stderr


def test_a_graph_without_a_whole_digest_is_refused(tmp_path):
    graph = random_graph(40, seed=3).write_bp(tmp_path / "graph.bp", digest="4")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"solver": SOLVER}))
    run = subprocess.run(litpath_solve(graph, tmp_path / "d.bp", config), capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1].startswith("litpath: error: ")
    assert "graph_digest attribute '4' is not a SHA-256 in hex" in run.stderr and "Traceback" not in run.stderr
