"""Hand-built literature build, SPOKE graph and mapping that realize every scenario (the
comparison tests' world; their fixtures are in tests/compare/conftest.py).

Literature graph (a forest, so every shortest path is unique)::

    C1 - C3 - C4 - C10        C1 - C8 - C2 - C9 - C7        C5 - PMID:1 - C6        C14 - C15

The build has both graphs: the full one above and the co-occurrence graph (the same without
PMID:1, so C5 and C6 are not vertices of it).

SPOKE (``-`` one relationship)::

    DOID:1 -ASSOCIATES_DaP-> P00001 -INTERACTS_PiP-> P00002 <-INTERACTS_PiP- P00033
    DB00007 -TREATS_CtD-> DOID:2 -RESEMBLES_DrD-> DOID:10 -ASSOCIATES_DaP-> P00009 -INTERACTS_PiP-> P00002
    Gene 6 -ENCODES_GeP-> P00003

Mapping: C1 and C12 -> DOID:1 (two CUIs, one node); C5 -> P00003 and P00033 (one CUI, two
nodes); C11 -> P00001 (not in the literature graph); C13 -> a node missing from Neo4j;
C14 -> P00009 (SPOKE joins it to C1 through 3 relationships, the literature not at all);
C8, C9, C15 unmapped.
"""

from __future__ import annotations

import json
from pathlib import Path

import neo4j
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.layout import BuildLayout, MappingFolder
from pipeline.builds.tables import CONCEPTS, EDGE_KINDS, EDGES, VERTICES
from pipeline.graph.csr import graph_digest, kind_codes
from pipeline.query.paths import adjacency_from_edges
from pipeline.store.adios import write_distances_bp, write_graph_bp


def cui(i: int) -> str:
    return f"C{i:07d}"


C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15 = (cui(i) for i in range(1, 16))
BUILD_CONCEPTS = [C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C14, C15]
LITERATURE_EDGES = [  # (a, b, weight); all weights < 1 so all costs are positive
    (C1, C3, 0.9), (C3, C4, 0.8), (C4, C10, 0.7),
    (C1, C8, 0.6), (C8, C2, 0.9), (C2, C9, 0.5), (C9, C7, 0.9),
    (C5, "PMID:1", 0.9), ("PMID:1", C6, 0.8),
    (C14, C15, 0.7),
]  # fmt: skip

SPOKE_NODES = [
    ("Disease", "DOID:1", "disease one"), ("Disease", "DOID:2", "disease two"),
    ("Disease", "DOID:10", "disease ten"), ("Protein", "P00001", "P1_HUMAN"),
    ("Protein", "P00002", "P2_HUMAN"), ("Protein", "P00003", "P3_HUMAN"),
    ("Protein", "P00033", "P3B_HUMAN"), ("Protein", "P00009", "P9_HUMAN"),
    ("Gene", "6", "GENE6"), ("Compound", "DB00007", "compound seven"),
]  # fmt: skip
SPOKE_EDGES = [
    ("Disease", "DOID:1", "ASSOCIATES_DaP", "Protein", "P00001"),
    ("Protein", "P00001", "INTERACTS_PiP", "Protein", "P00002"),
    ("Protein", "P00033", "INTERACTS_PiP", "Protein", "P00002"),
    ("Disease", "DOID:2", "RESEMBLES_DrD", "Disease", "DOID:10"),
    ("Compound", "DB00007", "TREATS_CtD", "Disease", "DOID:2"),
    ("Gene", "6", "ENCODES_GeP", "Protein", "P00003"),
    ("Disease", "DOID:10", "ASSOCIATES_DaP", "Protein", "P00009"),
    ("Protein", "P00009", "INTERACTS_PiP", "Protein", "P00002"),
]
MAPPING_ROWS = [
    (C1, "Disease", "DOID:1", "indirect", "DO:UMLS_CUI"), (C12, "Disease", "DOID:1", "indirect", "DO:MESH"),
    (C2, "Disease", "DOID:2", "indirect", "DO:UMLS_CUI"), (C10, "Disease", "DOID:10", "indirect", "DO:UMLS_CUI"),
    (C3, "Protein", "P00001", "indirect", "NCIt"), (C11, "Protein", "P00001", "indirect", "NCIt"),
    (C4, "Protein", "P00002", "indirect", "NCIt"),
    (C5, "Protein", "P00003", "indirect", "NCIt"), (C5, "Protein", "P00033", "indirect", "NCIt"),
    (C6, "Gene", "6", "indirect", "gene_info"), (C7, "Compound", "DB00007", "direct", "DRUGBANK"),
    (C13, "Protein", "P99999", "indirect", "NCIt"), (C14, "Protein", "P00009", "indirect", "NCIt"),
]  # fmt: skip
QUERY = [C1, C4, C10, C2, C7, C5]


def write_graph(graph_dir: Path, distances_path: Path, keys: list[str], n_concepts: int, edges) -> None:
    """vertices, edges, graph.bp and dense scipy distances of one graph of the fixture."""
    from scipy.sparse.csgraph import dijkstra

    graph_dir.mkdir(parents=True, exist_ok=True)
    vid = {k: i for i, k in enumerate(keys)}
    n = len(keys)
    src, dst, weight, kind = [], [], [], []
    for a, b, w in edges:
        u, v = sorted((vid[a], vid[b]))
        src.append(u), dst.append(v), weight.append(w)
        kind.append(EDGE_KINDS[0] if not (a.startswith("PMID") or b.startswith("PMID")) else EDGE_KINDS[1])
    order = np.lexsort((dst, src))
    src, dst = np.asarray(src)[order], np.asarray(dst)[order]
    weight, kind = np.asarray(weight)[order], [kind[i] for i in order]
    cost = (-np.log(weight)).astype(np.float32)
    names = [f"name of {k}" for k in keys]
    pq.write_table(
        pa.table({"vid": np.arange(n), "kind": ["concept"] * n_concepts + ["abstract"] * (n - n_concepts),
                  "key": keys, "name": names}, schema=VERTICES),
        graph_dir / "vertices.parquet",
    )  # fmt: skip
    pq.write_table(
        pa.table({"src": src, "dst": dst, "kind": kind, "weight": weight, "cost": cost}, schema=EDGES),
        graph_dir / "edges.parquet",
    )
    digest = graph_digest(keys, src, dst, kind_codes(kind), cost)
    adjacency = adjacency_from_edges(n, src, dst, cost, weight)
    edge_kinds = sorted(set(kind), key=EDGE_KINDS.index)
    write_graph_bp(
        graph_dir / "graph.bp", n, adjacency.row_ptr, adjacency.col_idx, adjacency.cost,
        {"graph_digest": digest, "weight_scheme": "test", "edge_kinds": edge_kinds},
    )  # fmt: skip
    distance = dijkstra(adjacency.to_scipy(), directed=True).astype(np.float32)
    write_distances_bp(
        distances_path, distance,
        {"graph_digest": digest, "process_grid": "1x1", "algorithm": "scipy", "solver_version": "test"},
    )  # fmt: skip


def write_build(results_dir: Path, build_id: str = "cmp0001") -> Path:
    """A complete build folder of the literature forest above, both graphs (scipy distances)."""
    build_dir = results_dir / "builds" / build_id
    (build_dir / "tables").mkdir(parents=True)
    keys = BUILD_CONCEPTS_SORTED + ["PMID:1"]
    write_graph(build_dir / "graph", build_dir / "distances.bp", keys, len(keys) - 1, LITERATURE_EDGES)
    co_edges = [e for e in LITERATURE_EDGES if not (e[0].startswith("PMID") or e[1].startswith("PMID"))]
    co_keys = sorted({c for a, b, _ in co_edges for c in (a, b)})
    write_graph(build_dir / "cooccurrence", build_dir / "cooccurrence" / "distances.bp", co_keys, len(co_keys), co_edges)
    names = [f"name of {k}" for k in keys[:-1]]
    semtypes = [["dsyn"] if k in (C1, C2, C10) else ["aapp"] for k in keys[:-1]]
    pq.write_table(
        pa.table({"cui": keys[:-1], "name": names, "semtypes": semtypes}, schema=CONCEPTS),
        build_dir / "tables" / "concepts.parquet",
    )
    (build_dir / "build.json").write_text(
        json.dumps({"build_id": build_id, "config": {"graph": {"edge_kinds": list(EDGE_KINDS[:2])}}}) + "\n"
    )
    (results_dir / "latest").symlink_to(Path("builds") / build_id)
    return build_dir


BUILD_CONCEPTS_SORTED = sorted(BUILD_CONCEPTS)


def write_spoke_dump(folder: Path) -> tuple[Path, Path]:
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    nodes, edges = folder / "nodes.csv", folder / "edges.csv"
    with nodes.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "identifier", "name"])
        writer.writerows(SPOKE_NODES)
    with edges.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source_label", "source_identifier", "type", "target_label", "target_identifier"])
        writer.writerows(SPOKE_EDGES)
    return nodes, edges


def empty_graph(driver: neo4j.Driver) -> None:
    with driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
        for record in list(session.run("SHOW CONSTRAINTS YIELD name RETURN name")):
            if record["name"].startswith("litpath_"):
                session.run(f"DROP CONSTRAINT `{record['name']}` IF EXISTS").consume()


def mapping_folder(results_dir: Path) -> MappingFolder:
    """The latest build's mapping folder, where the fixture writes the mapping."""
    return BuildLayout(Path(results_dir) / "latest").mapping
