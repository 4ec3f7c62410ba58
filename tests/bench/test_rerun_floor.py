"""bench/rerun_floor.py writes each file again as it was written: the settings it reads back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.bench_scripts import bench_module

rerun_floor = bench_module("rerun_floor")


def _table(rows: int = 5000) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "doc_id": pa.array([f"PMID:{i}" for i in rng.integers(0, 10**6, rows)]),
        "cui": pa.array([f"C{i:07d}" for i in rng.integers(0, 50, rows)]),
        "count": pa.array(rng.integers(1, 9, rows), pa.int32()),
    })  # fmt: skip


@pytest.mark.parametrize(
    "settings",
    [
        {"use_dictionary": ["cui"], "compression": "snappy", "write_statistics": ["doc_id"]},
        {"use_dictionary": ["doc_id", "cui", "count"], "compression": "zstd", "write_statistics": []},
        {"use_dictionary": [], "compression": "none", "write_statistics": ["doc_id", "cui", "count"]},
    ],
)
def test_the_settings_read_back_are_those_the_file_was_written_with(tmp_path, settings):
    path = tmp_path / "t.parquet"
    pq.write_table(_table(), path, **settings)
    assert rerun_floor.parquet_settings(path) == settings
    # written again with them, the file reads back the same settings and rows
    again = tmp_path / "again.parquet"
    pq.write_table(pq.read_table(path), again, **rerun_floor.parquet_settings(path))
    assert rerun_floor.parquet_settings(again) == settings
    assert pq.read_table(again).equals(pq.read_table(path))


def test_the_rewrite_times_a_read_and_a_write_and_leaves_nothing(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(_table(), path, use_dictionary=["cui"])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    times = rerun_floor.parquet_rewrite(path, scratch)
    assert set(times) == {"read", "write"}
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in times.values())
    assert list(scratch.iterdir()) == []


def test_the_graph_bp_is_read_and_written_again_with_the_stage_writer(tmp_path, monkeypatch):
    from pipeline.store.adios import read_graph_bp, write_graph_bp

    source = tmp_path / "graph.bp"
    row_ptr, col_idx = np.array([0, 1, 2]), np.array([1, 0])
    attributes = {"graph_digest": "ab", "weight_scheme": "w", "edge_kinds": "concept-concept"}
    write_graph_bp(source, 2, row_ptr, col_idx, np.array([0.5, 0.5], np.float32), attributes)
    written = []  # what the rewrite wrote, read back before it is removed
    monkeypatch.setattr(rerun_floor, "write_graph_bp",
                        lambda out, *args: (write_graph_bp(out, *args), written.append(read_graph_bp(out))))  # fmt: skip
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    times = rerun_floor.bp_rewrite(source, scratch)
    assert set(times) == {"read", "write"}
    (n, ptr, cols, cost), attrs = written[0]
    assert n == 2 and ptr.tolist() == [0, 1, 2] and cols.tolist() == [1, 0] and cost.tolist() == [0.5, 0.5]
    assert attrs["graph_digest"] == "ab"
    assert list(scratch.iterdir()) == []
