"""What the merge spills to disk when a table does not fit its memory budget, and how it reads
files that it never holds whole.

A step that merges rows by a key (documents and mentions by doc_id, the ENTITY join by
sentence_id, citations by citing paper) routes its input rows, a batch at a time, into key
ranges on disk (:class:`RangePartitions`, with bounds from :func:`sampled_splits`), then merges
one range at a time. The ranges follow the key's sort order and a key never spans two of them,
so the ranges' results, appended in order, are the table the step would build in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Rows read at a time where the merge streams a file instead of holding it (the partitioned
# steps, the samples that place their partition bounds).
MERGE_STREAM_ROWS = 1 << 20
# About how many rows of each file the samples for the partition bounds take.
SAMPLE_ROWS = 20_000


def table_batches(
    path: Path, columns: list[str] | None = None, read_dictionary: list[str] | None = None
) -> Iterator[pa.Table]:
    """A Parquet file's rows (``columns`` of them, or all) as tables of MERGE_STREAM_ROWS rows at
    most; the ``read_dictionary`` columns as dictionaries."""
    with pq.ParquetFile(path, read_dictionary=read_dictionary) as parquet:
        for batch in parquet.iter_batches(batch_size=MERGE_STREAM_ROWS, columns=columns):
            yield pa.Table.from_batches([batch])


def sample_step(rows: int) -> int:
    """The stride of :func:`strided_sample` in a file of ``rows`` rows."""
    return max(1, rows // SAMPLE_ROWS)


def strided_sample(path: Path, key: str) -> Iterator[pa.Array]:
    """The values of column ``key`` in rows 0, step, 2*step, ... of a Parquet file (step:
    :func:`sample_step`), read a batch at a time, one array per batch; dictionaries as strings."""
    parquet = pq.ParquetFile(path)
    step = sample_step(parquet.metadata.num_rows)
    position = 0  # of the batch's first row in the file
    for batch in parquet.iter_batches(batch_size=MERGE_STREAM_ROWS, columns=[key]):
        column = batch.column(0)
        if isinstance(column.type, pa.DictionaryType):
            column = column.cast(pa.string())
        first = (-position) % step
        yield pc.take(column, pa.array(np.arange(first, len(column), step)))
        position += len(column)


def sampled_splits(paths: Iterable[Path], partitions: int, key: str) -> list[Any]:
    """``partitions - 1`` values of ``key`` splitting the rows of the Parquet files ``paths``
    (those that have the column) into ranges of similar size, from a strided sample of each
    (:func:`strided_sample`: only the sample is held)."""
    sample = []
    for path in paths:
        if key in pq.read_schema(path).names:
            sample.extend(strided_sample(path, key))
    if not sample:
        return []
    values = pc.unique(pa.chunked_array(sample).combine_chunks())
    values = pc.take(values, pc.sort_indices(values)).to_pylist()
    return [values[(i * len(values)) // partitions] for i in range(1, partitions) if values]


class RangePartitions:
    """Rows of named streams routed by ranges of a key column (doc_id unless told) into Parquet
    files in ``folder``, one per (stream, range): range k holds the keys in [splits[k-1], splits[k]).

    :meth:`add` the rows a part at a time, :meth:`close`, then :meth:`read` each stream's rows
    of range k, for k in ``range(self.k)`` (each range file is removed once read).
    """

    def __init__(self, folder: Path, splits: list[Any], key: str = "doc_id"):
        self.folder = Path(folder)
        self.splits = pa.array(splits)
        self.key = key
        self.k = len(splits) + 1
        self.names: list[str] = []
        self._writers: dict[tuple[str, int], pq.ParquetWriter] = {}

    def _partition(self, key: pa.ChunkedArray | pa.Array) -> np.ndarray:
        key = key.cast(pa.string()) if isinstance(key.type, pa.DictionaryType) else key
        part = np.zeros(len(key), np.int64)
        for split in self.splits:
            part += pc.greater_equal(key, split).to_numpy(zero_copy_only=False)
        return part

    def add(self, stream: str, table: pa.Table) -> None:
        if stream not in self.names:
            self.names.append(stream)
        for name in ("doc_id", "cui"):  # plain strings: one schema per stream's files
            if name in table.column_names and table.column(name).type != pa.string():
                position = table.schema.get_field_index(name)
                table = table.set_column(position, name, table.column(name).cast(pa.string()))
        part = self._partition(table.column(self.key))
        for k in np.unique(part).tolist():
            chosen = table.filter(pa.array(part == k))
            writer = self._writers.get((stream, k))
            if writer is None:
                writer = self._writers[(stream, k)] = pq.ParquetWriter(self.folder / f"{stream}-{k:04d}.parquet", chosen.schema)
            writer.write_table(chosen)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()

    def read(self, stream: str, k: int) -> pa.Table | None:
        path = self.folder / f"{stream}-{k:04d}.parquet"
        if not path.exists():
            return None
        table = pq.read_table(path)
        path.unlink()
        return table
