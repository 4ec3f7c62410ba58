"""Benchmark: the SENTENCE and ENTITY readers, block path against the record path and pandas.

    flock /tmp/litpath-heavy.lock .venv/bin/python bench/semmeddb_readers.py            # 1M predications
    .venv/bin/python bench/semmeddb_readers.py --scale 100000 --repeats 1 --no-record     # a smoke run

The corpus is the calibrated profile of ``litpath synth`` (a release's 2.0 SENTENCE and 14.95
ENTITY rows per predication), cached in ``${LITPATH_CACHE:-~/.cache/litpath}/bench-readers-<scale>/``
(generation is not timed). Each table is read, in the same run and in alternation, by:

* **block**: ``ingest_file(kind, path, out)``, litpath's reader as the workflow runs it (Arrow
  blocks, column-wise checks, quarantine and counts);
* **record**: the same with ``block_path=False``, the csv-module loop the block path replaced
  (the reference the tests hold it equal to);
* **pandas**: ``pd.read_csv`` with the dump's options into a DataFrame, what an analyst would
  write first (no validation, no quarantine, no Parquet output: a lower bound on a plain reader).

Each run is a child process (its own peak RSS); the medians of ``--repeats`` runs and the ratios
against the block path are appended to ``bench/results/semmeddb_readers.md`` with the CPU model.
The block and record outputs are compared (same tables) on the first repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS_MD = ROOT / "bench" / "results" / "semmeddb_readers.md"
TABLES = {
    "semmeddb_sentence": ("semmedVER43_R_SENTENCE.csv.gz", 9),
    "semmeddb_entity": ("semmedVER43_R_ENTITY.csv.gz", 11),
}

CHILD = r"""
import json, sys, time
kind, path, out, how, width = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
started = time.perf_counter()
if how == "pandas":
    import pandas as pd
    frame = pd.read_csv(path, header=None, names=range(width), quotechar='"', escapechar="\\",
                        na_values=["\\N"], keep_default_na=False, encoding="latin-1", dtype=str,
                        compression="gzip")
    rows = len(frame)
else:
    from pipeline.ingest.run import ingest_file
    counts = ingest_file(kind, path, out, block_path=(how == "block"))
    rows = counts.rows_read
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent.
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": time.perf_counter() - started, "rows": rows, "peak_rss_mib": hwm / 1024}))
"""


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def corpus(scale: int) -> Path:
    from pipeline.ingest.synth import generate_corpus

    cache = Path(os.environ.get("LITPATH_CACHE", "~/.cache/litpath")).expanduser() / f"bench-readers-{scale}"
    if not (cache / "manifest.json").exists():
        generate_corpus(cache, scale, seed=1, profile="calibrated")
    return cache / "semmeddb"


def run_once(kind: str, path: Path, out: Path, how: str, width: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path), str(out), how, str(width)],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def same_tables(kind: str, block: Path, record: Path) -> bool:
    import pyarrow.parquet as pq

    names = ["sentences"] if kind == "semmeddb_sentence" else ["entity_mentions", "concepts"]
    return all(pq.read_table(block / f"{n}.parquet").equals(pq.read_table(record / f"{n}.parquet")) for n in names + ["quarantine"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    folder = corpus(args.scale)
    results = {}
    with tempfile.TemporaryDirectory(prefix="litpath-bench-readers-") as tmp:
        for kind, (name, width) in TABLES.items():
            path = folder / name
            runs: dict[str, list[dict]] = {"block": [], "record": [], "pandas": []}
            equal = None
            for repeat in range(args.repeats):
                for how in runs:  # alternated, so drift in the machine's load touches all three
                    out = Path(tmp) / f"{kind}-{how}-{repeat}"
                    runs[how].append(run_once(kind, path, out, how, width))
                    print(f"{kind} {how} #{repeat + 1}: {runs[how][-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
                if repeat == 0:
                    equal = same_tables(kind, Path(tmp) / f"{kind}-block-0", Path(tmp) / f"{kind}-record-0")
            results[kind] = {
                "file": name, "bytes_gz": path.stat().st_size, "rows": runs["block"][0]["rows"], "same_tables": equal,
                **{how: {"median_s": statistics.median(r["seconds"] for r in rs),
                         "peak_rss_mib": max(r["peak_rss_mib"] for r in rs)} for how, rs in runs.items()},
            }  # fmt: skip
    report(args, results)


def report(args, results: dict) -> None:
    lines = [
        f"\n## {datetime.now(UTC).isoformat(timespec='seconds')} -- {args.scale:,} predications, calibrated "
        f"profile (`bench/semmeddb_readers.py --scale {args.scale} --repeats {args.repeats}`)\n",
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs; load average at the end "
        f"{os.getloadavg()[0]:.2f}; medians of {args.repeats} runs, one child process each\n",
        "| table | rows | reader | median s | rows/s | peak RSS MiB | block path speed-up |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in results.values():
        for how in ("block", "record", "pandas"):
            s = r[how]["median_s"]
            lines.append(
                f"| {r['file']} | {r['rows']:,} | {how} | {s:.1f} | {r['rows'] / s:,.0f} | "
                f"{r[how]['peak_rss_mib']:,.0f} | {s / r['block']['median_s']:.2f}x |"
            )
        lines.append(f"| | | block = record tables | {r['same_tables']} | | | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_record:
        if not RESULTS_MD.exists():
            RESULTS_MD.write_text(
                "# SemMedDB SENTENCE and ENTITY readers (bench/semmeddb_readers.py)\n\n"
                "The block path (Arrow, column-wise) against the record path it replaced and a plain\n"
                "`pandas.read_csv`; ratios are the other reader's median over the block path's, in one run.\n"
            )
        with RESULTS_MD.open("a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
