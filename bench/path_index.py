"""Benchmark: on-demand exact paths with and without the path index, on a build's full graph.

What is measured (one run, one machine, one build whose full graph has no stored distances):

1. **The index** -- built from graph.bp as the graph stage builds it
   (:func:`pipeline.graph.path_index.index_graph`, for the full and the co-occurrence graph),
   timed against the graph stage's own time (``graph_counts.json``) and sized against graph.bp.
2. **In process** -- for each pair kind (concept--concept, abstract--abstract, mixed), random
   pairs answered by :func:`pipeline.query.sssp.shortest_path` with the index and without it
   (the search litpath ran before the index: the peer a user has today), alternately on each
   pair. Every indexed distance must equal the plain one to the last bit.
3. **The peer a user would otherwise write** -- ``scipy.sparse.csgraph.dijkstra(indices=s)`` per
   query on a few of the pairs (seconds each at these sizes); its distance must agree.
4. **Over HTTP** -- ``litpath serve`` with its default pools on the build; one keep-alive client
   asks ``GET /v1/path`` for the same pairs (each answer's distance must equal the in-process
   one), then ``wrk`` with 4 connections; the serving process's resident memory (peak, VmHWM,
   and after the load) is read from /proc.

Results are appended to ``bench/results/path_index.md`` and ``.json`` with the CPU model.
Run it under the heavy-run lock (it loads a graph of millions of vertices twice, one at a time)::

    flock /tmp/litpath-heavy.lock .venv/bin/python bench/path_index.py \\
        --results-dir data/synth-30m/results --build 25eab3327e96 --label "30M predications"
"""

from __future__ import annotations

import argparse
import datetime
import gc
import http.client
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from on_demand_paths import append_run, cpu_model, start_service  # noqa: E402
from path_service import percentiles, run_wrk  # noqa: E402

KINDS = ("concept-concept", "abstract-abstract", "mixed")
TARGETS = {"p50_ms": 20.0, "p99_ms": 100.0, "build_share_of_stage": 0.10, "bytes_share_of_graph": 0.25,
           "service_gib": 8.0}  # fmt: skip


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_of(pid: int | str = "self") -> dict:
    """VmRSS and VmHWM (peak) of a process, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


def pairs_by_kind(is_concept: np.ndarray, count: int, seed: int) -> dict[str, list[tuple[int, int]]]:
    """``count`` random pairs of each kind (distinct ends), the same for every run of a seed."""
    rng = np.random.default_rng(seed)
    concepts, abstracts = np.flatnonzero(is_concept), np.flatnonzero(~is_concept)
    ends = {"concept-concept": (concepts, concepts), "abstract-abstract": (abstracts, abstracts),
            "mixed": (concepts, abstracts)}  # fmt: skip
    chosen = {}
    for kind, (left, right) in ends.items():
        s, t = rng.choice(left, count), rng.choice(right, count)
        keep = s != t
        chosen[kind] = [(int(a), int(b)) for a, b in zip(s[keep], t[keep], strict=True)]
    return chosen


def build_indexes(build_dir: Path, rebuild: bool) -> dict:
    """Each graph's path index and its share of the graph stage's time. When the graph stage built
    the index (its graph_counts.json has the record), both times come from that one run; when the
    index is missing (a build from before it) or ``rebuild``, it is built here, and the stage's
    time is an earlier run's, which the report says."""
    from pipeline.builds.layout import BuildLayout, GraphFolder
    from pipeline.graph.path_index import index_graph

    layout = BuildLayout(build_dir)
    records, seconds, same_run = {}, 0.0, True
    for scope in ("full", "cooccurrence"):
        folder = GraphFolder(layout.graph(scope).graph_dir)
        if not folder.graph_bp.exists():
            continue
        counts = json.loads(folder.counts.read_text()) if folder.counts.exists() else {}
        if folder.path_index.exists() and rebuild:
            shutil.rmtree(folder.path_index)
        if folder.path_index.exists() and "path_index" in counts:
            records[scope] = {**counts["path_index"], "built_by": "graph stage"}
            seconds += counts["timings"]["path_index"]
            continue
        log(f"building the path index of the {scope} graph")
        records[scope] = {**index_graph(folder.path), "built_by": "this benchmark"}
        seconds += records[scope]["build_seconds"]
        same_run = False
    full_counts = GraphFolder(layout.graph("full").graph_dir).counts
    stage = json.loads(full_counts.read_text())["timings"]["total"] if full_counts.exists() else None
    return {"graphs": records, "graph_stage_seconds": stage, "build_seconds": seconds,
            "share_of_stage": seconds / stage if stage else None, "same_run": same_run}  # fmt: skip


def in_process(build_dir: Path, pairs: dict, peer_pairs: int) -> tuple[dict, dict]:
    """Timings of the indexed and the plain search per kind, the scipy peer, and the distances."""
    from scipy.sparse.csgraph import dijkstra

    from pipeline.query import sssp
    from pipeline.query.graph import open_graph

    started = time.perf_counter()
    graph = open_graph(build_dir, "full")
    opened = time.perf_counter() - started
    if graph.distances is not None:
        raise SystemExit(f"{build_dir}'s full graph has stored distances ({graph.method}); plan it on-demand")
    if graph.path_index is None:
        raise SystemExit(f"no usable path index: {graph.path_index_reason}")
    adjacency, hubs = graph.adjacency, graph.path_index
    result = {"n": graph.n, "arcs": adjacency.nnz, "open_seconds": opened, "graph_bytes": adjacency.nbytes,
              "index_rows": hubs.rows, "index_arcs": hubs.arcs, "index_bytes": hubs.nbytes,
              "rss_after_open": rss_of()}  # fmt: skip
    log(f"full graph: {graph.n:,} vertices, {adjacency.nnz:,} arcs; index {hubs.rows:,} rows, {hubs.arcs:,} arcs")
    for s, t in list(pairs["mixed"])[:20]:  # warm-up: workspaces, page cache
        sssp.shortest_path(adjacency, s, t, hubs=hubs)
        sssp.shortest_path(adjacency, s, t)
    distances, mismatches = {}, 0
    for kind in KINDS:
        indexed, plain, found = [], [], []
        for i, (s, t) in enumerate(pairs[kind]):
            order = (True, False) if i % 2 == 0 else (False, True)  # neither always runs on a warmer cache
            answer = {}
            for with_index in order:
                began = time.perf_counter()
                answer[with_index], _ = sssp.shortest_path(adjacency, s, t, hubs=hubs if with_index else None)
                (indexed if with_index else plain).append(time.perf_counter() - began)
            found.append(answer[True])
            mismatches += answer[True] != answer[False]  # inf == inf: unreachable both ways agrees
        distances[kind] = found
        result[kind] = {"indexed": percentiles(indexed), "plain": percentiles(plain),
                        "unreachable": int(sum(np.isinf(found)))}  # fmt: skip
        log(f"{kind}: indexed p50 {result[kind]['indexed']['p50_ms']:.1f} ms p99 "
            f"{result[kind]['indexed']['p99_ms']:.1f} ms; plain p50 {result[kind]['plain']['p50_ms']:.1f} ms")  # fmt: skip
    result["mismatches_vs_plain"] = mismatches
    csr = adjacency.to_scipy()
    peer, peer_mismatches = [], 0
    for kind in KINDS:
        for (s, t), mine in list(zip(pairs[kind], distances[kind], strict=True))[:peer_pairs]:
            began = time.perf_counter()
            row = dijkstra(csr, directed=True, indices=s)
            peer.append(time.perf_counter() - began)
            if not (np.isinf(row[t]) and np.isinf(mine)) and abs(row[t] - mine) > 1e-9 * max(1.0, mine):
                peer_mismatches += 1
    result["scipy"] = {**percentiles(peer), "mismatches": peer_mismatches}
    log(f"scipy per query: p50 {result['scipy']['p50_ms']:.0f} ms over {len(peer)} pairs")
    result["rss_peak"] = rss_of()["VmHWM"]
    keys = graph.keys
    graph.close()
    del graph, adjacency, hubs, csr
    gc.collect()
    return result, {"distances": distances, "keys": keys}


def over_http(results_dir: Path, build: str, pairs: dict, answers: dict, connections: int, duration: int) -> dict:
    keys, distances = answers["keys"], answers["distances"]
    started = time.perf_counter()
    proc, base = start_service(results_dir, build)
    result = {"ready_seconds": time.perf_counter() - started, "rss_ready": rss_of(proc.pid)}
    log(f"service ready in {result['ready_seconds']:.0f} s, RSS {result['rss_ready']['VmRSS'] / 2**30:.2f} GiB")
    try:
        host, port = base.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        mismatches = 0
        for kind in KINDS:
            samples = []
            for i, (s, t) in enumerate(pairs[kind]):
                url = f"/v1/path?source={keys[s]}&target={keys[t]}&graph=full&evidence=false"
                began = time.perf_counter()
                connection.request("GET", url)
                response = connection.getresponse()
                body = json.loads(response.read())
                samples.append(time.perf_counter() - began)
                if response.status != 200 or body["distances"] != "on-demand":
                    raise RuntimeError(f"{url}: {response.status} {body}")
                want = distances[kind][i]
                got = body["stored_distance"] if body["reachable"] else float("inf")
                if got != want and not (np.isinf(got) and np.isinf(want)):
                    mismatches += 1
            result[kind] = percentiles(samples)
            log(f"HTTP {kind}: p50 {result[kind]['p50_ms']:.1f} ms p99 {result[kind]['p99_ms']:.1f} ms")
        connection.close()
        result["mismatches_vs_in_process"] = mismatches
        mixed = [(keys[s], keys[t]) for kind in KINDS for s, t in pairs[kind]]
        result["wrk"] = run_wrk(base, mixed, connections, duration, 1) if shutil.which("wrk") else None
        result["rss_after_load"] = rss_of(proc.pid)
        log(f"wrk: {result['wrk']}; RSS {result['rss_after_load']}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return result


# The paper's graph (SC22 §I and appendix XI-E): 18.5M vertices and 213M relations from PubMed and CORD-19.
FULL_RELEASE = {"label": "the paper's PubMed + CORD-19 graph", "n": 18_500_000, "arcs": 2 * 213_000_000}


def projection(records: list[dict], out: Path) -> None:
    """Append a projection to a full release's graph: each measured quantity fitted as a power of
    the graph's arcs through the two largest graphs measured in one run's date order (a two-point
    fit: an extrapolation, said so in the text), and the memory formula of services/api/settings.py
    with the per-vertex cost of the vertex tables measured on the largest."""
    runs = sorted({r["in_process"]["arcs"]: r for r in records if r.get("http")}.values(),
                  key=lambda r: r["in_process"]["arcs"])[-2:]  # fmt: skip
    if len(runs) < 2:
        raise SystemExit("a projection needs two measured graphs of different sizes with HTTP results")
    small, large = runs
    x0, x1, target = small["in_process"]["arcs"], large["in_process"]["arcs"], FULL_RELEASE["arcs"]

    def extrapolate(y0: float, y1: float) -> tuple[float, float]:
        exponent = np.log(y1 / y0) / np.log(x1 / x0)
        return float(y1 * (target / x1) ** exponent), float(exponent)

    lines = [
        f"\n## Projection to {FULL_RELEASE['label']} ({FULL_RELEASE['n'] / 1e6:.1f}M vertices, "
        f"{target / 2e6:.0f}M edges)\n",
        f"Two-point power-law fits in the arc count through the runs of {small['label']} ({x0:,} arcs) and "
        f"{large['label']} ({x1:,} arcs), {large['cpu_model']}: an extrapolation {target / x1:.1f}x beyond the "
        "largest graph measured, not a measurement.\n",
        "| pair kind | indexed p50 ms | indexed p99 ms | plain p50 ms | (exponent of p50 indexed / plain) |",
        "|---|---:|---:|---:|---|",
    ]
    for kind in KINDS:
        a0, a1 = small["in_process"][kind]["indexed"], large["in_process"][kind]["indexed"]
        b0, b1 = small["in_process"][kind]["plain"], large["in_process"][kind]["plain"]
        p50, e50 = extrapolate(a0["p50_ms"], a1["p50_ms"])
        p99, _ = extrapolate(a0["p99_ms"], a1["p99_ms"])
        plain, eplain = extrapolate(b0["p50_ms"], b1["p50_ms"])
        lines.append(f"| {kind} | {p50:.0f} | {p99:.0f} | {plain:.0f} | {e50:.2f} / {eplain:.2f} |")
    n, arcs = FULL_RELEASE["n"], target
    graph_bytes = 8 * (n + 1) + 12 * arcs
    index_bytes = 0.20 * graph_bytes  # MAX_SHARE: the cap bound on both measured graphs
    weights = 8 * arcs // 2
    web = large["http"]
    measured_rest = web["rss_ready"]["VmRSS"] - large["in_process"]["graph_bytes"] - large["in_process"]["index_bytes"]
    per_vertex = measured_rest / large["in_process"]["n"]  # vertex tables, interpreter, libraries
    workspaces = (os.cpu_count() or 1) * 64 * n
    total = graph_bytes + index_bytes + weights + per_vertex * n + workspaces
    gib = 2**30
    build, _ = extrapolate(small["index"]["build_seconds"], large["index"]["build_seconds"])
    stage, _ = extrapolate(small["index"]["graph_stage_seconds"], large["index"]["graph_stage_seconds"])
    lines += [
        "",
        f"Index build (both graphs) by the same fit: {build:.0f} s against a graph stage of {stage:.0f} s "
        f"({build / stage:.1%}); its size is capped at 20 % of graph.bp.",
        "",
        f"Service memory by the formula of `services/api/settings.py`: graph {graph_bytes / gib:.1f} GiB + index "
        f"(20 % cap) {index_bytes / gib:.1f} GiB + weights {weights / gib:.1f} GiB + vertex tables and the rest at "
        f"{per_vertex:.0f} B a vertex (measured at {large['in_process']['n']:,} vertices) {per_vertex * n / gib:.1f} "
        f"GiB + {os.cpu_count()} workspaces x 64 B x n {workspaces / gib:.1f} GiB = **{total / gib:.1f} GiB**.",
    ]
    with out.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", help="results folder holding builds/<build_id>")
    parser.add_argument("--build", help="build id whose full graph is on demand")
    parser.add_argument("--label", default="", help="what the corpus is, for the table (e.g. 30M predications)")
    parser.add_argument("--pairs", type=int, default=500, help="random pairs of each kind")
    parser.add_argument("--peer-pairs", type=int, default=4, help="pairs of each kind the scipy peer answers")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=4, help="wrk connections")
    parser.add_argument("--duration", type=int, default=20, help="seconds of wrk load")
    parser.add_argument("--rebuild-index", action="store_true", help="build the index again even when present")
    parser.add_argument("--no-http", action="store_true", help="in process only")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "path_index.md"))
    parser.add_argument("--project", action="store_true",
                        help="only append the projection to a full release from the recorded runs (.json)")  # fmt: skip
    args = parser.parse_args()
    if args.project:
        out = Path(args.out)
        projection(json.loads(out.with_suffix(".json").read_text()), out)
        return

    import pyarrow.parquet as pq

    from pipeline.builds.layout import BuildLayout, GraphFolder

    results_dir = Path(args.results_dir).resolve()
    build_dir = results_dir / "builds" / args.build
    index = build_indexes(build_dir, args.rebuild_index)
    folder = GraphFolder(BuildLayout(build_dir).graph("full").graph_dir)
    is_concept = pq.read_table(folder.vertices, columns=["kind"]).column("kind").to_numpy(zero_copy_only=False)
    pairs = pairs_by_kind(is_concept == "concept", args.pairs, args.seed)
    del is_concept
    local, answers = in_process(build_dir, pairs, args.peer_pairs)
    http_result = None if args.no_http else over_http(
        results_dir, args.build, pairs, answers, args.connections, args.duration
    )  # fmt: skip
    record = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_model": cpu_model(), "cores": os.cpu_count(), "label": args.label, "build": args.build,
        "pairs_per_kind": {k: len(v) for k, v in pairs.items()}, "index": index, "in_process": local,
        "http": http_result, "targets": TARGETS,
    }  # fmt: skip
    write_report(Path(args.out), record)


def write_report(out: Path, r: dict) -> None:
    local, web, index = r["in_process"], r["http"], r["index"]
    full = index["graphs"].get("full", {})
    gib = 2**30
    lines = [
        f"\n## {r['date']} -- {r['label']} -- {r['cpu_model']} ({r['cores']} cores)\n",
        f"Build `{r['build']}`, full graph {local['n']:,} vertices / {local['arcs']:,} arcs, no stored distances. "
        f"Pairs per kind: {r['pairs_per_kind']}. Index: {local['index_rows']:,} hub rows, {local['index_arcs']:,} "
        f"arcs, {local['index_bytes'] / gib:.2f} GiB = {local['index_bytes'] / local['graph_bytes']:.1%} of the "
        f"graph's {local['graph_bytes'] / gib:.2f} GiB in memory (CSR + weights); on disk "
        f"{full.get('share_of_graph', float('nan')):.1%} of graph.bp.",
    ]
    if index["share_of_stage"] is not None:
        lines.append(
            f"Index build (both graphs): {index['build_seconds']:.1f} s = {index['share_of_stage']:.1%} of the graph "
            f"stage's {index['graph_stage_seconds']:.0f} s ("
            + ("the same run: the stage built it" if index["same_run"] else "the stage's time is an earlier run's")
            + ")."
        )
    lines += ["", "| pair kind | indexed p50 / p90 / p99 ms | plain p50 / p90 / p99 ms | p50 speed-up | HTTP p50 / p99 ms |",
              "|---|---|---|---:|---|"]  # fmt: skip
    for kind in KINDS:
        a, b = local[kind]["indexed"], local[kind]["plain"]
        h = web[kind] if web else None
        lines.append(
            f"| {kind} | {a['p50_ms']:.1f} / {a['p90_ms']:.1f} / {a['p99_ms']:.1f} | {b['p50_ms']:.1f} / "
            f"{b['p90_ms']:.1f} / {b['p99_ms']:.1f} | {b['p50_ms'] / a['p50_ms']:.1f}x | "
            + (f"{h['p50_ms']:.1f} / {h['p99_ms']:.1f} |" if h else "-- |")
        )
    s = local["scipy"]
    lines += [
        "",
        f"scipy `dijkstra(indices=s)` per query (in process, {s['count']} pairs): p50 {s['p50_ms']:.0f} ms. "
        f"Distances unequal: indexed vs plain {local['mismatches_vs_plain']} (bit for bit), vs scipy "
        f"{s['mismatches']}" + (f", HTTP vs in process {web['mismatches_vs_in_process']}." if web else "."),
        f"In-process peak RSS (graph, index, vertex tables, the scipy copy): {local['rss_peak'] / gib:.2f} GiB.",
    ]
    if web:
        w = web.get("wrk") or {}
        lines.append(
            f"Service (default pools): ready in {web['ready_seconds']:.0f} s at RSS {web['rss_ready']['VmRSS'] / gib:.2f} "
            f"GiB; under wrk ({w.get('connections')} connections, {w.get('duration_s')} s): {w.get('rps', 0):.0f} req/s, "
            f"p50 {w.get('p50_ms', float('nan')):.1f} ms, p99 {w.get('p99_ms', float('nan')):.1f} ms, errors "
            f"{w.get('errors')}, non-2xx {w.get('non2xx')}; RSS after {web['rss_after_load']['VmRSS'] / gib:.2f} GiB, "
            f"peak {web['rss_after_load']['VmHWM'] / gib:.2f} GiB."
        )
    append_run(out, "# On-demand exact paths with the path index (hub rows by cost) vs without, and scipy", lines, r)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
