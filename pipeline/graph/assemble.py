"""Assembling one graph in memory: its vertex set, its edges in (src, dst) order, the symmetric
CSR and the digest, written as vertices.parquet, edges.parquet and graph.bp.

The graph's edges arrive per kind in code space (:class:`pipeline.graph.edges.CodedEdges`);
the vertex set is every endpoint of a kept edge (:func:`graph_vertices`, ids as
:mod:`pipeline.graph.vertices` assigns them). For graphs over the memory budget,
:mod:`pipeline.graph.assemble_spilled` writes the same files, bit for bit, in vertex-range
partitions; it shares with this module the graph's scope (:class:`GraphScope`), its vertex set,
the edge file (:class:`EdgeFileWriter`), graph.bp's attributes and the graph's sizes
(:func:`count_graph`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import EDGE_KINDS, EDGES
from pipeline.graph import weights
from pipeline.graph.counting import KeyEncoder
from pipeline.graph.csr import graph_digest, sort_edges, strictly_increasing, symmetric_csr
from pipeline.graph.edges import CodedEdges, EdgesInOrder
from pipeline.graph.inputs import concept_names, document_titles, row_count
from pipeline.graph.vertices import assign_vertex_ids, keys_in_vid_order, vertex_table
from pipeline.runtime.columnar import sort_keys, split_keys
from pipeline.store.adios import write_graph_bp

# Peak bytes per edge of the in-memory assembly (edge arrays, their sort, the CSR, the writers):
# 3.9 GiB for 28 M edges at 10 M predications, measured with all three edge kinds.
IN_MEMORY_BYTES_PER_EDGE = 140


def fits_in_memory(edges: int, budget_bytes: int) -> bool:
    """Whether a graph of ``edges`` edges can be assembled in memory within the budget."""
    return edges * IN_MEMORY_BYTES_PER_EDGE <= budget_bytes


@dataclass
class GraphScope:
    """One graph to write -- the full graph or the co-occurrence graph -- and what its assembly
    reads besides the edges."""

    out_dir: Path
    tables_dir: Path  # for the titles of the abstract vertices
    cfg: dict  # the graph section with batch_rows; edge_kinds are this graph's
    concepts: KeyEncoder
    documents: KeyEncoder  # of the co-occurrence graph: empty
    concept_table: pa.Table | None
    lap: Callable[[str], None]  # called at the end of each stage, with its name
    counts: dict = field(default_factory=dict)  # the graph's sizes are added to it
    # (tables_dir, abstract keys) -> (their titles, documents not vertices), where they come from
    # elsewhere than the documents table (pipeline.graph.earlier.EarlierTitles)
    titles: Callable[[Path, pa.Array], tuple[pa.Array, int]] | None = None

    def graph_bp_attributes(self, digest: str) -> dict:
        """What graph.bp records about the graph besides its CSR."""
        return {
            "graph_digest": digest,
            "weight_scheme": weights.WEIGHT_SCHEME,
            "edge_kinds": self.cfg["edge_kinds"],
        }


@dataclass
class GraphVertices:
    """The vertex set of one graph: keys, ids and names, and the code -> vid maps."""

    concept_keys: pa.Array
    concept_vid: np.ndarray
    abstract_keys: pa.Array
    abstract_vid: np.ndarray
    vid_of_concept: np.ndarray  # by concept code, -1: not a vertex
    vid_of_abstract: np.ndarray  # by document code
    documents_not_vertices: int
    table: pa.Table  # the vertices table (pipeline.builds.tables.VERTICES) in vid order

    @property
    def n(self) -> int:
        return len(self.concept_keys) + len(self.abstract_keys)

    def keys_in_vid_order(self) -> pa.Array:
        return keys_in_vid_order(self.concept_keys, self.concept_vid, self.abstract_keys, self.abstract_vid)


def _used_codes(n_codes: int, *endpoints: np.ndarray) -> np.ndarray:
    """Sorted distinct codes among the edge endpoints."""
    used = np.zeros(n_codes, dtype=bool)
    for codes in endpoints:
        used[codes] = True
    return np.flatnonzero(used)


def graph_vertices(
    scope: GraphScope, concept_ends: tuple[np.ndarray, ...], abstract_ends: tuple[np.ndarray, ...]
) -> GraphVertices:
    """Every concept and abstract code at an end of a kept edge (arrays of codes, repeats
    allowed) -> dense sorted ids, names and titles."""
    concepts, documents = scope.concepts, scope.documents
    concept_codes = _used_codes(len(concepts), *concept_ends)
    abstract_codes = _used_codes(len(documents), *abstract_ends)
    concept_keys = concepts.keys().take(pa.array(concept_codes))
    abstract_keys = documents.keys().take(pa.array(abstract_codes))
    concept_vid, abstract_vid = assign_vertex_ids(concept_keys, abstract_keys)
    vid_of_concept = np.full(len(concepts), -1, np.int64)
    vid_of_concept[concept_codes] = concept_vid
    vid_of_abstract = np.full(len(documents), -1, np.int64)
    vid_of_abstract[abstract_codes] = abstract_vid
    names = concept_names(concept_keys, scope.concept_table)
    if len(abstract_keys):
        titles, documents_not_vertices = document_titles(scope.tables_dir, abstract_keys, scope.cfg["batch_rows"]) \
            if scope.titles is None else scope.titles(scope.tables_dir, abstract_keys)  # fmt: skip
    else:  # a concept-only graph: no titles to look up, and every document is off the graph
        titles, documents_not_vertices = pa.nulls(0, pa.string()), row_count(scope.tables_dir, "documents")
    table = vertex_table(concept_keys, names, concept_vid, abstract_keys, titles, abstract_vid)
    return GraphVertices(
        concept_keys, concept_vid, abstract_keys, abstract_vid, vid_of_concept, vid_of_abstract,
        documents_not_vertices, table,
    )  # fmt: skip


def count_graph(scope: GraphScope, vertices: GraphVertices, edges_by_kind: np.ndarray) -> None:
    """The graph's sizes into ``scope.counts``: vertices, edges by kind, what is off the graph."""
    known_concepts, isolated_concepts = 0, 0
    if scope.concept_table is not None:
        in_table = pc.unique(scope.concept_table.column("cui").combine_chunks())
        is_known = pc.is_in(vertices.concept_keys, value_set=in_table)
        known_concepts = int(pc.sum(is_known).as_py() or 0)
        isolated_concepts = len(in_table) - known_concepts
    edges = int(edges_by_kind.sum())
    scope.counts.update(
        vertices=vertices.n,
        concept_vertices=len(vertices.concept_keys),
        abstract_vertices=len(vertices.abstract_keys),
        edges=edges,
        csr_nnz=2 * edges,
        **{f"edges_{name}": int(edges_by_kind[i]) for i, name in enumerate(EDGE_KINDS)},
        concepts_seen=len(scope.concepts),
        concept_vertices_without_metadata=len(vertices.concept_keys) - known_concepts,
        isolated_concepts=isolated_concepts,  # in the concepts table but on no kept edge
        documents_seen=len(scope.documents),
        isolated_documents=vertices.documents_not_vertices,  # in the documents table but on no kept edge
    )


# edges.parquet as written: ``kind`` handed over as codes into the kinds' names (no per-row
# strings to build and hash again), dictionary encoding where values repeat (``kind``, ``src``,
# the weights and costs) but not on ``dst`` (millions of distinct values overflow the dictionary
# page and fall back to plain after paying for the attempt). The Arrow schema is not stored, so
# readers get ``kind`` as plain strings, the EDGES schema. Writing the 22M edges at 10M
# predications: 1.8-2.1 s -> 1.5-1.6 s on one core, 163 -> 158 MiB (AMD EPYC).
_EDGES_AS_WRITTEN = pa.schema(
    [column.with_type(pa.dictionary(pa.int8(), pa.string())) if column.name == "kind" else column for column in EDGES]
)
_EDGE_KIND_NAMES = pa.array(EDGE_KINDS)


class EdgeFileWriter:
    """edges.parquet written in parts: each :meth:`write` appends edges (kind as uint8 codes)."""

    def __init__(self, path: Path) -> None:
        self._writer = pq.ParquetWriter(
            path, _EDGES_AS_WRITTEN, store_schema=False, use_dictionary=["src", "kind", "weight", "cost"]
        )

    def write(self, src: np.ndarray, dst: np.ndarray, kind: np.ndarray, weight: np.ndarray, cost: np.ndarray) -> None:
        kind_names = pa.DictionaryArray.from_arrays(pa.array(kind.astype(np.int8)), _EDGE_KIND_NAMES)
        columns = [pa.array(src), pa.array(dst), kind_names, pa.array(weight), pa.array(cost)]
        self._writer.write_table(pa.table(columns, schema=_EDGES_AS_WRITTEN))

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> EdgeFileWriter:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _edge_keys(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """min(u, v) * n + max(u, v): the key of each edge in (src, dst) order (vertex ids < n)."""
    key = np.minimum(u, v)
    key *= n
    key += np.maximum(u, v)
    return key


def _sorted_edges(n: int, *parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple:
    """One edge list (src < dst, sorted by (src, dst)) from per-kind (u, v, weight) in vid space.

    Parts are in :data:`EDGE_KINDS` order; arrays are built and permuted one at a time to keep
    the peak near one copy of the edge list.
    """
    if n < (1 << 31):
        # One int64 key per edge, src * n + dst, built part by part: no full-length src and dst
        # columns exist before the sort (on this VM every fresh array costs its first touch).
        key = np.concatenate([_edge_keys(u, v, n) for u, v, _ in parts])
        key, order = sort_keys(key, unique=True)
        # Both columns from the sorted keys: split_keys streams through memory, where gathering
        # them in the new order would miss the cache.
        src, dst = split_keys(key, n)
        del key
    else:
        src = np.concatenate([np.minimum(u, v) for u, v, _ in parts])
        dst = np.concatenate([np.maximum(u, v) for u, v, _ in parts])
        order = sort_edges(src, dst)
        src = src[order]
        dst = dst[order]
    weight = np.concatenate([w for _, _, w in parts])[order]
    kind = np.concatenate([np.full(len(w), code, np.uint8) for code, (_, _, w) in enumerate(parts)])[order]
    return src, dst, weight, kind


def _in_order_then_citations(vertices: GraphVertices, in_order: EdgesInOrder, between_concepts: np.ndarray,
                             citations: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple:  # fmt: skip
    """:func:`_sorted_edges` of an earlier graph's edges with a concept end, in their order, and
    the citation edges (vids of both ends). Vids are assigned in key order, concepts first, and the
    earlier edges' codes ascend with the earlier vids (:class:`EdgesInOrder`), so mapped to this
    graph's vids they stay sorted by (src, dst); every citation edge has two abstract ends, which
    come after every concept: so the edges are the earlier ones as they are, then the citation
    edges sorted. Checked: in any other order they are sorted as :func:`_sorted_edges` would."""
    src = vertices.vid_of_concept[in_order.src]
    dst = np.empty_like(src)
    dst[between_concepts] = vertices.vid_of_concept[in_order.dst[between_concepts]]
    dst[~between_concepts] = vertices.vid_of_abstract[in_order.abstract_of]
    no_edges = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, in_order.weight.dtype))
    cited_src, cited_dst, cited_weight, cited_kind = _sorted_edges(vertices.n, no_edges, no_edges, citations)
    src, dst = np.concatenate([src, cited_src]), np.concatenate([dst, cited_dst])
    # EDGE_KINDS order: concept_concept 0, concept_abstract 1, then the citations' 2
    kind = np.concatenate([(~between_concepts).view(np.uint8), cited_kind])
    weight = np.concatenate([in_order.weight, cited_weight])
    if strictly_increasing(src, dst):
        return src, dst, weight, kind
    order = sort_edges(src, dst)  # not expected (a vid assignment that is not monotone): sorted as counted
    return src[order], dst[order], weight[order], kind[order]


def _digest_and_vertices(out_dir: Path, vertices: GraphVertices, src, dst, kind, cost) -> str:
    """The graph digest, then vertices.parquet (small): one worker's share of the write."""
    digest = graph_digest(vertices.keys_in_vid_order(), src, dst, kind, cost)
    pq.write_table(vertices.table, GraphFolder(out_dir).vertices)
    return digest


def _write_edges(out_dir: Path, src, dst, kind, weight, cost, rows_per_group=1 << 20) -> None:
    """edges.parquet in row groups of ``rows_per_group`` edges."""
    with EdgeFileWriter(GraphFolder(out_dir).edges) as writer:
        for start in range(0, len(src), rows_per_group):
            part = slice(start, start + rows_per_group)
            writer.write(src[part], dst[part], kind[part], weight[part], cost[part])


def write_graph(scope: GraphScope, cc: CodedEdges, ca: CodedEdges, aa: CodedEdges,
                while_encoding: Callable[[GraphVertices], None] | None = None,
                in_order: EdgesInOrder | None = None) -> str:  # fmt: skip
    """Vertices, edges and graph.bp of one graph from its concept--concept, concept--abstract and
    abstract--abstract edges (a kind the graph does not have is empty), assembled in memory.
    ``in_order``: the concept--concept and concept--abstract edges instead as an earlier graph's,
    in their order (``cc`` and ``ca`` empty then; :func:`_in_order_then_citations`).

    ``while_encoding(vertices)`` is called once graph.bp and vertices.parquet are written, while
    edges.parquet is still being encoded on another thread (the longest part of the write): the
    path index, which reads graph.bp, is built meanwhile (pipeline.graph.build).
    Adds the graph's sizes to ``scope.counts`` and returns the graph digest.
    """
    scope.out_dir.mkdir(parents=True, exist_ok=True)
    concept_ends, abstract_ends = [cc.u, cc.v, ca.u], [ca.v, aa.u, aa.v]
    if in_order is not None:
        if len(cc.u) or len(ca.u):
            raise ValueError("the concept edges come either in order or by kind, not both")
        between_concepts = in_order.dst < in_order.n_concepts
        concept_ends += [in_order.src, in_order.dst[between_concepts]]
        abstract_ends += [in_order.abstract_of]
    vertices = graph_vertices(scope, tuple(concept_ends), tuple(abstract_ends))
    n = vertices.n
    scope.lap("vertices")

    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    citations = (vid_of_abstract[aa.u], vid_of_abstract[aa.v], aa.weight)
    if in_order is not None:
        src, dst, weight, kind = _in_order_then_citations(vertices, in_order, between_concepts, citations)
        del between_concepts
    else:
        src, dst, weight, kind = _sorted_edges(
            n,
            (vid_of_concept[cc.u], vid_of_concept[cc.v], cc.weight),
            (vid_of_concept[ca.u], vid_of_abstract[ca.v], ca.weight),
            citations,
        )
    del cc, ca, aa, in_order, citations, vid_of_concept, vid_of_abstract
    cost = weights.cost_from_weight(weight)
    scope.lap("edges")

    # Three jobs that release the GIL run side by side: the digest (then the vertices), the
    # Parquet encoding of the edges, and (here) the CSR build; graph.bp needs the digest, so it
    # comes last.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="graph-write") as pool:
        digesting = pool.submit(_digest_and_vertices, scope.out_dir, vertices, src, dst, kind, cost)
        writing = pool.submit(_write_edges, scope.out_dir, src, dst, kind, weight, cost)
        del weight
        csr = symmetric_csr(n, src, dst, cost)
        digest = digesting.result()
        write_graph_bp(
            GraphFolder(scope.out_dir).graph_bp, n, csr.row_ptr, csr.col_idx, csr.cost,
            scope.graph_bp_attributes(digest),
        )  # fmt: skip
        del csr
        if while_encoding is not None:
            scope.lap("write")  # the CSR, digest, vertices and graph.bp; then what runs beside the edges
            while_encoding(vertices)
        writing.result()
    scope.lap("write_edges" if while_encoding is not None else "write")
    count_graph(scope, vertices, np.bincount(kind, minlength=len(EDGE_KINDS)))
    return digest


__all__ = [
    "IN_MEMORY_BYTES_PER_EDGE", "EdgeFileWriter", "GraphScope", "GraphVertices", "count_graph",
    "fits_in_memory", "graph_vertices", "write_graph",
]  # fmt: skip
