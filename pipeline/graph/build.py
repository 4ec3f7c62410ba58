"""Build the weighted concept--abstract graph from a build's Parquet tables.

Reads ``predications``, ``mentions``, ``citations`` (only those the selected edge kinds
need), ``concepts`` and ``documents`` from ``tables_dir`` -- each either ``<name>.parquet``
or a folder ``<name>/`` of Parquet parts -- and writes to ``out_dir``:

* ``vertices.parquet`` and ``edges.parquet`` (schemas in :mod:`pipeline.builds.tables`; edges once,
  ``src < dst``, sorted by (src, dst));
* ``graph.bp`` -- the symmetric CSR of costs (:func:`pipeline.store.adios.write_graph_bp`);
* ``graph_counts.json`` -- input rows, the effect of every filter, graph sizes per edge
  kind, the graph digest and stage timings.

The counting of the three edge kinds, and its rules, are in :mod:`pipeline.graph.edges`.
"""

from __future__ import annotations

import json
import logging
import resource
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import EDGE_KINDS, EDGES
from pipeline.config import load_schema, validate_config
from pipeline.graph import assemble_spilled, weights
from pipeline.graph.counting import KeyEncoder
from pipeline.graph.csr import graph_digest, sort_edges, symmetric_csr
from pipeline.graph.edges import (
    MentionTotals,
    abstract_abstract_edges,
    concept_abstract_edges,
    concept_concept_edges,
)
from pipeline.graph.inputs import concept_names, document_titles, load_concepts, row_count
from pipeline.graph.vertices import assign_vertex_ids, keys_in_vid_order, vertex_table
from pipeline.runtime.columnar import sort_keys, split_keys
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import Progress
from pipeline.runtime.resources import (
    SpillFolder,
    memory_budget_bytes,
    resident_bytes,
    room_left,
    spill_parent,
    sweep_stale_spills,
)
from pipeline.store.adios import GraphBpWriter, write_graph_bp

log = logging.getLogger(__name__)
CONCEPT_CONCEPT, CONCEPT_ABSTRACT, ABSTRACT_ABSTRACT = EDGE_KINDS
# Peak bytes per edge of the in-memory assembly (edge arrays, their sort, the CSR, the writers):
# 3.9 GiB for 28 M edges at 10 M predications, measured with all three edge kinds.
IN_MEMORY_BYTES_PER_EDGE = 140
# Rows per streamed record batch: memory against per-batch overhead, never the result.
BATCH_ROWS = 1 << 19


def graph_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """The graph section of a config, with the schema's defaults filled in and its rules checked
    (schemas/config.schema.yaml is the one definition; a violation is a ConfigError, a
    ValueError, naming the key).

    Accepts the whole workflow config, a partial one (``{"graph": {...}, "resources": {...}}``),
    or the graph section itself (``{"edge_kinds": [...]}``). Edge kinds come back in canonical
    order and excluded semantic types sorted, so equal settings give equal records.
    """
    config = dict(config or {})
    if isinstance(config.get("graph"), dict):
        section = config["graph"]
    elif config.keys() & load_schema()["properties"].keys():
        section = {}  # a config without a graph section: the defaults
    else:
        section = config
    graph = validate_config({"graph": section})["graph"]
    graph["edge_kinds"] = [k for k in EDGE_KINDS if k in graph["edge_kinds"]]
    graph["exclude_semtypes"] = sorted({str(s) for s in graph["exclude_semtypes"]})
    return graph


def _used_codes(n_codes: int, *endpoints: np.ndarray) -> np.ndarray:
    """Sorted distinct codes among the edge endpoints."""
    used = np.zeros(n_codes, dtype=bool)
    for codes in endpoints:
        used[codes] = True
    return np.flatnonzero(used)


def _edge_keys(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """min(u, v) * n + max(u, v): the key of each edge in (src, dst) order (vertex ids < n)."""
    key = np.minimum(u, v)
    key *= n
    key += np.maximum(u, v)
    return key


def _assemble_edges(n: int, *parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple:
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


# edges.parquet as written: ``kind`` handed over as codes into the kinds' names (no per-row
# strings to build and hash again), dictionary encoding where values repeat (``kind``, ``src``,
# the weights and costs) but not on ``dst`` (millions of distinct values overflow the dictionary
# page and fall back to plain after paying for the attempt). The Arrow schema is not stored, so
# readers get ``kind`` as plain strings, the EDGES schema. Writing the 22M edges at 10M
# predications: 1.8-2.1 s -> 1.5-1.6 s on one core, 163 -> 158 MiB (AMD EPYC).
_EDGES_AS_WRITTEN = pa.schema(
    [field.with_type(pa.dictionary(pa.int8(), pa.string())) if field.name == "kind" else field for field in EDGES]
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


def _write_edges(path: Path, src, dst, kind, weight, cost, rows_per_group: int = 1 << 20) -> None:
    """edges.parquet in row groups of ``rows_per_group`` edges."""
    with EdgeFileWriter(path) as writer:
        for start in range(0, len(src), rows_per_group):
            part = slice(start, start + rows_per_group)
            writer.write(src[part], dst[part], kind[part], weight[part], cost[part])


def _write_tables(out_dir: Path, vertices: pa.Table, src, dst, kind, weight, cost) -> None:
    pq.write_table(vertices, GraphFolder(out_dir).vertices)
    _write_edges(GraphFolder(out_dir).edges, src, dst, kind, weight, cost)


def build_graph(
    tables_dir: Path,
    out_dir: Path,
    config: dict,
    cooccurrence_dir: Path | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
) -> dict:
    """Build vertices, edges, graph.bp and graph_counts.json in ``out_dir``; return the counts record.

    ``config`` is read through :func:`graph_config` (the graph section) and for ``resources``
    (the memory budget and the spill folder). ``batch_rows`` sets the rows per streamed batch.
    The returned dict (also written as ``graph_counts.json``) holds ``scope`` ("full"),
    ``config`` (the graph section with defaults), ``counts`` (input rows, filter effects,
    sizes), ``graph_digest``, ``weight_scheme`` and ``timings`` (seconds per stage).

    With ``cooccurrence_dir``, the same files are also written there for the *co-occurrence
    graph*: concept vertices and concept--concept edges only, whatever ``edge_kinds`` says
    (the graph the paper compares with SPOKE, section VIII: "SPOKE does not have any
    paper-related information. Hence, we use only co-occurrences"). The co-occurrence counts
    are made once and shared by both graphs; the co-occurrence graph is exactly the graph a
    build with ``edge_kinds: [concept_concept]`` would have (same vertices, edges and digest).
    Its record (``scope: "cooccurrence"``) is returned under ``"cooccurrence"``.
    """
    tables_dir, out_dir = Path(tables_dir), Path(out_dir)
    if not tables_dir.is_dir():
        raise FileNotFoundError(f"tables folder not found: {tables_dir}")
    if not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    cfg = {**graph_config(config), "batch_rows": batch_rows}
    # Spill folders of an earlier build-graph that was killed (their owner is gone) go first.
    for scope_dir in (out_dir, cooccurrence_dir):
        if scope_dir is not None:
            sweep_stale_spills(spill_parent(config, Path(scope_dir)))
    timings: dict[str, float] = {}
    counts: dict[str, int] = {}
    clock = time.perf_counter()

    peak_rss_mib: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(now - clock, 4)
        peak_rss_mib[stage] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        clock = now

    concept_table, excluded_cuis = load_concepts(tables_dir, cfg["exclude_semtypes"])
    counts["concepts_in_table"] = 0 if concept_table is None else concept_table.num_rows
    counts["concepts_with_excluded_semtype"] = len(excluded_cuis)
    concepts = KeyEncoder(flagged=excluded_cuis)
    documents = KeyEncoder()
    lap("read_concepts")

    kinds = cfg["edge_kinds"]
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    need_cooccurrence = CONCEPT_CONCEPT in kinds or cooccurrence_dir is not None
    tables_read = [
        name
        for name, needed in (
            ("predications", need_cooccurrence),
            ("mentions", CONCEPT_ABSTRACT in kinds),
            ("citations", ABSTRACT_ABSTRACT in kinds),
        )
        if needed
    ]
    progress = Progress("litpath build-graph", sum(row_count(tables_dir, t) for t in tables_read), "rows")
    progress.stage("concept_concept (predications)")
    cc = concept_concept_edges(tables_dir, cfg, concepts, counts, progress) if need_cooccurrence else empty
    lap("concept_concept")
    # In memory, the assembly costs about IN_MEMORY_BYTES_PER_EDGE an edge; beyond the budget
    # the edges go to disk partitions instead (same files, bit for bit; pipeline.graph.assemble_spilled).
    budget = memory_budget_bytes(config)
    edges_bound = len(cc[0]) + sum(
        row_count(tables_dir, t) for t, kind in (("mentions", CONCEPT_ABSTRACT), ("citations", ABSTRACT_ABSTRACT))
        if kind in kinds
    )  # fmt: skip
    partitioned = edges_bound * IN_MEMORY_BYTES_PER_EDGE > budget
    progress.stage("concept_abstract (mentions)")
    mentions = None
    ca = empty
    if CONCEPT_ABSTRACT in kinds and partitioned:
        mentions = MentionTotals(tables_dir, cfg, concepts, documents)
        mentions.count(counts, progress)
    elif CONCEPT_ABSTRACT in kinds:
        ca = concept_abstract_edges(tables_dir, cfg, concepts, documents, counts, progress)
    lap("concept_abstract")
    progress.stage("abstract_abstract (citations)")
    aa = (
        abstract_abstract_edges(tables_dir, cfg, documents, counts, progress)
        if ABSTRACT_ABSTRACT in kinds
        else empty
    )
    lap("abstract_abstract")
    progress.stage("writing the graph")
    cooccurrence_record = None
    if cooccurrence_dir is not None:
        # First, while the full graph's parts are still needed: the co-occurrence graph is small.
        scope_counts, scope_timings = {}, {}
        cooccurrence_cfg = {**cfg, "edge_kinds": [CONCEPT_CONCEPT]}
        if len(cc[0]) * IN_MEMORY_BYTES_PER_EDGE > budget:
            digest = _write_graph_scope_partitioned(
                Path(cooccurrence_dir), tables_dir, cooccurrence_cfg, concepts, KeyEncoder(), concept_table,
                cc, None, empty, scope_counts, scope_timings, budget, spill_parent(config, Path(cooccurrence_dir)),
            )  # fmt: skip
        else:
            digest = _write_graph_scope(
                Path(cooccurrence_dir), tables_dir, cooccurrence_cfg, concepts, KeyEncoder(), concept_table,
                (cc, empty, empty), scope_counts, scope_timings,
            )  # fmt: skip
        cooccurrence_record = _graph_record(
            "cooccurrence", cooccurrence_cfg, scope_counts, digest, scope_timings, {}
        )
        _save_record(Path(cooccurrence_dir), cooccurrence_record)
        lap("cooccurrence_graph")
    parts = (cc if CONCEPT_CONCEPT in kinds else empty, ca, aa)
    del cc, ca, aa
    if partitioned:
        digest = _write_graph_scope_partitioned(
            out_dir, tables_dir, cfg, concepts, documents, concept_table, parts[0], mentions, parts[2],
            counts, timings, budget, spill_parent(config, out_dir), lap,
        )  # fmt: skip
    else:
        digest = _write_graph_scope(
            out_dir, tables_dir, cfg, concepts, documents, concept_table, parts, counts, timings, lap
        )
    progress.finish(f"{counts['vertices']:,} vertices, {counts['edges']:,} edges")
    record = _graph_record("full", cfg, counts, digest, timings, peak_rss_mib)
    if cooccurrence_record is not None:
        record["cooccurrence"] = {
            "dir": str(cooccurrence_dir),
            "graph_digest": cooccurrence_record["graph_digest"],
            "vertices": cooccurrence_record["counts"]["vertices"],
            "edges": cooccurrence_record["counts"]["edges"],
        }
    _save_record(out_dir, record)
    if cooccurrence_record is not None:
        record["cooccurrence"] = cooccurrence_record
    return record


def _graph_record(scope: str, cfg: dict, counts: dict, digest: str, timings: dict, peak_rss_mib: dict) -> dict:
    timings["total"] = round(sum(timings.values()), 4)
    return {
        "scope": scope,
        "config": cfg,
        "counts": counts,
        "graph_digest": digest,
        "weight_scheme": weights.WEIGHT_SCHEME,
        "timings": timings,
        "peak_rss_mib": peak_rss_mib,  # process high-water mark after each stage
    }


def _save_record(out_dir: Path, record: dict) -> None:
    write_atomically(GraphFolder(out_dir).counts, json.dumps(record, indent=2, sort_keys=True) + "\n")


@dataclass
class _Vertices:
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


def _vertices(
    tables_dir: Path, cfg: dict, concepts: KeyEncoder, documents: KeyEncoder, concept_table: pa.Table | None,
    concept_codes: np.ndarray, abstract_codes: np.ndarray,
) -> _Vertices:  # fmt: skip
    """Every endpoint of a kept edge (sorted, distinct codes given) -> dense sorted ids and names."""
    concept_keys = concepts.keys().take(pa.array(concept_codes))
    abstract_keys = documents.keys().take(pa.array(abstract_codes))
    concept_vid, abstract_vid = assign_vertex_ids(concept_keys, abstract_keys)
    vid_of_concept = np.full(len(concepts), -1, np.int64)
    vid_of_concept[concept_codes] = concept_vid
    vid_of_abstract = np.full(len(documents), -1, np.int64)
    vid_of_abstract[abstract_codes] = abstract_vid
    names = concept_names(concept_keys, concept_table)
    if len(abstract_keys):
        abstract_names, documents_not_vertices = document_titles(tables_dir, abstract_keys, cfg["batch_rows"])
    else:  # a concept-only graph: no titles to look up, and every document is off the graph
        abstract_names, documents_not_vertices = pa.nulls(0, pa.string()), row_count(tables_dir, "documents")
    table = vertex_table(concept_keys, names, concept_vid, abstract_keys, abstract_names, abstract_vid)
    return _Vertices(
        concept_keys, concept_vid, abstract_keys, abstract_vid, vid_of_concept, vid_of_abstract,
        documents_not_vertices, table,
    )  # fmt: skip


def _graph_counts(
    counts: dict, vertices: _Vertices, edges_by_kind: np.ndarray, concept_table: pa.Table | None,
    concepts: KeyEncoder, documents: KeyEncoder,
) -> None:  # fmt: skip
    known_concepts, isolated_concepts = 0, 0
    if concept_table is not None:
        in_table = pc.unique(concept_table.column("cui").combine_chunks())
        is_known = pc.is_in(vertices.concept_keys, value_set=in_table)
        known_concepts = int(pc.sum(is_known).as_py() or 0)
        isolated_concepts = len(in_table) - known_concepts
    edges = int(edges_by_kind.sum())
    counts.update(
        vertices=vertices.n,
        concept_vertices=len(vertices.concept_keys),
        abstract_vertices=len(vertices.abstract_keys),
        edges=edges,
        csr_nnz=2 * edges,
        **{f"edges_{name}": int(edges_by_kind[i]) for i, name in enumerate(EDGE_KINDS)},
        concepts_seen=len(concepts),
        concept_vertices_without_metadata=len(vertices.concept_keys) - known_concepts,
        isolated_concepts=isolated_concepts,  # in the concepts table but on no kept edge
        documents_seen=len(documents),
        isolated_documents=vertices.documents_not_vertices,  # in the documents table but on no kept edge
    )


def _stepper(timings: dict, lap):
    clock = time.perf_counter()

    def step(stage: str) -> None:
        nonlocal clock
        if lap is not None:
            lap(stage)
        else:
            now = time.perf_counter()
            timings[stage] = round(now - clock, 4)
            clock = now

    return step


def _write_graph_scope(
    out_dir: Path,
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    documents: KeyEncoder,
    concept_table: pa.Table | None,
    parts: tuple,
    counts: dict,
    timings: dict,
    lap=None,
) -> str:
    """Vertices, edges, graph.bp of one graph from its per-kind (u, v, weight) parts in code space,
    assembled in memory.

    ``parts`` are (concept_concept, concept_abstract, abstract_abstract), each (u codes, v codes,
    weight); a kind the graph does not have is empty. Fills ``counts`` with the graph's sizes
    and returns the graph digest.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    step = _stepper(timings, lap)
    cc, ca, aa = parts
    vertices = _vertices(
        tables_dir, cfg, concepts, documents, concept_table,
        _used_codes(len(concepts), cc[0], cc[1], ca[0]), _used_codes(len(documents), ca[1], aa[0], aa[1]),
    )  # fmt: skip
    n = vertices.n
    step("vertices")

    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    src, dst, weight, kind = _assemble_edges(
        n,
        (vid_of_concept[cc[0]], vid_of_concept[cc[1]], cc[2]),
        (vid_of_concept[ca[0]], vid_of_abstract[ca[1]], ca[2]),
        (vid_of_abstract[aa[0]], vid_of_abstract[aa[1]], aa[2]),
    )
    del cc, ca, aa, parts, vid_of_concept, vid_of_abstract
    cost = weights.cost_from_weight(weight)
    step("edges")

    # Three jobs that release the GIL run side by side: the digest, the Parquet encoding of
    # vertices and edges, and (here) the CSR build; graph.bp needs the digest, so it comes last.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="graph-write") as pool:
        digesting = pool.submit(graph_digest, vertices.keys_in_vid_order(), src, dst, kind, cost)
        writing = pool.submit(_write_tables, out_dir, vertices.table, src, dst, kind, weight, cost)
        del weight
        csr = symmetric_csr(n, src, dst, cost)
        digest = digesting.result()
        write_graph_bp(
            GraphFolder(out_dir).graph_bp,
            n,
            csr.row_ptr,
            csr.col_idx,
            csr.cost,
            {"graph_digest": digest, "weight_scheme": weights.WEIGHT_SCHEME, "edge_kinds": cfg["edge_kinds"]},
        )
        del csr
        writing.result()
    step("write")
    _graph_counts(counts, vertices, np.bincount(kind, minlength=len(EDGE_KINDS)), concept_table, concepts, documents)
    return digest


def _write_graph_scope_partitioned(
    out_dir: Path,
    tables_dir: Path,
    cfg: dict,
    concepts: KeyEncoder,
    documents: KeyEncoder,
    concept_table: pa.Table | None,
    cc: tuple,
    mentions: MentionTotals | None,
    aa: tuple,
    counts: dict,
    timings: dict,
    budget_bytes: int,
    spill_dir: Path,
    lap=None,
) -> str:
    """The same files as :func:`_write_graph_scope`, the edges assembled in vertex-range
    partitions spilled to disk (:mod:`pipeline.graph.assemble_spilled`), so that memory holds one
    partition at a time. The concept--abstract edges are read again from the mentions table
    (``mentions``' second pass) rather than held."""
    out_dir.mkdir(parents=True, exist_ok=True)
    step = _stepper(timings, lap)
    empty = np.zeros(0, np.int64)
    cui_used = empty if mentions is None else np.flatnonzero(mentions.cui_degree[: len(concepts)] > 0)
    doc_used = empty if mentions is None else np.flatnonzero(mentions.doc_degree[: len(documents)] > 0)
    vertices = _vertices(
        tables_dir, cfg, concepts, documents, concept_table,
        _used_codes(len(concepts), cc[0], cc[1], cui_used), _used_codes(len(documents), doc_used, aa[0], aa[1]),
    )  # fmt: skip
    n = vertices.n
    pq.write_table(vertices.table, GraphFolder(out_dir).vertices)
    vid_of_concept, vid_of_abstract = vertices.vid_of_concept, vertices.vid_of_abstract
    step("vertices")

    # Entries a vertex will have (an upper bound for the mentions: repeats merge later).
    degree = np.zeros(n, np.int64)
    for ends in (vid_of_concept[cc[0]], vid_of_concept[cc[1]], vid_of_abstract[aa[0]], vid_of_abstract[aa[1]]):
        degree += np.bincount(ends, minlength=n)
    totals_by_vid = np.zeros(n, np.float64)
    if mentions is not None:
        degree[vid_of_concept[cui_used]] += mentions.cui_degree[cui_used]
        degree[vid_of_abstract[doc_used]] += mentions.doc_degree[doc_used]
        totals_by_vid[vid_of_abstract[doc_used]] = mentions.totals[doc_used]
    # Each partition may use half of what is left of the budget once the arrays held for the whole
    # stage are counted (they grow with the corpus: 2.4 GiB of 4 at 30M predications).
    held = resident_bytes()
    if held > 0.75 * budget_bytes:
        log.warning(
            "graph stage: %.1f GiB already held (vertex keys, per-vertex arrays, concept pairs) of a "
            "%.1f GiB budget; the partitions get a quarter of it, and the peak will exceed the budget: "
            "raise resources.memory_gib",
            held / 2**30,
            budget_bytes / 2**30,
        )
    per_partition = max(1, int(0.5 * room_left(budget_bytes)) // assemble_spilled.FINISH_BYTES_PER_EDGE)
    bounds = assemble_spilled.partition_bounds(degree, per_partition)
    del degree

    def weigh(src, dst, kind, value):
        weight = np.asarray(value, dtype=np.float64).copy()
        occurrence = kind == EDGE_KINDS.index(CONCEPT_ABSTRACT)
        if occurrence.any():  # mention counts summed over repeats; the abstract is the larger id
            weight[occurrence] = weights.occurrence_weight(value[occurrence], totals_by_vid[dst[occurrence]])
        return weight

    edges_by_kind = np.zeros(len(EDGE_KINDS), np.int64)
    row_counts = np.zeros(n, np.int64)
    with SpillFolder(spill_dir, ".graph-spill-") as folder:
        partitions = assemble_spilled.EdgePartitions(folder / "edges", bounds)
        cc_src, cc_dst = vid_of_concept[cc[0]], vid_of_concept[cc[1]]
        partitions.add(np.minimum(cc_src, cc_dst), np.maximum(cc_src, cc_dst), 0, cc[2])
        aa_src, aa_dst = vid_of_abstract[aa[0]], vid_of_abstract[aa[1]]
        partitions.add(np.minimum(aa_src, aa_dst), np.maximum(aa_src, aa_dst), 2, aa[2])
        if mentions is not None:
            for cui, doc, count in mentions.edges():
                partitions.add(vid_of_concept[cui], vid_of_abstract[doc], 1, count)
        step("partitions")
        digest = assemble_spilled.StreamingDigest(vertices.keys_in_vid_order(), folder / "digest")
        csr_files = (folder / "csr-col.bin", folder / "csr-cost.bin")
        with EdgeFileWriter(GraphFolder(out_dir).edges) as edge_writer, open(csr_files[0], "wb") as col_out, \
                open(csr_files[1], "wb") as cost_out:  # fmt: skip
            for done in assemble_spilled.finish_partitions(partitions, weigh, weights.cost_from_weight):
                edge_writer.write(done.src, done.dst, done.kind, done.weight, done.cost)
                digest.add(done.src, done.dst, done.kind, done.cost)
                edges_by_kind += np.bincount(done.kind, minlength=len(EDGE_KINDS))
                row_counts[done.lo : done.hi] = done.row_counts
                done.col_idx.tofile(col_out)
                done.csr_cost.tofile(cost_out)
        graph_digest_hex = digest.hexdigest()
        step("edges")
        row_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(row_counts, out=row_ptr[1:])
        writer = GraphBpWriter(GraphFolder(out_dir).graph_bp, n, row_ptr)
        try:
            chunk = 1 << 23
            with open(csr_files[0], "rb") as col_in, open(csr_files[1], "rb") as cost_in:
                while True:
                    col_idx = np.fromfile(col_in, dtype=np.int64, count=chunk)
                    if not len(col_idx):
                        break
                    writer.write_rows(col_idx, np.fromfile(cost_in, dtype=np.float32, count=len(col_idx)))
            writer.close(
                {"graph_digest": graph_digest_hex, "weight_scheme": weights.WEIGHT_SCHEME, "edge_kinds": cfg["edge_kinds"]}
            )
        except BaseException:
            writer.abort()
            raise
    step("write")
    if mentions is not None:
        counts["concept_abstract_pairs"] = int(edges_by_kind[EDGE_KINDS.index(CONCEPT_ABSTRACT)])
    counts["graph_partitions"] = int(partitions.k)
    _graph_counts(counts, vertices, edges_by_kind, concept_table, concepts, documents)
    return graph_digest_hex
