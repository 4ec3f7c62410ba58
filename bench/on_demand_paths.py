"""Benchmark: exact paths on demand over HTTP on a full graph with no stored distances.

What is measured (one run, one machine, one build):

1. **litpath, one client** -- ``GET /v1/path?graph=full`` for random pairs of vertices of
   the build's full graph, sequentially from one keep-alive client against one uvicorn
   process started by ``litpath serve``; the build's full graph must have been planned
   ``on-demand`` (no distances.bp), so every answer is a bidirectional Dijkstra in compiled
   code (``"distances": "on-demand"`` is checked on every answer). Latency p50/p99.
2. **litpath under load** -- the same queries from ``wrk`` with a few connections (requests/s
   and latency percentiles), when wrk is installed.
3. **The peer a user would otherwise write** -- per query, ``scipy.sparse.csgraph.dijkstra``
   from the source (``indices=s``, ``return_predecessors=True``) and the path walked back
   from the predecessors, in process (no HTTP at all, which favours the peer). Same pairs.

Every litpath answer's path cost equals scipy's distance (checked). Results are appended
to ``bench/results/on_demand_paths.md`` and ``.json`` with the CPU model, the graph's size
and the ratio of the medians.

Usage::

    .venv/bin/python bench/on_demand_paths.py --results-dir results --build <build_id>
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from path_service import percentiles  # noqa: E402

from pipeline.runtime.process import free_port  # noqa: E402

TARGETS = {"p50_ms": 50.0, "p99_ms": 200.0}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def start_service(results: Path, build: str) -> tuple[subprocess.Popen, str]:
    import urllib.request

    port = free_port()
    env = {**__import__("os").environ, "LITPATH_RESULTS_DIR": str(results), "LITPATH_BUILD": build}
    env.pop("LITPATH_MONGO_URI", None)  # the path itself, not the evidence store
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.api.commands", "--port", str(port), "--workers", "1", "--log-level", "warning"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/v1/ready", timeout=5) as response:
                if response.status == 200:
                    return proc, base
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"litpath serve exited: {proc.stderr.read()[-2000:]}")
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("litpath serve did not become ready in 600 s")


def on_demand_graph_and_pairs(results: Path, build: str, count: int, seed: int):
    """The build's full graph (it must have no stored distances: the benchmarks time searches on
    demand) and ``count`` random vertex pairs of it drawn with ``seed``."""
    from pipeline.query.graph import open_graph

    graph = open_graph(results / "builds" / build, "full")
    if graph.distances is not None:
        raise SystemExit(f"build {build}'s full graph has stored distances ({graph.method}); plan it on-demand")
    rng = np.random.default_rng(seed)
    return graph, [(int(a), int(b)) for a, b in rng.integers(0, graph.n, size=(count, 2))]


def timed_path_answers(
    base: str, keys: list[str], pairs: list[tuple[int, int]], extra: str = ""
) -> tuple[list[float], list[dict]]:
    """GET /v1/path (full graph, no evidence, ``extra`` query parameters) for each pair in turn
    over one keep-alive connection: each answer's seconds and body. The build must answer on
    demand (no stored distances)."""
    import http.client

    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    samples, bodies = [], []
    for s, t in pairs:
        url = f"/v1/path?source={keys[s]}&target={keys[t]}&graph=full&evidence=false{extra}"
        started = time.perf_counter()
        connection.request("GET", url)
        response = connection.getresponse()
        body = json.loads(response.read())
        samples.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{url}: {response.status} {body}")
        if body["distances"] != "on-demand":
            raise RuntimeError(f"{url}: answered from {body['distances']} distances; the build must be on-demand")
        bodies.append(body)
    connection.close()
    return samples, bodies


def litpath_sequential(base: str, keys: list[str], pairs: list[tuple[int, int]]) -> tuple[dict, list[float | None]]:
    samples, bodies = timed_path_answers(base, keys, pairs)
    return percentiles(samples), [body["total_cost"] if body["reachable"] else None for body in bodies]


def litpath_under_load(base: str, keys: list[str], pairs, connections: int, duration: int) -> dict | None:
    if shutil.which("wrk") is None:
        return None
    from path_service import run_wrk

    return run_wrk(base, [(keys[s], keys[t]) for s, t in pairs], connections, duration, 1)


def scipy_peer(adjacency, pairs: list[tuple[int, int]]) -> tuple[dict, list[float | None]]:
    from scipy.sparse.csgraph import dijkstra

    csr = adjacency.to_scipy()
    samples, costs = [], []
    for s, t in pairs:
        started = time.perf_counter()
        dist, predecessors = dijkstra(csr, directed=True, indices=s, return_predecessors=True)
        path = [t]
        if np.isfinite(dist[t]):
            while path[-1] != s:
                path.append(int(predecessors[path[-1]]))
        samples.append(time.perf_counter() - started)
        costs.append(float(dist[t]) if np.isfinite(dist[t]) else None)
    return percentiles(samples), costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", required=True, help="results folder holding builds/<build_id>")
    parser.add_argument("--build", required=True, help="build id whose full graph is on demand")
    parser.add_argument("--pairs", type=int, default=500, help="random vertex pairs")
    parser.add_argument("--peer-pairs", type=int, default=200, help="pairs the scipy peer answers (it is slow)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=4, help="wrk connections")
    parser.add_argument("--duration", type=int, default=20, help="seconds of wrk load")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "on_demand_paths.md"))
    args = parser.parse_args()

    results = Path(args.results_dir).resolve()
    graph, pairs = on_demand_graph_and_pairs(results, args.build, args.pairs, args.seed)
    print(f"graph: {graph.n:,} vertices, {graph.adjacency.nnz // 2:,} edges; {len(pairs)} pairs", file=sys.stderr)

    proc, base = start_service(results, args.build)
    try:
        litpath, costs = litpath_sequential(base, graph.keys, pairs)
        load = litpath_under_load(base, graph.keys, pairs, args.connections, args.duration)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    peer_pairs = pairs[: args.peer_pairs]
    peer, peer_costs = scipy_peer(graph.adjacency, peer_pairs)
    mismatches = sum(
        (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-5 * max(1.0, b))
        for a, b in zip(costs, peer_costs, strict=False)
    )
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_model": cpu_model(),
        "cores": __import__("os").cpu_count(),
        "build": args.build,
        "n": graph.n,
        "edges": graph.adjacency.nnz // 2,
        "pairs": len(pairs),
        "peer_pairs": len(peer_pairs),
        "litpath_one_client_ms": litpath,
        "litpath_wrk": load,
        "scipy_per_query_ms": peer,
        "ratio_p50": peer["p50_ms"] / litpath["p50_ms"],
        "cost_mismatches": mismatches,
        "targets": TARGETS,
        "met": litpath["p50_ms"] <= TARGETS["p50_ms"] and litpath["p99_ms"] <= TARGETS["p99_ms"],
    }
    graph.close()
    out = Path(args.out)
    lines = [
        f"\n## {result['date']} -- {result['cpu_model']} ({result['cores']} cores)\n",
        f"Build `{args.build}`, full graph {graph.n:,} vertices / {result['edges']:,} edges, no stored "
        f"distances (on-demand). {len(pairs)} random vertex pairs; the peer answered the first {len(peer_pairs)}.\n",
        "| | p50 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|",
        f"| litpath `GET /v1/path?graph=full` (HTTP, one client) | {litpath['p50_ms']:.2f} | {litpath['p99_ms']:.2f} | {litpath['mean_ms']:.2f} |",
        f"| scipy `dijkstra(indices=s)` + predecessor walk (in process) | {peer['p50_ms']:.2f} | {peer['p99_ms']:.2f} | {peer['mean_ms']:.2f} |",
        "",
        f"scipy / litpath at p50: **{result['ratio_p50']:.1f}x**; path costs that disagree with scipy: {mismatches}. "
        f"Targets p50 <= {TARGETS['p50_ms']:.0f} ms, p99 <= {TARGETS['p99_ms']:.0f} ms: "
        f"{'met' if result['met'] else 'NOT met'}.",
    ]
    if load:
        lines.append(
            f"Under load (wrk, {args.connections} connections, {args.duration} s): {load.get('rps', 0):.0f} req/s, "
            f"p50 {load.get('p50_ms', float('nan')):.2f} ms, p99 {load.get('p99_ms', float('nan')):.2f} ms."
        )
    append_run(out, "# Exact paths on demand (`GET /v1/path`, no stored distances) vs a per-query scipy Dijkstra", lines,
               result)  # fmt: skip
    print("\n".join(lines))


def append_run(out: Path, title: str, lines: list[str], record: dict) -> None:
    """One run's Markdown lines appended to ``out`` (started with ``title``) and its record to the
    JSON history beside it (``out`` with .json), so every run stays next to the earlier ones."""
    if not out.exists():
        out.write_text(title + "\n")
    with out.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    history = out.with_suffix(".json")
    records = json.loads(history.read_text()) if history.exists() else []
    records.append(record)
    history.write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
