"""The rows of a Parquet file that a filter keeps, read a batch at a time.

A rerun picks few rows out of big tables: the changed papers' predications (30k of 1.4M papers at
10M predications), the sentences a regrouped hop quotes (thousands of 7.3M), the documents of the
changed papers. A filtered scan of a pyarrow dataset (``to_table(filter=...)``) reads several row
groups and batches ahead on threads and holds them at once: picking 6k sentences out of the 10M
sentences table took its memory to 1.7-1.9 GB. Read here a batch at a time, the peak is
0.6-0.7 GB, in the same time. On this VM that difference is time too: the host takes back the
pages a process frees, and touching fresh memory costs about 2 s per GB (430-480 MiB/s measured
against 8.6 GB/s for memory just freed, AMD EPYC), so the dataset scan's peak cost 2.4-3.9 s of
system time against 0.3-0.5 s.

Plain numpy and pyarrow, no litpath imports.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Rows decoded at a time: a batch of the widest table read this way (the sentences' text, capped
# at 500 characters) is tens of MB.
FILTERED_READ_ROWS = 1 << 16
# Arrow's set lookup hashes its value set on every call: for string keys a batch holds at least
# this many rows per value looked up (up to MAX_READ_ROWS), so that hashing the set costs a
# fraction of probing the rows. With 64k-row batches, looking the 10M predications up among 30k
# changed papers' doc_ids spent 0.7 s hashing the set 155 times. Integer keys are looked up in
# the values sorted once (np.searchsorted), whatever their number: a first build's papers ask
# for millions of sentences, and batches of a million sentences' text took that grouping's
# memory up by 0.6 GB.
ROWS_PER_VALUE = 32
MAX_READ_ROWS = 1 << 18


def kept_batches(path: Path | str, columns: list[str], keep: Callable[[pa.RecordBatch], pa.Array | None],
                 row_groups: list[int] | None = None, batch_rows: int = FILTERED_READ_ROWS,
                 ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """``columns`` of the rows of ``path`` that ``keep(batch)`` marks (a boolean array; None:
    every row), a batch at a time and in file order; only the ``row_groups`` given (default all).
    Batches left with no row are not yielded."""
    with pq.ParquetFile(path) as parquet:
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns, row_groups=row_groups):
            mask = keep(batch)
            if mask is None:
                yield batch
            elif pc.any(mask).as_py():
                yield batch.filter(mask)


def rows_with_values(path: Path | str, columns: list[str], key: str, values: pa.Array) -> pa.Table:
    """``columns`` of the rows of ``path`` whose ``key`` is one of ``values`` (never a null key),
    in file order, as a filtered dataset scan would give them (``key`` is read whether or not it
    is among ``columns``). Row groups whose statistics leave no room for any of ``values``
    (:func:`row_groups_holding`) are not read: the merge writes the sentences in sentence_id
    order, so at 30M a range of papers' sentences lie in a third of the row groups; and it writes
    the predications in doc_id order, so the papers an update file adds (new PMIDs, after every
    earlier one) lie in the last row group of 39 at 10M, where a [min, max] of all the wanted ids
    took in the revised papers' too, scattered over every row group."""
    read = columns if key in columns else [*columns, key]
    with pq.ParquetFile(path) as parquet:
        schema = parquet.schema_arrow
        row_groups = row_groups_holding(parquet, key, values)
    value_set = values.unique().drop_null()  # a null key is never looked up, nor found
    if pa.types.is_integer(value_set.type):
        keep, batch_rows = _among_sorted(np.sort(value_set.to_numpy(zero_copy_only=False)), key), FILTERED_READ_ROWS
    else:
        def keep(batch: pa.RecordBatch) -> pa.Array:
            return pc.is_in(batch.column(key), value_set=value_set)

        batch_rows = max(FILTERED_READ_ROWS, min(MAX_READ_ROWS, ROWS_PER_VALUE * len(value_set)))
    batches = list(kept_batches(path, read, keep, row_groups, batch_rows)) if row_groups else []
    table = pa.Table.from_batches(batches, schema=pa.schema([schema.field(name) for name in read]))
    return table.select(columns)


def _among_sorted(values: np.ndarray, key: str) -> Callable[[pa.RecordBatch], pa.Array]:
    """A batch's rows whose integer ``key`` is one of the sorted ``values`` (nulls: not)."""

    def keep(batch: pa.RecordBatch) -> pa.Array:
        column = batch.column(key)
        keys = column.to_numpy(zero_copy_only=False) if column.null_count == 0 else \
            pc.fill_null(column, 0).to_numpy(zero_copy_only=False)  # fmt: skip
        at = np.searchsorted(values, keys)
        found = values[np.minimum(at, len(values) - 1)] == keys if len(values) else np.zeros(len(keys), bool)
        mask = pa.array(found)
        return pc.and_(mask, pc.is_valid(column)) if column.null_count else mask

    return keep


def _row_group_bounds(parquet: pq.ParquetFile, key: str) -> Iterator[tuple[int, Any, Any]]:
    """Each row group of ``parquet``: its index and the [min, max] of the column ``key`` its
    statistics give (None, None where it has none)."""
    metadata = parquet.metadata
    column = [metadata.schema.column(i).path for i in range(metadata.num_columns)].index(key)
    for index in range(metadata.num_row_groups):
        stats = metadata.row_group(index).column(column).statistics
        if stats is None or not stats.has_min_max:
            yield index, None, None
        else:
            yield index, stats.min, stats.max


def row_groups_holding(parquet: pq.ParquetFile, key: str, values: pa.Array) -> list[int]:
    """The row groups of ``parquet`` where one of ``values`` may be: those whose statistics of the
    column ``key`` put one of them within [min, max], and every row group without statistics (or
    with statistics of another type than the values'). Nulls among ``values`` are never found."""
    distinct = pc.unique(values).drop_null()
    if len(distinct) == 0:
        return []
    if pa.types.is_integer(distinct.type):
        ordered: Any = np.sort(distinct.to_numpy(zero_copy_only=False))
        kind: type = int
    else:
        ordered = distinct.take(pc.sort_indices(distinct)).to_pylist()
        kind = type(ordered[0])
    groups = []
    for index, low, high in _row_group_bounds(parquet, key):
        if not isinstance(low, kind) or not isinstance(high, kind):
            groups.append(index)
            continue
        at = bisect.bisect_left(ordered, low) if isinstance(ordered, list) else int(np.searchsorted(ordered, low))
        if at < len(ordered) and ordered[at] <= high:
            groups.append(index)
    return groups


def row_groups_within(parquet: pq.ParquetFile, key: str, values: pa.Array) -> list[int]:
    """The row groups whose statistics of the integer or string column ``key`` meet [min, max]
    of ``values`` (every row group without statistics, or with statistics of another type)."""
    if len(values) == 0:
        return []
    bounds = pc.min_max(values)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return [index for index, group_low, group_high in _row_group_bounds(parquet, key)
            if group_low is None or type(group_low) is not type(low)
            or not (group_high < low or group_low > high)]  # fmt: skip
