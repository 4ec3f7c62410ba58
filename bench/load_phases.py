"""The load's two heaviest steps at scale, timed in this checkout's code and in a baseline checkout
(``git worktree add /tmp/base <commit>``), each run in its own process on the same build:

* routing: predications to their concept--concept edge (``evidence_rows._evidence_rows``), the
  first ``--batches`` batches of 262,144 predications;
* papers: one doc_id range's readable evidence (``paper_evidence.group_papers`` with its sentences
  scan), the predications with ``--low`` <= doc_id < ``--high``.

    .venv/bin/python bench/load_phases.py --build data/run27-30m/results/builds/<id> \\
        --baseline /tmp/base [--repeats 3] [--out bench/results/mongo_load.md]

Each step's outputs are compared (row counts and a checksum of the edge indices; the papers'
tables equal) so that a faster step that answers differently fails here. Medians of
``--repeats`` runs, alternating the two codes; appended to ``--out`` with the CPU model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

_STEP = r'''
import hashlib, itertools, json, sys, time
from pathlib import Path
import pyarrow.compute as pc, pyarrow.dataset as ds
step, build, batches, low, high = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
from pipeline.store import evidence_rows as e
if step == "routing":
    keys = e.concept_edge_keys(build / "graph")
    started = time.perf_counter(); rows = checksum = 0
    for part in itertools.islice(e._evidence_rows(build / "tables", keys, 1 << 18), batches):
        rows += part.num_rows; checksum += int(part["edge"].to_numpy().sum())
    seconds = time.perf_counter() - started
    answer = f"{rows}:{checksum}"
else:
    from pipeline.store import paper_evidence as p
    sources = e.ReadableSources.of_build(build / "tables", 3)
    where = (pc.field("doc_id") >= low) & (pc.field("doc_id") < high)
    rows = p._as_strings(ds.dataset(str(build / "tables" / "predications.parquet")).to_table(columns=p._COLUMNS, filter=where))
    started = time.perf_counter()
    papers = p.group_papers(rows, sources)
    seconds = time.perf_counter() - started
    from pipeline.store.buckets import encode
    answer = hashlib.sha256(encode(papers.combine_chunks())).hexdigest()[:16] + f":{papers.num_rows}:{rows.num_rows}"
print(json.dumps({"seconds": seconds, "answer": answer}))
'''


def _run(root: Path, step: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-c", _STEP, step, str(args.build), str(args.batches), args.low, args.high]
    done = subprocess.run(command, cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, required=True, help="checkout of the code to compare against")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--low", default="PMID:2")
    parser.add_argument("--high", default="PMID:21")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.build = args.build.resolve()
    here = Path(__file__).resolve().parents[1]
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")), "?")
    lines = [f"\n## {datetime.now(UTC).isoformat(timespec='seconds')} -- load steps at scale (`bench/load_phases.py`)\n",
             f"build {args.build.name}; baseline {args.baseline}; machine: {model}, {len(__import__('os').sched_getaffinity(0))} CPUs; "
             f"median of {args.repeats} runs each, alternating, each in its own process\n",
             "| step | baseline s | this code s | speed-up | same answer |", "|---|---:|---:|---:|---|"]  # fmt: skip
    for step, what in (("routing", f"predications to edges, {args.batches} batches of 262,144"),
                       ("papers", f"papers' evidence of {args.low} <= doc_id < {args.high}")):  # fmt: skip
        base, this = [], []
        for _ in range(args.repeats):
            base.append(_run(args.baseline, step, args))
            this.append(_run(here, step, args))
        same = {r["answer"] for r in base} == {r["answer"] for r in this} and len({r["answer"] for r in this}) == 1
        b, t = statistics.median(r["seconds"] for r in base), statistics.median(r["seconds"] for r in this)
        lines.append(f"| {what} | {b:.2f} | {t:.2f} | {b / t:.2f}x | {'yes' if same else 'NO'} |")
        if not same:
            print(f"{step}: the answers differ: {base[0]['answer']} vs {this[0]['answer']}", file=sys.stderr)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with args.out.open("a") as out:
            out.write(text)


if __name__ == "__main__":
    main()
