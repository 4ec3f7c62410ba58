"""What the artifact contracts alone cost an update-file rerun: a lower bound on its wall.

    .venv/bin/python bench/rerun_floor.py --build data/results-10m-B/builds/<update rerun> \\
        --config data/synth-10m/config-full-B.yaml --first-build-seconds 206.0 \\
        --label "10M calibrated + 1 PubMed update file" [--repeat 3]

An update file (docs/design.md §4) deletes a few hundred papers and revises some thousands, and
the contracts (../shared/DESIGN.md §3-4) then make a rerun write these again whole, however
little changed:

* the tables: each build holds complete Parquet tables that a user's own reader takes as they
  are, so a deleted paper's mentions, predications and sentences are gone from the files, and the
  documents hold the revised rows: every file of the four is written again;
* the graphs: vertex ids are dense, concepts by CUI then abstracts by id, so one deleted or newly
  cited abstract renumbers every abstract after it: the full graph's vertices, edges, CSR
  (graph.bp) and path index are written again, and the co-occurrence graph's, whose weights move
  with the deleted predications.

For each of those files of ``--build`` the script times the least its writer can do: encode the
rows already in memory (Parquet with the file's own column encodings, compression and statistics;
graph.bp and path_index.bp with the stage's ADIOS2 writers), and separately the read (decode)
that any rewrite needs first. A rerun that computed nothing else would still take the workflow's
fixed cost -- ``make run`` with nothing to do (the set-up's checks, the servers', Snakemake's
start and ``describe``; ``--config`` names a config whose build is complete) -- and these writes
spread over every core. That sum, against ``--first-build-seconds`` (a first build measured in
the same session on the same machine), is the floor the issue's "rerun in <= 10 % of the first
build" meets on this machine. Appends the medians, the floor and the CPU model to
``bench/results/rerun_floor.md`` (+ ``.json``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from on_demand_paths import append_run, cpu_model  # noqa: E402

from pipeline.builds.layout import BuildLayout  # noqa: E402
from pipeline.store.adios import read_graph_bp, read_path_index_bp, write_graph_bp, write_path_index_bp  # noqa: E402

TABLES = ("documents", "mentions", "predications", "sentences")
SCOPES = ("full", "cooccurrence")
DICTIONARY_ENCODINGS = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}


def parquet_settings(path: Path) -> dict:
    """The writer settings ``path`` was written with, read from its first row group: the columns
    it dictionary-encoded, its compression and the columns with statistics."""
    metadata = pq.ParquetFile(path).metadata
    if metadata.num_row_groups == 0:
        return {}
    group = metadata.row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    codec = columns[0].compression.lower() if columns else "snappy"
    return {
        "use_dictionary": [c.path_in_schema for c in columns if DICTIONARY_ENCODINGS & set(c.encodings)],
        "compression": "none" if codec == "uncompressed" else codec,  # the writer's name for it
        "write_statistics": [c.path_in_schema for c in columns if c.is_stats_set],
    }


def timed(action: Callable[[], Any]) -> tuple[Any, tuple[float, float]]:
    """``action()``'s result, and the (wall, CPU of this process) seconds it took."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return result, (time.perf_counter() - wall, time.process_time() - cpu)


def parquet_rewrite(path: Path, scratch: Path) -> dict[str, tuple[float, float]]:
    """The read of ``path`` whole and the write of its rows again with its own settings, timed."""
    settings = parquet_settings(path)
    table, read = timed(lambda: pq.read_table(path))
    out = scratch / path.name
    _, write = timed(lambda: pq.write_table(table, out, **settings))
    out.unlink()
    return {"read": read, "write": write}


def bp_rewrite(path: Path, scratch: Path) -> dict[str, tuple[float, float]]:
    """graph.bp or path_index.bp read whole and written again with the stage's writer, timed."""
    graph = path.name == "graph.bp"
    (arrays, attributes), read = timed(lambda: (read_graph_bp if graph else read_path_index_bp)(path))
    out = scratch / path.name
    if graph:  # arrays: (n, row_ptr, col_idx, cost)
        _, write = timed(lambda: write_graph_bp(out, *arrays, attributes))
    else:
        _, write = timed(lambda: write_path_index_bp(out, arrays, attributes))
    shutil.rmtree(out)
    return {"read": read, "write": write}


def rewritten_files(build: BuildLayout) -> list[Path]:
    """The files the contracts make an update rerun write whole (see the module's docstring)."""
    files = [build.tables.table(name) for name in TABLES]
    for scope in SCOPES:
        graph = build.graph(scope)
        files += [graph.vertices, graph.edges, graph.graph_bp]
        if graph.path_index.exists():
            files.append(graph.path_index)
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        sys.exit(f"rerun_floor: not a complete build, missing {', '.join(missing)}")
    return files


def fixed_cost(config: Path) -> float:
    """Seconds of ``make run`` when the config's build is complete and nothing is to be done."""
    started = time.perf_counter()
    done = subprocess.run(["make", "run", f"CONFIG={config}"], cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or "Nothing to be done" not in done.stdout + done.stderr:
        sys.exit(f"rerun_floor: `make run CONFIG={config}` did work or failed; give a config whose build is complete\n"
                 + (done.stdout + done.stderr)[-2000:])  # fmt: skip
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, required=True, help="a complete update-rerun build folder")
    parser.add_argument("--config", type=Path, required=True, help="a config whose build is complete (the fixed cost)")
    parser.add_argument("--first-build-seconds", type=float, required=True, help="this session's first build's wall")
    parser.add_argument("--label", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "rerun_floor.md")
    args = parser.parse_args()

    build = BuildLayout(args.build)
    files = rewritten_files(build)
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {}
    fixed: list[float] = []
    with tempfile.TemporaryDirectory(prefix="rerun-floor-", dir=args.build.parent) as scratch:
        for repetition in range(args.repeat):
            fixed.append(fixed_cost(args.config))
            for path in files:
                name = str(path.relative_to(args.build))
                rewrite = bp_rewrite if path.suffix == ".bp" else parquet_rewrite
                for step, times in rewrite(path, Path(scratch)).items():
                    samples.setdefault(name, {}).setdefault(step, []).append(times)
            print(f"rerun_floor: repetition {repetition + 1}/{args.repeat} done", file=sys.stderr)

    def median(name: str, step: str, which: int) -> float:
        return statistics.median(t[which] for t in samples[name][step])

    write_cpu = sum(median(n, "write", 1) for n in samples)
    read_cpu = sum(median(n, "read", 1) for n in samples)
    fixed_s = statistics.median(fixed)
    floor_write = fixed_s + write_cpu / args.cores
    floor_rewrite = fixed_s + (write_cpu + read_cpu) / args.cores
    first = args.first_build_seconds
    lines = [
        "",
        f"## {args.label} ({datetime.now(UTC):%Y-%m-%d}, {cpu_model()}, {args.cores} cores; medians of {args.repeat})",
        "",
        f"Build `{args.build.name}`; first build {first:.1f} s (this session). Seconds of one core:",
        "",
        "| file | bytes | read (decode) | write (encode) |",
        "|---|---:|---:|---:|",
    ]
    for name in samples:
        path = args.build / name
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
        lines.append(f"| `{name}` | {size / 1e6:,.0f} MB | {median(name, 'read', 1):.2f} | {median(name, 'write', 1):.2f} |")
    lines += [
        f"| **sum** | | {read_cpu:.2f} | {write_cpu:.2f} |",
        "",
        f"- Fixed cost (`make run`, nothing to do): {fixed_s:.2f} s (runs: {', '.join(f'{s:.2f}' for s in fixed)}).",
        f"- Floor, the writes alone over {args.cores} cores: {fixed_s:.2f} + {write_cpu:.2f} / {args.cores} = "
        f"**{floor_write:.1f} s = {100 * floor_write / first:.1f} %** of the first build.",
        f"- Floor with each file's read: {fixed_s:.2f} + {write_cpu + read_cpu:.2f} / {args.cores} = "
        f"**{floor_rewrite:.1f} s = {100 * floor_rewrite / first:.1f} %**.",
        f"- 10 % of the first build is {first / 10:.1f} s.",
    ]
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "label": args.label, "cpu": cpu_model(),
        "cores": args.cores, "build": args.build.name, "first_build_s": first, "fixed_s": fixed,
        "files": {n: {s: [list(t) for t in v] for s, v in steps.items()} for n, steps in samples.items()},
        "floor_write_s": floor_write, "floor_rewrite_s": floor_rewrite,
    }  # fmt: skip
    append_run(args.out, "# The floor the artifact contracts set an update-file rerun (issue 27)\n", lines, record)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
