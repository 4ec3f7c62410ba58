"""The build's tables as the graph build reads them.

Each table is ``<name>.parquet`` or a folder ``<name>/`` of Parquet parts in the tables folder
(:func:`pipeline.builds.tables.table_path`). The edge tables (``predications``, ``mentions``,
``citations``) are streamed in record batches (:func:`batches`); ``concepts`` is read whole (its
names and semantic types); ``documents`` is read only for the titles of the abstract vertices.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pipeline.builds.tables import table_path
from pipeline.runtime.progress import Advances


def require_table(tables_dir: Path, name: str, why: str) -> Path:
    """The path of table ``name``; FileNotFoundError, saying ``why`` it is needed, when absent."""
    path = table_path(tables_dir, name)
    if path is None:
        raise FileNotFoundError(f"{tables_dir / (name + '.parquet')} not found (needed for {why})")
    return path


def row_count(tables_dir: Path, name: str) -> int:
    """Rows of a table from its Parquet metadata (0 when the table is absent)."""
    path = table_path(tables_dir, name)
    return 0 if path is None else ds.dataset(str(path), format="parquet").count_rows()


def table_fingerprint(path: Path) -> str:
    """A digest of a Parquet table's footers (each part's, by name, for a folder of parts): its
    schema, row groups, their byte sizes and column statistics -- different tables do not share
    one in practice, and reading it costs a few kilobytes, not the table."""
    path = Path(path)
    digest = hashlib.sha256()
    for part in sorted(path.glob("*.parquet")) if path.is_dir() else [path]:
        with open(part, "rb") as file:
            file.seek(-8, 2)
            tail = file.read(8)
            if tail[4:] != b"PAR1":
                raise ValueError(f"{part} is not a Parquet file")
            length = int.from_bytes(tail[:4], "little")
            file.seek(-8 - length, 2)
            digest.update(part.name.encode() + b"\0" + file.read(length))
    return digest.hexdigest()[:32]


def batches(
    path: Path,
    columns: list[str],
    batch_rows: int,
    dictionary_columns: tuple[str, ...] = (),
    progress: Advances | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of ``columns``; ``dictionary_columns`` come dictionary-encoded straight from
    Parquet's own dictionary pages, so string keys are not hashed once per row."""
    parquet = ds.ParquetFileFormat(
        read_options=ds.ParquetReadOptions(dictionary_columns=list(dictionary_columns))
    )
    dataset = ds.dataset(str(path), format=parquet)
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    for batch in dataset.to_batches(columns=columns, batch_size=batch_rows):
        if progress is not None:
            progress.advance(batch.num_rows)
        yield batch


def load_concepts(tables_dir: Path, exclude_semtypes: list[str]) -> tuple[pa.Table | None, pa.Array]:
    """The concepts table (cui, name, semtypes) if present, and the CUIs with excluded semtypes."""
    path = table_path(tables_dir, "concepts")
    if path is None:
        if exclude_semtypes:
            raise FileNotFoundError(
                f"{tables_dir / 'concepts.parquet'} not found (needed for exclude_semtypes)"
            )
        return None, pa.array([], pa.string())
    table = ds.dataset(str(path), format="parquet").to_table(columns=["cui", "name", "semtypes"])
    if not exclude_semtypes:
        return table, pa.array([], pa.string())
    semtypes = table.column("semtypes").combine_chunks()
    flat = pc.list_flatten(semtypes)
    hit = pc.is_in(flat, value_set=pa.array(exclude_semtypes, pa.string()))
    rows = pc.unique(pc.filter(pc.list_parent_indices(semtypes), hit))
    return table, pc.unique(pc.take(table.column("cui"), rows).combine_chunks())


def concept_names(keys: pa.Array, concept_table: pa.Table | None) -> pa.Array:
    """The name of each CUI in ``keys`` (null where the concepts table has none)."""
    if concept_table is None or not len(keys):
        return pa.nulls(len(keys), pa.string())
    position = pc.index_in(keys, value_set=concept_table.column("cui").combine_chunks())
    return pc.take(concept_table.column("name").combine_chunks(), position)


def document_titles(tables_dir: Path, keys: pa.Array, batch_rows: int) -> tuple[pa.Array, int]:
    """Titles of the abstract vertices, and the number of documents that are not vertices.

    Two passes over the documents table: the doc_id column alone, in batches at least as long as
    ``keys`` (index_in hashes all of ``keys`` on every call: with the PubMed baseline's 36M
    documents in batches of :data:`pipeline.graph.build.BATCH_ROWS` that was 69 hashings of
    every abstract key), then the titles of the rows found, batch by batch.
    """
    path = table_path(tables_dir, "documents")
    if path is None:
        return pa.nulls(len(keys), pa.string()), 0
    # Both passes scan the table in the same order (a dataset scan yields its batches in order).
    # A scan's batches end at row groups, so doc_ids are gathered up to len(keys) rows for each
    # index_in call (one hashing of the keys per call, whatever the number of chunks).
    positions, pending, pending_rows = [], [], 0
    for batch in batches(path, ["doc_id"], batch_rows):
        pending.append(batch.column("doc_id"))
        pending_rows += batch.num_rows
        if pending_rows >= max(batch_rows, len(keys)):
            positions.append(pc.index_in(pa.chunked_array(pending), value_set=keys))
            pending, pending_rows = [], 0
    if pending_rows:
        positions.append(pc.index_in(pa.chunked_array(pending), value_set=keys))
    position = pa.chunked_array([c for part in positions for c in part.chunks], pa.int32()).combine_chunks()
    found = pc.is_valid(position)
    not_vertices = len(position) - int(pc.sum(found).as_py() or 0)
    if not_vertices == len(position):
        return pa.nulls(len(keys), pa.string()), not_vertices
    titles, start = [], 0
    for batch in batches(path, ["title"], batch_rows):
        titles.append(pc.filter(batch.column("title"), found.slice(start, batch.num_rows)))
        start += batch.num_rows
    found_titles = pa.chunked_array(titles, pa.string()).combine_chunks()
    # scatter: title of vertex i is the found title whose position is i
    where = pc.index_in(pa.array(np.arange(len(keys), dtype=np.int32)), value_set=pc.filter(position, found))
    return pc.take(found_titles, where), not_vertices


__all__ = ["batches", "concept_names", "document_titles", "load_concepts", "require_table", "row_count"]
