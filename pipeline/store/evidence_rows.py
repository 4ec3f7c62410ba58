"""The evidence of a build's concept--concept edges, grouped from its predications table: for each
edge (cui_a < cui_b), the distinct documents and sentence ids of the predications that join the two
concepts, and how many distinct predications that is (:func:`evidence_tables`).

The rows come in edge order -- the graph's (src, dst) order, which is (cui_a, cui_b) order since
vertex ids follow the sorted keys -- which is the key order the store's buckets need
(:mod:`pipeline.store.buckets`). Lists are sorted and capped at ``max_evidence`` entries so that a
hub pair stays small; ``n_documents`` counts them all and ``truncated`` says when the cap cut.

Grouping holds about :data:`EVIDENCE_BYTES_PER_ROW` per predication row on an edge (6.3 GB at 30M
predications in one piece), so beyond the memory budget the rows are spilled to Parquet
partitions of contiguous edge ranges and grouped one partition at a time, which gives the same
rows in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline.builds.layout import GraphFolder
from pipeline.builds.tables import table_path
from pipeline.runtime.resources import SpillFolder

# Memory the grouping holds per predication row of a concept--concept edge (the rows, Arrow's hash
# grouping and its distinct lists): about 200 bytes, from the 30M-predication corpus, whose 30M
# rows took the load to 6.3 GB in one piece.
EVIDENCE_BYTES_PER_ROW = 200
EVIDENCE_ROWS = pa.schema(
    [("edge", pa.int32()), ("doc_id", pa.string()), ("sentence_id", pa.int64()), ("predication_id", pa.int64())]
)
EVIDENCE = pa.schema(
    [
        ("cui_a", pa.string()),
        ("cui_b", pa.string()),
        ("documents", pa.list_(pa.string())),
        ("sentence_ids", pa.list_(pa.int64())),
        ("n_documents", pa.int64()),
        ("n_predications", pa.int64()),
        ("truncated", pa.bool_()),
    ]
)


def concept_edge_keys(graph_dir: Path) -> tuple[pa.Array, pa.Array]:
    """(cui_a, cui_b) of every concept--concept edge of the graph, in edges.parquet's order."""
    edges = pq.read_table(GraphFolder(graph_dir).edges, columns=["src", "dst", "kind"])
    edges = edges.filter(pc.equal(edges["kind"], "concept_concept"))
    keys = pq.read_table(GraphFolder(graph_dir).vertices, columns=["key"])["key"].combine_chunks()
    # vertex keys are sorted, so src < dst gives key(src) < key(dst) for two concepts
    a, b = pc.take(keys, edges["src"]), pc.take(keys, edges["dst"])
    return (a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a,
            b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b)  # fmt: skip


def evidence_partitions(predication_rows: int, budget_bytes: int) -> int:
    """How many partitions the evidence of ``predication_rows`` needs to be grouped within
    ``budget_bytes`` (1: in memory, in one piece)."""
    return max(1, -(-predication_rows * EVIDENCE_BYTES_PER_ROW // max(budget_bytes, 1)))


def _evidence_rows(tables_dir: Path, edge_keys: tuple[pa.Array, pa.Array], batch_rows: int) -> Iterator[pa.Table]:
    """Per batch of predications: the rows on a concept--concept edge, by edge index."""
    path = table_path(tables_dir, "predications")
    if path is None:
        raise FileNotFoundError(f"{tables_dir / 'predications.parquet'} not found (needed for evidence)")
    pair_keys = pc.binary_join_element_wise(edge_keys[0], edge_keys[1], "|")
    columns = ["predication_id", "doc_id", "sentence_id", "subject_cui", "object_cui"]
    for batch in ds.dataset(str(path), format="parquet").to_batches(columns=columns, batch_size=batch_rows):
        s, o = batch.column("subject_cui"), batch.column("object_cui")
        first = pc.less(s, o)
        pair = pc.binary_join_element_wise(pc.if_else(first, s, o), pc.if_else(first, o, s), "|")
        edge = pc.index_in(pair, value_set=pair_keys)
        keep = pc.is_valid(edge)
        yield pa.table(
            [
                pc.filter(edge, keep),
                pc.filter(batch.column("doc_id"), keep),
                pc.filter(batch.column("sentence_id"), keep),
                pc.filter(batch.column("predication_id"), keep),
            ],
            schema=EVIDENCE_ROWS,
        )


def _sorted_capped(lists: pa.ChunkedArray | pa.Array, cap: int) -> tuple[pa.Array, np.ndarray]:
    """Each list sorted, and cut to its first ``cap`` values; (the lists, each one's full length)."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    owner = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
    flat = pa.table({"owner": owner, "value": pc.list_flatten(lists)})
    flat = flat.sort_by([("owner", "ascending"), ("value", "ascending")])
    position = np.arange(flat.num_rows) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = position < cap
    kept = np.minimum(lengths, cap)
    offsets = np.r_[0, np.cumsum(kept)].astype(np.int32)
    values = flat.column("value").combine_chunks().filter(pa.array(keep))
    return pa.ListArray.from_arrays(pa.array(offsets), values), lengths


def group_evidence(rows: pa.Table, edge_keys: tuple[pa.Array, pa.Array], max_evidence: int) -> pa.Table:
    """Per edge of ``rows``, in edge order: distinct documents and sentence ids (sorted, capped at
    ``max_evidence``), distinct predications counted."""
    grouped = (
        rows.group_by("edge", use_threads=False)
        .aggregate([("doc_id", "distinct"), ("sentence_id", "distinct"), ("predication_id", "count_distinct")])
        .sort_by("edge")
    )
    documents, n_documents = _sorted_capped(grouped["doc_id_distinct"], max_evidence)
    sentences, n_sentences = _sorted_capped(grouped["sentence_id_distinct"], max_evidence)
    edge = grouped["edge"]
    return pa.table(
        [
            pc.take(edge_keys[0], edge),
            pc.take(edge_keys[1], edge),
            documents.cast(EVIDENCE.field("documents").type),
            sentences.cast(EVIDENCE.field("sentence_ids").type),
            pa.array(n_documents, pa.int64()),
            grouped["predication_id_count_distinct"].cast(pa.int64()),
            pa.array((n_documents > max_evidence) | (n_sentences > max_evidence)),
        ],
        schema=EVIDENCE,
    )


def evidence_tables(
    tables_dir: Path,
    edge_keys: tuple[pa.Array, pa.Array],
    batch_rows: int,
    partitions: int,
    spill_parent: Path,
    max_evidence: int = 1_000,
) -> Iterator[pa.Table]:
    """The evidence of every concept--concept edge (:func:`group_evidence`), in edge order, in
    ``partitions`` pieces: with more than one, the rows are first spilled to Parquet files under
    ``spill_parent``, one per contiguous range of edges, and grouped one file at a time, so the
    memory held is a partition's, not the corpus's. Each edge is in exactly one piece."""
    if partitions <= 1:
        parts = list(_evidence_rows(tables_dir, edge_keys, batch_rows))
        yield group_evidence(pa.concat_tables(parts) if parts else EVIDENCE_ROWS.empty_table(), edge_keys, max_evidence)
        return
    per_partition = max(1, -(-len(edge_keys[0]) // partitions))
    with SpillFolder(spill_parent, ".evidence-spill-") as spill:
        paths = [spill / f"part-{k:04d}.parquet" for k in range(partitions)]
        writers = [pq.ParquetWriter(path, EVIDENCE_ROWS) for path in paths]
        try:
            for rows in _evidence_rows(tables_dir, edge_keys, batch_rows):
                part = rows.column("edge").to_numpy() // per_partition
                for k, writer in enumerate(writers):
                    writer.write_table(rows.filter(pa.array(part == k)))
        finally:
            for writer in writers:
                writer.close()
        for path in paths:
            yield group_evidence(pq.read_table(path), edge_keys, max_evidence)
            path.unlink()
