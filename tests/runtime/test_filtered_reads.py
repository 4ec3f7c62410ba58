"""The batch-at-a-time filtered reads give what a filtered dataset scan gives (pyarrow.dataset, the
reference they replace), on random tables of several row groups; and the row groups they skip by
their statistics are those that cannot hold a wanted key (``row_groups_holding``, and
``row_groups_within`` for a range of keys)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from pipeline.runtime import filtered_reads
from pipeline.runtime.filtered_reads import (
    kept_batches,
    row_groups_holding,
    row_groups_within,
    rows_with_values,
)


def _table(rng: np.random.Generator, rows: int, sorted_ids: bool) -> pa.Table:
    ids = np.sort(rng.choice(10 * rows, rows, replace=False)) if sorted_ids else rng.integers(0, 10 * rows, rows)
    ids = pa.array(ids, pa.int64(), mask=None if sorted_ids else rng.random(rows) < 0.05)  # a few null keys
    docs = [None if rng.random() < 0.05 else f"PMID:{d}" for d in rng.integers(0, rows // 4 + 1, rows)]
    text = [None if rng.random() < 0.1 else "x" * int(rng.integers(0, 40)) for _ in range(rows)]
    return pa.table({"sentence_id": ids, "doc_id": pa.array(docs, pa.string()), "text": pa.array(text, pa.string()),
                     "cui": pa.array([f"C{c:07d}" for c in rng.integers(0, 50, rows)]).dictionary_encode()})  # fmt: skip


def _scanned(path, columns, key, values) -> pa.Table:
    return ds.dataset(str(path), format="parquet").to_table(columns=columns, filter=pc.field(key).isin(values))


@pytest.mark.parametrize("seed", range(6))
def test_rows_with_values_equal_a_filtered_dataset_scan(tmp_path, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(filtered_reads, "FILTERED_READ_ROWS", int(rng.integers(7, 300)))  # many batches
    table = _table(rng, int(rng.integers(1, 3000)), sorted_ids=seed % 2 == 0)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=int(rng.integers(50, 700)))
    for key, pool in (("sentence_id", table["sentence_id"]), ("doc_id", table["doc_id"])):
        picked = pool.drop_null().take(pa.array(rng.integers(0, len(pool.drop_null()), int(rng.integers(0, 40)))))
        absent = pa.array([-5, 10**9], pa.int64()) if key == "sentence_id" else pa.array(["PMID:none"])
        values = pa.concat_arrays([picked.combine_chunks(), absent])
        for columns in (["sentence_id", "text"], ["doc_id", "cui"], ["text"]):
            expected = _scanned(path, columns, key, values)
            got = rows_with_values(path, columns, key, values)
            assert got.column_names == columns
            assert got.equals(expected), (key, columns)


def test_row_groups_without_a_wanted_key_are_not_read(tmp_path):
    table = pa.table({"sentence_id": pa.array(np.arange(1000), pa.int64()), "text": [str(i) for i in range(1000)]})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=100)
    read = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        read.append(kwargs.get("row_groups"))
        return original(self, *args, **kwargs)

    pq.ParquetFile.iter_batches = spy
    try:
        got = rows_with_values(path, ["text"], "sentence_id", pa.array([250, 420, 999], pa.int64()))
    finally:
        pq.ParquetFile.iter_batches = original
    assert got.column("text").to_pylist() == ["250", "420", "999"]
    assert read == [[2, 4, 9]]  # not the groups between: none of their ids is wanted
    assert rows_with_values(path, ["text"], "sentence_id", pa.array([], pa.int64())).num_rows == 0
    assert rows_with_values(path, ["text"], "sentence_id", pa.array([5000], pa.int64())).num_rows == 0


def test_kept_batches_keep_the_marked_rows_in_file_order(tmp_path):
    table = pa.table({"a": pa.array(np.arange(500)), "b": pa.array(np.arange(500) % 7)})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=64)
    every = pa.Table.from_batches(list(kept_batches(path, ["a"], lambda batch: None, batch_rows=30)))
    assert every.column("a").to_pylist() == list(range(500))
    kept = list(kept_batches(path, ["a", "b"], lambda batch: pc.equal(batch.column("b"), 3), batch_rows=30))
    assert all(batch.num_rows for batch in kept)  # no empty batch
    assert pa.Table.from_batches(kept).column("a").to_pylist() == [i for i in range(500) if i % 7 == 3]


@pytest.mark.parametrize("seed", range(4))
def test_row_groups_whose_statistics_may_hold_the_wanted_ids(seed, tmp_path):
    """String keys (the merge on the delta looks for CORD-19 ids among the SemMedDB tables'
    doc_ids): a file of doc_ids in row groups of random lengths, a few CORD-19 ids among PubMed
    ones; the row groups kept are those with an id in the wanted range, and every one where the
    file has no statistics of the column."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    ids = [f"PMID:{i:08d}" for i in rng.integers(0, 10**8, n)]
    for at in rng.choice(n, int(rng.integers(0, 4)), replace=False):
        ids[at] = f"CORD:{rng.integers(0, 10**6):06d}"
    table = pa.table({"doc_id": ids, "n": np.arange(n)})
    size = int(rng.integers(5, 60))
    low, high = "CORD:000000", "CORD:999999"
    want = [g for g in range(-(-n // size)) if any(low <= d <= high for d in ids[g * size:(g + 1) * size])]
    for statistics, expected in ((["doc_id"], want), (True, want), (False, list(range(-(-n // size))))):
        path = tmp_path / f"{statistics}.parquet"
        pq.write_table(table, path, row_group_size=size, write_statistics=statistics)
        with pq.ParquetFile(path) as parquet:
            assert row_groups_within(parquet, "doc_id", pa.array([low, high])) == expected, statistics


@pytest.mark.parametrize("seed", range(6))
def test_row_groups_holding_are_those_whose_range_has_a_wanted_key(seed, tmp_path):
    """Integer and string keys, sorted (as the merge writes the sentences and the predications)
    or not, with and without statistics: a row group is kept when a wanted key lies within its
    [min, max] (whether or not the group has that key), and always when it has no statistics."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 500))
    numbers = rng.integers(0, 5 * n, n)
    if seed % 2 == 0:
        numbers = np.sort(numbers)
    doc_ids = [f"PMID:{i}" for i in numbers]  # string order is not number order
    table = pa.table({"sentence_id": pa.array(numbers, pa.int64()), "doc_id": doc_ids})
    size = int(rng.integers(3, 80))
    groups = [slice(start, start + size) for start in range(0, n, size)]
    wanted_numbers = rng.integers(0, 5 * n, int(rng.integers(0, 12)))
    for key, column, wanted in (("sentence_id", list(numbers), [int(x) for x in wanted_numbers]),
                                ("doc_id", doc_ids, [f"PMID:{x}" for x in wanted_numbers])):  # fmt: skip
        expected = [g for g, rows in enumerate(groups) if any(min(column[rows]) <= w <= max(column[rows]) for w in wanted)]
        values = pa.array([*wanted, None], pa.int64() if key == "sentence_id" else pa.string())
        for statistics, expect in ((True, expected), (False, list(range(len(groups))) if wanted else [])):
            path = tmp_path / f"{key}-{statistics}.parquet"
            pq.write_table(table, path, row_group_size=size, write_statistics=statistics)
            with pq.ParquetFile(path) as parquet:
                assert row_groups_holding(parquet, key, values) == expect, (key, statistics)
