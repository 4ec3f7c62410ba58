"""Benchmark: the distinct values of int64 keys, ``distinct_sorted`` against ``np.unique`` in the
same run.

From numpy 2.3, ``np.unique`` of an integer array without ``return_*`` finds the distinct values in
a hash table and sorts those; ``pipeline.runtime.columnar.distinct_sorted`` sorts the keys and
keeps each value that differs from the one before (docs/design.md, "Distinct values by a sort").
The cases are the shapes litpath takes distinct values of -- ids and pair codes, most of them
distinct, random or already in order -- and one with few distinct values, where the hash table
wins. Each case: the median of ``--repeat`` runs of each, their ratio, and a check that both give
the same array.

Results are printed and appended to bench/results/distinct_values.md and .json with the CPU
model, numpy's version and the load average (other work may share the cores).

    .venv/bin/python bench/distinct_values.py            # 10M keys
    .venv/bin/python bench/distinct_values.py --n 30000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from on_demand_paths import append_run, cpu_model  # noqa: E402

from pipeline.runtime.columnar import distinct_sorted  # noqa: E402

RESULTS = REPO / "bench" / "results" / "distinct_values.md"


def cases(n: int, seed: int) -> dict[str, np.ndarray]:
    """Keys of n int64 values each: name -> keys."""
    rng = np.random.default_rng(seed)
    return {
        "ids, 57 % distinct, random order": rng.integers(0, int(n * 0.8), n),  # n draws of 0.8 n values
        "ids, 57 % distinct, ascending": np.sort(rng.integers(0, int(n * 0.8), n)),
        "pair codes (wide), all but a few distinct": rng.integers(0, 1 << 40, n),
        "1,000 distinct values": rng.integers(0, 1000, n),
    }


def median_seconds(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="keys per case")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, the median reported")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for name, keys in cases(args.n, args.seed).items():
        same = np.array_equal(distinct_sorted(keys), np.unique(keys))
        ours = median_seconds(lambda keys=keys: distinct_sorted(keys), args.repeat)
        peer = median_seconds(lambda keys=keys: np.unique(keys), args.repeat)
        rows.append({"case": name, "distinct": int(len(distinct_sorted(keys))), "distinct_sorted_s": round(ours, 4),
                     "np_unique_s": round(peer, 4), "ratio": round(peer / ours, 2), "same": bool(same)})  # fmt: skip
        print(f"{name}: distinct_sorted {ours:.3f} s, np.unique {peer:.3f} s ({peer / ours:.2f}x), same: {same}")
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "cpu": cpu_model(), "cores": os.cpu_count(),
        "numpy": np.__version__, "n": args.n, "repeat": args.repeat, "load_average": os.getloadavg()[0], "cases": rows,
    }  # fmt: skip
    lines = [
        f"\n## {record['date']} -- {args.n:,} int64 keys a case, medians of {args.repeat}",
        "",
        f"machine: {record['cpu']}, {record['cores']} CPUs; numpy {record['numpy']}; load average at the end "
        f"{record['load_average']:.2f}",
        "",
        "| keys | distinct | distinct_sorted s | np.unique s | np.unique / distinct_sorted | same array |",
        "|---|---:|---:|---:|---:|---|",
        *(f"| {r['case']} | {r['distinct']:,} | {r['distinct_sorted_s']:.3f} | {r['np_unique_s']:.3f} | "
          f"{r['ratio']:.2f}x | {r['same']} |" for r in rows),  # fmt: skip
    ]
    append_run(RESULTS, "# Distinct int64 values: distinct_sorted against np.unique (bench/distinct_values.py)", lines,
               record)  # fmt: skip
    print(f"appended to {RESULTS}")


if __name__ == "__main__":
    main()
