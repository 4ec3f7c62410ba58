"""Build and run the ``apsp-fw`` MPI solver (solver/, docs/design.md §7).

``build_solver()`` configures and builds solver/ with CMake (Ninja, Release, -j2) against
the cached MPI build of ADIOS2 (``scripts/build_adios2_mpi.sh``); a second call is a no-op
when nothing changed. ``run_solver()`` launches ``apsp-fw`` on R ranks (``mpirun``, or
``srun`` inside a Slurm allocation: :mod:`pipeline.solve.cluster`), streams the solver's progress
lines, and returns its JSON summary as a dict.

Rows mode: ``run_solver(..., sources=[...])`` computes only the distance rows of those
vertices (``apsp-fw --sources``, Dijkstra on the sparse graph; distances.bp in the "rows"
layout); the dense-solve options (grid, tile, broadcast, look-ahead, checkpoints) are not
passed then.

Fault tolerance: ``run_solver`` checkpoints into ``<output>.checkpoints`` (next to the
output, so inside the build folder) and, when that folder holds a complete checkpoint from
an interrupted run, passes ``--resume``; the checkpoints are removed once the output is in
place. apsp-fw writes ``<output>.partial`` and renames it only when complete, so a killed
job never leaves an output that looks finished.
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pipeline.config import REPO_ROOT, default_of
from pipeline.runtime.errors import LitpathError
from pipeline.runtime.process import CommandFailed, ProcessError, run_command, terminate_session
from pipeline.solve.cluster import launcher_command

REPO = REPO_ROOT  # the checkout: the solver's sources and build, the shipped files
SOLVER_DIR = REPO / "solver"
BUILD_DIR = SOLVER_DIR / "build"
BINARY_ENV = "LITPATH_APSP_FW"
ADIOS2_BUILD_SCRIPT = REPO / "scripts" / "build_adios2_mpi.sh"
# Default checkpoint interval: seconds of solve time (checkpoint overhead stays within a few
# per cent at one per minute, bench/results/checkpoint_overhead.md).
DEFAULT_CHECKPOINT_EVERY = "300s"
# Solver stderr lines worth passing on besides the progress lines.
_NOTICE_PREFIXES = (
    "apsp-fw: iteration",
    "apsp-fw: rows",
    "apsp-fw: resuming",
    "apsp-fw: no valid checkpoint",
    "apsp-fw: warning",
)


class SolverError(LitpathError, RuntimeError):
    """The solver could not be built, was not found, or failed; the message says why."""


def stop_job(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop an MPI launcher started with ``start_new_session=True`` and every rank it started
    (:func:`pipeline.runtime.process.terminate_session`); ranks that survive SIGKILL are a SolverError."""
    try:
        terminate_session(proc, grace)
    except ProcessError as exc:
        raise SolverError(f"MPI launcher: {exc}") from exc


def adios2_prefix() -> Path:
    """Install prefix of the MPI ADIOS2 build, building it first when missing (minutes)."""
    result = subprocess.run(
        [str(ADIOS2_BUILD_SCRIPT)], cwd=REPO, stdout=subprocess.PIPE, stderr=None, text=True, check=False
    )
    if result.returncode != 0:
        raise SolverError(f"{ADIOS2_BUILD_SCRIPT} failed with exit status {result.returncode}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        raise SolverError(f"{ADIOS2_BUILD_SCRIPT} printed no install prefix")
    return Path(lines[-1].strip())


def _run_logged(cmd: list[str], what: str, cwd: Path = REPO) -> None:
    try:
        run_command(cmd, what=what, cwd=cwd, merge_stderr=True)
    except CommandFailed as exc:
        raise SolverError(str(exc)) from exc


def build_solver(build_dir: Path | str = BUILD_DIR, with_adios2: bool = True, jobs: int = 2) -> Path:
    """Configure (once) and build the solver; returns the path of ``apsp-fw``.

    Idempotent: an existing configured build directory is only rebuilt (Ninja does nothing
    when sources are unchanged).
    """
    build_dir = Path(build_dir)
    if shutil.which("cmake") is None:
        raise SolverError("cmake not found (apt-get install cmake ninja-build)")
    if not (build_dir / "CMakeCache.txt").exists():
        cmd = ["cmake", "-S", str(SOLVER_DIR), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        if with_adios2:
            cmd.append(f"-DCMAKE_PREFIX_PATH={adios2_prefix()}")
        else:
            cmd.append("-DLITPATH_WITH_ADIOS2=OFF")
        _run_logged(cmd, "configuring the solver")
    _run_logged(["cmake", "--build", str(build_dir), "-j", str(jobs)], "building the solver")
    binary = build_dir / "apsp-fw"
    if not binary.exists():
        raise SolverError(f"build finished but {binary} is missing")
    return binary


def find_solver() -> Path:
    """``$LITPATH_APSP_FW`` if set, else ``solver/build/apsp-fw``."""
    env = os.environ.get(BINARY_ENV)
    candidate = Path(env) if env else BUILD_DIR / "apsp-fw"
    if not candidate.exists():
        raise SolverError(
            f"apsp-fw not found at {candidate}; build it with "
            "`python -c 'from pipeline.solve.apsp_fw import build_solver; build_solver()'` (or `make setup`)"
            + (f", or fix ${BINARY_ENV}" if env else "")
        )
    return candidate


def mpirun_command(ranks: int, threads: int = 1) -> list[str]:
    """The launcher prefix for ``ranks`` MPI processes: ``srun`` inside a Slurm allocation,
    ``mpirun`` (with the flags Open MPI needs as root and when ranks exceed cores) elsewhere.

    The choice is :func:`pipeline.solve.cluster.launcher_command`'s, overridable with
    ``LITPATH_MPI_LAUNCHER=srun|mpirun``.
    """
    command = launcher_command(int(ranks), os.environ, threads_per_rank=int(threads))
    found = shutil.which(command[0])
    if found is None:
        hint = "apt-get install openmpi-bin libopenmpi-dev" if command[0] == "mpirun" else "Slurm's srun"
        raise SolverError(f"{command[0]} not found on PATH ({hint})")
    return [found, *command[1:]]


def default_threads_per_rank(ranks: int) -> int:
    """apsp-fw's own default without ``--threads``: the CPUs this process may use, shared by
    the ranks. The launcher must bind each rank to that many cores; bound to one (Open MPI's
    default for a rank or two), apsp-fw follows the binding and runs one thread."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, int(ranks)))


def vertex_count(input_path: str | Path) -> int:
    """n of a solver input without reading its edges: graph.bp's ``n`` or a .mtx size line."""
    path = Path(input_path)
    if path.suffix == ".mtx":
        with path.open() as handle:
            for line in handle:
                if not line.startswith("%") and line.strip():
                    rows, cols = (int(v) for v in line.split()[:2])
                    return max(rows, cols)
        raise SolverError(f"{path}: no size line")
    from pipeline.store.bpfiles import bp_reader

    with bp_reader(path) as reader:
        return int(reader.read("n"))


def solver_arguments(
    input_path: str | Path,
    output: str | Path | None,
    *,
    grid: str = "auto",
    tile: int = default_of("solver.tile"),
    broadcast: str = default_of("solver.broadcast"),
    chunk_bytes: int | None = None,
    lookahead: bool | str = default_of("solver.lookahead"),
    threads: int | None = None,
    backend: str = "cpu",
    validate_rows: int = 0,
    summary_json: str | Path | None = None,
    progress: bool = True,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int | str | None = None,
    resume: bool = False,
    sources_file: str | Path | None = None,
) -> list[str]:
    """The apsp-fw command-line arguments for these settings.

    With ``sources_file`` (a file of vertex ids, see :func:`write_sources_file`) the
    arguments are those of the rows mode (``--sources``): grid, tile, broadcast, chunk,
    look-ahead and the checkpoint settings belong to the dense solve and are left out
    (apsp-fw refuses them there); ``validate_rows`` is refused.
    """
    if isinstance(lookahead, str):
        lookahead = lookahead.lower() in ("on", "true", "1", "yes")
    args = ["--input", str(input_path)]
    if sources_file is not None:
        if validate_rows:
            raise ValueError("validate_rows checks the dense solve; rows from sources are Dijkstra already")
        # Dijkstra runs on the CPU: solver.backend (cuda, hip) is the dense solve's, and apsp-fw
        # refuses a GPU backend with --sources. Only the scalar reference changes the rows.
        args += ["--sources", str(sources_file)]
        if backend == "reference":
            args += ["--backend", backend]
    else:
        args += [
            "--grid",
            str(grid),
            "--tile",
            str(int(tile)),
            "--broadcast",
            broadcast,
            "--lookahead",
            "on" if lookahead else "off",
            "--backend",
            backend,
        ]
    if output is not None:
        args += ["--output", str(output)]
    if chunk_bytes and sources_file is None:
        args += ["--chunk", str(int(chunk_bytes))]
    if threads:
        args += ["--threads", str(int(threads))]
    if validate_rows:
        args += ["--validate", str(int(validate_rows))]
    if summary_json is not None:
        args += ["--summary-json", str(summary_json)]
    if progress:
        args.append("--progress")
    if checkpoint_dir is not None and sources_file is None:
        args += ["--checkpoint-dir", str(checkpoint_dir)]
        if checkpoint_every:
            args += ["--checkpoint-every", str(checkpoint_every)]
        if resume:
            args.append("--resume")
    return args


def write_sources_file(path: str | Path, sources: Iterable[int]) -> Path:
    """Write vertex ids one per line, the ``apsp-fw --sources`` format; returns the path."""
    path = Path(path)
    ids = [int(v) for v in sources]
    if not ids:
        raise ValueError("sources is empty: give at least one vertex id")
    path.write_text("# vertex ids for apsp-fw --sources\n" + "".join(f"{v}\n" for v in ids))
    return path


def default_checkpoint_dir(output: str | Path) -> Path:
    """Where run_solver keeps checkpoints for ``output``: ``<output>.checkpoints`` beside it."""
    output = Path(output)
    return output.with_name(output.name + ".checkpoints")


def checkpoint_identity(checkpoint_dir: str | Path) -> dict[str, str] | None:
    """What the newest complete checkpoint in ``checkpoint_dir`` was made of: its MANIFEST's
    ``n``, ``tile``, ``grid``, ``ranks``, ``graph_digest`` and ``iteration`` (as text), or None
    when there is none (or its MANIFEST cannot be read: apsp-fw then starts over by itself)."""
    manifests = sorted(Path(checkpoint_dir).glob("iter-*/MANIFEST"), key=lambda p: p.parent.name)
    if not manifests:
        return None
    identity: dict[str, str] = {}
    try:
        lines = manifests[-1].read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines[1:]:  # the first line is the format header
        key, _, value = line.partition(" ")
        if key in ("iteration", "n", "tile", "grid", "ranks", "graph_digest"):
            identity[key] = value.strip()
    return identity


def has_checkpoint(checkpoint_dir: str | Path) -> bool:
    """True when ``checkpoint_dir`` holds a complete checkpoint (an ``iter-*/MANIFEST``).

    apsp-fw itself verifies every piece on ``--resume`` and falls back past damaged ones.
    """
    return any(Path(checkpoint_dir).glob("iter-*/MANIFEST"))


def run_solver(
    input_path: str | Path,
    output: str | Path | None,
    ranks: int = 1,
    grid: str = "auto",
    tile: int = default_of("solver.tile"),
    broadcast: str = default_of("solver.broadcast"),
    lookahead: bool | str = default_of("solver.lookahead"),
    threads: int | None = None,
    backend: str = "cpu",
    extra_args: Iterable[str] = (),
    *,
    chunk_bytes: int | None = None,
    validate_rows: int = 0,
    binary: str | Path | None = None,
    on_progress: Callable[[str], None] | None = None,
    timeout: float | None = None,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int | str | None = DEFAULT_CHECKPOINT_EVERY,
    sources: Iterable[int] | None = None,
) -> dict[str, Any]:
    """Run ``apsp-fw`` on ``ranks`` MPI ranks (mpirun, or srun inside a Slurm allocation) and
    return its JSON summary.

    Progress lines (stderr of rank 0) are passed to ``on_progress`` (default: echoed to
    our stderr). On failure raises :class:`SolverError` with the exit status and the tail
    of the log, which holds the solver's own ``apsp-fw: error: ...`` message.

    Checkpoints go to ``checkpoint_dir`` (default ``<output>.checkpoints``; none without an
    output) every ``checkpoint_every`` iterations, or seconds with an ``s`` suffix ("300s";
    None or 0: write none). A complete checkpoint already there is resumed from
    automatically; inputs that do not match it (graph, n, tile, grid) make apsp-fw refuse,
    and the SolverError says so. After a successful run the checkpoints are removed.

    ``sources`` (vertex ids): rows mode, ``apsp-fw --sources`` on a temporary file of these
    ids; the output holds their distance rows (duplicates or ids outside 0..n-1 make
    apsp-fw refuse). There are no checkpoints in that mode.
    """
    exe = Path(binary) if binary else find_solver()
    rows_mode = sources is not None
    if rows_mode:
        checkpoint_dir = None
    elif checkpoint_dir is None and output is not None:
        checkpoint_dir = default_checkpoint_dir(output)
    resume = checkpoint_dir is not None and has_checkpoint(checkpoint_dir)
    with tempfile.TemporaryDirectory(prefix="apsp-fw-") as tmp:
        summary_path = Path(tmp) / "summary.json"
        sources_file = write_sources_file(Path(tmp) / "sources.txt", sources) if rows_mode else None
        cmd = (
            mpirun_command(ranks, threads or default_threads_per_rank(ranks))
            + [str(exe)]
            + solver_arguments(
                input_path,
                output,
                grid=grid,
                tile=tile,
                broadcast=broadcast,
                chunk_bytes=chunk_bytes,
                lookahead=lookahead,
                threads=threads,
                backend=backend,
                validate_rows=validate_rows,
                summary_json=summary_path,
                checkpoint_dir=checkpoint_dir,
                checkpoint_every=checkpoint_every,
                resume=resume,
                sources_file=sources_file,
            )
            + [str(a) for a in extra_args]
        )
        env = dict(os.environ)
        if threads:
            env["OMP_NUM_THREADS"] = str(int(threads))
        echo = on_progress or (lambda line: print(line, file=sys.stderr, flush=True))
        echo(f"launching: {shlex.join(cmd)}")
        log_tail: collections.deque[str] = collections.deque(maxlen=60)
        # A session of its own, so that stop_job can find every rank (pipeline.runtime.process.session_processes).
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
        )
        assert proc.stderr is not None

        def relay_log(stream: Iterable[str]) -> None:
            for line in stream:
                line = line.rstrip("\n")
                log_tail.append(line)
                if line.startswith(_NOTICE_PREFIXES):
                    echo(line)

        # The log is read beside the wait, so that the timeout holds while the job runs.
        relay = threading.Thread(target=relay_log, args=(proc.stderr,), daemon=True)
        relay.start()
        try:
            status = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            stop_job(proc)
            raise SolverError(f"apsp-fw timed out after {timeout} s: {' '.join(cmd)}") from exc
        except BaseException:
            stop_job(proc)
            raise
        relay.join(timeout=30)
        if status != 0:
            tail = "\n".join(log_tail)
            raise SolverError(f"apsp-fw failed with exit status {status}: {' '.join(cmd)}\n{tail}")
        if not summary_path.exists():
            raise SolverError(f"apsp-fw exited 0 but wrote no summary: {' '.join(cmd)}")
        summary = json.loads(summary_path.read_text())
    if checkpoint_dir is not None and output is not None:
        # The output is complete and in place; its checkpoints are no longer needed.
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
    summary["command"] = cmd
    return summary
