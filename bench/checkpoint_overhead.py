"""Benchmark: apsp-fw's checkpoint overhead against the same run without checkpoints.

    .venv/bin/python bench/checkpoint_overhead.py                              # n = 8192 (the target)
    .venv/bin/python bench/checkpoint_overhead.py --n 1536 --every 2s 0.5s     # quick check

A random directed graph (Matrix Market, ``--degree`` edges per vertex, seeded) is solved
``--repeat`` times per setting on the same grid and tile: without checkpoints, then with
``--checkpoint-every`` each of ``--every`` (seconds with an ``s`` suffix, or iterations).
Runs alternate between settings so drift in a shared machine's load spreads evenly. The
overhead is the median solve time with checkpoints over the median without, minus one;
the target is at most 5 % at one checkpoint per minute of solve time. Every checkpointed
run's distances must equal the plain run's bit for bit (checked). Results are appended to
``bench/results/checkpoint_overhead.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.solve.apsp_fw import find_solver, mpirun_command  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "checkpoint_overhead.md"


def write_graph(path: Path, n: int, degree: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = n * degree
    src = rng.integers(0, n, m) + 1
    dst = rng.integers(0, n, m) + 1
    cost = rng.uniform(0.1, 10.0, m)
    with path.open("w") as out:
        out.write(f"%%MatrixMarket matrix coordinate real general\n{n} {n} {m}\n")
        np.savetxt(out, np.column_stack([src, dst, cost]), fmt=["%d", "%d", "%.6g"])


def distances_digest(path: Path) -> str:
    """sha256 of the `distance` values (BP5 data files hold the tiles in write order)."""
    from pipeline.store.bpfiles import bp_reader

    with bp_reader(path) as reader:
        var = reader.inquire_variable("distance")
        n = int(var.shape()[0])
        digest = hashlib.sha256()
        for r0 in range(0, n, 1024):
            rows = min(1024, n - r0)
            digest.update(np.asarray(reader.read("distance", [r0, 0], [rows, n]), dtype=np.float32).tobytes())
    return digest.hexdigest()


def solve(args: argparse.Namespace, graph: Path, work: Path, every: str | None) -> dict:
    out = work / "distances.bp"
    ckpt = work / "checkpoints"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    cmd = mpirun_command(args.ranks) + [
        str(find_solver()),
        "--input", str(graph),
        "--output", str(out),
        "--grid", args.grid,
        "--tile", str(args.tile),
        "--threads", str(args.threads),
        "--broadcast", args.broadcast,
    ]  # fmt: skip
    if every:
        cmd += ["--checkpoint-dir", str(ckpt), "--checkpoint-every", every]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"apsp-fw failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    checkpoint_bytes = sum(f.stat().st_size for f in ckpt.rglob("*") if f.is_file()) if every else 0
    return {
        "solve": summary["seconds"]["solve"],
        "checkpoint_seconds": summary["seconds"].get("checkpoint") or 0.0,
        "written": (summary.get("checkpoint") or {}).get("written", 0),
        "kept_bytes": checkpoint_bytes,
        "digest": distances_digest(out),
        "command": cmd,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--degree", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every", nargs="+", default=["60s", "10s"], help="checkpoint intervals to compare")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--grid", default="2x1")
    parser.add_argument("--tile", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--broadcast", default="ring")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None, help="where graph, output and checkpoints go")
    parser.add_argument("--no-record", action="store_true", help="do not append to the results file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ckpt-bench-", dir=args.workdir) as tmp:
        work = Path(tmp)
        graph = work / "graph.mtx"
        write_graph(graph, args.n, args.degree, args.seed)
        settings: list[str | None] = [None, *args.every]
        runs: dict[str | None, list[dict]] = {s: [] for s in settings}
        for _ in range(args.repeat):
            for every in settings:
                result = solve(args, graph, work, every)
                runs[every].append(result)
                label = every or "none"
                print(
                    f"every={label:>6}  solve {result['solve']:8.2f} s  checkpoints {result['written']:3d} "
                    f"in {result['checkpoint_seconds']:6.2f} s",
                    flush=True,
                )

    base = statistics.median(r["solve"] for r in runs[None])
    reference = runs[None][0]["digest"]
    rows = []
    for every in args.every:
        solve_s = statistics.median(r["solve"] for r in runs[every])
        written = statistics.median(r["written"] for r in runs[every])
        ckpt_s = statistics.median(r["checkpoint_seconds"] for r in runs[every])
        identical = all(r["digest"] == reference for r in runs[every])
        per_minute = written / solve_s * 60 if solve_s > 0 else 0
        rows.append(
            f"| {every} | {written:.0f} | {per_minute:.2f} | {solve_s:.2f} | {base:.2f} | "
            f"{100 * (solve_s / base - 1):+.2f} % | {ckpt_s:.2f} | "
            f"{(ckpt_s / written if written else 0):.3f} | {runs[every][0]['kept_bytes'] / 2**20:.1f} | "
            f"{'yes' if identical else 'NO'} |"
        )
        if not identical:
            print(
                f"error: distances with --checkpoint-every {every} differ from the plain run", file=sys.stderr
            )

    now = datetime.now(UTC).isoformat(timespec="seconds")
    header = (
        f"\n## {now}: n = {args.n}, degree {args.degree}, {args.ranks} ranks ({args.grid}), tile {args.tile}, "
        f"{args.threads} thread(s)/rank, repeat {args.repeat}\n\n"
        f"Host: {platform.node()} ({platform.machine()}, {os.cpu_count()} logical CPUs); checkpoints on "
        f"{args.workdir or tempfile.gettempdir()}.\n"
        f"Command: `.venv/bin/python bench/checkpoint_overhead.py {' '.join(sys.argv[1:])}`\n\n"
        "| every | checkpoints | per minute | solve s (median) | no-checkpoint s | overhead | "
        "checkpoint s | s per checkpoint | kept MiB | bit-identical |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    text = header + "\n".join(rows) + "\n"
    print(text)
    if not args.no_record:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        if not RESULTS.exists():
            RESULTS.write_text(
                "# apsp-fw checkpoint overhead\n\n"
                "Produced by `bench/checkpoint_overhead.py`: solve seconds with `--checkpoint-every` against "
                "the same run without checkpoints (target: at most 5 % at one checkpoint per minute).\n"
            )
        with RESULTS.open("a") as out:
            out.write(text)


if __name__ == "__main__":
    main()
