"""The merge on given ingest folders with this checkout's code and with an earlier commit's, in
the same run: wall, CPU time, peak RSS and each step's time, and every table checked equal.

    git worktree add /tmp/merge-previous <commit>
    flock /tmp/litpath-heavy.lock .venv/bin/python bench/merge_scaling.py \\
        --build data/run27-10m/results/builds/279749e0c936 --previous-code /tmp/merge-previous \\
        --label "10M calibrated" [--repeat 3] [--scratch data/h4]

``--build`` names the ingest folders (its config's inputs, in order; or ``--folders``: a file
listing them, one a line). Each repetition runs the whole merge (:func:`pipeline.merge.merge_ingested`,
full, not on a delta) once per code tree, each in its own process (so the peak RSS is its own),
alternating the order between repetitions. The earlier code is the peer a user has without this
change; it runs from ``--previous-code`` (a git worktree), never from dead code kept in pipeline/.
Appends the medians, their ratio, the CPU model and the step times to
``bench/results/merge_scaling.md`` (+ ``.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The merge's steps, by the names pipeline/merge/__init__.py calls them through (timed in the child).
STEP_FUNCTIONS = ("write_documents", "write_mentions", "write_citations", "write_concepts", "write_predications",
                  "write_sentences")  # fmt: skip

# Run in a child process whose PYTHONPATH puts one code tree first: the merge with each step timed.
CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import pipeline.merge as merge
folders, out, config = [Path(p) for p in sys.argv[1].split("\n")], Path(sys.argv[2]), json.loads(sys.argv[3])
steps = {}
def timed(name, function):
    def run(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            steps[name] = [time.perf_counter() - wall, time.process_time() - cpu]
    return run
for name in json.loads(sys.argv[4]):
    if hasattr(merge, name):
        setattr(merge, name, timed(name, getattr(merge, name)))
wall, cpu = time.perf_counter(), time.process_time()
counts = merge.merge_ingested(folders, out, config)
print(json.dumps({"code": merge.__file__, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "steps": steps,
                  "tables": counts["tables"], "merge": counts["merge"]}))
"""


def run_merge(code: Path, folders: list[Path], out: Path, config: dict) -> dict:
    """One merge of ``folders`` into ``out`` with the package under ``code``; its measurements."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "\n".join(map(str, folders)), str(out), json.dumps(config), json.dumps(STEP_FUNCTIONS)],
        env=env, cwd=code, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        sys.exit(f"the merge with {code} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(result["code"]).is_relative_to(code):
        sys.exit(f"the child ran {result['code']}, not the code under {code}")
    return result


def unequal_tables(left: Path, right: Path) -> list[str]:
    """The tables of ``right`` that ``left`` does not hold equal (values, types and order)."""
    import pyarrow.parquet as pq

    return [p.name for p in sorted(right.glob("*.parquet")) if not pq.read_table(left / p.name).equals(pq.read_table(p))]


def identical_files(left: Path, right: Path) -> bool:
    return all((left / p.name).read_bytes() == p.read_bytes() for p in sorted(right.glob("*.parquet")))


def main() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from incremental_merge import ingested_folders
    from on_demand_paths import append_run, cpu_model

    from pipeline.builds.layout import BuildLayout

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--build", type=Path, help="a build whose ingest folders (its inputs, in order) are merged")
    source.add_argument("--folders", type=Path, help="a file listing the ingest folders, one a line")
    parser.add_argument("--previous-code", type=Path, required=True, help="a git worktree of the earlier commit")
    parser.add_argument("--current-code", type=Path, default=REPO,
                        help="the code measured against it (default this checkout; a worktree keeps it fixed while you edit)")  # fmt: skip
    parser.add_argument("--label", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory-gib", type=float, default=0, help="resources.memory_gib (0: the default budget)")
    parser.add_argument("--scratch", type=Path, default=None, help="where the merges are written (default /tmp)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "merge_scaling.md")
    args = parser.parse_args()

    if args.build:
        folders = ingested_folders(BuildLayout(args.build))
    else:
        folders = [Path(line) for line in args.folders.read_text().split()]
    folders = [folder.resolve() for folder in folders]
    config = {"resources": {"memory_gib": args.memory_gib}}
    trees = {"previous": args.previous_code.resolve(), "current": args.current_code.resolve()}
    previous_commit = subprocess.run(["git", "-C", str(trees["previous"]), "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    current_commit = subprocess.run(["git", "-C", str(trees["current"]), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    runs: dict[str, list[dict]] = {"previous": [], "current": []}
    scratch = Path(tempfile.mkdtemp(prefix="merge-scaling-", dir=args.scratch))
    try:
        for repetition in range(args.repeat):
            order = ("previous", "current") if repetition % 2 == 0 else ("current", "previous")
            for code in order:
                runs[code].append(run_merge(trees[code], folders, scratch / code, config))
                last = runs[code][-1]
                print(f"{code} {repetition + 1}/{args.repeat}: wall {last['wall_s']:.1f} s, CPU {last['cpu_s']:.1f} s, "
                      f"peak RSS {last['peak_rss_gib']:.2f} GiB", flush=True)  # fmt: skip
            unequal = unequal_tables(scratch / "previous", scratch / "current")
            if unequal or runs["previous"][-1]["tables"] != runs["current"][-1]["tables"]:
                sys.exit(f"the current merge's tables differ from the previous code's: {unequal}")
            same_bytes = identical_files(scratch / "previous", scratch / "current")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    def median(code: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[code])

    def step_median(code: str, step: str, index: int) -> float:
        return statistics.median(run["steps"].get(step, [0, 0])[index] for run in runs[code])

    rows = runs["current"][-1]["tables"]
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "label": args.label, "cpu": cpu_model(),
        "previous_commit": previous_commit, "current_commit": current_commit, "files": len(folders),
        "repeat": args.repeat, "memory_gib": args.memory_gib, "runs": runs,
        **{f"{code}_median_{key}": round(median(code, key), 2) for code in runs for key in ("wall_s", "cpu_s", "peak_rss_gib")},
        "cpu_ratio": round(median("previous", "cpu_s") / median("current", "cpu_s"), 2),
        "wall_ratio": round(median("previous", "wall_s") / median("current", "wall_s"), 2),
        "tables": rows, "tables_equal": True, "files_identical": same_bytes,
    }  # fmt: skip
    lines = [
        f"\n## {record['date']} -- {args.label} ({record['cpu']})\n",
        f"{len(folders)} ingest folders; the whole merge with the code of `{previous_commit}` (previous) and of "
        f"`{current_commit}` (current), {args.repeat} repetition(s) each, in their own processes, medians:\n",
        "| code | wall | CPU | peak RSS | runs (wall, s) |",
        "|---|---:|---:|---:|---|",
        *(f"| {code} | {median(code, 'wall_s'):.1f} s | {median(code, 'cpu_s'):.1f} s | "
          f"{median(code, 'peak_rss_gib'):.2f} GiB | {', '.join(format(r['wall_s'], '.1f') for r in runs[code])} |"
          for code in runs),  # fmt: skip
        "",
        "| step | previous wall | current wall | previous CPU | current CPU |",
        "|---|---:|---:|---:|---:|",
        *(f"| {step.removeprefix('write_')} | {step_median('previous', step, 0):.1f} s | {step_median('current', step, 0):.1f} s | "
          f"{step_median('previous', step, 1):.1f} s | {step_median('current', step, 1):.1f} s |"
          for step in STEP_FUNCTIONS),  # fmt: skip
        "",
        f"CPU **{record['cpu_ratio']:.2f}x**, wall **{record['wall_ratio']:.2f}x** the previous code's; every table equal "
        f"({'and every file byte for byte' if same_bytes else 'values and order; the files differ in bytes'}: "
        f"{', '.join(f'{n:,} {name}' for name, n in rows.items())}).",
    ]
    append_run(args.out, "# The merge's growth with size: previous against current code (bench/merge_scaling.py)", lines, record)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
