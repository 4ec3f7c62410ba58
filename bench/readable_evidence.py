"""Benchmark: what the readable evidence costs the MongoDB load's grouping, in memory and time.

    flock /tmp/litpath-heavy.lock .venv/bin/python bench/readable_evidence.py            # 1M predications
    .venv/bin/python bench/readable_evidence.py --scale 30000 --no-record                   # a smoke run

Data: a calibrated synthetic corpus (``litpath synth --profile calibrated``) of ``--scale``
predications; its PREDICATION, SENTENCE and CITATIONS files ingested, merged and built into a
graph (ENTITY is not read: the default mention source is the predications). Cached in
``${LITPATH_CACHE:-~/.cache/litpath}/bench-readable-<scale>/``, not timed.

Three groupings of the same build, each in one piece (one partition) in a child process of its
own, ``--repeats`` times:

* **peer**: the concept--concept evidence as it was before (documents, sentence ids, counts:
  :func:`pipeline.store.evidence_rows.group_evidence` without the readable sources, on the rows
  without predicate and subject) -- what the load did;
* **readable**: the same plus predicates and up to 3 quoted sentences per edge
  (:func:`~pipeline.store.evidence_rows.evidence_tables`, what the load does now);
* **papers**: what each paper says of its concepts (:func:`pipeline.store.paper_evidence.paper_tables`,
  the load's new ``papers`` kind), in one doc_id range.

Each child reports its wall time and its peak resident memory above what it held before the
grouping (the modules and the edge keys; RSS sampled every 5 ms by a thread): the memory the partition estimates
(``EVIDENCE_BYTES_PER_ROW``, ``PAPER_BYTES_PER_ROW``, per row of the predications table) have to
cover. Results go to ``bench/results/readable_evidence.md`` with the CPU model.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS_MD = ROOT / "bench" / "results" / "readable_evidence.md"
KINDS = ("semmeddb_predication", "semmeddb_sentence", "semmeddb_citations")
VARIANTS = ("peer", "readable", "papers")


def cpu_model() -> str:
    for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def prepare(scale: int) -> tuple[Path, Path]:
    """(tables, graph) of the corpus's build, made once and cached."""
    from pipeline.graph.build import build_graph
    from pipeline.ingest.run import ingest_file
    from pipeline.ingest.synth import generate_corpus
    from pipeline.merge import merge_ingested

    root = Path(os.environ.get("LITPATH_CACHE", "~/.cache/litpath")).expanduser() / f"bench-readable-{scale}"
    done = root / "graph" / "graph_counts.json"
    if not done.exists():
        manifest = generate_corpus(root / "corpus", scale, seed=1, n_update_files=0, profile="calibrated")
        folders = []
        for i, entry in enumerate(e for e in manifest["files"] if e["kind"] in KINDS):
            folders.append(root / "ingest" / f"{i:03d}")
            ingest_file(entry["kind"], root / "corpus" / entry["path"], folders[-1])
        merge_ingested(folders, root / "tables", {})
        build_graph(root / "tables", root / "graph", {})
    return root / "tables", root / "graph"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(variant: str, tables: Path, graph: Path) -> dict:
    """One grouping, in this process: seconds, peak RSS above the RSS before it, rows out."""
    import pyarrow as pa

    from pipeline.store import evidence_rows
    from pipeline.store.paper_evidence import paper_tables

    edge_keys = evidence_rows.concept_edge_keys(graph)
    before = _rss_bytes()
    peak = [before]
    stop = threading.Event()

    def sample() -> None:  # ru_maxrss would count the peak of what ran before the grouping
        while not stop.wait(0.005):
            peak[0] = max(peak[0], _rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    if variant == "peer":
        parts = list(evidence_rows._evidence_rows(tables, edge_keys, 1 << 18))
        rows = pa.concat_tables(parts).drop_columns(["predicate", "subject_cui"])
        on_edges = rows.num_rows
        out = evidence_rows.group_evidence(rows, edge_keys, 1_000, None).num_rows
    elif variant == "readable":
        out = sum(t.num_rows for t in evidence_rows.evidence_tables(tables, edge_keys, 1 << 18, 1, tables.parent,
                                                                     sentences_per_hop=3))  # fmt: skip
        on_edges = None
    else:
        sources = evidence_rows.ReadableSources.of_build(tables, 3)
        out = sum(t.num_rows for t in paper_tables(tables, 1, sources))
        on_edges = None
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    peak[0] = max(peak[0], _rss_bytes())
    return {"seconds": seconds, "peak_above_bytes": peak[0] - before, "rows_out": out, "rows_on_edges": on_edges}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "TABLES", "GRAPH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), Path(args.child[2]))))
        return
    import pyarrow.parquet as pq

    tables, graph = prepare(args.scale)
    predication_rows = pq.ParquetFile(tables / "predications.parquet").metadata.num_rows
    runs: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
    for repeat in range(args.repeats):
        for variant in VARIANTS:  # interleaved, so that a slow spell of the machine hits all three
            done = subprocess.run([sys.executable, __file__, "--child", variant, str(tables), str(graph)],
                                  capture_output=True, text=True, check=True)  # fmt: skip
            runs[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"repeat {repeat + 1}/{args.repeats} {variant}: {runs[variant][-1]}", file=sys.stderr)
    summary = {}
    for variant, results in runs.items():
        summary[variant] = {
            "seconds_median": statistics.median(r["seconds"] for r in results),
            "peak_above_median_bytes": statistics.median(r["peak_above_bytes"] for r in results),
            "rows_out": results[0]["rows_out"],
        }
        summary[variant]["bytes_per_predication_row"] = summary[variant]["peak_above_median_bytes"] / predication_rows
    on_edges = runs["peer"][0]["rows_on_edges"]
    lines = [
        f"### {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.scale:,} calibrated predications",
        "",
        f"CPU: {cpu_model()}; {os.cpu_count()} logical CPUs; {args.repeats} runs each, interleaved, medians.",
        f"Predications table: {predication_rows:,} rows, {on_edges:,} of them on a concept-concept edge; "
        f"{summary['peer']['rows_out']:,} edges; {summary['papers']['rows_out']:,} papers with predications.",
        "",
        "| grouping | seconds (median) | peak above start | bytes per predication row | estimate used |",
        "|---|---|---|---|---|",
    ]
    from pipeline.store.evidence_rows import EVIDENCE_BYTES_PER_ROW
    from pipeline.store.paper_evidence import PAPER_BYTES_PER_ROW

    estimates = {"peer": "200 (before)", "readable": str(EVIDENCE_BYTES_PER_ROW), "papers": str(PAPER_BYTES_PER_ROW)}
    for variant in VARIANTS:
        s = summary[variant]
        lines.append(f"| {variant} | {s['seconds_median']:.2f} | {s['peak_above_median_bytes'] / 2**20:,.0f} MiB | "
                     f"{s['bytes_per_predication_row']:.0f} | {estimates[variant]} |")  # fmt: skip
    ratio_time = summary["readable"]["seconds_median"] / summary["peer"]["seconds_median"]
    ratio_memory = summary["readable"]["peak_above_median_bytes"] / summary["peer"]["peak_above_median_bytes"]
    lines += ["", f"readable / peer: {ratio_time:.2f}x the time, {ratio_memory:.2f}x the memory.", ""]
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        header = "# Readable evidence: what the grouping costs\n\n(bench/readable_evidence.py)\n\n"
        existing = RESULTS_MD.read_text() if RESULTS_MD.exists() else header
        RESULTS_MD.write_text(existing.rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    main()
