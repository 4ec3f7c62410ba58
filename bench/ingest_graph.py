"""Benchmark: SemMedDB ingest + merge + graph build, litpath against a plain pandas peer.

    .venv/bin/python bench/ingest_graph.py                  # 10 million predications
    .venv/bin/python bench/ingest_graph.py --quick          # 200 thousand, a smoke run
    .venv/bin/python bench/ingest_graph.py --scale 2000000 --no-record

The corpus comes from :func:`pipeline.ingest.synth.generate_corpus` and is cached in
``${LITPATH_CACHE:-~/.cache/litpath}/bench-corpus-<scale>-<seed>/`` (generation is not timed).
Both implementations start from the same file, ``semmedVER43_R_PREDICATION.csv.gz`` (latin-1,
``"``-enclosed, ``\\N`` NULLs, backslash escapes, CUI fields such as ``C0796614|931``, ``6520``
and ``3429|5715``, and a few invalid ``1|medd`` rows), and compute the two edge kinds that
file determines: concept--concept (Jaccard over predications) and concept--abstract
(mentions of c in p / all mentions in p), with ``cost = -log(weight)``.

* **litpath**: what the workflow runs, one ``litpath`` process per stage as its rules do --
  ``litpath ingest`` (the SemMedDB reader, quarantine, counts) -> ``litpath merge`` ->
  ``litpath build-graph`` with ``edge_kinds`` = those two (vertices, edges, CSR in graph.bp,
  digest). Interpreter start-up and imports count.
* **pandas**: what an analyst would write -- ``pd.read_csv`` with the dump's options, the CUI
  rule with ``str`` methods and ``explode``, invalid rows dropped, ``drop_duplicates`` /
  ``groupby`` for the counts, the weights, ``-log``, edges to Parquet.

Each runs in its own child process, so its peak RSS (``ru_maxrss``; for litpath, of its
largest stage) and CPU time (litpath's stages included) are its own;
the parent then checks that both produced the same edge set with the same weights (relative
difference <= 1e-12) and float32 costs. Intentional differences: none in the edges. The pandas
peer silently drops the invalid rows, litpath quarantines them (counted in the report), and
the peer does not implement CUI forms that the synthetic corpus does not contain (several
CUIs in one field). Results are appended to ``bench/results/ingest_graph.md`` and
``bench/results/ingest_graph.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS_MD = ROOT / "bench" / "results" / "ingest_graph.md"
RESULTS_JSON = ROOT / "bench" / "results" / "ingest_graph.json"
PREDICATION_FILE = "semmeddb/semmedVER43_R_PREDICATION.csv.gz"
EDGE_KINDS = ["concept_concept", "concept_abstract"]
PREDICATION_NAMES = [
    "PREDICATION_ID", "SENTENCE_ID", "PMID", "PREDICATE", "SUBJECT_CUI", "SUBJECT_NAME", "SUBJECT_SEMTYPE",
    "SUBJECT_NOVELTY", "OBJECT_CUI", "OBJECT_NAME", "OBJECT_SEMTYPE", "OBJECT_NOVELTY", "FACT_VALUE",
    "MOD_SCALE", "MOD_VALUE",
]  # fmt: skip


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def cached_corpus(scale: int, seed: int) -> Path:
    """The synthetic corpus for (scale, seed), generated once into the cache."""
    cache = Path(os.environ.get("LITPATH_CACHE", Path.home() / ".cache" / "litpath"))
    folder = cache / f"bench-corpus-{scale}-{seed}"
    if (folder / "manifest.json").exists():
        log(f"corpus: cached {folder}")
        return folder
    from pipeline.ingest.synth import generate_corpus

    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    log(f"corpus: generating {scale:,} predications into {folder} (once; not timed)")
    start = time.perf_counter()
    generate_corpus(partial, scale, seed, 1)
    partial.rename(folder)
    log(f"corpus: generated in {time.perf_counter() - start:.0f} s")
    return folder


# --- the two implementations (run in child processes) -------------------------------------


def litpath_run(corpus: Path, out: Path, memory_gib: float = 0) -> dict:
    """The three stages as the workflow runs them: one ``litpath`` process each, merge and graph
    under the memory budget ``memory_gib`` (0: litpath's default, as in the workflow)."""
    litpath = str(Path(sys.executable).with_name("litpath"))
    config = out / "config.json"
    commands = {
        "ingest": [litpath, "ingest", "--kind", "semmeddb_predication", "--input", str(corpus / PREDICATION_FILE),
                   "--out", str(out / "ingest" / "predication")],
        "merge": [litpath, "merge", "--out", str(out / "tables"), "--config", str(config),
                  str(out / "ingest" / "predication")],
        "graph": [litpath, "build-graph", "--tables-dir", str(out / "tables"), "--out", str(out / "graph"),
                  "--config", str(config)],
    }  # fmt: skip
    config.write_text(
        json.dumps({"graph": {"edge_kinds": EDGE_KINDS}, "resources": {"memory_gib": memory_gib}})
    )
    stages = {}
    for stage, command in commands.items():
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        stages[stage] = time.perf_counter() - start
        log(f"litpath: {stage} {stages[stage]:.1f} s")
    counts = json.loads((out / "ingest" / "predication" / "counts.json").read_text())
    record = json.loads((out / "graph" / "graph_counts.json").read_text())
    merge_counts = json.loads((out / "tables" / "counts.json").read_text())
    from pipeline.runtime.resources import memory_budget_bytes

    return {
        "memory_budget_gib": round(memory_budget_bytes({"resources": {"memory_gib": memory_gib}}) / 2**30, 2),
        # 1: the stage held its data in memory; more: it worked in that many partitions on disk
        "partitions": {
            "merge": merge_counts["merge"].get("mention_partitions", 1),
            "graph": record["counts"].get("graph_partitions", 1),
        },
        "stages": stages,
        "rows_read": counts["rows_read"],
        "rows_quarantined": counts["rows_quarantined"],
        "edges": record["counts"]["edges"],
        "vertices": record["counts"]["vertices"],
        "graph_timings": record["timings"],
    }


def pandas_run(corpus: Path, out: Path) -> dict:
    import numpy as np
    import pandas as pd

    stages = {}
    start = time.perf_counter()
    frame = pd.read_csv(
        corpus / PREDICATION_FILE,
        header=None,
        names=PREDICATION_NAMES,
        usecols=["PREDICATION_ID", "PMID", "SUBJECT_CUI", "OBJECT_CUI"],
        dtype=str,
        encoding="latin-1",
        quotechar='"',
        escapechar="\\",
        doublequote=False,
        na_values=["\\N", "N"],  # the C parser applies the escape first: an unquoted \N reads as N
        keep_default_na=False,
    )
    rows_read = len(frame)
    stages["read_csv"] = time.perf_counter() - start
    log(f"pandas: read_csv {stages['read_csv']:.1f} s ({rows_read:,} rows)")
    start = time.perf_counter()

    # The CUI rule: one CUI (trailing gene ids ignored), else every gene id is an argument.
    def arguments(column: str) -> pd.Series:
        field = frame[column]
        cui = field.str.extract(r"^(C\d{7})(?:\|\d+)*$", expand=False)
        genes = field.where(field.str.fullmatch(r"\d+(?:\|\d+)*").fillna(False))
        genes = genes.str.split("|").explode().dropna()
        genes = ("GENE:" + genes.astype("int64").astype(str)).rename("g").rename_axis("row").reset_index()
        genes = genes.drop_duplicates().set_index("row")["g"]  # "6520|6520" is one argument
        return pd.concat([cui.dropna(), genes]).rename(column)

    frame["pmid"] = pd.to_numeric(frame["PMID"], errors="coerce")
    subjects, objects = arguments("SUBJECT_CUI"), arguments("OBJECT_CUI")
    valid = frame.index[frame["pmid"].notna()].intersection(subjects.index).intersection(objects.index)
    frame = frame.loc[valid, ["PREDICATION_ID", "pmid"]]
    frame["doc"] = "PMID:" + frame["pmid"].astype("int64").astype(str)
    subjects, objects = subjects[subjects.index.isin(valid)], objects[objects.index.isin(valid)]
    rows = frame.join(subjects).join(objects)  # one row per (subject, object) argument pair

    # concept--concept: Jaccard over predications
    pairs = rows[rows.SUBJECT_CUI != rows.OBJECT_CUI]
    pairs = pairs.assign(
        a=pairs[["SUBJECT_CUI", "OBJECT_CUI"]].min(axis=1), b=pairs[["SUBJECT_CUI", "OBJECT_CUI"]].max(axis=1)
    )
    together = (
        pairs.drop_duplicates(["PREDICATION_ID", "a", "b"]).groupby(["a", "b"]).size().rename("together")
    )
    occurrences = pd.concat(
        [
            pairs[["PREDICATION_ID", "SUBJECT_CUI"]].set_axis(["PREDICATION_ID", "cui"], axis=1),
            pairs[["PREDICATION_ID", "OBJECT_CUI"]].set_axis(["PREDICATION_ID", "cui"], axis=1),
        ]
    ).drop_duplicates()
    n = occurrences.groupby("cui").size()
    cc = together.reset_index()
    cc["weight"] = cc.together / (cc.a.map(n) + cc.b.map(n) - cc.together)
    cc = cc.assign(kind="concept_concept")[["kind", "a", "b", "weight"]]

    # concept--abstract: each distinct subject and object argument of a row is one mention
    mentions = pd.concat(
        [
            frame[["doc"]].join(subjects).set_axis(["doc", "cui"], axis=1),
            frame[["doc"]].join(objects).set_axis(["doc", "cui"], axis=1),
        ]
    )
    mentions = mentions.groupby(["doc", "cui"]).size().rename("count").reset_index()
    mentions["weight"] = mentions["count"] / mentions.groupby("doc")["count"].transform("sum")
    ca = mentions.rename(columns={"cui": "a", "doc": "b"}).assign(kind="concept_abstract")[
        ["kind", "a", "b", "weight"]
    ]
    edges = pd.concat([cc, ca], ignore_index=True)
    edges["cost"] = (-np.log(edges.weight)).astype(np.float32)
    stages["edges"] = time.perf_counter() - start
    log(f"pandas: groupbys and weights {stages['edges']:.1f} s ({len(edges):,} edges)")
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    edges.to_parquet(out / "edges.parquet", index=False)
    stages["write"] = time.perf_counter() - start
    return {
        "stages": stages,
        "rows_read": rows_read,
        "rows_dropped": rows_read - len(frame),
        "edges": len(edges),
    }


def _worker(which: str, corpus: Path, out: Path, memory_gib: float) -> None:
    import numpy  # noqa: F401  -- imports are not part of either timing
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    if which == "litpath":
        import pipeline.graph.build  # noqa: F401
        import pipeline.ingest.semmeddb  # noqa: F401
        import pipeline.merge  # noqa: F401

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)

    def cpu(usage: resource.struct_rusage) -> float:
        return usage.ru_utime + usage.ru_stime

    before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    start = time.perf_counter()
    result = litpath_run(corpus, out, memory_gib) if which == "litpath" else pandas_run(corpus, out)
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    # litpath's stages are child processes: their CPU counts, and the largest of them is the peak
    result.update(
        seconds=time.perf_counter() - start,
        cpu_seconds=sum(cpu(a) - cpu(b) for a, b in zip(after, before, strict=True)),
        peak_rss_mib=max(usage.ru_maxrss for usage in after) / 1024,
    )
    print(json.dumps(result))


def _run(which: str, corpus: Path, out: Path, memory_gib: float = 0) -> dict:
    log(f"{which}: starting")
    done = subprocess.run(
        [sys.executable, __file__, "--worker", which, "--corpus", str(corpus), "--out", str(out),
         "--memory-gib", str(memory_gib)],  # fmt: skip
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    log(
        f"{which}: {result['seconds']:.1f} s wall, {result['cpu_seconds']:.1f} s CPU, "
        f"peak RSS {result['peak_rss_mib']:,.0f} MiB"
    )
    return result


# --- checking and recording -----------------------------------------------------------------


def same_edges(litpath_graph: Path, pandas_out: Path) -> tuple[bool, str]:
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    keys = (
        pq.read_table(litpath_graph / "vertices.parquet", columns=["vid", "key"])
        .column("key")
        .to_numpy(zero_copy_only=False)
    )
    ours = pq.read_table(litpath_graph / "edges.parquet").to_pandas()
    ours["a"], ours["b"] = keys[ours.src.to_numpy()], keys[ours.dst.to_numpy()]
    theirs = pd.read_parquet(pandas_out / "edges.parquet")
    detail = []
    for kind in EDGE_KINDS:
        mine, peer = ours[ours.kind == kind], theirs[theirs.kind == kind]
        if len(mine) != len(peer):
            return False, f"{kind}: litpath {len(mine):,} edges, pandas {len(peer):,}"
        joined = mine.merge(peer, on=["a", "b"], how="inner", suffixes=("", "_pd"))
        if len(joined) != len(mine):
            return False, f"{kind}: {len(mine) - len(joined):,} edges only on one side"
        worst = (
            float(np.max(np.abs(joined.weight - joined.weight_pd) / joined.weight_pd)) if len(joined) else 0.0
        )
        if worst > 1e-12 or not np.array_equal(joined.cost.to_numpy(), joined.cost_pd.to_numpy()):
            return False, f"{kind}: weights differ (max relative {worst:.3g})"
        detail.append(f"{kind} {len(mine):,}")
    return True, "identical edge sets, weights to 1e-12, float32 costs bit-equal (" + ", ".join(detail) + ")"


def machine() -> dict:
    info = {"node": platform.node(), "arch": platform.machine(), "python": platform.python_version()}
    info["cpus"] = os.cpu_count()
    try:
        info["cpu"] = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        info["mem_gib"] = round(
            int(
                next(
                    x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")
                ).split()[1]
            )
            / 2**20,
            1,
        )
    except (OSError, StopIteration):
        pass
    info["load_avg_1m_at_start"] = round(os.getloadavg()[0], 2)
    return info


def record(entry: dict) -> str:
    ours, theirs = entry["litpath"], entry["pandas"]
    rows = entry["input_rows"]
    m = entry["machine"]
    peer_dropped = "not run" if theirs is None else theirs["rows_dropped"]
    lines = [
        f"## {entry['date']} — {entry['scale']:,} predications (`{entry['command']}`)",
        "",
        f"machine: {m.get('cpu', m['arch'])}, {m['cpus']} CPUs, {m.get('mem_gib', '?')} GiB, Python {m['python']}, "
        f"`{m['node']}`; load average {m['load_avg_1m_at_start']} at start, {entry['load_avg_1m_at_end']} at end",
        f"input: {rows:,} PREDICATION rows ({entry['input_mib']:,.0f} MiB gzipped); litpath quarantined "
        f"{ours['rows_quarantined']}, pandas dropped {peer_dropped}; graph {ours['vertices']:,} vertices, "
        f"{ours['edges']:,} edges",
        f"litpath's memory budget: {ours['memory_budget_gib']:g} GiB; merge in {ours['partitions']['merge']} "
        f"partition(s), graph in {ours['partitions']['graph']} (1 = in memory)",
        "",
        "| implementation | wall s | CPU s | rows/s (wall) | peak RSS MiB | stages (s) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label, result in (
        ("litpath ingest + merge + build-graph (a process each)", ours),
        ("pandas read_csv + groupby peer (edges only)", theirs),
    ):
        if result is None:
            continue
        stages = ", ".join(f"{k} {v:.1f}" for k, v in result["stages"].items())
        lines.append(
            f"| {label} | {result['seconds']:.1f} | {result['cpu_seconds']:.1f} | {rows / result['seconds']:,.0f} | "
            f"{result['peak_rss_mib']:,.0f} | {stages} |"
        )
    if theirs is None:
        lines += ["", "pandas peer not run (--no-peer).", ""]
    else:
        lines += [
            "",
            f"throughput litpath / pandas: **{entry['ratio_wall']:.2f}x** wall, {entry['ratio_cpu']:.2f}x CPU; "
            f"same edges: **{'yes' if entry['same_edges'] else 'NO'}** ({entry['same_edges_detail']})",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--scale", type=int, default=10_000_000, help="PREDICATION rows of the synthetic corpus"
    )
    parser.add_argument("--quick", action="store_true", help="200,000 predications (smoke run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "ingest_graph")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    parser.add_argument(
        "--memory-gib",
        type=float,
        default=0,
        help="litpath's memory budget (resources.memory_gib); 0: its default, min(8 GiB, half the RAM)",
    )
    parser.add_argument(
        "--no-peer",
        action="store_true",
        help="litpath only (the pandas peer needs ~0.7 GiB per million rows: ~21 GiB at 30M)",
    )
    parser.add_argument("--worker", choices=["litpath", "pandas"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.corpus, args.out, args.memory_gib)
        return
    scale = 200_000 if args.quick else args.scale
    corpus = cached_corpus(scale, args.seed)
    info = machine()
    out = args.out / f"{scale}-{args.seed}"
    ours = _run("litpath", corpus, out / "litpath", args.memory_gib)
    theirs = None if args.no_peer else _run("pandas", corpus, out / "pandas")
    if theirs is None:
        ok, detail = True, "not compared (--no-peer)"
    else:
        log("checking that both give the same edges")
        ok, detail = same_edges(out / "litpath" / "graph", out / "pandas")
    rows = ours["rows_read"]
    entry = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "bench/ingest_graph.py " + " ".join(sys.argv[1:]),
        "scale": scale,
        "seed": args.seed,
        "machine": info,
        "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        "input_rows": rows,
        "input_mib": (corpus / PREDICATION_FILE).stat().st_size / 2**20,
        "litpath": ours,
        "pandas": theirs,
        "rows_per_s": {"litpath": rows / ours["seconds"], "pandas": theirs and rows / theirs["seconds"]},
        "ratio_wall": theirs and theirs["seconds"] / ours["seconds"],
        "ratio_cpu": theirs and theirs["cpu_seconds"] / ours["cpu_seconds"],
        "same_edges": ok,
        "same_edges_detail": detail,
    }
    report = record(entry)
    print(report)
    if not args.no_record:
        RESULTS_MD.parent.mkdir(parents=True, exist_ok=True)
        if not RESULTS_MD.exists():
            RESULTS_MD.write_text(
                "# Ingest + graph benchmark (bench/ingest_graph.py)\n\n"
                "Target (issue): >= 3x the pandas peer's throughput; peak memory that does not grow with the\n"
                "input beyond the graph itself, and < 4 GB at 10M predications.\n\n"
            )
        with RESULTS_MD.open("a") as f:
            f.write(report + "\n")
        history = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else []
        history.append(entry)
        RESULTS_JSON.write_text(json.dumps(history, indent=2) + "\n")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
