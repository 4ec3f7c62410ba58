"""Fit the times of whole-workflow runs at several sizes and project them to a full release.

    .venv/bin/python bench/project_release.py \\
        --run "synth 1M calibrated (issue 27), first build=1000000" \\
        --run "synth 10M calibrated (issue 27), first build=10000000" \\
        --run "synth 30M calibrated (issue 27), first build=30000000"

Reads the named records of ``bench/results/scale_runs.json`` (written by ``bench/scale_run.py``),
each with the PREDICATION rows its corpus holds, and fits each part's time as ``a * n**b`` (least
squares in log-log over every run given, and separately the slope between the two largest runs,
which sees the growth nearest the target; parts under 5 s in every run are taken as they are). The
projection to ``--target`` predications (a SemMedDB release's 126,268,045 PREDICATION rows by
default) takes, per part, the larger of the two fits -- the conservative reading -- and the sum is
the projected wall time on this machine.

The parts (``--by``):

* ``phase`` (default): the run's wall by phase -- ingest, merge, graph and grouping, load, finish,
  split where the merge and the load start and end (``phases_s``). They add up to the run's span:
  jobs that ran side by side count once, Snakemake's gaps between jobs count.
* ``stage``: each rule's job seconds, divided by the jobs that ran at once (``ingest_batch``, ``ingest_file``:
  ``--cores``; every other rule is taken as one job). Sums jobs that overlapped (the record buckets
  beside the graph), so it over-states the wall; the breakdown says which rule grows how.

Appends a table to ``bench/results/scale_runs.md`` and draws ``bench/results/scale_projection.png``
(times against predications, log-log, with the fits).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RELEASE_PREDICATIONS = 126_268_045  # a recent SemMedDB release's PREDICATION rows (issue 27)
# Rules whose jobs run --cores at a time (ingest_file: one file a job, before resources.ingest_files_per_job).
PARALLEL_RULES = {"ingest_batch", "ingest_file"}
RESOLUTION_S = 5.0  # stages under this in every run are not fitted (the log stamps whole seconds)


def power_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of t = a * n**b by least squares on (log n, log t); points with t <= 0 are left out
    (a stage under the log's one-second resolution)."""
    usable = [(math.log(n), math.log(t)) for n, t in points if t > 0]
    if not usable:
        return 0.0, 1.0
    if len(usable) == 1:  # one point: linear growth through it
        return math.exp(usable[0][1] - usable[0][0]), 1.0
    mean_x = sum(x for x, _ in usable) / len(usable)
    mean_y = sum(y for _, y in usable) / len(usable)
    sxx = sum((x - mean_x) ** 2 for x, _ in usable)
    b = sum((x - mean_x) * (y - mean_y) for x, y in usable) / sxx if sxx else 1.0
    return math.exp(mean_y - b * mean_x), b


def stage_walls(record: dict, cores: int, basis: str = "wall") -> dict[str, float]:
    """Each stage's seconds in one run, divided by ``cores`` for parallel rules: its jobs' wall
    seconds (``basis="wall"``), or their CPU seconds (``"cpu"``, ``jobs_cpu_seconds`` from the
    benchmark files: what a stage costs when it has its core to itself, whatever shared the machine)."""
    seconds_by_rule = record["jobs_seconds"] if basis == "wall" else record["jobs_cpu_seconds"]
    return {
        rule: seconds / (min(cores, record["jobs_count"][rule]) if rule in PARALLEL_RULES else 1)
        for rule, seconds in seconds_by_rule.items()
        if rule != "all"
    }


def phase_walls_of(record: dict, joined: tuple[tuple[str, ...], ...] = ()) -> dict[str, float]:
    """The run's wall seconds by phase (``phases_s``, bench/scale_run.py's phase_walls): they add up
    to its span, what ran side by side counted once and Snakemake's gaps between jobs included.
    Each group of ``joined`` phases becomes one, named "A + B", in the place of the first."""
    if not record.get("phases_s"):
        raise ValueError(f"run {record['label']!r} has no wall by phase (bench/scale_run.py --add-phases-to)")
    phases = dict(record["phases_s"])
    for group in joined:
        missing = [name for name in group if name not in phases]
        if missing:
            raise ValueError(f"run {record['label']!r} has no phase {missing[0]!r} (its phases: {', '.join(phases)})")
        total = sum(phases[name] for name in group)
        phases = {
            (" + ".join(group) if name == group[0] else name): (total if name == group[0] else seconds)
            for name, seconds in phases.items()
            if name == group[0] or name not in group
        }
    return phases


def project(
    runs: list[tuple[int, dict]],
    cores: int,
    target: int,
    basis: str = "wall",
    by: str = "stage",
    joined: tuple[tuple[str, ...], ...] = (),
) -> dict:
    """Fit and project each stage (``by="stage"``: the rules' job seconds, parallel rules divided by
    ``cores``) or each phase (``by="phase"``: the runs' wall by phase, which needs ``basis="wall"``;
    ``joined``: groups of phases fitted as one)."""
    runs = sorted(runs, key=lambda run: run[0])
    if by == "phase":
        walls = [(n, phase_walls_of(record, joined)) for n, record in runs]
    else:
        walls = [(n, stage_walls(record, cores, basis)) for n, record in runs]
    rules = list(dict.fromkeys(rule for _, stage in walls for rule in stage))
    rows = []
    for rule in rules:
        points = [(n, stage.get(rule, 0.0)) for n, stage in walls]
        if max(t for _, t in points) < RESOLUTION_S:
            # under the Snakemake log's one-second stamps everywhere: no growth to fit, taken as is
            rows.append({"rule": rule, "seconds": [t for _, t in points], "exponent_all": None,
                         "exponent_largest_two": None, "projected_s": max(t for _, t in points)})  # fmt: skip
            continue
        a, b = power_fit(points)
        all_runs = a * target**b
        (n1, t1), (n2, t2) = points[-2], points[-1]
        if t1 > 0 and t2 > 0:
            slope = math.log(t2 / t1) / math.log(n2 / n1)
            largest_two = t2 * (target / n2) ** slope
        else:
            slope, largest_two = None, all_runs
        rows.append({"rule": rule, "seconds": [t for _, t in points], "exponent_all": round(b, 3),
                     "exponent_largest_two": None if slope is None else round(slope, 3),
                     "projected_all_s": round(all_runs, 1), "projected_largest_two_s": round(largest_two, 1),
                     # a stage is taken never to get faster with size (a fit through noise can fall)
                     "projected_s": round(max(all_runs, largest_two, points[-1][1]), 1)})  # fmt: skip
    spans = [(n, record["span_s"]) for n, record in runs]
    return {"target": target, "cores": cores, "basis": basis, "by": by, "sizes": [n for n, _ in runs], "stages": rows,
            "measured_span_s": [t for _, t in spans],
            "projected_total_s": round(sum(row["projected_s"] for row in rows), 1)}  # fmt: skip


def draw(result: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = result["sizes"]
    figure, axes = plt.subplots(figsize=(8, 5.5))
    top = [
        row
        for row in sorted(result["stages"], key=lambda row: -row["projected_s"])
        if row["exponent_all"] is not None
    ][:6]
    for row in top:
        line = axes.loglog(sizes, [max(t, 0.5) for t in row["seconds"]], "o-", label=row["rule"])[0]
        axes.loglog([sizes[-1], result["target"]], [max(row["seconds"][-1], 0.5), row["projected_s"]], "--",
                    color=line.get_color())  # fmt: skip
    axes.axvline(result["target"], color="grey", lw=0.8)
    axes.set_xlabel("PREDICATION rows")
    axes.set_ylabel("phase wall seconds" if result["by"] == "phase"
                    else f"stage {result['basis']} seconds (ingest: job seconds / cores)")  # fmt: skip
    axes.set_title(f"{result['by'].capitalize()} times measured (dots) and projected to a release (dashes): "
                   f"{result['projected_total_s'] / 3600:.2f} h in all", fontsize=10)  # fmt: skip
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, help="LABEL=PREDICATIONS (repeatable)")
    parser.add_argument("--cores", type=int, default=2, help="the cores the runs used (--cores of snakemake)")
    parser.add_argument("--target", type=int, default=RELEASE_PREDICATIONS)
    parser.add_argument(
        "--basis",
        choices=("wall", "cpu"),
        default="wall",
        help="fit the jobs' wall seconds, or their CPU seconds (for runs on a shared machine)",
    )
    parser.add_argument(
        "--without-job",
        action="append",
        default=[],
        metavar="LABEL:RULE=SECONDS",
        help="take one job of RULE out of run LABEL before fitting (its wall SECONDS; CPU seconds alike with "
        "--basis cpu): a job the current code no longer runs, measured in that run (repeatable; said in the table)",
    )
    parser.add_argument(
        "--by",
        choices=("phase", "stage"),
        default="phase",
        help="fit the runs' wall by phase (default), or each rule's job seconds",
    )
    parser.add_argument(
        "--join",
        action="append",
        default=[],
        metavar="PHASE+PHASE",
        help="fit these phases as one (--by phase; repeatable): phases whose jobs overlap, so that where one "
        "ends and the other begins depends on which job happened to end last (since each kind is loaded as "
        "it is grouped: 'graph and grouping+load')",
    )
    parser.add_argument("--note", default="")
    parser.add_argument("--results", default=str(REPO / "bench" / "results" / "scale_runs.md"))
    args = parser.parse_args()
    out = Path(args.results)
    records = {record["label"]: record for record in json.loads(out.with_suffix(".json").read_text())}
    runs = []
    for spec in args.run:
        label, _, predications = spec.rpartition("=")
        if label not in records:
            sys.exit(f"project_release: no run labelled {label!r} in {out.with_suffix('.json')}")
        runs.append((int(predications), records[label]))
    removed = []
    if args.without_job and args.by == "phase":
        sys.exit("project_release: --without-job takes a job out of the stage times: use it with --by stage")
    if args.by == "phase" and args.basis != "wall":
        sys.exit("project_release: the wall by phase is wall time: --by phase needs --basis wall")
    for spec in args.without_job:
        label, _, rest = spec.partition(":")
        rule, _, seconds = rest.partition("=")
        record = next((record for _, record in runs if record["label"] == label), None)
        if record is None or rule not in record["jobs_seconds"]:
            sys.exit(f"project_release: --without-job {spec!r}: no run {label!r} with rule {rule!r} among --run")
        record = json.loads(json.dumps(record))  # a copy: the results file's record stays as measured
        key = "jobs_seconds" if args.basis == "wall" else "jobs_cpu_seconds"
        record[key][rule] -= float(seconds)
        record["jobs_count"][rule] -= 1
        runs = [(n, record if r["label"] == label else r) for n, r in runs]
        removed.append(f"{rule} of {label}: {float(seconds):,.0f} s")
    if args.join and args.by != "phase":
        sys.exit("project_release: --join joins phases: use it with --by phase")
    joined = tuple(tuple(part.strip() for part in spec.split("+")) for spec in args.join)
    result = project(runs, args.cores, args.target, args.basis, args.by, joined)
    figure = out.with_name("scale_projection.png")
    draw(result, figure)
    sizes = ", ".join(f"{n / 1e6:g}M" for n in result["sizes"])
    lines = [
        f"\n## {datetime.now(UTC).isoformat(timespec='seconds')} -- projection to a full release "
        f"({args.target:,} predications) from the runs at {sizes} (`bench/project_release.py`)\n",
        f"Each {args.by} fitted as a·n^b over all runs and between the two largest; the projection takes the "
        "larger of the two. "
        + ("Wall seconds by phase (split where the merge and the load start and end; jobs side by side count "
           "once, Snakemake's gaps between jobs count). " if args.by == "phase" else
           f"{'Wall' if args.basis == 'wall' else 'CPU'} seconds per stage (ingest: job seconds / "
           f"{args.cores} cores; other rules' jobs summed, also where they overlapped). ")
        + (args.note + " " if args.note else "")
        + (f"Jobs taken out before fitting: {'; '.join(removed)}. " if removed else "")
        + (f"Phases fitted as one: {'; '.join(' + '.join(group) for group in joined)}. " if joined else "")
        + f"Plot: `{figure.name}`.",
        "",
        f"| {args.by} | "
        + " | ".join(f"{n / 1e6:g}M (s)" for n in result["sizes"])
        + " | b (all runs) | b (largest two) | projected (s) |",
        "|---|" + "---:|" * (len(result["sizes"]) + 3),
    ]
    for row in sorted(result["stages"], key=lambda row: -row["projected_s"]):
        seconds = " | ".join(f"{t:,.0f}" for t in row["seconds"])
        fitted = "--" if row["exponent_all"] is None else f"{row['exponent_all']:.2f}"
        two = "--" if row["exponent_largest_two"] is None else f"{row['exponent_largest_two']:.2f}"
        lines.append(f"| {row['rule']} | {seconds} | {fitted} | {two} | {row['projected_s']:,.0f} |")
    spans = " / ".join(f"{t / 60:.1f}" for t in result["measured_span_s"])
    lines += ["", f"Measured first job to last: {spans} min. **Projected wall at {args.target:,} predications: "
              f"{result['projected_total_s'] / 3600:.2f} h** ("
              + ("sum of the phases)." if args.by == "phase" else
                 "sum of the stages; Snakemake's own overhead between jobs is not in it).")]  # fmt: skip
    with out.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    history = out.with_name("scale_projection.json")
    entries = json.loads(history.read_text()) if history.exists() else []
    entries.append({"date": datetime.now(UTC).isoformat(timespec="seconds"), "without_jobs": removed,
                    "joined_phases": [list(group) for group in joined], **result})  # fmt: skip
    history.write_text(json.dumps(entries, indent=1) + "\n")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
