"""Benchmark: exact shortest paths without the dense matrix, against scipy in the same run.

What is measured (one run, one machine, one graph):

1. **Distance rows** -- ``apsp-fw --sources`` (solver/core/distance_rows.cpp: Dijkstra by buckets)
   for ``--sources`` random source vertices (seeded) on 1 MPI rank x 2 OpenMP threads,
   through ``pipeline.solve.apsp_fw.run_solver``: the solver's own solve seconds (its JSON summary)
   and the wall time of the whole run (mpirun start, reading the graph, writing
   distances.bp). Median of ``--repeat`` runs.
2. **The peer** -- ``scipy.sparse.csgraph.dijkstra(csr, indices=sources)`` on the same graph
   (scipy is single-threaded), median of ``--repeat`` runs. Its rows are the reference: the
   solver's distances.bp must equal float32 of scipy's float64 (``allclose``, rtol 1e-6;
   the max abs difference and any reachability mismatch are reported).
   For a per-thread comparison the same rows are also timed in-process on one thread
   (``pipeline.query.sssp.rows(..., threads=1)``).
3. **On-demand pair queries** -- ``pipeline.query.sssp.shortest_path`` (bidirectional Dijkstra,
   distance and path) on ``--pairs`` random pairs: p50/p99 ms. Peer: one
   ``scipy.sparse.csgraph.dijkstra(csr, indices=s)`` per query (scipy cannot stop at the
   target, so it solves the whole row); it is run on the first ``--scipy-pairs`` pairs
   only, or fewer when it passes ``--scipy-budget`` seconds (the report says how many).
   Both must agree on the distance (rtol 1e-9).

Zero-cost edges: scipy drops explicit zeros, so its graph stores them as the smallest
positive double (``pipeline.query.paths.Adjacency.to_scipy``).

Results are printed and appended to bench/results/sssp_rows.md and .json, with the CPU
model, n, nnz, the date and the load average (other work may share the cores).

Usage::

    .venv/bin/python bench/sssp_rows.py --graph results/<build>/graph/graph.bp   # a real graph
    .venv/bin/python bench/sssp_rows.py --mtx solver/tests/data/directed_97.mtx  # any .mtx
    .venv/bin/python bench/sssp_rows.py --random 200000 1000000                  # n, undirected edges
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.query import sssp  # noqa: E402
from pipeline.query.paths import Adjacency, adjacency_from_edges  # noqa: E402

RESULTS = REPO / "bench" / "results"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def random_graph(n: int, edges: int, seed: int) -> Adjacency:
    """Undirected, uniform random endpoints, costs exponential(1) (like -log of weights)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, edges), rng.integers(0, n, edges)
    keep = a != b
    pairs = np.unique(np.stack([np.minimum(a, b)[keep], np.maximum(a, b)[keep]], axis=1), axis=0)
    cost = rng.exponential(1.0, len(pairs)).astype(np.float32)
    return adjacency_from_edges(n, pairs[:, 0], pairs[:, 1], cost)


def adjacency_from_mtx(path: Path) -> Adjacency:
    """A Matrix Market file as apsp-fw reads it: entries are arcs row -> col, symmetric ones both
    ways, parallel arcs keep the cheapest (scipy would add them up)."""
    from scipy.io import mmread

    coo = mmread(str(path)).tocoo()  # symmetric files come back with both triangles
    n = coo.shape[0]
    rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
    cost = np.asarray(coo.data, dtype=np.float32)
    order = np.lexsort((cost, cols, rows))
    rows, cols, cost = rows[order], cols[order], cost[order]
    first = np.ones(len(rows), bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    rows, cols, cost = rows[first], cols[first], cost[first]
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=row_ptr[1:])
    return Adjacency(n=n, row_ptr=row_ptr, col_idx=cols, cost=cost)


def load_graph(args, workdir: Path) -> tuple[Path, Adjacency, str]:
    """(the solver's input file, the same graph as an Adjacency, a description)."""
    if args.graph:
        from pipeline.query.paths import adjacency_from_graph_bp

        adjacency, attrs = adjacency_from_graph_bp(args.graph)
        return (
            Path(args.graph),
            adjacency,
            f"{args.graph} (digest {str(attrs.get('graph_digest', '?'))[:12]})",
        )
    if args.mtx:
        return Path(args.mtx), adjacency_from_mtx(Path(args.mtx)), str(args.mtx)
    from pipeline.store.adios import write_graph_bp

    n, edges = args.random
    adjacency = random_graph(n, edges, args.seed)
    path = workdir / "graph.bp"
    attrs = {
        "graph_digest": f"random-{n}-{edges}-{args.seed}",
        "weight_scheme": "exponential",
        "edge_kinds": ["random"],
    }
    write_graph_bp(path, adjacency.n, adjacency.row_ptr, adjacency.col_idx, adjacency.cost, attrs)
    return (
        path,
        adjacency,
        f"random undirected, {n:,} vertices, {adjacency.nnz // 2:,} edges (seed {args.seed})",
    )


def reverse_if_directed(adjacency: Adjacency) -> Adjacency | None:
    """The transpose when the graph is not symmetric (shortest_path searches it backward)."""
    reverse = sssp.reverse_adjacency(adjacency)
    same = (
        np.array_equal(reverse.row_ptr, adjacency.row_ptr)
        and np.array_equal(reverse.col_idx, adjacency.col_idx)
        and np.array_equal(reverse.cost, adjacency.cost)
    )
    return None if same else reverse


def median_seconds(run, repeat: int) -> tuple[float, list[float], object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), times, result


def percentiles_ms(samples: list[float]) -> dict:
    ms = np.asarray(samples) * 1e3
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "mean_ms": float(ms.mean()),
        "count": len(ms),
    }


def compare_rows(got: np.ndarray, want64: np.ndarray) -> dict:
    want = want64.astype(np.float32)
    reach_mismatch = int(np.sum(np.isinf(got) != np.isinf(want)))
    finite = np.isfinite(want) & np.isfinite(got)
    diff = np.abs(got[finite].astype(np.float64) - want[finite].astype(np.float64))
    return {
        "equal": bool(reach_mismatch == 0 and np.allclose(got[finite], want[finite], rtol=1e-6, atol=0)),
        "max_abs_diff": float(diff.max()) if diff.size else 0.0,
        "reachability_mismatches": reach_mismatch,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", help="a graph.bp (the pipeline's CSR)")
    source.add_argument("--mtx", help="a Matrix Market file")
    source.add_argument(
        "--random", nargs=2, type=int, metavar=("N", "M"), help="random graph: N vertices, M edges"
    )
    parser.add_argument("--sources", type=int, default=64, help="source vertices for the rows (default 64)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per timing; the median is reported (default 3)"
    )
    parser.add_argument(
        "--threads", type=int, default=2, help="OpenMP threads of the one apsp-fw rank (default 2)"
    )
    parser.add_argument("--pairs", type=int, default=200, help="random pairs for the on-demand queries")
    parser.add_argument(
        "--scipy-pairs", type=int, default=200, help="at most this many pairs for scipy's peer"
    )
    parser.add_argument(
        "--scipy-budget", type=float, default=120.0, help="seconds scipy's pair peer may take"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--no-record", action="store_true", help="print only, append nothing to bench/results"
    )
    args = parser.parse_args(argv)

    from scipy.sparse.csgraph import dijkstra

    from pipeline.solve.apsp_fw import run_solver
    from pipeline.store.adios import DistanceMatrix

    started_at = datetime.datetime.now(datetime.UTC)
    loadavg = (
        " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    )
    with tempfile.TemporaryDirectory(prefix="bench-sssp-") as tmp:
        workdir = Path(tmp)
        graph_path, adjacency, description = load_graph(args, workdir)
        n, nnz = adjacency.n, adjacency.nnz
        print(f"graph: {description}; n = {n:,}, nnz = {nnz:,}", flush=True)
        rng = np.random.default_rng(args.seed)
        sources = np.sort(rng.choice(n, min(args.sources, n), replace=False))
        csr = adjacency.to_scipy()

        # 1. apsp-fw --sources, 1 rank x T threads
        output = workdir / "distances.bp"
        summaries = []

        def solve():
            summary = run_solver(
                graph_path,
                output,
                ranks=1,
                threads=args.threads,
                sources=sources.tolist(),
                on_progress=lambda _: None,
            )
            summaries.append(summary)
            return summary

        solver_wall, solver_walls, _ = median_seconds(solve, args.repeat)
        solver_solve = float(np.median([s["seconds"]["solve"] for s in summaries]))
        print(f"apsp-fw --sources: solve {solver_solve:.3f} s (median), wall {solver_wall:.3f} s", flush=True)

        # 2. scipy peer, and the check
        scipy_rows_s, scipy_rows_times, reference = median_seconds(
            lambda: dijkstra(csr, directed=True, indices=sources), args.repeat
        )
        print(f"scipy dijkstra(indices={len(sources)} sources): {scipy_rows_s:.3f} s (median)", flush=True)
        with DistanceMatrix(output) as stored:
            assert stored.sources.tolist() == sources.tolist()
            got = np.stack([stored.row(int(s)) for s in sources])
        check = compare_rows(got, np.atleast_2d(reference))
        print(f"distances equal: {check['equal']} (max abs diff {check['max_abs_diff']:.3g})", flush=True)
        inprocess_s, _, _ = median_seconds(lambda: sssp.rows(adjacency, sources, threads=1), args.repeat)
        print(f"pipeline.query.sssp.rows, 1 thread: {inprocess_s:.3f} s (median)", flush=True)

        # 3. pair queries
        reverse = reverse_if_directed(adjacency)
        pairs = [tuple(int(v) for v in rng.integers(0, n, 2)) for _ in range(args.pairs)]
        sssp.shortest_path(adjacency, *pairs[0], reverse=reverse)  # load the library, warm the workspace
        ours, our_distance = [], []
        for s, t in pairs:
            start = time.perf_counter()
            distance, _ = sssp.shortest_path(adjacency, s, t, reverse=reverse)
            ours.append(time.perf_counter() - start)
            our_distance.append(distance)
        peer, mismatches = [], 0
        budget_end = time.perf_counter() + args.scipy_budget
        for (s, t), distance in zip(pairs[: args.scipy_pairs], our_distance, strict=False):
            start = time.perf_counter()
            want = float(dijkstra(csr, directed=True, indices=s)[t])
            peer.append(time.perf_counter() - start)
            same = (math.isinf(want) and math.isinf(distance)) or abs(want - distance) <= 1e-9 * max(
                1.0, want
            )
            mismatches += not same
            if time.perf_counter() > budget_end and len(peer) >= 5:
                break
        pair_ours, pair_peer = percentiles_ms(ours), percentiles_ms(peer)
        print(
            f"pair queries: ours p50 {pair_ours['p50_ms']:.2f} ms p99 {pair_ours['p99_ms']:.2f} ms over {len(ours)}; "
            f"scipy p50 {pair_peer['p50_ms']:.2f} ms over {len(peer)}; {mismatches} distance mismatches",
            flush=True,
        )

    result = {
        "when": started_at.isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "loadavg": loadavg,
        "graph": description,
        "n": n,
        "nnz": nnz,
        "sources": len(sources),
        "repeat": args.repeat,
        "rows": {
            "apsp_fw_ranks": 1,
            "apsp_fw_threads": args.threads,
            "apsp_fw_solve_s": solver_solve,
            "apsp_fw_wall_s": solver_wall,
            "apsp_fw_wall_runs_s": solver_walls,
            "sssp_rows_1_thread_s": inprocess_s,
            "scipy_s": scipy_rows_s,
            "scipy_runs_s": scipy_rows_times,
            "ratio_scipy_over_apsp_fw_solve": scipy_rows_s / solver_solve if solver_solve else None,
            "ratio_scipy_over_1_thread": scipy_rows_s / inprocess_s if inprocess_s else None,
            **check,
        },
        "pairs": {
            "directed_search": reverse is not None,
            "ours": pair_ours,
            "scipy": pair_peer,
            "scipy_pairs_run": len(peer),
            "distance_mismatches": mismatches,
            "ratio_scipy_over_ours_p50": pair_peer["p50_ms"] / pair_ours["p50_ms"]
            if pair_ours["p50_ms"]
            else None,
        },
    }
    report = markdown(result)
    print(report)
    if not args.no_record:
        RESULTS.mkdir(parents=True, exist_ok=True)
        md = RESULTS / "sssp_rows.md"
        if not md.exists():
            md.write_text(
                "# Distance rows and pair queries without the dense matrix (`bench/sssp_rows.py`)\n\n"
                "apsp-fw --sources and pipeline.query.sssp (solver/core/sssp.cpp) against "
                "scipy.sparse.csgraph.dijkstra, in the same run. Newest run last.\n"
            )
        with md.open("a") as handle:
            handle.write("\n" + report)
        path = RESULTS / "sssp_rows.json"
        runs = json.loads(path.read_text()) if path.exists() else []
        runs.append(result)
        path.write_text(json.dumps(runs, indent=2) + "\n")
        print(f"appended to {md} and {path}")
    return 0 if check["equal"] and mismatches == 0 else 1


def markdown(r: dict) -> str:
    rows, pairs = r["rows"], r["pairs"]
    lines = [
        f"## {r['when']} -- {r['graph']}",
        "",
        f"{r['cpu']}, {r['cores']} cores (load average at start {r['loadavg']}); n = {r['n']:,}, "
        f"nnz = {r['nnz']:,}; {r['sources']} sources; medians of {r['repeat']} runs.",
        "",
        "| distance rows | seconds | scipy / this |",
        "|---|---:|---:|",
        f"| apsp-fw --sources, 1 rank x {rows['apsp_fw_threads']} threads, solve | {rows['apsp_fw_solve_s']:.4g} | "
        f"{rows['ratio_scipy_over_apsp_fw_solve']:.2f}x |",
        f"| apsp-fw --sources, whole run (mpirun, read, write) | {rows['apsp_fw_wall_s']:.4g} | "
        f"{rows['scipy_s'] / rows['apsp_fw_wall_s']:.2f}x |",
        f"| pipeline.query.sssp.rows, 1 thread (in-process) | {rows['sssp_rows_1_thread_s']:.4g} | "
        f"{rows['ratio_scipy_over_1_thread']:.2f}x |",
        f"| scipy.sparse.csgraph.dijkstra(indices=sources) | {rows['scipy_s']:.4g} | 1.00x |",
        "",
        f"Distances equal to float32 of scipy's (rtol 1e-6): **{rows['equal']}**; max abs diff "
        f"{rows['max_abs_diff']:.3g}; reachability mismatches {rows['reachability_mismatches']}.",
        "",
        "| pair query (distance + path) | p50 ms | p99 ms | pairs |",
        "|---|---:|---:|---:|",
        f"| pipeline.query.sssp.shortest_path (bidirectional Dijkstra) | {pairs['ours']['p50_ms']:.2f} | "
        f"{pairs['ours']['p99_ms']:.2f} | {pairs['ours']['count']} |",
        f"| scipy dijkstra(indices=s) per query (whole row) | {pairs['scipy']['p50_ms']:.2f} | "
        f"{pairs['scipy']['p99_ms']:.2f} | {pairs['scipy_pairs_run']} |",
        "",
        f"p50 ratio scipy / ours: {pairs['ratio_scipy_over_ours_p50']:.1f}x; distance mismatches "
        f"{pairs['distance_mismatches']}; backward search on {'the reverse CSR' if pairs['directed_search'] else 'the symmetric CSR'}."
        + (
            f" scipy ran on the first {pairs['scipy_pairs_run']} pairs only (time budget)."
            if pairs["scipy_pairs_run"] < pairs["ours"]["count"]
            else ""
        ),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
