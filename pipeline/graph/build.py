"""``litpath build-graph``: the weighted concept--abstract graph of a build, from its Parquet tables.

Reads ``predications``, ``mentions``, ``citations`` (only those the selected edge kinds
need), ``concepts`` and ``documents`` from ``tables_dir`` -- each either ``<name>.parquet``
or a folder ``<name>/`` of Parquet parts (:mod:`pipeline.graph.inputs`) -- and writes to
``out_dir`` (the names: :class:`pipeline.builds.layout.GraphFolder`):

* ``vertices.parquet`` and ``edges.parquet`` (schemas in :mod:`pipeline.builds.tables`; edges once,
  ``src < dst``, sorted by (src, dst));
* ``graph.bp`` -- the symmetric CSR of costs (:func:`pipeline.store.adios.write_graph_bp`);
* ``path_index.bp`` -- the path index of on-demand queries (:mod:`pipeline.graph.path_index`);
* ``graph_counts.json`` -- input rows, the effect of every filter, graph sizes per edge
  kind, the graph digest, the path index's record and stage timings.

This module only orders the stages: the concepts table, then the three edge kinds, counted in
code space (:mod:`pipeline.graph.edges`, with :mod:`pipeline.graph.counting`), then each
graph's assembly -- in memory (:mod:`pipeline.graph.assemble`) or, when its edges would not fit
the memory budget, in vertex-range partitions on disk (:mod:`pipeline.graph.assemble_spilled`);
the files are the same either way.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import EDGE_KINDS
from pipeline.config import load_schema, validate_config
from pipeline.graph import weights
from pipeline.graph.assemble import GraphScope, GraphVertices, fits_in_memory, write_graph
from pipeline.graph.assemble_spilled import write_graph_partitioned
from pipeline.graph.counting import KeyEncoder
from pipeline.graph.earlier import (
    PREDICATION_TALLIES,
    EarlierEdges,
    cooccurrence_edges,
    counted_on_the_delta,
    earlier_build_note,
    save_predication_counts,
    taken_graph,
)
from pipeline.graph.edges import (
    CodedEdges,
    MentionTotals,
    PredicationCounts,
    abstract_abstract_edges,
    concept_abstract_edges,
    concept_concept_edges,
    cooccurrence_from_counts,
)
from pipeline.graph.inputs import load_concepts, require_table, row_count, table_fingerprint
from pipeline.graph.paper_figures import paper_scaled, predication_rows
from pipeline.graph.path_index import index_graph, sample_queries
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import PERCENT, PhasedWork, Progress
from pipeline.runtime.resources import memory_budget_bytes, spill_parent, sweep_stale_spills

CONCEPT_CONCEPT, CONCEPT_ABSTRACT, ABSTRACT_ABSTRACT = EDGE_KINDS
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


# The full graph's build as shares of its time, what its progress line counts (PhasedWork): reading
# the tables (or taking the earlier build's edges), numbering the vertices, sorting the edges,
# writing edges.parquet, graph.bp and vertices.parquet, and the path index: the mean of the
# calibrated first builds' shares (graph_counts.json's timings, AMD EPYC), at 10M 4.5, 2.7, 4.9,
# 3.4 and 1.8 s of 17.3 s, at 30M 16.0, 6.1, 13.9, 7.0 and 3.9 s of 47.0 s. The line had counted
# the rows read alone, then was silent for the 12.7 s (31 s at 30M) after them.
GRAPH_SHARES = {"read": 0.30, "vertices": 0.14, "edges": 0.29, "write": 0.18, "path_index": 0.09}
# The stages (_Stopwatch's laps) that end a phase, and what the line says runs after each. The
# write ends at "write" on every path: where the index is built beside the write, that lap comes
# once graph.bp is written and the index starts, edges.parquet still encoding beside it.
_LAP_ENDS = {
    "abstract_abstract": ("read", "numbering the vertices"),
    "earlier_edges": ("read", "numbering the vertices"),
    "vertices": ("vertices", "sorting the edges"),
    "edges": ("edges", "writing the graph"),
    "write": ("write", "indexing the paths"),
    "path_index": ("path_index", "sampling queries"),
}


class _Stopwatch:
    """Called at the end of each stage: its seconds since the previous call into ``timings`` and,
    with ``peak_rss_mib``, the process's high-water mark after it; with ``work``, the phase the
    stage ends is through (:data:`_LAP_ENDS`)."""

    def __init__(self, timings: dict[str, float], peak_rss_mib: dict[str, float] | None = None,
                 work: PhasedWork | None = None) -> None:  # fmt: skip
        self.timings, self.peak_rss_mib, self.work = timings, peak_rss_mib, work
        self._clock = time.perf_counter()

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = round(now - self._clock, 4)
        if self.peak_rss_mib is not None:
            self.peak_rss_mib[stage] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        self._clock = now
        if self.work is not None and stage in _LAP_ENDS:
            phase, next_stage = _LAP_ENDS[stage]
            self.work.stage(next_stage)
            self.work.complete(phase)


def build_graph(
    tables_dir: Path,
    out_dir: Path,
    config: dict,
    cooccurrence_dir: Path | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
    cooccurrence_from: Path | None = None,
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
    With ``cooccurrence_from`` instead, the build's co-occurrence graph already built there (the
    workflow's ``build_cooccurrence`` job) gives the concept--concept edges, which are then not
    counted again (:func:`pipeline.graph.earlier.cooccurrence_edges`; counted where it does not
    fit these tables and settings); the record's ``concept_concept_edges`` says which, and why.
    """
    if cooccurrence_dir is not None and cooccurrence_from is not None:
        raise ValueError("the co-occurrence graph is either written beside the full graph or read, not both")
    tables_dir, out_dir, cfg = _checked_arguments(tables_dir, out_dir, config, batch_rows)
    # Spill folders of an earlier build-graph that was killed (their owner is gone) go first.
    for scope_dir in (out_dir, cooccurrence_dir):
        if scope_dir is not None:
            sweep_stale_spills(spill_parent(config, Path(scope_dir)))
    timings: dict[str, float] = {}
    peak_rss_mib: dict[str, float] = {}
    counts: dict[str, int] = {}
    line = Progress("litpath build-graph", 100, PERCENT)
    work = PhasedWork(GRAPH_SHARES)
    work.line = line
    lap = _Stopwatch(timings, peak_rss_mib, work)

    concept_table, excluded_cuis = load_concepts(tables_dir, cfg["exclude_semtypes"])
    counts["concepts_in_table"] = 0 if concept_table is None else concept_table.num_rows
    counts["concepts_with_excluded_semtype"] = len(excluded_cuis)
    concepts = KeyEncoder(flagged=excluded_cuis)
    documents = KeyEncoder()
    lap("read_concepts")

    kinds = cfg["edge_kinds"]
    need_cooccurrence = CONCEPT_CONCEPT in kinds or cooccurrence_dir is not None
    budget = memory_budget_bytes(config)
    # Only the citations changed since the build the merge started from, or papers were deleted:
    # its other edges, or its concept--abstract edges less the deleted papers', are this build's
    # (pipeline.graph.earlier), where they fit in memory with the citations.
    earlier, earlier_why = (None, "the co-occurrence graph is written beside it") if cooccurrence_dir is not None \
        else EarlierEdges.of(tables_dir, cfg, None if cooccurrence_from is None else Path(cooccurrence_from))  # fmt: skip
    if earlier is not None and not fits_in_memory(earlier.edges_taken + row_count(tables_dir, "citations"), budget):
        earlier, earlier_why = None, "its edges would not fit the memory budget"
    patched = None
    if earlier is not None:
        patched, why_not = earlier.edges(tables_dir, cfg, concepts, documents, counts)
        if patched is None:  # nothing coded: counted from the tables below
            earlier, earlier_why = None, why_not
    # The build's co-occurrence graph, already built from these tables: its edges are this graph's
    # concept--concept edges (pipeline.graph.earlier.cooccurrence_edges).
    taken_cc, cc_why = None, "counted from the predications"
    if earlier is None and need_cooccurrence and cooccurrence_from is not None:
        taken_cc, why_not = cooccurrence_edges(Path(cooccurrence_from), tables_dir, cfg, concepts, counts)
        cc_why = f"taken from the co-occurrence graph {cooccurrence_from}" if taken_cc is not None \
            else f"counted from the predications: {why_not}"  # fmt: skip
    tables_read = [
        name
        for name, needed in (
            ("predications", need_cooccurrence and earlier is None and taken_cc is None),
            ("mentions", CONCEPT_ABSTRACT in kinds and earlier is None),
            ("citations", ABSTRACT_ABSTRACT in kinds),
        )
        if needed
    ]
    rows_read = sum(row_count(tables_dir, t) or 0 for t in tables_read)
    progress = work.rows("read", rows_read)
    mentions = None
    in_order = None
    if patched is not None:
        cc, ca, in_order = patched
        lap("earlier_edges")
        partitioned = False
    else:
        if taken_cc is not None:
            cc = taken_cc
        else:
            progress.stage("concept_concept (predications)")
            cc = concept_concept_edges(tables_dir, cfg, concepts, counts, progress) if need_cooccurrence else CodedEdges.none()
        lap("concept_concept")
        # In memory, the assembly costs about IN_MEMORY_BYTES_PER_EDGE an edge; beyond the budget the
        # edges go to disk partitions instead (same files, bit for bit; pipeline.graph.assemble_spilled).
        edges_bound = len(cc.u) + sum(
            row_count(tables_dir, t) for t, kind in (("mentions", CONCEPT_ABSTRACT), ("citations", ABSTRACT_ABSTRACT))
            if kind in kinds
        )  # fmt: skip
        partitioned = not fits_in_memory(edges_bound, budget)
        progress.stage("concept_abstract (mentions)")
        ca = CodedEdges.none()
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
        else CodedEdges.none()
    )
    lap("abstract_abstract")

    full = GraphScope(out_dir, tables_dir, cfg, concepts, documents, concept_table, lap, counts,
                      titles=None if earlier is None else earlier.titles())  # fmt: skip
    cooccurrence_record = None
    if cooccurrence_dir is not None:
        # First, while the full graph's parts are still needed: the co-occurrence graph is small.
        cooccurrence_record = _write_cooccurrence_graph(full, Path(cooccurrence_dir), cc, budget, config)
        lap("cooccurrence_graph")
    if CONCEPT_CONCEPT not in kinds:
        cc = CodedEdges.none()
    indexed = _PathIndexStep(out_dir, lap)
    if partitioned:
        digest = write_graph_partitioned(full, cc, mentions, aa, budget, spill_parent(config, out_dir))
    elif indexed.beside_the_write(len(cc.u) + len(ca.u) + len(aa.u) + (len(in_order.src) if in_order is not None else 0), budget):
        digest = write_graph(full, cc, ca, aa, while_encoding=indexed.run, in_order=in_order)
    else:
        digest = write_graph(full, cc, ca, aa, in_order=in_order)
    # written: their memory goes before the path index reads the hub rows, where it is built
    # after the write (beside it, beside_the_write allowed for them)
    del cc, ca, aa, mentions, in_order
    if earlier is not None and earlier.change == EarlierEdges.ONLY_CITATIONS:
        # the concepts the predications and mentions name, which were not coded again
        counts["concepts_seen"] = earlier.record["counts"]["concepts_seen"]
    path_index = indexed.record(counts["concept_vertices"])
    line.finish(f"{counts['vertices']:,} vertices, {counts['edges']:,} edges"
                + (f", {rows_read:,} rows read" if rows_read else ""))  # fmt: skip
    record = _graph_record("full", cfg, counts, digest, timings, peak_rss_mib)
    record["path_index"] = path_index
    record["earlier_build"] = earlier.note() if earlier is not None else earlier_build_note(None, None, earlier_why)
    if earlier is not None and earlier.change == EarlierEdges.DELETIONS:
        record["concept_concept_edges"] = f"taken from the co-occurrence graph {cooccurrence_from}"
    elif earlier is None and need_cooccurrence:
        record["concept_concept_edges"] = cc_why
    # the build beside the paper's graph, scaled to its predications (science review S5)
    record["paper_scaled"] = paper_scaled(counts, predication_rows(tables_dir))
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


def build_cooccurrence_graph(tables_dir: Path, out_dir: Path, config: dict, *, batch_rows: int = BATCH_ROWS) -> dict:
    """The co-occurrence graph alone in ``out_dir``: the files and record that
    ``build_graph(..., cooccurrence_dir=out_dir)`` writes there, from the predications and the
    concepts only. Its own job in the workflow, so that what needs only the concept--concept
    edges (the evidence's grouping, the co-occurrence solve) does not wait for the full graph:
    on 30M calibrated predications its evidence grouping (346 s) started after the 135 s
    build-graph job, of which counting the co-occurrences and writing this graph were 28 s."""
    tables_dir, out_dir, cfg = _checked_arguments(tables_dir, out_dir, config, batch_rows)
    sweep_stale_spills(spill_parent(config, out_dir))
    # The predications and concepts unchanged since the build the merge started from: its graph.
    taken, why = taken_graph(tables_dir, out_dir, _cooccurrence_settings(cfg))
    if taken is not None:
        _save_record(out_dir, taken)
        return taken
    counts: dict[str, int] = {}
    concept_table, excluded_cuis = load_concepts(tables_dir, cfg["exclude_semtypes"])
    concepts = KeyEncoder(flagged=excluded_cuis)
    # The predications are the earlier build's less the deleted papers' rows: its count less theirs.
    counted, earlier, not_on_delta = counted_on_the_delta(tables_dir, _cooccurrence_settings(cfg), concepts)
    if counted is not None:
        progress = Progress("litpath build-graph (co-occurrence)", 0, "rows")
        counts.update(counted.tallies(), predication_rows_out_of_order=counted.out_of_order)
        cc = cooccurrence_from_counts(counted.pair_keys, counted.together, counted.concept_predications, cfg, counts)
        note = earlier_build_note("patched", earlier, "papers were deleted: counted on the delta (the earlier "
                                  "count less the rows the merge removed)")  # fmt: skip
    else:
        progress = Progress("litpath build-graph (co-occurrence)", row_count(tables_dir, "predications"), "rows")
        progress.stage("concept_concept (predications)")
        kept: dict[str, PredicationCounts] = {}
        cc = concept_concept_edges(tables_dir, cfg, concepts, counts, progress, kept_counts=kept)
        counted = kept["counts"]
        note = earlier_build_note(None, None, why if not_on_delta == why else f"{why}; not counted on the delta: {not_on_delta}")
    progress.stage("writing the graph")
    scope = GraphScope(out_dir, tables_dir, cfg, concepts, KeyEncoder(), concept_table, _Stopwatch({}), counts)
    record = _write_cooccurrence_graph(scope, out_dir, cc, memory_budget_bytes(config), config)
    # the concepts any predication names (on the delta, the earlier count's codes keep those only
    # the removed rows named): as many as counting codes
    record["counts"]["concepts_seen"] = int(np.count_nonzero(counted.concept_rows))
    save_predication_counts(GraphFolder(out_dir), concepts, counted)
    record["earlier_build"] = note
    _save_record(out_dir, record)
    progress.finish(f"{record['counts']['vertices']:,} concepts, {record['counts']['edges']:,} edges")
    return record


def _checked_arguments(tables_dir: Path, out_dir: Path, config: dict, batch_rows: int) -> tuple[Path, Path, dict]:
    """The folders as paths and the graph settings with ``batch_rows``; a missing tables folder or
    a batch size that is not a positive integer is refused."""
    tables_dir, out_dir = Path(tables_dir), Path(out_dir)
    if not tables_dir.is_dir():
        raise FileNotFoundError(f"tables folder not found: {tables_dir}")
    if not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    return tables_dir, out_dir, {**graph_config(config), "batch_rows": batch_rows}


def _write_cooccurrence_graph(full: GraphScope, out_dir: Path, cc: CodedEdges, budget: int, config: dict) -> dict:
    """The co-occurrence graph -- the concepts and the concept--concept edges of ``full`` -- in
    ``out_dir``, with its own graph_counts.json; returns its record."""
    timings: dict[str, float] = {}
    # its record keeps the tallies of counting the predications, which the full graph takes with
    # its edges (pipeline.graph.earlier.cooccurrence_edges)
    tallies = {key: value for key, value in full.counts.items() if key.startswith(PREDICATION_TALLIES)}
    scope = replace(
        full, out_dir=out_dir, cfg=_cooccurrence_settings(full.cfg), documents=KeyEncoder(),
        lap=_Stopwatch(timings), counts=tallies,
    )  # fmt: skip
    indexed = _PathIndexStep(out_dir, scope.lap, with_example=False)
    if indexed.beside_the_write(len(cc.u), budget):
        digest = write_graph(scope, cc, CodedEdges.none(), CodedEdges.none(), while_encoding=indexed.run)
    elif fits_in_memory(len(cc.u), budget):
        digest = write_graph(scope, cc, CodedEdges.none(), CodedEdges.none())
    else:
        digest = write_graph_partitioned(scope, cc, None, CodedEdges.none(), budget, spill_parent(config, out_dir))
    path_index = indexed.record(scope.counts["concept_vertices"])
    record = _graph_record("cooccurrence", scope.cfg, scope.counts, digest, timings, {})
    record["path_index"] = path_index
    # which predications it was counted from, for a full graph that takes its edges
    record["predications"] = table_fingerprint(require_table(full.tables_dir, "predications", "concept_concept edges"))
    _save_record(out_dir, record)
    return record


class _PathIndexStep:
    """The graph stage's last step (pipeline.graph.path_index): the path index of the graph just
    written and its sampled queries, built while edges.parquet is still being encoded on another
    thread where memory allows (:meth:`beside_the_write`), else after the write. A 10M citation
    rerun's patched full graph spent 4.2 s from its CSR to its sampled queries, against 4.9 s
    with the index after the write (AMD EPYC, standalone: the index's CSR read is the main
    thread's while a worker encodes the edges)."""

    def __init__(self, out_dir: Path, lap: Callable[[str], None], with_example: bool = True) -> None:
        self.out_dir, self.lap, self.with_example = out_dir, lap, with_example
        self._record: dict[str, Any] | None = None

    @staticmethod
    def beside_the_write(edges: int, budget: int) -> bool:
        """Whether the index may be built during the write: the graph is assembled in memory
        with room for a second one. The index's CSR (about what the assembly's CSR held, freed
        before it starts) then sits beside the edge arrays the encoding still reads; for a larger
        graph it waits, as the memory budget was planned (30M calibrated predications: after)."""
        return fits_in_memory(2 * edges, budget)

    def run(self, vertices: GraphVertices) -> None:
        """Build them now, beside the write (``write_graph``'s ``while_encoding``)."""
        self._build(len(vertices.concept_keys))

    def record(self, concept_vertices: int) -> dict[str, Any]:
        """The index's record, built now when it was not built beside the write."""
        if self._record is None:
            self._build(concept_vertices)
        assert self._record is not None
        return self._record

    def _build(self, concept_vertices: int) -> None:
        self._record = index_graph(self.out_dir)  # for the service's on-demand queries
        self.lap("path_index")
        # what a query costs, for the plan; and the example query `litpath describe` prints, among
        # the concepts (their vids come first)
        concepts = concept_vertices if self.with_example else 0
        self._record["sampled_queries"] = sample_queries(self.out_dir, concepts=concepts)
        self.lap("path_index_sample")


def _cooccurrence_settings(cfg: dict) -> dict:
    """The co-occurrence graph's settings: the build's, with concept--concept edges only."""
    return {**cfg, "edge_kinds": [CONCEPT_CONCEPT]}


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


__all__ = ["BATCH_ROWS", "build_cooccurrence_graph", "build_graph", "graph_config"]
