"""apsp-fw killed mid-solve and resumed: the result is bit for bit that of an uninterrupted run.

The graph (n = 600, tile 4: 150 outer iterations on a 2x2 grid) with `--checkpoint-every 1`
takes a few seconds, long enough to SIGKILL one rank after a random number of checkpoints.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from support.random_graphs import assert_bitwise_equal, checkpoints, random_graph, read_matrix

from pipeline.runtime.process import session_processes
from pipeline.solve.apsp_fw import SolverError, mpirun_command, run_solver, stop_job

pytestmark = [pytest.mark.faults, pytest.mark.mpi]

N, TILE, GRID, RANKS = 600, 4, "2x2", 4
ITERATIONS = (N + TILE - 1) // TILE


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return random_graph(N, seed=11).write_bp(tmp_path_factory.mktemp("graph") / "graph.bp", digest="digest-a")


@pytest.fixture(scope="module")
def uninterrupted(apsp_fw: Path, graph: Path, tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    out = tmp_path_factory.mktemp("reference") / "distances.bp"
    proc = apsp(apsp_fw, graph, "--output", out)
    assert proc.returncode == 0, proc.stderr
    return read_matrix(out)


def command(apsp_fw: Path, graph: Path, *args: str | os.PathLike) -> list[str]:
    return (
        mpirun_command(RANKS)
        + [str(apsp_fw), "--input", str(graph), "--grid", GRID, "--tile", str(TILE), "--threads", "1"]
        + [str(a) for a in args]
    )


def apsp(
    apsp_fw: Path, graph: Path, *args: str | os.PathLike, timeout: float = 180
) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        command(apsp_fw, graph, *args), capture_output=True, text=True, timeout=timeout, env=env
    )


def rank_pids(session: int) -> list[int]:
    """PIDs of the apsp-fw ranks of the job whose mpirun leads `session`."""
    ranks = []
    for pid in session_processes(session):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "apsp-fw":
                ranks.append(pid)
        except OSError:
            pass
    return ranks


def kill_after_checkpoints(
    apsp_fw: Path, graph: Path, out: Path, ckpt: Path, at_least: int, victim: str
) -> None:
    """Start a checkpointing run and SIGKILL it (one rank, or mpirun) once `at_least` checkpoints exist."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = command(
        apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--checkpoint-every", "1", "--progress"
    )
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        # One listing per look: the run prunes and adds checkpoints while we list them.
        while max(checkpoints(ckpt), default=-1) < at_least:
            assert proc.poll() is None, f"apsp-fw finished (exit {proc.returncode}) before it could be killed"
            assert time.monotonic() < deadline, "no checkpoints appeared"
            time.sleep(0.005)
        if victim == "rank":
            ranks = rank_pids(proc.pid)
            assert ranks, "found no apsp-fw ranks to kill"
            os.kill(random.choice(ranks), signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    finally:
        # The ranks mpirun leaves behind when it is killed would go on writing checkpoints
        # beside the resumed run; everything in the job's session goes.
        stop_job(proc, grace=0)


@pytest.mark.parametrize("victim", ["rank", "mpirun"])
def test_killed_solve_resumes_bit_for_bit(tmp_path, apsp_fw, graph, uninterrupted, victim):
    rng = random.Random(f"{victim}-{os.getpid()}")
    kill_at = rng.randint(5, ITERATIONS // 2)
    out, ckpt = tmp_path / "distances.bp", tmp_path / "checkpoints"
    kill_after_checkpoints(apsp_fw, graph, out, ckpt, kill_at, victim)

    assert not out.exists(), "a killed run left a distances.bp that looks finished"
    done = checkpoints(ckpt)
    assert done and max(done) >= kill_at and max(done) < ITERATIONS
    assert len(done) <= 2 + 1, f"old checkpoints not pruned: {done}"

    resumed = apsp(
        apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--checkpoint-every", "1", "--resume"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "apsp-fw: resuming from checkpoint" in resumed.stderr
    assert '"resumed_from": null' not in resumed.stdout
    assert not Path(str(out) + ".partial").exists()
    assert_bitwise_equal(read_matrix(out), uninterrupted)


def test_corrupt_piece_falls_back_to_previous_checkpoint(tmp_path, apsp_fw, graph, uninterrupted):
    out, ckpt = tmp_path / "distances.bp", tmp_path / "checkpoints"
    first = apsp(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--checkpoint-every", "7")
    assert first.returncode == 0, first.stderr
    kept = checkpoints(ckpt)
    assert len(kept) == 2, f"expected the newest 2 checkpoints kept, got {kept}"
    older, newest = kept

    # Flip one float in one rank's piece of the newest checkpoint.
    piece = ckpt / f"iter-{newest:06d}" / "rank-00002.ckpt"
    data = bytearray(piece.read_bytes())
    data[-100] ^= 0x40
    piece.write_bytes(bytes(data))
    out.unlink() if out.is_file() else subprocess.run(["rm", "-rf", str(out)], check=True)

    resumed = apsp(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"skipping checkpoint {ckpt / f'iter-{newest:06d}'}" in resumed.stderr
    assert "checksum mismatch" in resumed.stderr
    assert f"resuming from checkpoint {ckpt / f'iter-{older:06d}'}" in resumed.stderr
    assert_bitwise_equal(read_matrix(out), uninterrupted)
    # The damaged checkpoint is gone, so it can never be picked again.
    assert checkpoints(ckpt) == [older]


def test_truncated_pieces_everywhere_start_over(tmp_path, apsp_fw, graph, uninterrupted):
    out, ckpt = tmp_path / "distances.bp", tmp_path / "checkpoints"
    first = apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "50")
    assert first.returncode == 0, first.stderr
    for piece in ckpt.glob("iter-*/rank-00001.ckpt"):
        piece.write_bytes(piece.read_bytes()[:1000])
    resumed = apsp(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "truncated" in resumed.stderr
    assert "no valid checkpoint" in resumed.stderr
    assert_bitwise_equal(read_matrix(out), uninterrupted)


@pytest.mark.parametrize(
    "change, message",
    [
        ("graph", "graph digest digest-a (this input: digest-b)"),
        ("tile", "tile 4 (this run: 5)"),
        ("grid", "grid 2x2 (this run: 4x1)"),
    ],
)
def test_mismatched_input_is_refused(tmp_path, apsp_fw, graph, change, message):
    ckpt = tmp_path / "checkpoints"
    first = apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "60")
    assert first.returncode == 0, first.stderr
    other_graph = graph
    args = ["--checkpoint-dir", ckpt, "--resume"]
    cmd = command(apsp_fw, graph, *args)
    if change == "graph":
        other_graph = random_graph(N, seed=12).write_bp(tmp_path / "other.bp", digest="digest-b")
        cmd = command(apsp_fw, other_graph, *args)
    elif change == "tile":
        cmd[cmd.index("--tile") + 1] = "5"
    else:
        cmd[cmd.index("--grid") + 1] = "4x1"
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 2
    assert "apsp-fw: error: cannot resume: checkpoint" in proc.stderr
    assert message in proc.stderr


# -------------------------------------------------- resume: identity, I/O errors, parsing --
EVERY = "7"  # --checkpoint-every of the prepared sets: the newest 2 of 21 checkpoints kept


@pytest.fixture(scope="module")
def other_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another graph with the same n (the same build folder after a code change, say)."""
    return random_graph(N, seed=12).write_bp(tmp_path_factory.mktemp("other") / "graph.bp", digest="digest-b")


def checkpoint_set(apsp_fw: Path, graph: Path, where: Path) -> Path:
    ckpt = where / "checkpoints"
    run = apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", EVERY)
    assert run.returncode == 0, run.stderr
    assert len(checkpoints(ckpt)) == 2
    return ckpt


@pytest.fixture(scope="module")
def checkpoints_a(apsp_fw, graph, tmp_path_factory) -> Path:
    return checkpoint_set(apsp_fw, graph, tmp_path_factory.mktemp("set-a"))


@pytest.fixture(scope="module")
def checkpoints_b(apsp_fw, other_graph, tmp_path_factory) -> Path:
    return checkpoint_set(apsp_fw, other_graph, tmp_path_factory.mktemp("set-b"))


def fresh_copy(prepared: Path, tmp_path: Path) -> tuple[Path, int, int]:
    """A copy of a prepared checkpoint set to damage: (dir, older iteration, newest iteration)."""
    ckpt = tmp_path / "checkpoints"
    shutil.copytree(prepared, ckpt, symlinks=True)
    (ckpt / "LOCK").unlink(missing_ok=True)
    older, newest = checkpoints(ckpt)
    return ckpt, older, newest


def iteration_dir(ckpt: Path, iteration: int) -> Path:
    return ckpt / f"iter-{iteration:06d}"


def tree(ckpt: Path) -> dict[str, int]:
    """Every file under the checkpoint directory with its size (symlinks as -1)."""
    return {
        str(p.relative_to(ckpt)): (-1 if p.is_symlink() else p.stat().st_size)
        for p in sorted(ckpt.rglob("*"))
        if p.name != "LOCK" and (p.is_symlink() or p.is_file())
    }


def break_manifest_checksum(ckpt: Path, iteration: int) -> None:
    """A hand edit that std::stoull used to throw on (on rank 0 only, between collectives)."""
    manifest = iteration_dir(ckpt, iteration) / "MANIFEST"
    lines = manifest.read_text().splitlines()
    lines = [" ".join(line.split()[:3] + ["zz"]) if line.startswith("piece 1 ") else line for line in lines]
    manifest.write_text("\n".join(lines) + "\n")


def flip_a_float(piece: Path) -> None:
    data = bytearray(piece.read_bytes())
    data[-100] ^= 0x40
    piece.write_bytes(bytes(data))


def bounded(apsp_fw: Path, graph: Path, *args, timeout: float = 90) -> subprocess.CompletedProcess:
    """apsp() in a session of its own, stopped whole if it hangs (a deadlock fails the test, not the suite)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        command(apsp_fw, graph, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_job(proc, grace=0)
        pytest.fail(f"apsp-fw hung for {timeout} s: {' '.join(command(apsp_fw, graph, *args))}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_older_checkpoint_of_another_graph_is_refused(tmp_path, apsp_fw, graph, checkpoints_a, checkpoints_b):
    """The identity gap: with the newest manifest unusable, the older checkpoint (another
    graph's, same n) used to be resumed without any check."""
    ckpt, older, newest = fresh_copy(checkpoints_a, tmp_path)
    shutil.rmtree(iteration_dir(ckpt, older))
    shutil.copytree(iteration_dir(checkpoints_b, older), iteration_dir(ckpt, older))
    break_manifest_checksum(ckpt, newest)
    before = tree(ckpt)

    run = bounded(apsp_fw, graph, "--output", tmp_path / "d.bp", "--checkpoint-dir", ckpt, "--resume")
    assert run.returncode == 2, run.stderr
    assert f"skipping checkpoint {iteration_dir(ckpt, newest)}" in run.stderr and "(kept:" in run.stderr
    assert (
        f"apsp-fw: error: cannot resume: checkpoint {iteration_dir(ckpt, older)} was written for other inputs: "
        "graph digest digest-b (this input: digest-a)" in run.stderr
    )
    assert "no checkpoint was deleted" in run.stderr
    assert tree(ckpt) == before
    assert not (tmp_path / "d.bp").exists()


def test_piece_header_of_another_graph_is_refused(tmp_path, apsp_fw, graph, checkpoints_a, checkpoints_b):
    """A piece whose own header names other inputs is never loaded, whatever its manifest says."""
    ckpt, older, newest = fresh_copy(checkpoints_a, tmp_path)
    piece = iteration_dir(ckpt, newest) / "rank-00002.ckpt"
    shutil.copyfile(iteration_dir(checkpoints_b, newest) / "rank-00002.ckpt", piece)
    before = tree(ckpt)

    run = bounded(apsp_fw, graph, "--checkpoint-dir", ckpt, "--resume")
    assert run.returncode == 2, run.stderr
    assert "cannot resume: rank 2: " in run.stderr
    assert (
        f"{piece}: piece header written for other inputs: graph digest digest-b (this input: digest-a)"
        in run.stderr
    )
    assert tree(ckpt) == before


@pytest.mark.parametrize("how", ["missing", "symlink-loop"])
def test_unreadable_piece_stops_the_run_and_deletes_nothing(
    tmp_path, apsp_fw, graph, uninterrupted, checkpoints_a, how
):
    """An open error (a piece not visible on that rank's node, EACCES, EMFILE, ESTALE) is not
    damage: the run stops, every checkpoint stays, and a rerun once it is readable resumes."""
    ckpt, older, newest = fresh_copy(checkpoints_a, tmp_path)
    flip_a_float(iteration_dir(ckpt, newest) / "rank-00000.ckpt")  # damaged: deleted only on a way forward
    piece = iteration_dir(ckpt, older) / "rank-00001.ckpt"
    aside = tmp_path / "rank-00001.ckpt"
    piece.rename(aside)
    if how == "symlink-loop":
        piece.symlink_to(piece.name)  # open() fails with ELOOP
    before = tree(ckpt)

    out = tmp_path / "distances.bp"
    run = bounded(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--resume")
    assert run.returncode == 2, run.stderr
    assert (
        f"cannot resume: checkpoint {iteration_dir(ckpt, older)} could not be read (rank 1: {piece}: cannot open:"
        in run.stderr
    )
    assert "no checkpoint was deleted" in run.stderr
    assert tree(ckpt) == before, "checkpoints were deleted after an I/O error"
    assert not out.exists()

    # Readable again: the damaged newest goes, the older one is resumed.
    piece.unlink(missing_ok=True)
    aside.rename(piece)
    resumed = bounded(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"deleting damaged checkpoint {iteration_dir(ckpt, newest)}" in resumed.stderr
    assert f"resuming from checkpoint {iteration_dir(ckpt, older)}" in resumed.stderr
    assert checkpoints(ckpt) == [older]
    assert_bitwise_equal(read_matrix(out), uninterrupted)


def test_unparsable_manifest_and_directory_names_fail_no_rank_alone(
    tmp_path, apsp_fw, graph, uninterrupted, checkpoints_a
):
    """A malformed manifest checksum and an iter-<25 digits> directory used to throw on rank 0
    only (std::stoull, std::stoll) while the other ranks waited in a broadcast: a hang."""
    ckpt, older, newest = fresh_copy(checkpoints_a, tmp_path)
    break_manifest_checksum(ckpt, newest)
    for odd in ("iter-" + "9" * 25, "iter-12", "iter-00000x"):
        shutil.copytree(iteration_dir(ckpt, older), ckpt / odd)

    out = tmp_path / "distances.bp"
    run = bounded(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--resume")
    assert run.returncode == 0, run.stderr
    assert f"skipping checkpoint {iteration_dir(ckpt, newest)}" in run.stderr
    assert "malformed line 'piece 1" in run.stderr
    assert f"resuming from checkpoint {iteration_dir(ckpt, older)}" in run.stderr
    assert_bitwise_equal(read_matrix(out), uninterrupted)
    # Nothing it could not verify as damaged was deleted.
    assert iteration_dir(ckpt, newest).is_dir()
    for odd in ("iter-" + "9" * 25, "iter-12", "iter-00000x"):
        assert (ckpt / odd / "MANIFEST").is_file()


def test_fresh_run_refuses_a_directory_with_checkpoints(tmp_path, apsp_fw, graph):
    ckpt = tmp_path / "checkpoints"
    assert apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "60").returncode == 0
    again = apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "60")
    assert again.returncode == 2
    assert "already holds checkpoints; pass --resume" in again.stderr


def test_checkpoint_options_are_checked(tmp_path, apsp_fw, graph):
    bad = apsp(apsp_fw, graph, "--checkpoint-every", "10")
    assert bad.returncode == 2 and "--checkpoint-every needs --checkpoint-dir" in bad.stderr
    bad = apsp(apsp_fw, graph, "--checkpoint-dir", tmp_path / "c", "--checkpoint-every", "ten")
    assert bad.returncode == 2 and "--checkpoint-every 'ten' is neither" in bad.stderr


def test_seconds_interval_checkpoints(tmp_path, apsp_fw, graph, uninterrupted):
    out, ckpt = tmp_path / "distances.bp", tmp_path / "checkpoints"
    run = apsp(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--checkpoint-every", "0.05s")
    assert run.returncode == 0, run.stderr
    assert '"every": "0.05s"' in run.stdout
    assert_bitwise_equal(read_matrix(out), uninterrupted)


def wrapped_solve(graph: Path, out: Path, apsp_fw: Path, **options) -> dict:
    """pipeline.solve.apsp_fw.run_solver (what the workflow's solve rule calls) on this module's job shape."""
    shape = {"ranks": RANKS, "grid": GRID, "tile": TILE, "threads": 1}
    return run_solver(graph, out, binary=apsp_fw, **{**shape, **options})


def test_run_solver_resumes_from_checkpoint(tmp_path, apsp_fw, graph, uninterrupted):
    """The wrapper (and so the workflow's solve rule) resumes by itself and cleans up after success."""
    out, ckpt = tmp_path / "distances.bp", tmp_path / "distances.bp.checkpoints"
    kill_after_checkpoints(apsp_fw, graph, out, ckpt, 20, "rank")
    lines: list[str] = []
    summary = wrapped_solve(graph, out, apsp_fw, checkpoint_every="1", on_progress=lines.append)
    assert summary["checkpoint"]["resumed_from"] >= 20
    assert any(line.startswith("apsp-fw: resuming from checkpoint") for line in lines)
    assert_bitwise_equal(read_matrix(out), uninterrupted)
    assert not ckpt.exists(), "checkpoints should be removed once distances.bp is in place"


def test_run_solver_reports_refused_resume(tmp_path, apsp_fw, graph):
    out, ckpt = tmp_path / "distances.bp", tmp_path / "distances.bp.checkpoints"
    assert apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "60").returncode == 0
    with pytest.raises(SolverError, match="cannot resume"):
        wrapped_solve(graph, out, apsp_fw, tile=TILE + 1)


@pytest.fixture(scope="module")
def slow_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """n = 2400 in tiles of 4 on the 2x2 grid: about 20 s of solving here, time to interfere."""
    return random_graph(2400, seed=3).write_bp(
        tmp_path_factory.mktemp("slow") / "graph.bp", digest="digest-slow"
    )


def test_second_run_on_a_busy_checkpoint_directory_is_refused(
    tmp_path, apsp_fw, graph, slow_graph, uninterrupted
):
    """Two runs on one checkpoint directory would interleave pieces and prune each other's.

    (The case met in practice: a rerun while the ranks of a job whose mpirun was killed are
    still computing; they notice mpirun is gone only after a while.)
    """
    ckpt = tmp_path / "checkpoints"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = command(apsp_fw, slow_graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "600s")
    first = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while "apsp-fw pid" not in _read_bytes(ckpt / "LOCK").decode(errors="replace"):
            assert first.poll() is None, f"apsp-fw exited ({first.returncode}) before taking its lock"
            assert time.monotonic() < deadline, "the first run never took its lock"
            time.sleep(0.01)
        second = apsp(apsp_fw, graph, "--checkpoint-dir", ckpt, "--checkpoint-every", "1", "--resume")
        assert first.poll() is None, "the first run ended before the second was checked"
        assert second.returncode == 2, second.stderr
        assert f"apsp-fw: error: checkpoint: {ckpt} is in use by another run (apsp-fw pid " in second.stderr
        assert "stop it, then rerun with --resume" in second.stderr
    finally:
        stop_job(first)
    # With the old job gone, the lock is free again.
    out = tmp_path / "distances.bp"
    third = apsp(apsp_fw, graph, "--output", out, "--checkpoint-dir", ckpt, "--checkpoint-every", "1")
    assert third.returncode == 0, third.stderr
    assert_bitwise_equal(read_matrix(out), uninterrupted)


def test_run_solver_timeout_stops_every_rank(tmp_path, apsp_fw, slow_graph):
    """A timeout holds while the job runs, and leaves no rank behind to race a rerun."""
    out = tmp_path / "distances.bp"
    started = time.monotonic()
    with pytest.raises(SolverError, match="timed out after 1.0 s"):
        wrapped_solve(slow_graph, out, apsp_fw, timeout=1.0, on_progress=lambda line: None)
    assert time.monotonic() - started < 15
    survivors = [
        p.parent.name for p in Path("/proc").glob("[0-9]*/cmdline") if str(out).encode() in _read_bytes(p)
    ]
    assert survivors == [], f"apsp-fw processes left running: {survivors}"
    assert not out.exists()


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
