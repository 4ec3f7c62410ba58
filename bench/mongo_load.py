"""Benchmark: load_mongo (store format 2, record buckets) against per-document upserts (format 1).

    flock /tmp/litpath-heavy.lock .venv/bin/python bench/mongo_load.py               # 1M predications
    .venv/bin/python bench/mongo_load.py --scale 30000 --no-record                      # a smoke run

Data: a calibrated synthetic corpus (``litpath synth --profile calibrated``) of ``--scale``
predications, built twice through ingest, merge and build-graph -- build **one** with one PubMed
update file, build **two** with two (the same inputs plus one new update file: a rerun on new
literature). Cached in ``${LITPATH_CACHE:-~/.cache/litpath}/bench-mongo-<scale>/``, not timed.

Both loaders write the same rows -- the build's papers, its concepts with their vertex ids, and
the evidence of every concept--concept edge, grouped by the same code
(:func:`pipeline.store.evidence_rows.evidence_tables`) -- into the local MongoDB-wire server
(services/local: mongo-java-server on H2, what ``make run`` starts), each into a fresh database:

* **format 1**, the loader litpath had before store format 2 and what a user would write with
  PyMongo: one document per row, written by unordered ``bulk_write`` of ``ReplaceOne(upsert=True)``
  in batches of 5,000 (documents carry the build in a ``builds`` list, so they are
  ``UpdateOne($set, $addToSet)``);
* **format 2**, ``pipeline.store.mongo.load_build``: record buckets, unordered inserts of only the
  buckets the store lacks.

Each loads build one into an empty database, then build two on top. Rows/s counts the rows of the
build (papers + concepts + evidence) over the load's wall time. The server's peak resident memory
(VmHWM of the JVM) and the store file's size are recorded. Results go to
``bench/results/mongo_load.md`` with the CPU model.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS_MD = ROOT / "bench" / "results" / "mongo_load.md"
PEER_BATCH = 5_000


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def prepare(scale: int) -> dict[str, tuple[Path, Path]]:
    """(tables, graph) of build one and build two, made once and cached."""
    from pipeline.graph.build import build_graph
    from pipeline.ingest.run import ingest_file
    from pipeline.ingest.synth import generate_corpus
    from pipeline.merge import merge_ingested

    cache = Path(os.environ.get("LITPATH_CACHE", "~/.cache/litpath")).expanduser() / f"bench-mongo-{scale}"
    builds = {}
    for name, updates in (("one", 1), ("two", 2)):
        root = cache / name
        done = root / "graph" / "graph_counts.json"
        if not done.exists():
            manifest = generate_corpus(root / "corpus", scale, seed=1, n_update_files=updates, profile="calibrated")
            folders = []
            for i, entry in enumerate(manifest["files"]):
                folders.append(root / "ingest" / f"{i:03d}")
                ingest_file(entry["kind"], root / "corpus" / entry["path"], folders[-1])
            merge_ingested(folders, root / "tables", {})
            build_graph(root / "tables", root / "graph", {})
        builds[name] = (root / "tables", root / "graph")
    return builds


def format1_load(uri: str, database: str, build_id: str, tables: Path, graph: Path, spill: Path) -> dict:
    """One document per row, unordered bulk upserts (the format-1 loader's writes)."""
    from pymongo import MongoClient, ReplaceOne, UpdateOne

    from pipeline.store.evidence_rows import concept_edge_keys, evidence_tables
    from pipeline.store.record_buckets import concept_rows, document_parts

    client = MongoClient(uri)
    db = client[database]
    counts = {"documents": 0, "concepts": 0, "evidence": 0}

    def write(collection, operations):
        for start in range(0, len(operations), PEER_BATCH):
            db[collection].bulk_write(operations[start : start + PEER_BATCH], ordered=False)

    try:
        for part in document_parts(tables, 1 << 16):
            rows = part.to_pylist()
            write("documents", [UpdateOne({"_id": r["doc_id"]}, {"$set": {
                "title": r["title"], "year": r["year"], "source": r["source"],
                "ids": {k: r[k] for k in ("pmid", "doi", "cord_uid") if r[k] is not None}},
                "$addToSet": {"builds": build_id}}, upsert=True) for r in rows])  # fmt: skip
            counts["documents"] += len(rows)
        concepts = concept_rows(tables, graph).to_pylist()
        write("concepts", [ReplaceOne({"_id": f"{build_id}:{r['cui']}"}, {"build": build_id, **r}, upsert=True)
                           for r in concepts])  # fmt: skip
        counts["concepts"] = len(concepts)
        for part in evidence_tables(tables, concept_edge_keys(graph), 1 << 18, 1, spill):
            rows = part.to_pylist()
            write("evidence", [ReplaceOne({"_id": f"{build_id}:{r['cui_a']}|{r['cui_b']}"}, {"build": build_id, **r},
                                          upsert=True) for r in rows])  # fmt: skip
            counts["evidence"] += len(rows)
    finally:
        client.close()
    return counts


def format2_load(uri: str, database: str, build_id: str, tables: Path, graph: Path, spill: Path) -> dict:
    from pipeline.store.mongo import load_build

    counts = load_build(uri, database, build_id, tables, graph, {}, spill_dir=spill)
    return {kind: counts[f"{kind}_in_build"] for kind in ("documents", "concepts", "evidence")} | {
        "written": {kind: counts[f"{kind}_written"] for kind in ("documents", "concepts", "evidence")},
        "buckets_written": sum(counts[f"{k}_buckets_written"] for k in ("documents", "concepts", "evidence")),
        "buckets": sum(counts[f"{k}_buckets"] for k in ("documents", "concepts", "evidence")),
    }


def vm_hwm_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1_000_000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    from services.local.servers import MongoServer

    builds = prepare(args.scale)
    rows_of = {}
    results = []
    with tempfile.TemporaryDirectory(prefix="litpath-bench-mongo-") as tmp:
        server = MongoServer(Path(tmp) / "server")
        server.start(timeout=300)
        try:
            for how, load in (("format 1 (per-document upserts)", format1_load), ("format 2 (record buckets)", format2_load)):
                database = f"bench_{'f1' if load is format1_load else 'f2'}"
                for build_id in ("one", "two"):
                    tables, graph = builds[build_id]
                    started = time.perf_counter()
                    counts = load(server.uri, database, build_id, tables, graph, Path(tmp))
                    seconds = time.perf_counter() - started
                    rows = counts["documents"] + counts["concepts"] + counts["evidence"]
                    rows_of[build_id] = rows
                    results.append({"how": how, "build": build_id, "seconds": seconds, "rows": rows, "counts": counts,
                                    "server_hwm_mib": vm_hwm_mib(server.pid)})  # fmt: skip
                    print(f"{how} build {build_id}: {rows:,} rows in {seconds:.1f} s", file=sys.stderr, flush=True)
            store_bytes = server.data_file.stat().st_size if server.data_file.exists() else None
        finally:
            server.stop()
    report(args, results, store_bytes)


def report(args, results: list[dict], store_bytes: int | None) -> None:
    from pipeline.runtime.progress import format_bytes

    by = {(r["how"].split()[1], r["build"]): r for r in results}
    lines = [
        f"\n## {datetime.now(UTC).isoformat(timespec='seconds')} -- {args.scale:,} predications, calibrated "
        f"profile (`bench/mongo_load.py --scale {args.scale}`)\n",
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs; load average at the end {os.getloadavg()[0]:.2f}; "
        f"one run each (the format-1 loads take minutes); the local MongoDB-wire server, one database per format; "
        f"server peak RSS {max((r['server_hwm_mib'] or 0) for r in results):,.0f} MiB; store file at the end "
        f"{format_bytes(store_bytes or 0)}\n",
        "| loader | build | rows (papers + concepts + evidence) | wall s | rows/s | written |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in results:
        written = r["counts"].get("written")
        note = (f"{sum(written.values()):,} rows in {r['counts']['buckets_written']:,} of {r['counts']['buckets']:,} buckets ("
                + ", ".join(f"{kind} {n:,} of {r['counts'][kind]:,}" for kind, n in written.items()) + ")"
                if written else "every row upserted")  # fmt: skip
        lines.append(f"| {r['how']} | {r['build']} | {r['rows']:,} | {r['seconds']:.1f} | {r['rows'] / r['seconds']:,.0f} | {note} |")
    for build in ("one", "two"):
        ratio = by[("1", build)]["seconds"] / by[("2", build)]["seconds"]
        lines.append(f"\nbuild {build}: format 2 loads **{ratio:.1f}x** the rows/s of format 1")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_record:
        if not RESULTS_MD.exists():
            RESULTS_MD.write_text(
                "# MongoDB load (bench/mongo_load.py)\n\n"
                "Issue 27's target: load_mongo rows/s >= 10x the per-document upserts' on the same data.\n"
            )
        with RESULTS_MD.open("a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
