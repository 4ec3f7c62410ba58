"""The merge on the delta against the full merge of the same files, in the same run.

    .venv/bin/python bench/incremental_merge.py --build results/builds/<id> [--earlier results/builds/<id>] \\
        --label "10M calibrated + 1 PubMed update file" [--repeat 3]

``--build`` is a complete build whose inputs are ``--earlier``'s plus some files (by default the
build :func:`pipeline.builds.record.earlier_build` finds). Each repetition merges the build's
ingested files twice into a scratch folder: whole (what a user without ``ingest.incremental``
gets) and on the delta from the earlier build's tables; every table of the two must be equal
(values and order), and equal to the build's own. Appends the medians, their ratio and the CPU
model to ``bench/results/incremental_merge.md`` (+ ``.json``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from on_demand_paths import append_run, cpu_model  # noqa: E402

from pipeline.builds.identity import InputFile, unread_kinds  # noqa: E402
from pipeline.builds.layout import BuildLayout, results_of  # noqa: E402
from pipeline.builds.record import earlier_build  # noqa: E402
from pipeline.merge import merge_ingested  # noqa: E402
from pipeline.runtime.progress import format_seconds  # noqa: E402


def ingested_folders(build: BuildLayout) -> list[Path]:
    """The ingest folders of a build's inputs, in input order (from its config.yaml), without the
    kinds no stage reads (ENTITY files under mention_source predications), as the workflow does."""
    results = results_of(build.root)
    settings = yaml.safe_load(build.config.read_text())
    unread = unread_kinds(settings)
    folders = []
    for entry in settings["resolved_inputs"]:
        if entry["kind"] in unread:
            continue
        key = InputFile(entry["kind"], Path(entry["path"]), entry["sha256"], 0).key  # the one spelling of it
        folders.append(Path(results.ingest(entry["kind"], key).path))
    return folders


def unequal_tables(left: Path, right: Path) -> list[str]:
    """The tables of ``right`` that ``left`` does not hold equal (values, types and order)."""
    return [p.name for p in sorted(right.glob("*.parquet")) if not pq.read_table(left / p.name).equals(pq.read_table(p))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--earlier", type=Path, help="default: the build earlier_build finds")
    parser.add_argument("--label", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scratch", type=Path, default=None, help="where the merges are written (default /tmp)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "incremental_merge.md")
    args = parser.parse_args()

    build = BuildLayout(args.build)
    earlier = BuildLayout(args.earlier or earlier_build(build.root) or sys.exit(f"{build.root}: no earlier build"))
    settings = yaml.safe_load(build.config.read_text())
    config = {"mention_source": settings["ingest"]["mention_source"], "resources": settings.get("resources", {})}
    folders = ingested_folders(build)
    times: dict[str, list[float]] = {"full": [], "delta": []}
    scratch = Path(tempfile.mkdtemp(prefix="incremental-merge-", dir=args.scratch))
    try:
        for repetition in range(args.repeat):
            for how in ("full", "delta"):
                out = scratch / how
                shutil.rmtree(out, ignore_errors=True)
                previous = Path(earlier.tables.path) if how == "delta" else None
                started = time.perf_counter()
                counts = merge_ingested(folders, out, dict(config), previous=previous)
                times[how].append(time.perf_counter() - started)
                if how == "delta" and not counts["incremental"]["used"]:
                    sys.exit(f"the merge was not done on the delta: {counts['incremental']['reason']}")
                print(f"{how} {repetition + 1}/{args.repeat}: {format_seconds(times[how][-1])}", flush=True)
            unequal = unequal_tables(scratch / "delta", scratch / "full") + unequal_tables(Path(build.tables.path), scratch / "full")
            if unequal:
                sys.exit(f"tables differ from the full merge's: {unequal}")
        added = counts["incremental"]["files_added"] if "files_added" in counts["incremental"] else None
        rows = {name: counts["tables"][name] for name in sorted(counts["tables"])}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    full, delta = statistics.median(times["full"]), statistics.median(times["delta"])
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "label": args.label, "cpu": cpu_model(),
        "build": build.build_id, "earlier": earlier.build_id, "files": len(folders), "files_added": added,
        "repeat": args.repeat, "full_s": times["full"], "delta_s": times["delta"],
        "full_median_s": round(full, 2), "delta_median_s": round(delta, 2), "ratio": round(full / delta, 2),
        "tables": rows, "tables_equal": True,
    }  # fmt: skip
    lines = [
        f"\n## {record['date']} -- {args.label} ({record['cpu']})\n",
        f"Build `{build.build_id}` ({len(folders)} files) on top of `{earlier.build_id}`; "
        f"{args.repeat} repetitions of each merge, the medians:\n",
        "| merge | median | runs |",
        "|---|---:|---|",
        f"| full (every file) | {full:.1f} s | {', '.join(f'{t:.1f}' for t in times['full'])} |",
        f"| on the delta | {delta:.1f} s | {', '.join(f'{t:.1f}' for t in times['delta'])} |",
        "",
        f"The delta merge is **{full / delta:.1f}x** faster; every table equal to the full merge's and "
        f"to the build's ({', '.join(f'{n:,} {name}' for name, n in rows.items())}).",
    ]
    append_run(args.out, "# The merge on the delta against the full merge (bench/incremental_merge.py)", lines, record)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
