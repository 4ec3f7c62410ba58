"""Benchmark: litpath's batched SPOKE classification against a naive per-hop query loop, same run.

    .venv/bin/python bench/compare.py                                   # 200k SPOKE nodes, 70 concepts
    .venv/bin/python bench/compare.py --nodes 20000 --edges 60000        # quick check
    .venv/bin/python bench/compare.py --uri bolt://127.0.0.1:7687        # an already running Neo4j (EMPTIED)

Setup: a synthetic SPOKE (Disease/Protein/Gene/Compound nodes, random typed edges) written
in litpath's CSV dump layout and loaded with ``pipeline.spoke.load.load_spoke``; a synthetic
literature build (``tests/api/build_fixture.make_build``: scipy distances in the
solver's layout); a mapping of ~90 % of the build's concepts to 1-2 SPOKE nodes each, with
SPOKE edges added between the nodes of ~30 % of literature concept-concept edges (so every
scenario occurs). The query set is ``--concepts`` (default 70) concepts; all unordered pairs.

Both sides classify the *same* literature paths (reconstructed once) with the same mapping:

* **litpath**: ``Comparator.compare_paths`` -- one node lookup and one ``UNWIND $pairs``
  ``shortestPath`` query per 5,000 distinct node pairs, read-only transactions;
* **naive**: what one writes first with the same driver -- for every hop of every path and
  every pair of mapped nodes, one ``execute_read`` with ``MATCH (a:Label {identifier: $a})
  MATCH (b:Label {identifier: $b}) MATCH p = shortestPath((a)-[*..h]-(b))``; the same for
  pairs with no literature path.

Their scenarios must agree pair for pair. Seconds and Neo4j round trips (queries sent) are
appended to ``bench/results/compare.md``.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import neo4j  # noqa: E402

from pipeline.compare.classify import Comparator, query_pairs, scenario_of, spoke_hops_of  # noqa: E402
from pipeline.compare.literature import PathFinder  # noqa: E402
from pipeline.compare.spoke import CuiMapping, SpokeGraph  # noqa: E402
from pipeline.query.build import open_build  # noqa: E402
from pipeline.spoke.load import load_spoke  # noqa: E402
from pipeline.store.neo4j import Neo4jSettings  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "compare.md"
LABELS = {"Disease": 0.05, "Protein": 0.45, "Gene": 0.4, "Compound": 0.1}
REL_TYPES = {
    ("Disease", "Protein"): "ASSOCIATES_DaP", ("Protein", "Protein"): "INTERACTS_PiP",
    ("Gene", "Protein"): "ENCODES_GeP", ("Compound", "Disease"): "TREATS_CtD",
    ("Compound", "Protein"): "BINDS_CbP", ("Disease", "Disease"): "RESEMBLES_DrD",
    ("Gene", "Gene"): "INTERACTS_GiG", ("Disease", "Gene"): "ASSOCIATES_DaG",
}  # fmt: skip


def synthetic_spoke(n_nodes: int, n_edges: int, rng: random.Random):
    nodes = []
    for label, share in LABELS.items():
        nodes += [(label, f"{label[:2].upper()}{i:07d}") for i in range(int(n_nodes * share))]
    pairs = list(REL_TYPES)
    by_label: dict[str, list[tuple[str, str]]] = {
        label: [n for n in nodes if n[0] == label] for label in LABELS
    }
    edges = set()
    while len(edges) < n_edges:
        s_label, t_label = rng.choice(pairs)
        s, t = rng.choice(by_label[s_label]), rng.choice(by_label[t_label])
        if s != t:
            edges.add((s, REL_TYPES[(s_label, t_label)], t))
    return nodes, edges


def write_dump(folder: Path, nodes, edges) -> tuple[Path, Path]:
    nodes_path, edges_path = folder / "nodes.csv", folder / "edges.csv"
    with nodes_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "identifier", "name"])
        writer.writerows((label, ident, f"{label} {ident}") for label, ident in nodes)
    with edges_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source_label", "source_identifier", "type", "target_label", "target_identifier"])
        writer.writerows((s[0], s[1], rel, t[0], t[1]) for s, rel, t in sorted(edges))
    return nodes_path, edges_path


def naive_classify(driver, mapping: CuiMapping, paths, hops: int) -> tuple[list[str], int]:
    """One read transaction per (hop, node pair): the loop users write first."""
    trips = 0

    def connected(a: str, b: str) -> bool:
        nonlocal trips
        nodes_a, nodes_b = mapping.nodes_of(a), mapping.nodes_of(b)
        if set(nodes_a) & set(nodes_b):
            return True
        for x in nodes_a:
            for y in nodes_b:
                query = (
                    f"MATCH (a:`{x.label}` {{identifier: $a}}) MATCH (b:`{y.label}` {{identifier: $b}}) "
                    f"MATCH p = shortestPath((a)-[*..{hops}]-(b)) "
                    "RETURN [n IN nodes(p) | n.identifier] AS nodes, [r IN relationships(p) | type(r)] AS types"
                )
                trips += 1
                with driver.session() as session:
                    found = session.execute_read(
                        lambda tx, q=query, a=x.identifier, b=y.identifier: tx.run(q, a=a, b=b).data()
                    )
                if found:
                    return True
        return False

    scenarios = []
    for path in paths:
        if not path.reachable:
            scenarios.append("4" if connected(path.source, path.target) else "none")
            continue
        mapped = {c for c in path.concepts if mapping.nodes_of(c)}
        spoke_hops, _ = spoke_hops_of(path.concepts, mapped)
        n_connected = sum(connected(a, b) for a, b in spoke_hops)
        unmapped = [c for c in path.concepts if c not in mapped]
        scenarios.append(
            scenario_of(not unmapped, len(path.concepts) - len(unmapped), len(spoke_hops), n_connected)
        )
    return scenarios, trips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=400_000)
    parser.add_argument("--concepts", type=int, default=70, help="Query set size (all unordered pairs)")
    parser.add_argument("--build-concepts", type=int, default=300)
    parser.add_argument("--hops", type=int, default=1)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--uri", help="Use this Neo4j (its graph is EMPTIED) instead of starting one")
    parser.add_argument("--page-cache", default="512m")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    from tests.services.build_fixture import make_build

    workdir = Path(tempfile.mkdtemp(prefix="compare-bench-"))
    fixture = make_build(workdir / "results", n_concepts=args.build_concepts, n_abstracts=40, seed=args.seed,
                         degree=3.0)  # fmt: skip
    concepts = fixture.keys[: fixture.n_concepts]
    nodes, edges = synthetic_spoke(args.nodes, args.edges, rng)
    mapping_rows, node_of = [], {}
    for cui in concepts:
        if rng.random() < 0.9:
            chosen = rng.sample(nodes, 2 if rng.random() < 0.2 else 1)
            node_of[cui] = chosen
            mapping_rows += [(cui, label, ident, "indirect") for label, ident in chosen]
    table = fixture.edges.to_pylist()
    for row in table:
        a, b = fixture.keys[row["src"]], fixture.keys[row["dst"]]
        if row["kind"] == "concept_concept" and a in node_of and b in node_of and rng.random() < 0.3:
            s, t = node_of[a][0], node_of[b][0]
            if s != t:
                edges.add((s, "LITERATURE_LINKED_XlX", t))
    nodes_path, edges_path = write_dump(workdir, nodes, edges)
    mapping = CuiMapping(mapping_rows)
    query = rng.sample(concepts, args.concepts)
    print(f"SPOKE: {len(nodes)} nodes, {len(edges)} edges; query: {len(query)} concepts; workdir {workdir}")

    server = None
    if args.uri:  # a server of one's own: credentials from LITPATH_NEO4J_USER / _PASSWORD
        uri = args.uri
        auth = Neo4jSettings.from_env(uri=uri).auth
    else:
        from services.local.servers import Neo4jServer

        server = Neo4jServer(workdir / "neo4j", page_cache=args.page_cache)
        server.start(timeout=300)
        uri, auth = server.uri, server.auth
    try:
        with neo4j.GraphDatabase.driver(uri, auth=auth) as driver:
            with driver.session() as session:
                session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
            t = time.perf_counter()
            report = load_spoke(driver, nodes_path, edges_path, "csv")
            load_seconds = time.perf_counter() - t
            assert report.verified, report.problems
            print(f"loaded in {load_seconds:.1f} s")

            build = open_build(fixture.build_dir, scopes=["full"])
            finder = PathFinder(build.graph("full"))
            pairs = query_pairs(query, ordered=False)
            paths = [finder.path(a, b) for a, b in pairs]
            n_hops = sum(max(len(p.concepts) - 1, 0) for p in paths)

            # warm-up both query shapes (plan cache, page cache) on a few paths
            Comparator(mapping, SpokeGraph(driver), hops=args.hops).compare_paths(paths[:20])
            naive_classify(driver, mapping, paths[:20], args.hops)

            spoke = SpokeGraph(driver)
            t = time.perf_counter()
            ours = Comparator(mapping, spoke, hops=args.hops).compare_paths(paths)
            ours_seconds = time.perf_counter() - t
            t = time.perf_counter()
            naive, naive_trips = naive_classify(driver, mapping, paths, args.hops)
            naive_seconds = time.perf_counter() - t
    finally:
        if server is not None:
            server.stop()

    ours_scenarios = [c.scenario for c in ours]
    assert ours_scenarios == naive, "batched and naive classifications differ"
    counts = Counter(ours_scenarios)
    print(
        f"litpath: {ours_seconds:.3f} s, {spoke.round_trips} round trips; naive: {naive_seconds:.3f} s, {naive_trips}"
    )
    lines = [
        f"## {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} -- SPOKE {len(nodes):,} nodes / {len(edges):,} edges, "
        f"{len(query)} concepts, h = {args.hops}",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs), Python "
        f"{platform.python_version()}, neo4j driver {neo4j.__version__}; Neo4j 5.26 Community (services.local.servers, "
        f"page cache {args.page_cache}) on loopback Bolt. SPOKE loaded with pipeline.spoke.load in {load_seconds:.1f} s.",
        "",
        f"{len(pairs)} unordered pairs, {n_hops} literature hops; scenarios {dict(sorted(counts.items()))}; "
        "both methods gave the same scenario for every pair.",
        "",
        "| method | seconds | Neo4j round trips |",
        "|---|---|---|",
        f"| litpath (batched UNWIND, read tx) | {ours_seconds:.3f} | {spoke.round_trips} |",
        f"| naive per-hop loop | {naive_seconds:.3f} | {naive_trips} |",
        f"| ratio naive / litpath | {naive_seconds / ours_seconds:.1f}x | {naive_trips / max(spoke.round_trips, 1):.0f}x |",
        "",
    ]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
