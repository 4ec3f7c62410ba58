"""Record a whole-workflow run at scale: stage times from Snakemake's log, the plans, peak memory.

    .venv/bin/python bench/scale_run.py --log .snakemake/log/<run>.snakemake.log \\
        --build results/builds/<build_id> --label "synth 10M" [--time /tmp/run.time]

Reads the Snakemake log of a ``make run CONFIG=...`` (each job's start and end time), the
build's plans (``graph/plan.json``, ``cooccurrence/plan.json``), solve summaries and counts,
and optionally the ``/usr/bin/time -v`` report of the whole run (wall time, peak RSS of the
largest process), and appends a section to ``bench/results/scale_runs.md`` (+ ``.json``)
with the CPU model. Several logs can be given (a run resumed after a failure): jobs are
taken from all of them.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def job_times(log: Path) -> list[tuple[str, float, datetime, datetime]]:
    """(rule, seconds, start, end) of every finished job in a Snakemake log."""
    started: dict[str, tuple[str, datetime]] = {}
    finished = []
    stamp = None
    rule = None
    for line in log.read_text(errors="replace").splitlines():
        match = STAMP.match(line.strip())
        if match:
            stamp = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y")
            continue
        text = line.strip()
        if text.startswith(("rule ", "localrule ", "checkpoint ")) and text.endswith(":"):
            rule = text.split()[1].rstrip(":")
        elif text.startswith("jobid:") and rule is not None and stamp is not None:
            started[text.split()[1]] = (rule, stamp)
            rule = None
        elif text.startswith("Finished jobid:") and stamp is not None:
            jobid = text.split()[2]
            if jobid in started:
                name, begin = started.pop(jobid)
                finished.append((name, (stamp - begin).total_seconds(), begin, stamp))
    return finished


# The workflow's phases, split where one barrier job starts or ends: every later job needs the merged
# tables (merge_tables), and the comparison's report waits for the store's load (load_mongo, which
# reads back the kinds load_mongo_kind sent as their bucket files were written).
PHASES = ("ingest", "merge", "graph and grouping", "load", "finish")


def _is_load(name: str) -> bool:
    return name == "load_mongo" or name.startswith("load_mongo_")


def phase_walls(jobs: list[tuple[str, float, datetime, datetime]]) -> dict[str, float] | None:
    """Wall seconds of each of :data:`PHASES` in one run: first job to the merge's start, the merge,
    its end to the end of the last job that is not a load (graph, solves, record buckets, mapping,
    and the loads of kinds grouped early, side by side), from there to load_mongo's end (the loads
    left, Snakemake's gap before them included), and its end to the last job. They add up to the
    run's span, and what ran side by side counts once. (Runs recorded before the loads went by
    kind, 2026-11-28, ended the graph phase at load_mongo's start: a second or so of gap apart.)
    None when the run had no merge or no load (a rerun that merged nothing, a store turned off)."""
    first = min(begin for _, _, begin, _ in jobs)
    last = max(end for _, _, _, end in jobs)
    merge = [(begin, end) for name, _, begin, end in jobs if name == "merge_tables"]
    load = [(begin, end) for name, _, begin, end in jobs if name == "load_mongo"]
    if len(merge) != 1 or len(load) != 1:
        return None
    (merge_start, merge_end), (load_start, load_end) = merge[0], load[0]
    others_end = [end for name, _, _, end in jobs if not _is_load(name) and merge_end <= end <= load_start]
    loads_alone = max(others_end, default=merge_end)
    marks = [first, merge_start, merge_end, loads_alone, load_end, last]
    return {phase: (marks[i + 1] - marks[i]).total_seconds() for i, phase in enumerate(PHASES)}


def time_report(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    text = path.read_text(errors="replace")
    out = {}
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    if wall:
        parts = [float(p) for p in wall.group(1).split(":")]
        out["wall_s"] = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    if rss:
        out["peak_rss_mib"] = int(rss.group(1)) / 1024
    return out


def rule_peaks(build: Path) -> dict[str, float]:
    """Peak RSS (MiB) per rule from the workflow's ``benchmark:`` files (results/logs/<build>/):
    Snakemake samples the job's process tree (the shell, ``tee`` and ``litpath``), so a short
    peak between two samples can be missed; ``/usr/bin/time -v`` gives the exact largest one."""
    logs = build.parents[1] / "logs" / build.name
    peaks = {}
    for path in sorted(logs.glob("*.benchmark.tsv")):
        rows = path.read_text().splitlines()
        header = rows[0].split("\t")
        if "max_rss" not in header:
            continue
        values = [row.split("\t")[header.index("max_rss")] for row in rows[1:]]
        numbers = [float(v) for v in values if v not in ("", "NA", "-")]
        if numbers:
            peaks[path.name.removesuffix(".benchmark.tsv")] = max(numbers)
    return peaks


# The record keeps, of the sampled processes, the local servers, every one over the budget and
# the largest workflow processes, with the number sampled: every process of a first build (its
# hundred-odd ingest jobs and more) grew scale_runs.json by 0.3-0.5 MB a run, past 5 MB.
KEPT_PROCESSES = 20


def kept_samples(sampled: dict, budget_gib: float) -> dict:
    """bench/process_rss.py's samples as the record keeps them (KEPT_PROCESSES), largest first."""
    rows = sorted(sampled["processes"], key=lambda row: -row["peak_mib"])
    largest = {id(row) for row in [r for r in rows if not r["server"]][:KEPT_PROCESSES]}
    kept = [r for r in rows if r["server"] or r["peak_mib"] > budget_gib * 1024 or id(r) in largest]
    return {**sampled, "processes": kept, "processes_sampled": sampled.get("processes_sampled", len(rows))}


def sampled_rss_sentence(sampled: dict, budget_gib: float) -> str:
    """One line on bench/process_rss.py's samples: the largest workflow process and local server,
    and every process over the budget."""
    rows = sorted(sampled["processes"], key=lambda row: -row["peak_mib"])
    over = [r for r in rows if r["peak_mib"] > budget_gib * 1024]
    workflow = [r for r in rows if not r["server"]]
    servers = [r for r in rows if r["server"]]

    def named(row: dict) -> str:
        return f"{row['peak_mib']:,.0f} MiB (`{row['command'][:90]}`)"

    sampled_count = sampled.get("processes_sampled", len(rows))
    text = (f"\nEvery process sampled every {sampled['interval_s']} s (bench/process_rss.py): {sampled_count} "
            f"processes; the largest workflow process {named(workflow[0]) if workflow else '--'}; the largest local "
            f"server {named(servers[0]) if servers else '-- (none sampled)'}; ")  # fmt: skip
    if over:
        return (
            text
            + f"**{len(over)} over the {budget_gib:g} GiB budget**: "
            + "; ".join(named(r) for r in over)
            + "."
        )
    return text + f"none over the {budget_gib:g} GiB budget."


def rule_cpu_seconds(build: Path, first: datetime, last: datetime) -> dict[str, float]:
    """CPU seconds (user + system) per rule from the workflow's ``benchmark:`` files: the build's
    own jobs, and the ingest jobs whose benchmark file was written during the run (ingest folders
    are shared between builds). On a machine shared with other work a job's CPU time stays near
    what it would be alone, where its wall time does not; the MongoDB-wire server's work for
    load_mongo is in its own process and not counted here."""
    logs = build.parents[1] / "logs"
    cpu: dict[str, float] = defaultdict(float)

    def cpu_time(path: Path) -> float:
        rows = path.read_text().splitlines()
        header = rows[0].split("\t")
        if "cpu_time" not in header or len(rows) < 2:
            return 0.0
        value = rows[1].split("\t")[header.index("cpu_time")]
        return float(value) if value not in ("", "NA", "-") else 0.0

    for path in sorted((logs / build.name).glob("*.benchmark.tsv")):
        cpu[path.name.removesuffix(".benchmark.tsv")] += cpu_time(path)
    for path in sorted((logs / "ingest").rglob("*.benchmark.tsv")):
        written = datetime.fromtimestamp(path.stat().st_mtime)
        if first <= written <= last + timedelta(seconds=5):
            cpu["ingest_batch"] += cpu_time(path)  # "ingest_file" in records before ingest jobs had several files
    return {rule: round(seconds, 1) for rule, seconds in cpu.items()}


def _add_to_record(history: Path, label: str, key: str, value_of: Callable[[dict], Any]) -> None:
    """Set ``key`` of the records of an earlier run (by label) to ``value_of(its last record)``."""
    records = json.loads(history.read_text())
    matched = [record for record in records if record["label"] == label]
    if not matched:
        sys.exit(f"scale_run: no record labelled {label!r} in {history}")
    value = value_of(matched[-1])
    for record in matched:
        record[key] = value
    history.write_text(json.dumps(records, indent=1) + "\n")
    print(f"{label}: {key} = {value}", file=sys.stderr)


def add_cpu_to(history: Path, label: str, build: Path, log_paths: list[Path]) -> None:
    """Add ``jobs_cpu_seconds`` to the record of an earlier run (by label), from its logs."""
    jobs = [job for log in log_paths for job in job_times(log)]
    first, last = min(job[2] for job in jobs), max(job[3] for job in jobs)
    _add_to_record(history, label, "jobs_cpu_seconds", lambda _: rule_cpu_seconds(build, first, last))


def add_phases_to(history: Path, label: str, log_paths: list[Path]) -> None:
    """Add ``phases_s`` (:func:`phase_walls`) to the record of an earlier run (by label), from the
    copy of its Snakemake log that bench/scale_series.sh keeps (data/scale-logs/<stamp>/)."""
    jobs = [job for log in log_paths for job in job_times(log)]
    span = (max(job[3] for job in jobs) - min(job[2] for job in jobs)).total_seconds()

    def phases(record: dict) -> dict[str, float] | None:
        if abs(span - record["span_s"]) > 1:  # another run's log
            sys.exit(f"scale_run: the log spans {span:.0f} s, the record of {label!r} {record['span_s']:.0f} s")
        return phase_walls(jobs)

    _add_to_record(history, label, "phases_s", phases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", action="append", required=True, help="Snakemake log (repeatable)")
    parser.add_argument("--build", help="the build folder (required but with --add-phases-to)")
    parser.add_argument("--label")
    parser.add_argument("--time", action="append", default=[], help="/usr/bin/time -v output (repeatable)")
    parser.add_argument("--note", default="", help="a sentence on the conditions of the run")
    parser.add_argument("--sampled", help="bench/process_rss.py's JSON: each process's peak RSS")
    parser.add_argument("--budget-gib", type=float, default=8.0, help="the memory budget to check against")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "scale_runs.md"))
    parser.add_argument(
        "--add-cpu-to", metavar="LABEL", help="only add CPU seconds per rule to that earlier record"
    )
    parser.add_argument(
        "--add-phases-to", metavar="LABEL", help="only add the wall by phase to that earlier record"
    )
    args = parser.parse_args()

    if args.add_phases_to:
        add_phases_to(Path(args.out).with_suffix(".json"), args.add_phases_to, [Path(log) for log in args.log])
        return
    if not args.build or not args.label:
        parser.error("--build and --label are required")
    build = Path(args.build)
    if args.add_cpu_to:
        add_cpu_to(
            Path(args.out).with_suffix(".json"), args.add_cpu_to, build, [Path(log) for log in args.log]
        )
        return
    jobs = [job for log in args.log for job in job_times(Path(log))]
    by_rule: dict[str, list[float]] = defaultdict(list)
    for name, seconds, _, _ in jobs:
        by_rule[name].append(seconds)
    first = min(begin for _, _, begin, _ in jobs)
    last = max(end for _, _, _, end in jobs)
    reports = [time_report(Path(t)) for t in args.time]
    counts = json.loads((build / "graph" / "graph_counts.json").read_text())["counts"]
    plans = {}
    for scope, folder in (("full", build / "graph"), ("cooccurrence", build / "cooccurrence")):
        plan = json.loads((folder / "plan.json").read_text())
        summary_path = build / (
            "solve_summary.json" if scope == "full" else "cooccurrence/solve_summary.json"
        )
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        solver = summary.get("solver") or {}
        plans[scope] = {
            "n": plan["n"], "edges": plan["arcs"] // 2, "method": plan["method"], "reason": plan["reason"],
            "dense_predicted_s": plan["dense"]["seconds"],
            "measured_solve_s": (solver.get("seconds") or {}).get("solve"),
        }  # fmt: skip
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "label": args.label,
        "cpu_model": cpu_model(),
        "build": build.name,
        "jobs_seconds": {rule: round(sum(times), 1) for rule, times in by_rule.items()},
        "jobs_count": {rule: len(times) for rule, times in by_rule.items()},
        "rule_peak_rss_mib": rule_peaks(build),
        "jobs_cpu_seconds": rule_cpu_seconds(build, first, last),
        "span_s": (last - first).total_seconds(),
        "phases_s": phase_walls(jobs),
        "time_reports": reports,
        "graph": {k: counts[k] for k in ("vertices", "concept_vertices", "abstract_vertices", "edges")},
        "plans": plans,
        "note": args.note,
    }
    lines = [
        f"\n## {record['date']} -- {args.label} ({record['cpu_model']}, {platform.node()})\n",
        f"Build `{build.name}`: full graph {counts['vertices']:,} vertices ({counts['concept_vertices']:,} concepts), "
        f"{counts['edges']:,} edges. First job to last: {record['span_s'] / 60:.1f} min."
        + (f" {args.note}" if args.note else ""),
        "",
        "| stage (rule) | jobs | seconds (sum over its jobs) | peak RSS MiB (Snakemake's sampling) |",
        "|---|---:|---:|---:|",
    ]
    peaks = record["rule_peak_rss_mib"]
    for rule, seconds in sorted(record["jobs_seconds"].items(), key=lambda item: -item[1]):
        peak = f"{peaks[rule]:,.0f}" if rule in peaks else "--"
        lines.append(f"| {rule} | {record['jobs_count'][rule]} | {seconds:,.1f} | {peak} |")
    if record["phases_s"]:
        lines.append("\nWall by phase (first job to last, split at the merge and the load): " + ", ".join(
            f"{phase} {seconds:,.0f} s" for phase, seconds in record["phases_s"].items()) + ".")
    lines += [
        "",
        "| graph | n | edges | plan | why | dense predicted | solve measured |",
        "|---|---:|---:|---|---|---:|---:|",
    ]
    for scope, plan in plans.items():
        measured = f"{plan['measured_solve_s']:.1f} s" if plan["measured_solve_s"] is not None else "--"
        lines.append(
            f"| {scope} | {plan['n']:,} | {plan['edges']:,} | {plan['method']} | {plan['reason']} | "
            f"{plan['dense_predicted_s']:.3g} s | {measured} |"
        )
    for i, report in enumerate(reports):
        if report:
            lines.append(
                f"\n`/usr/bin/time -v` of run {i + 1}: wall {report.get('wall_s', 0) / 60:.1f} min, "
                f"largest process peak RSS {report.get('peak_rss_mib', 0):,.0f} MiB."
            )
    if args.sampled:
        sampled = kept_samples(json.loads(Path(args.sampled).read_text()), args.budget_gib)
        record["sampled_rss"] = sampled
        lines.append(sampled_rss_sentence(sampled, args.budget_gib))
    out = Path(args.out)
    if not out.exists():
        out.write_text("# Whole-workflow runs at scale (`make run CONFIG=...` on synth corpora)\n")
    with out.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    history = out.with_suffix(".json")
    records = json.loads(history.read_text()) if history.exists() else []
    records.append(record)
    history.write_text(json.dumps(records, indent=1) + "\n")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
