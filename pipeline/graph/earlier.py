"""A build's graphs from the build its merge started from, where the tables they read are unchanged.

After a merge on the delta (:mod:`pipeline.merge.delta`), counts.json lists the tables that are
the earlier build's files (:func:`pipeline.builds.reuse.earlier_tables`). Two cases follow:

* **The co-occurrence graph is taken whole** when the predications and the concepts are
  unchanged (a citation file): it reads nothing else, so with the same graph settings and weight
  scheme its files are the earlier ones (:func:`taken_graph`; 12 s of a 10M citation rerun).
* **The full graph is patched** when only the citations changed: its concept--concept and
  concept--abstract edges, counted from the unchanged predications and mentions, are the earlier
  graph's, and only the abstract--abstract edges are counted again (:class:`EarlierEdges`). The
  vertex ids still follow from the new edge set (a paper cited for the first time becomes a
  vertex and renumbers those after it, docs/design.md §5), so the assembly, the files and the
  path index are done as in a full build. Counting the predications and mentions was 16 of the
  10M citation rerun's 33 s build-graph. It is patched too when papers were deleted (an update
  file): the mentions are the earlier ones less the deleted papers' rows
  (``incremental.tables_less_deleted``), so the concept--abstract edges are the earlier graph's
  less those papers', and the concept--concept edges the build's own co-occurrence graph's.

Both are checked against a from-scratch build of the same tables (tests/graph/test_graph_earlier.py):
the same files, digest and counts.

Within one build, too, the full graph takes what another graph already counted: the build's own
co-occurrence graph, which the workflow builds first, holds the full graph's concept--concept
edges (:func:`cooccurrence_edges`; 8.7 of a 10M full graph's 30 s were counting them again).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import BuildLayout, GraphFolder, TableFolder
from pipeline.builds.reuse import EarlierTables, copy_stage_files, earlier_tables
from pipeline.builds.tables import EDGE_KINDS
from pipeline.graph import weights
from pipeline.graph.counting import KeyEncoder, grow, pack, unpack
from pipeline.graph.edges import ROW_TALLIES, CodedEdges, EdgesInOrder, PredicationCounts, count_predications
from pipeline.graph.inputs import require_table, row_count, table_fingerprint
from pipeline.runtime.columnar import sum_by_key
from pipeline.runtime.filtered_reads import rows_with_values

CONCEPT_CONCEPT, CONCEPT_ABSTRACT, ABSTRACT_ABSTRACT = EDGE_KINDS
# The settings that change how a graph is built, not what it is.
HOW_SETTINGS = ("batch_rows",)
# The tables each scope's edges are counted from besides the citations (the full graph also
# reads the documents, for the titles of its abstract vertices).
COOCCURRENCE_READS = ("predications", "concepts")
FULL_READS_BUT_CITATIONS = ("predications", "mentions", "concepts", "documents")
# The tallies of the predications' and mentions' counts (pipeline.graph.edges, by key prefix),
# which the patch takes from the earlier record instead of counting the same tables again.
TALLIES_TAKEN = ("predication_rows", "predications_used", "concept_pairs", "mention_rows", "concept_abstract_pairs")


def _what(cfg: dict) -> dict:
    return {key: value for key, value in cfg.items() if key not in HOW_SETTINGS}


def _earlier_graph(tables_dir: Path, scope: str, reads: tuple[str, ...], cfg: dict,
                   ) -> tuple[EarlierTables | None, Path | None, dict, str]:  # fmt: skip
    """The build the merge that wrote ``tables_dir`` started from, its graph folder of ``scope``
    and that graph's record, when the tables the graph is counted from (``reads``) are unchanged
    and it was built with the settings ``cfg``; else Nones and why not."""
    earlier, why = earlier_tables(tables_dir)
    if earlier is None:
        return None, None, {}, why
    if not earlier.same(reads):
        return earlier, None, {}, f"the {', '.join(reads)} tables are not all the earlier build's"
    folder, record, why = _earlier_record(earlier, scope, cfg)
    return earlier, folder, record, why


def _earlier_record(earlier: EarlierTables, scope: str, cfg: dict) -> tuple[Path | None, dict, str]:
    """The earlier build's graph folder of ``scope`` and its record, when it was built with the
    settings ``cfg`` (less how-settings) and this weight scheme; else None and why not."""
    folder = BuildLayout(earlier.root).graph(scope).graph_dir
    try:
        record = json.loads(GraphFolder(folder).counts.read_text())
    except (OSError, ValueError) as error:
        return None, {}, f"the earlier build's {scope} graph record is unreadable ({error})"
    if record.get("scope") != scope or record.get("weight_scheme") != weights.WEIGHT_SCHEME:
        return None, {}, f"the earlier build's {scope} graph is of another scope or weight scheme"
    if _what(record.get("config") or {}) != _what(cfg):
        return None, {}, f"the earlier build's {scope} graph was built with other settings"
    return folder, record, ""


def taken_graph(tables_dir: Path, out_dir: Path, cfg: dict) -> tuple[dict | None, str]:
    """The earlier build's co-occurrence graph copied into ``out_dir`` when this build's
    predications and concepts are the earlier build's and ``cfg`` (the co-occurrence graph's
    settings) is the one it was built with: its record, saying where it came from. Else None and
    why (the caller builds the graph)."""
    started = time.perf_counter()
    earlier, folder, record, why = _earlier_graph(tables_dir, "cooccurrence", COOCCURRENCE_READS, cfg)
    if folder is None:
        return None, why
    files = GraphFolder(folder)
    # its counts too, where it kept them, for a later build to count on the delta
    counted = [p.name for p in (files.concept_predications, files.pair_predications) if p.exists()]
    try:
        copy_stage_files(folder, out_dir, [p.name for p in (files.vertices, files.edges, files.graph_bp, files.path_index)] + counted)
    except FileNotFoundError as error:
        return None, f"the earlier build's co-occurrence graph is incomplete ({error})"
    seconds = round(time.perf_counter() - started, 4)
    record.update(config=cfg, timings={"taken": seconds, "total": seconds}, peak_rss_mib={},
                  earlier_build=earlier_build_note("taken", earlier.name, "its predications and concepts are this build's"))  # fmt: skip
    return record, ""


def save_predication_counts(folder: GraphFolder, concepts: KeyEncoder, counted: PredicationCounts) -> None:
    """The counts a co-occurrence graph's weights come from, beside it: each concept's (in code
    order) and each pair's, for a later build to count on the delta (:func:`counted_on_the_delta`).
    2.1M pairs at 10M calibrated predications: about 10 MB."""
    n = len(concepts)
    pq.write_table(pa.table({
        "cui": concepts.keys(),
        "predications": counted.concept_predications[:n],
        "rows": counted.concept_rows[:n],
    }), folder.concept_predications)  # fmt: skip
    a, b = unpack(counted.pair_keys)
    pq.write_table(pa.table({
        "a": a.astype(np.int32), "b": b.astype(np.int32), "predications": counted.together.astype(np.int64),
    }), folder.pair_predications)  # fmt: skip


def counted_on_the_delta(tables_dir: Path, cfg: dict, concepts: KeyEncoder) -> tuple[PredicationCounts | None, str, str]:
    """The co-occurrence count of this build's predications from the earlier build's, when they
    are the earlier ones less the deleted papers' rows (an update file): the earlier counts
    (:func:`save_predication_counts`) less the count of the rows the merge removed
    (``predications.removed.parquet``), coded into ``concepts`` (empty on entry) in the earlier
    count's codes; and the earlier build's name. Counts add over predications, and a removed
    predication is removed whole (checked: no row left has its id), so this is the count of the
    table: 10M predications are not read again. Else None and why (nothing coded)."""
    if len(concepts):
        raise ValueError("the earlier count is coded into an empty encoder only")
    earlier, why = earlier_tables(tables_dir)
    if earlier is None:
        return None, "", why
    if not earlier.same(["concepts"]) or "predications" not in earlier.less_deleted:
        return None, "", "the predications are not the earlier build's less the deleted papers' rows"
    folder, record, why = _earlier_record(earlier, "cooccurrence", cfg)
    if folder is None:
        return None, "", why
    files, removed_path = GraphFolder(folder), TableFolder(tables_dir).removed_rows("predications")
    if not (files.concept_predications.exists() and files.pair_predications.exists()):
        return None, "", "the earlier co-occurrence graph kept no counts (a graph of an older litpath)"
    if not removed_path.exists():
        return None, "", f"{removed_path} not found"
    tallies = record.get("counts") or {}
    if tallies.get("predication_rows_out_of_order", 1):  # then a predication's rows are not adjacent
        return None, "", "the earlier predications were not in predication_id order"
    removed = pq.read_table(removed_path)
    table = require_table(tables_dir, "predications", "concept_concept edges")
    left = pq.read_table(table, columns=["predication_id"]).column("predication_id")
    if pc.any(pc.is_in(left, value_set=pc.unique(removed.column("predication_id").combine_chunks()))).as_py():
        return None, "", "a removed predication still has rows in the table"
    known = pq.read_table(files.concept_predications)
    concepts.append_new(known.column("cui").combine_chunks())  # the earlier count's codes
    pairs = pq.read_table(files.pair_predications)
    gone = count_predications(removed.to_batches(), cfg, concepts)  # codes the removed rows' concepts
    n = len(concepts)
    by_concept = [grow(known.column(name).to_numpy().astype(np.int64), n)[:n] for name in ("predications", "rows")]
    predications, rows = by_concept[0] - gone.concept_predications, by_concept[1] - gone.concept_rows
    keys, together = sum_by_key(
        np.concatenate([pack(pairs.column("a").to_numpy().astype(np.int64), pairs.column("b").to_numpy().astype(np.int64)),
                        gone.pair_keys]),
        np.concatenate([pairs.column("predications").to_numpy(), -gone.together]),
    )  # fmt: skip
    row_tallies = tuple(int(tallies.get(name, 0)) - int(g) for name, g in zip(ROW_TALLIES, gone.rows, strict=True))
    if (predications < 0).any() or (rows < 0).any() or (together < 0).any() \
            or row_tallies[0] != pq.ParquetFile(table).metadata.num_rows:  # fmt: skip
        raise ValueError(f"{removed_path} is not what the earlier build's {table.name} lost: the counts of "
                         f"{files.pair_predications} less its own do not add up to {table}")  # fmt: skip
    counted = PredicationCounts(
        predications, rows, keys[together > 0], together[together > 0],
        int(tallies.get("predications_used", 0)) - gone.predications_used, row_tallies, 0,
    )  # fmt: skip
    return counted, earlier.name, ""


def _distinct_doc_ids(path: Path) -> pa.Array:
    """Every doc_id of a table, once. The mentions are sorted by doc_id: the first row of each run
    is kept (1.1 s at 10M calibrated predications, against 2.7 s for hashing every row); the
    result is checked to be strictly increasing, and hashed after all where it is not."""
    column = pq.read_table(path, columns=["doc_id"]).column("doc_id")
    parts, last = [], None
    for chunk in column.chunks:
        chunk = chunk.cast(pa.string())
        if len(chunk) == 0:
            continue
        starts = pc.not_equal(chunk.slice(1), chunk.slice(0, len(chunk) - 1))
        first = pa.array([chunk[0].as_py() != last])
        parts.append(chunk.filter(pa.concat_arrays([first, starts])))
        last = chunk[-1].as_py()
    distinct = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
    if len(distinct) > 1 and not pc.all(pc.less(distinct.slice(0, len(distinct) - 1), distinct.slice(1))).as_py():
        distinct = pc.unique(distinct)
    return distinct


def earlier_build_note(used: str | None, build: str | None, why: str) -> dict[str, Any]:
    """graph_counts.json's ``earlier_build``: whether the graph was taken from the earlier build
    (``taken``), patched on it (``patched``) or built from the tables (None), and why."""
    return {"used": used, "build": build, "why": why}


class EarlierEdges:
    """Edges of the earlier build's full graph that are this build's, for a build whose tables
    differ from it in one of two ways (:meth:`of`):

    * **only the citations changed** (a citation file, ``ONLY_CITATIONS``): its concept--concept
      and concept--abstract edges are the earlier graph's;
    * **papers were deleted** (a PubMed update file, ``DELETIONS``): the concepts are the same
      and the mentions are the earlier ones less every row of the deleted papers
      (``tables_less_deleted``). An occurrence weight is a paper's own mentions of a concept over
      all of its mentions (README, "The graph's weights"), so the concept--abstract edges are the
      earlier graph's less those of the papers that have no mention left; the concept--concept
      edges, whose Jaccard weights a deleted predication changes for every pair of its concepts,
      are the build's own co-occurrence graph's (:func:`cooccurrence_edges`). Counting the 15.6M
      mentions again, and sorting their edges from abstract order into (src, dst) order, were 3.4
      and most of 5.4 s of a 10M update rerun's full graph.
    """

    ONLY_CITATIONS, DELETIONS = "only the citations changed", "papers were deleted"

    def __init__(self, earlier: EarlierTables, folder: Path, record: dict, change: str,
                 cooccurrence_from: Path | None = None) -> None:  # fmt: skip
        self.earlier, self.folder, self.record, self.change = earlier, folder, record, change
        self.cooccurrence_from = cooccurrence_from
        self.edges_kept: int | None = None  # of the earlier graph's, once :meth:`edges` ran

    @classmethod
    def of(cls, tables_dir: Path, cfg: dict, cooccurrence_from: Path | None = None) -> tuple[EarlierEdges | None, str]:
        """The earlier full graph's edges when only the citations changed, or when papers were
        deleted and the build's co-occurrence graph (``cooccurrence_from``) gives the
        concept--concept edges; and the graph settings are the same. Else None and why."""
        earlier, why = earlier_tables(tables_dir)
        if earlier is None:
            return None, why
        if not {CONCEPT_CONCEPT, CONCEPT_ABSTRACT} <= set(cfg["edge_kinds"]):
            # counting would code only the papers and concepts of the kinds it reads
            return None, "the graph leaves out concept-concept or concept-abstract edges"
        if earlier.same(FULL_READS_BUT_CITATIONS):
            change = cls.ONLY_CITATIONS
        elif not earlier.same(["concepts"]) or not earlier.same_but_deleted(["mentions"]):
            return None, "the concepts or mentions tables are not the earlier build's, less the deleted papers' rows"
        elif cooccurrence_from is None:
            return None, "papers were deleted, and there is no co-occurrence graph of this build to take the concept edges from"
        else:
            change = cls.DELETIONS
        folder, record, why = _earlier_record(earlier, "full", cfg)
        if folder is None:
            return None, why
        if not (GraphFolder(folder).vertices.exists() and GraphFolder(folder).edges.exists()):
            return None, "the earlier build's full graph is incomplete"
        if change == cls.DELETIONS and not _each_mention_row_an_edge(record):
            # then a paper's rows are not one edge each, and the tallies not the table's rows
            return None, "the earlier graph's mentions were filtered (nonpositive counts, excluded semantic types)"
        return cls(earlier, folder, record, change, cooccurrence_from), ""

    @property
    def edges_taken(self) -> int:
        """How many edges the earlier graph has besides its citation edges (at most this many are taken)."""
        counts = self.record.get("counts") or {}
        return int(counts.get(f"edges_{CONCEPT_CONCEPT}", 0)) + int(counts.get(f"edges_{CONCEPT_ABSTRACT}", 0))

    def edges(self, tables_dir: Path, cfg: dict, concepts: KeyEncoder, documents: KeyEncoder, counts: dict,
              ) -> tuple[tuple[CodedEdges, CodedEdges, EdgesInOrder | None] | None, str]:  # fmt: skip
        """(concept--concept, concept--abstract, in order) edges in the codes of ``concepts`` and
        ``documents`` (both empty on entry), coded as the count from the tables would have: every
        doc_id of the mentions is coded, so that the citations' count and ``documents_seen`` come
        out the same; and the counts' tallies of the predications and mentions into ``counts``.
        When only the citations changed, both kinds come as one :class:`EdgesInOrder`, the
        earlier graph's edges with a concept end in their (src, dst) order (the first two empty),
        which are not split by kind and sorted again (the 10M citation rerun's graph, alone, three
        alternate runs: 7.1-8.4 s against 7.6-8.5, its edges step 0.53-0.65 s against 0.82-0.93).
        None and why (nothing coded) where the build's co-occurrence graph is not one to take."""
        if len(concepts) or len(documents):
            raise ValueError("the earlier graph's edges are coded into empty encoders only")
        if self.change == self.DELETIONS:
            less_deleted, why = self._less_deleted_papers(tables_dir, cfg, concepts, documents, counts)
            return (None, why) if less_deleted is None else ((*less_deleted, None), "")
        keys, n_concepts = self._earlier_vertices()
        # concept codes are their vids (concepts come first, docs/design.md §5)
        concepts.append_new(keys.slice(0, n_concepts))
        src, dst, weight = self._earlier_edges()
        # sorted by (src, dst) with src < dst: the edges with a concept end are the first ones, up to
        # the first whose src is an abstract (a citation edge)
        with_concept = int(np.searchsorted(src, n_concepts))
        src, dst, weight = src[:with_concept], dst[:with_concept], weight[:with_concept]
        abstract_ends = dst[dst >= n_concepts]
        # -1: an abstract only the citations name (on no mention edge)
        if _each_mention_row_an_edge(self.record):  # the mentions' papers are the abstracts on their edges
            abstract_code = _code_abstracts_on(keys, n_concepts, abstract_ends, documents)
        else:
            documents.append_new(_distinct_doc_ids(require_table(tables_dir, "mentions", "concept_abstract edges")))
            abstract_code = _codes_in(keys.slice(n_concepts), documents)
        abstract_of = abstract_code[abstract_ends - n_concepts]
        if len(abstract_of) and abstract_of.min() < 0:
            raise ValueError(f"{GraphFolder(self.folder).edges}: an abstract of a mention edge is not in the mentions")
        self.edges_kept = with_concept
        earlier_counts = self.record.get("counts") or {}
        counts.update({key: value for key, value in earlier_counts.items() if key.startswith(TALLIES_TAKEN)})
        in_order = EdgesInOrder(src, dst, weight, n_concepts, abstract_of)
        return (CodedEdges.none(), CodedEdges.none(), in_order), ""

    def _less_deleted_papers(self, tables_dir: Path, cfg: dict, concepts: KeyEncoder, documents: KeyEncoder,
                             counts: dict) -> tuple[tuple[CodedEdges, CodedEdges] | None, str]:  # fmt: skip
        """:meth:`edges` where papers were deleted: the co-occurrence graph's concept--concept
        edges, and the earlier concept--abstract edges of the papers the mentions still have.
        Every mention row was an edge of the earlier graph (checked in :meth:`of`), so the edges
        kept must be the mentions' rows, one each: checked (a paper kept that lost rows, or lost
        all its rows without the merge's record of them, has more edges than rows; a paper
        recorded as gone that still has rows, fewer)."""
        assert self.cooccurrence_from is not None
        cc, why = cooccurrence_edges(self.cooccurrence_from, tables_dir, cfg, concepts, counts)
        if cc is None:
            return None, why
        mentions = require_table(tables_dir, "mentions", "concept_abstract edges")
        # the concepts the mentions name, coded as counting them would (``concepts_seen``)
        concepts.encode(_distinct_in_dictionaries(mentions, "cui"))
        keys, n_concepts = self._earlier_vertices()
        concept_code = _codes_in(keys.slice(0, n_concepts), concepts)
        src, dst, weight = self._earlier_edges()
        # the concept--abstract edges' positions, narrowed step by step (one boolean mask over all
        # 18M edges per step took 1.4 s against 0.3)
        at = np.flatnonzero(dst >= n_concepts)
        at = at[src[at] < n_concepts]
        # the papers of the mentions: the earlier ones (every row was an edge, checked in :meth:`of`)
        # less those whose rows the merge removed, which are checked below to be all of their rows
        removed = TableFolder(tables_dir).removed_rows("mentions")
        if removed.exists():
            gone = pc.unique(pq.read_table(removed, columns=["doc_id"]).column("doc_id").combine_chunks().cast(pa.string()))
            abstract_code = _code_abstracts_on(keys, n_concepts, dst[at], documents, left_out=gone)
        else:
            documents.append_new(_distinct_doc_ids(mentions))
            abstract_code = _codes_in(keys.slice(n_concepts), documents)  # -1: a deleted paper's, or citations' only
        ca_docs = abstract_code[dst[at] - n_concepts]
        kept = ca_docs >= 0
        at = at[kept]
        ca = CodedEdges(concept_code[src[at]], ca_docs[kept], weight[at])
        rows = pq.ParquetFile(mentions).metadata.num_rows
        papers = int(np.count_nonzero(np.bincount(ca.v, minlength=len(documents))))
        if len(ca.u) != rows or papers != len(documents) or (len(ca.u) and ca.u.min() < 0):
            raise ValueError(
                f"{mentions} is not the earlier build's mentions less the deleted papers' rows: "
                f"{rows:,} rows, {papers:,} of its {len(documents):,} papers on {len(ca.u):,} edges "
                f"of the earlier graph {GraphFolder(self.folder).edges}"
            )
        self.edges_kept = len(ca.u)
        # no mention row is filtered out (checked in :meth:`of`): each is one pair, one edge
        counts.update(mention_rows=rows, mention_rows_nonpositive_removed=0, mention_rows_excluded_semtype_removed=0,
                      mention_rows_used=rows, concept_abstract_pairs=len(ca.u))  # fmt: skip
        return (cc, ca), ""

    def titles(self) -> EarlierTitles | None:
        """The earlier graph's titles of its abstracts, which are this graph's where the documents
        table is the earlier build's (only the citations changed); else None."""
        if self.change != self.ONLY_CITATIONS:
            return None
        counts = self.record.get("counts") or {}
        if "isolated_documents" not in counts:
            return None
        return EarlierTitles(GraphFolder(self.folder).vertices, int(counts["isolated_documents"]))

    def _earlier_vertices(self) -> tuple[pa.Array, int]:
        """The earlier graph's vertex keys in vid order, and how many are concepts (they come first)."""
        vertices = pq.read_table(GraphFolder(self.folder).vertices, columns=["kind", "key"])
        n_concepts = int(pc.sum(pc.equal(vertices.column("kind"), "concept")).as_py() or 0)
        return vertices.column("key").combine_chunks(), n_concepts

    def _earlier_edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The earlier graph's edges (src, dst, weight). The kind of an edge follows from its
        ends (src < dst, concepts' vids first): no need to read the kind column, which Parquet
        hands back as a string per edge."""
        edges = pq.read_table(GraphFolder(self.folder).edges, columns=["src", "dst", "weight"])
        return edges.column("src").to_numpy(), edges.column("dst").to_numpy(), edges.column("weight").to_numpy()

    def note(self) -> dict[str, Any]:
        """What graph_counts.json says of the patch (:func:`earlier_build_note`)."""
        kept = self.edges_taken if self.edges_kept is None else self.edges_kept
        if self.change == self.DELETIONS:
            why = f"{self.change}: {kept:,} concept-abstract edges are the earlier graph's"
        else:
            why = f"{self.change}: {kept:,} edges are the earlier graph's"
        return earlier_build_note("patched", self.earlier.name, why)


class EarlierTitles:
    """The titles of a graph's abstract vertices, and how many documents are not vertices, from
    the earlier build's graph (its ``vertices`` file and ``isolated_documents``) when the documents
    table is the earlier build's: :func:`pipeline.graph.inputs.document_titles` reads the doc_ids
    and titles of every document for them (0.9 s of a 10M citation rerun's graph). Only the
    abstracts that are vertices now and were not, or were and are not, are looked up in the
    documents table -- none where the citations name no paper off the earlier graph."""

    def __init__(self, vertices: Path, isolated_documents: int) -> None:
        self.vertices, self.isolated_documents = vertices, isolated_documents

    def __call__(self, tables_dir: Path, keys: pa.Array) -> tuple[pa.Array, int]:
        """(the title of each of ``keys``, distinct abstract keys in any order, null where the
        documents table has none; the number of its documents whose doc_id is not among them)."""
        earlier = pq.read_table(self.vertices, columns=["kind", "key", "name"])
        earlier = earlier.filter(pc.equal(earlier.column("kind"), "abstract"))
        earlier_keys = earlier.column("key").combine_chunks()
        at = pc.index_in(keys, value_set=earlier_keys)
        titles = earlier.column("name").combine_chunks().take(at)  # null where it was not a vertex
        kept = at.drop_null().to_numpy()
        was_vertex = np.zeros(len(earlier_keys), bool)
        was_vertex[kept] = True
        added = keys.filter(pc.is_null(at))
        dropped = earlier_keys.filter(pa.array(~was_vertex))
        rows = row_count(tables_dir, "documents") or 0
        # the documents of the earlier graph's abstracts: its documents less those not vertices
        documents_of_vertices = rows - self.isolated_documents
        if len(added) or len(dropped):
            path = require_table(tables_dir, "documents", "abstract titles")
            found = rows_with_values(path, ["doc_id", "title"], "doc_id", pa.concat_arrays([added, dropped]))
            found_ids = found.column("doc_id").combine_chunks()
            documents_of_vertices += int(pc.sum(pc.is_in(added, value_set=found_ids)).as_py() or 0)
            documents_of_vertices -= int(pc.sum(pc.is_in(dropped, value_set=found_ids)).as_py() or 0)
            if len(added):
                where = np.flatnonzero(pc.is_null(at).to_numpy(zero_copy_only=False))
                added_titles = found.column("title").combine_chunks().take(pc.index_in(added, value_set=found_ids))
                titles = _placed(titles, where, added_titles)
        return titles, rows - documents_of_vertices


def _placed(values: pa.Array, where: np.ndarray, new: pa.Array) -> pa.Array:
    """``values`` with ``new[i]`` at position ``where[i]`` (positions ascending)."""
    order = np.arange(len(values), dtype=np.int64)
    order[where] = len(values) + np.arange(len(where), dtype=np.int64)
    return pa.concat_arrays([values, new.cast(values.type)]).take(pa.array(order))


def _distinct_in_dictionaries(path: Path, column: str) -> pa.Array:
    """The distinct values of a string column of a Parquet file, from its dictionaries: Arrow
    hands a row group back in many chunks that repeat its dictionary (15 row groups, 150 chunks
    of 100k concepts in the 10M mentions), which are taken once each."""
    dictionaries: list[pa.Array] = []
    for chunk in pq.read_table(path, columns=[column], read_dictionary=[column]).column(column).chunks:
        values = chunk.dictionary if isinstance(chunk, pa.DictionaryArray) else chunk
        if not dictionaries or not values.equals(dictionaries[-1]):
            dictionaries.append(values)
    return pc.unique(pa.concat_arrays(dictionaries)) if dictionaries else pa.array([], pa.string())


def _each_mention_row_an_edge(record: dict) -> bool:
    """Whether every mention row of the graph ``record`` describes gave a concept--abstract edge:
    no row filtered out (a count that is not positive, an excluded semantic type), and its pairs
    all edges. Then the papers of its mentions are the abstracts on such edges."""
    counts = record.get("counts") or {}
    return not counts.get("mention_rows_nonpositive_removed") and not counts.get("mention_rows_excluded_semtype_removed") \
        and counts.get("concept_abstract_pairs") == counts.get(f"edges_{CONCEPT_ABSTRACT}")  # fmt: skip


def _code_abstracts_on(keys: pa.Array, n_concepts: int, ends: np.ndarray, documents: KeyEncoder,
                       left_out: pa.Array | None = None) -> np.ndarray:  # fmt: skip
    """Code into ``documents`` (empty) the earlier graph's abstracts at ``ends`` (their vids, of
    its vertex ``keys``: concepts first, then abstracts sorted by doc_id) but those ``left_out``,
    in vid order: the codes that reading the mentions' distinct doc_ids in order
    (:func:`_distinct_doc_ids`) gives the same papers, without reading them (1.1 s at 10M
    calibrated predications) or hashing the abstracts' keys to find their codes (0.5 s). Returns
    each abstract's code by vid - ``n_concepts``, -1 where it has none."""
    if len(documents):
        raise ValueError("the earlier graph's abstracts are coded into an empty encoder only")
    abstract_keys = keys.slice(n_concepts)
    on = np.zeros(len(abstract_keys), bool)
    on[ends - n_concepts] = True
    if left_out is not None and len(left_out):
        on &= ~pc.is_in(abstract_keys, value_set=left_out).to_numpy(zero_copy_only=False)
    code = np.cumsum(on, dtype=np.int64) - 1
    code[~on] = -1
    documents.append_new(abstract_keys.filter(pa.array(on)))
    return code


def _codes_in(keys: pa.Array, encoder: KeyEncoder) -> np.ndarray:
    """Each key's code in ``encoder``, -1 where it has none (nothing is added)."""
    codes = pc.fill_null(pc.index_in(keys, value_set=encoder.keys()), -1)
    return codes.to_numpy(zero_copy_only=False).astype(np.int64)


# The tallies of counting the predications (pipeline.graph.edges.concept_concept_edges), which
# the full graph takes from its build's co-occurrence graph with the edges they describe.
PREDICATION_TALLIES = ("predication_rows", "predications_used", "concept_pairs")


def cooccurrence_edges(cooccurrence_dir: Path, tables_dir: Path, cfg: dict, concepts: KeyEncoder,
                       counts: dict) -> tuple[CodedEdges | None, str]:  # fmt: skip
    """The concept--concept edges of the build's own co-occurrence graph (``cooccurrence_dir``,
    built by ``build-graph --scope cooccurrence`` from the same tables) in the codes of
    ``concepts`` (empty on entry), with the tallies of counting them into ``counts``: the full
    graph's concept--concept edges are those edges, by the same counts and formula, so counting
    the predications again is not needed (8.7 of a 10M full graph's 30 s). ``cfg`` is the full
    graph's settings; the co-occurrence graph must have been built with the same, less its edge
    kinds, and from this predications table (its record's ``predications``, the table's
    :func:`pipeline.graph.inputs.table_fingerprint`). Else None and why (the caller counts).
    The concepts the predications name on no edge are coded too (read from the predications' two
    concept columns, only when the record says there are such), so that ``concepts_seen`` counts
    as counting would."""
    if len(concepts):
        raise ValueError("the co-occurrence graph's edges are coded into an empty encoder only")
    folder = GraphFolder(Path(cooccurrence_dir))
    try:
        record = json.loads(folder.counts.read_text())
    except (OSError, ValueError) as error:
        return None, f"the co-occurrence graph's record is unreadable ({error})"
    wanted = _what({**cfg, "edge_kinds": [CONCEPT_CONCEPT]})
    if record.get("scope") != "cooccurrence" or record.get("weight_scheme") != weights.WEIGHT_SCHEME:
        return None, f"{folder.path} is not a co-occurrence graph of this weight scheme"
    if _what(record.get("config") or {}) != wanted:
        return None, f"{folder.path} was built with other graph settings"
    earlier_counts = record.get("counts") or {}
    if record.get("predications") != table_fingerprint(require_table(tables_dir, "predications", "concept_concept edges")):
        return None, f"{folder.path} was built from other predications than {tables_dir}'s"
    if not (folder.vertices.exists() and folder.edges.exists()):
        return None, f"{folder.path} is incomplete"
    keys = pq.read_table(folder.vertices, columns=["key"]).column("key").combine_chunks()
    concepts.append_new(keys)  # the co-occurrence graph's vertices are concepts only: codes = vids
    if int(earlier_counts.get("concepts_seen", len(keys))) != len(keys):
        # concepts on no edge of it (a predication of a concept with itself, a pair below the
        # minimum support, an excluded semantic type), coded after the vertices as counting
        # would; read as dictionaries (each row group's distinct concepts, no string per row)
        predications = require_table(tables_dir, "predications", "concept_concept edges")
        for column in ("subject_cui", "object_cui"):
            concepts.encode(_distinct_in_dictionaries(predications, column))
    edges = pq.read_table(folder.edges, columns=["src", "dst", "weight"])
    cc = CodedEdges(edges.column("src").to_numpy(), edges.column("dst").to_numpy(), edges.column("weight").to_numpy())
    counts.update({key: value for key, value in earlier_counts.items() if key.startswith(PREDICATION_TALLIES)})
    return cc, ""


__all__ = [
    "EarlierEdges", "EarlierTitles", "cooccurrence_edges", "counted_on_the_delta", "earlier_build_note", "save_predication_counts",
    "taken_graph",
]  # fmt: skip
