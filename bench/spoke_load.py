"""Benchmark: litpath's SPOKE loader against the naive per-row CREATE loader, same driver, same run.

    .venv/bin/python bench/spoke_load.py                                  # full scale: 200k nodes, 1M edges
    .venv/bin/python bench/spoke_load.py --nodes 20000 --edges 100000     # quick check
    .venv/bin/python bench/spoke_load.py --uri bolt://127.0.0.1:7687      # an already running Neo4j

It writes a synthetic SPOKE-like graph in the Hetionet release layout (nodes TSV + edges
``.sif``; node kinds and metaedges in Hetionet v1.0's proportions, distinct edges), starts
its own Neo4j (``services.local.servers.Neo4jServer``) unless ``--uri`` is given, and
times:

Both loaders first run once on small graphs (then the graph is emptied), so that neither
pays the JVM's warm-up in its timed run.

* **litpath**: ``pipeline.spoke.load.load_spoke`` on the whole graph -- the check pass,
  constraints, ``UNWIND``+``MERGE`` batches, the verification counts;
* **naive**: what users commonly write with the same Python driver -- one auto-commit
  ``session.run("CREATE ...")`` per node and one ``MATCH ... MATCH ... CREATE`` per edge --
  on a smaller graph of the same shape (``--naive-nodes``, ``--naive-edges``, default 5k /
  20k) under separate labels (``Naive<Kind>``) that get the same uniqueness constraints, so
  its edge lookups are index-backed too. Its rate is extrapolated to the full graph (a per-row loader's rate does
  not fall with size while the graph fits the page cache; stated in the results).

Results (nodes/s, edges/s, the ratio) are appended to ``bench/results/spoke_load.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import neo4j  # noqa: E402

from pipeline.spoke.hetionet import hetionet_v1_metaedges  # noqa: E402
from pipeline.spoke.load import load_spoke  # noqa: E402
from pipeline.store.neo4j import Neo4jSettings  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "spoke_load.md"

# Hetionet v1.0 node counts per kind and edge counts per metaedge: the synthetic graph's mix.
KIND_COUNTS = {
    "Anatomy": 402, "Biological Process": 11381, "Cellular Component": 1391, "Compound": 1552,
    "Disease": 137, "Gene": 20945, "Molecular Function": 2884, "Pathway": 1822,
    "Pharmacologic Class": 345, "Side Effect": 5734, "Symptom": 438,
}  # fmt: skip
METAEDGE_COUNTS = {
    "AdG": 102240, "AeG": 526407, "AuG": 97848, "CbG": 11571, "CcSE": 138944, "CdG": 21102,
    "CpD": 390, "CrC": 6486, "CtD": 755, "CuG": 18756, "DaG": 12623, "DdG": 7623, "DlA": 3602,
    "DpS": 3357, "DrD": 543, "DuG": 7731, "GcG": 61690, "GiG": 147164, "GpBP": 559504,
    "GpCC": 73566, "GpMF": 97222, "GpPW": 84372, "Gr>G": 265672, "PCiC": 1029,
}  # fmt: skip


def synthetic_graph(
    n_nodes: int, n_edges: int, seed: int
) -> tuple[dict[str, list[str]], list[tuple[str, str, str]]]:
    """Node identifiers per kind, and distinct (source id, metaedge, target id) edges."""
    rng = random.Random(seed)
    total = sum(KIND_COUNTS.values())
    ids: dict[str, list[str]] = {}
    for kind, count in KIND_COUNTS.items():
        n = max(2, round(n_nodes * count / total))
        prefix = "".join(word[0] for word in kind.split())
        ids[kind] = [f"{prefix}{i:07d}" for i in range(n)]
    metaedges = hetionet_v1_metaedges()
    edge_total = sum(METAEDGE_COUNTS.values())
    edges: list[tuple[str, str, str]] = []
    for abbreviation, count in METAEDGE_COUNTS.items():
        metaedge = metaedges[abbreviation]
        sources, targets = ids[metaedge.source_kind], ids[metaedge.target_kind]
        want = min(round(n_edges * count / edge_total), len(sources) * len(targets) // 2)
        seen: set[tuple[int, int]] = set()
        while len(seen) < want:
            # skewed sources (a few hub genes / anatomies), uniform targets
            s = min(int(rng.paretovariate(1.2)) - 1, len(sources) - 1)
            s = (s * 7919 + rng.randrange(len(sources))) % len(sources) if rng.random() < 0.5 else s
            seen.add((s, rng.randrange(len(targets))))
        edges.extend(
            (f"{metaedge.source_kind}::{sources[s]}", abbreviation, f"{metaedge.target_kind}::{targets[t]}")
            for s, t in seen
        )
    return ids, edges


def write_hetionet(
    folder: Path, ids: dict[str, list[str]], edges: list[tuple[str, str, str]]
) -> tuple[Path, Path]:
    nodes_path, edges_path = folder / "nodes.tsv", folder / "edges.sif"
    with open(nodes_path, "w") as out:
        out.write("id\tname\tkind\n")
        for kind, identifiers in ids.items():
            for identifier in identifiers:
                out.write(f"{kind}::{identifier}\t{kind.lower()} {identifier}\t{kind}\n")
    with open(edges_path, "w") as out:
        out.write("source\tmetaedge\ttarget\n")
        for source, abbreviation, target in edges:
            out.write(f"{source}\t{abbreviation}\t{target}\n")
    return nodes_path, edges_path


def empty_graph(driver: neo4j.Driver) -> None:
    with driver.session() as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def warm_up(driver: neo4j.Driver, workdir: Path, seed: int) -> None:
    """Both loaders once on small graphs, then an empty graph: JIT, query plans and page cache warm."""
    empty_graph(driver)
    folder = workdir / "warm-up"
    folder.mkdir(exist_ok=True)
    nodes_path, edges_path = write_hetionet(folder, *synthetic_graph(5_000, 20_000, seed + 2))
    load_spoke(driver, nodes_path, edges_path, "hetionet")
    load_spoke(driver, nodes_path, edges_path, "hetionet")
    naive_load(driver, 500, 1_000, seed + 3)
    empty_graph(driver)


def naive_load(driver: neo4j.Driver, n_nodes: int, n_edges: int, seed: int) -> dict[str, float]:
    """One auto-commit CREATE per row, as in most tutorials, on a smaller graph of the same shape.

    Its labels are ``Naive<Kind>`` with the same uniqueness constraints, so edge lookups are
    index-backed as in litpath's loader.
    """
    metaedges = hetionet_v1_metaedges()
    ids, edges = synthetic_graph(n_nodes, n_edges, seed)
    sample_edges = []
    for source, abbreviation, target in edges:
        skind, sid = source.split("::")
        tkind, tid = target.split("::")
        sample_edges.append((skind, sid, metaedges[abbreviation], tkind, tid))
    with driver.session() as session:
        for kind in ids:
            label = "Naive" + kind.replace(" ", "")
            session.run(
                f"CREATE CONSTRAINT IF NOT EXISTS FOR (n:{label}) REQUIRE n.identifier IS UNIQUE"
            ).consume()
        started = time.perf_counter()
        nodes_done = 0
        for kind, identifiers in ids.items():
            label = "Naive" + kind.replace(" ", "")
            for identifier in identifiers:
                session.run(
                    f"CREATE (n:{label} {{identifier: $id, name: $name}})", id=identifier, name=identifier
                )
                nodes_done += 1
        node_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for skind, sid, metaedge, tkind, tid in sample_edges:
            session.run(
                f"MATCH (a:Naive{skind.replace(' ', '')} {{identifier: $s}}) "
                f"MATCH (b:Naive{tkind.replace(' ', '')} {{identifier: $t}}) CREATE (a)-[:{metaedge.rel_type}]->(b)",
                s=sid, t=tid,
            )  # fmt: skip
        edge_seconds = time.perf_counter() - started
    return {
        "nodes": nodes_done, "edges": len(sample_edges), "node_seconds": node_seconds, "edge_seconds": edge_seconds,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--naive-nodes", type=int, default=5_000)
    parser.add_argument("--naive-edges", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--uri", help="Use this Neo4j (its graph is EMPTIED) instead of starting one")
    parser.add_argument("--page-cache", default="1g", help="Page cache of the started Neo4j")
    parser.add_argument("--workdir", type=Path, help="Where the synthetic dump goes (default: a temp folder)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="spoke-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ids, edges = synthetic_graph(args.nodes, args.edges, args.seed)
    nodes_path, edges_path = write_hetionet(workdir, ids, edges)
    n_nodes = sum(len(v) for v in ids.values())
    print(
        f"synthetic graph: {n_nodes} nodes, {len(edges)} edges in {time.perf_counter() - started:.1f} s ({workdir})"
    )

    server = None
    if args.uri:  # a server of one's own: credentials from LITPATH_NEO4J_USER / _PASSWORD
        uri = args.uri
        auth = Neo4jSettings.from_env(uri=uri).auth
    else:
        from services.local.servers import Neo4jServer

        server = Neo4jServer(workdir / "neo4j", page_cache=args.page_cache)
        server.start(timeout=300)
        uri, auth = server.uri, server.auth
    java_opts = os.environ.get("LITPATH_NEO4J_JAVA_OPTS", "-Xmx512m (launcher default)")
    try:
        with neo4j.GraphDatabase.driver(uri, auth=auth) as driver:
            warm_up(driver, workdir, args.seed)
            report = load_spoke(driver, nodes_path, edges_path, "hetionet", batch_size=args.batch_size)
            assert report.verified, report.problems
            totals = report.totals()
            assert totals["nodes"]["in_neo4j"] == n_nodes and totals["edges"]["in_neo4j"] == len(edges)
            ours = report.seconds
            print(report.to_text().splitlines()[-1], ours)
            reload = load_spoke(driver, nodes_path, edges_path, "hetionet", batch_size=args.batch_size)
            assert reload.verified and reload.totals()["edges"]["created"] == 0
            naive = naive_load(driver, args.naive_nodes, args.naive_edges, args.seed + 1)
            print("naive:", naive)
    finally:
        if server is not None:
            server.stop()

    ours_node_rate = n_nodes / ours["nodes"]
    ours_edge_rate = len(edges) / ours["edges"]
    ours_overall = (n_nodes + len(edges)) / ours["total"]
    naive_node_rate = naive["nodes"] / naive["node_seconds"]
    naive_edge_rate = naive["edges"] / naive["edge_seconds"]
    naive_full_seconds = n_nodes / naive_node_rate + len(edges) / naive_edge_rate
    lines = [
        f"## {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} -- {n_nodes:,} nodes, {len(edges):,} edges",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}, "
        f"neo4j driver {neo4j.__version__}; Neo4j 5.26 Community via services.local.servers "
        f"({'--uri' if args.uri else f'started here, page cache {args.page_cache}, JVM {java_opts}'}); "
        f"batch size {args.batch_size}.",
        "",
        "| loader | rows timed | nodes/s | edges/s | seconds for the whole graph |",
        "|---|---|---|---|---|",
        f"| litpath `load_spoke` (UNWIND batches: CREATE into empty labels/types, else MERGE) | {n_nodes:,} nodes, {len(edges):,} edges | "
        f"{ours_node_rate:,.0f} | {ours_edge_rate:,.0f} | {ours['total']:.1f} measured "
        f"(check {ours['check']:.1f}, constraints {ours['constraints']:.1f}, nodes {ours['nodes']:.1f}, "
        f"edges {ours['edges']:.1f}, verify {ours['verify']:.1f}) |",
        f"| naive per-row `CREATE` (auto-commit) | {naive['nodes']:,} nodes, {naive['edges']:,} edges (sample) | "
        f"{naive_node_rate:,.0f} | {naive_edge_rate:,.0f} | {naive_full_seconds:,.0f} extrapolated |",
        "",
        f"Ratio litpath / naive: nodes **{ours_node_rate / naive_node_rate:.1f}x**, edges "
        f"**{ours_edge_rate / naive_edge_rate:.1f}x**, whole load (ours incl. check and verify) "
        f"**{naive_full_seconds / ours['total']:.1f}x** ({ours_overall:,.0f} rows/s overall).",
        f"Reload of the same dump (idempotent, 0 created): {reload.seconds['total']:.1f} s.",
        "",
        "The naive loader ran on a smaller synthetic graph of the same shape, under its own labels with "
        "the same uniqueness constraints (index-backed MATCH for edges), in the same Neo4j right after "
        "litpath's loads; its per-row rate is extrapolated linearly to the full graph.",
        "",
    ]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    header = "" if args.results.exists() else "# SPOKE load benchmark (bench/spoke_load.py)\n\n"
    with open(args.results, "a") as out:
        out.write(header + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
