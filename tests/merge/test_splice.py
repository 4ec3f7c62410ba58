"""The merge on the delta's table rewrite (:func:`pipeline.merge.delta._splice`) against a
reference built from the whole table at once, on random tables cut into batches of a few rows,
so that a group of equal keys spans batches and is carried from one written piece to the next."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.merge import delta

SCHEMA = pa.schema([("key", pa.string()), ("row", pa.int64()), ("text", pa.string())])


def _table(rng: np.random.Generator, n: int, keys: int, first_row: int) -> pa.Table:
    """``n`` rows over ``keys`` distinct keys (repeated: groups of equal keys), sorted by key."""
    key = np.sort(rng.integers(0, keys, n))
    return pa.table(
        {
            "key": [f"K{k:05d}" for k in key],
            "row": np.arange(first_row, first_row + n, dtype=np.int64),
            "text": [f"text {rng.integers(1 << 30)}" * int(rng.integers(0, 4)) for _ in range(n)],
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("sorted_rows", [True, False])
def test_splice_equals_the_whole_table_filtered_and_sorted(tmp_path: Path, monkeypatch, seed: int,
                                                            sorted_rows: bool) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(delta, "SPLICE_ROWS", int(rng.integers(1, 9)))
    earlier = _table(rng, int(rng.integers(0, 60)), int(rng.integers(1, 25)), 0)
    source = tmp_path / "earlier.parquet"
    pq.write_table(earlier, source, row_group_size=int(rng.integers(1, 20)))
    doomed = pa.array(rng.choice(max(earlier.num_rows, 1), int(rng.integers(0, earlier.num_rows + 1)), replace=False),
                      pa.int64())  # fmt: skip
    added = _table(rng, int(rng.integers(0, 15)), 30, 1000) if sorted_rows else SCHEMA.empty_table()
    out = tmp_path / "spliced.parquet"

    written, dropped = delta._splice(
        source, out, SCHEMA, ["key"] if sorted_rows else [],
        drop=lambda rows: pc.is_in(rows.column("row"), value_set=doomed), added=added,
    )  # fmt: skip

    kept = earlier.filter(pc.invert(pc.is_in(earlier.column("row"), value_set=doomed)))
    expected = pa.concat_tables([kept, added])
    if sorted_rows:  # equal keys: the earlier rows in their order, then the added ones (a stable sort)
        expected = expected.take(pc.sort_indices(expected, [("key", "ascending")]))
    assert pq.read_table(out).equals(expected)
    assert (written, dropped) == (expected.num_rows, earlier.num_rows - kept.num_rows)


class _FailingWriter:
    """A Parquet writer stand-in that takes ``good`` pieces, then fails."""

    def __init__(self, good: int) -> None:
        self.good, self.pieces = good, []

    def write_table(self, piece: pa.Table) -> None:
        if len(self.pieces) == self.good:
            raise OSError("disk full")
        self.pieces.append(piece)


def _write_behind_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "merge-write-behind"]


@pytest.mark.parametrize("good", [0, 1, 3])
def test_a_piece_that_fails_behind_is_raised_in_the_rewrite_and_no_later_piece_is_written(good: int) -> None:
    writer = _FailingWriter(good)
    piece = pa.table({"row": [1, 2]})
    with pytest.raises(OSError, match="disk full"):
        with delta._WriteBehind(writer) as behind:
            for _ in range(good + 5):
                behind.write_table(piece)
    assert len(writer.pieces) == good
    assert _write_behind_threads() == []


def test_a_rewrite_that_fails_stops_its_writer_thread(tmp_path: Path) -> None:
    source = tmp_path / "earlier.parquet"
    pq.write_table(pa.table({"key": ["a"] * 40, "row": list(range(40)), "text": ["t"] * 40}, schema=SCHEMA), source)
    seen = []

    def drop(rows: pa.Table) -> pa.Array:
        seen.append(rows.num_rows)
        if len(seen) == 3:
            raise ValueError("a bad batch")
        return pa.array([False] * rows.num_rows)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(delta, "SPLICE_ROWS", 4)
        with pytest.raises(ValueError, match="a bad batch"):
            delta._splice(source, tmp_path / "out.parquet", SCHEMA, [], drop=drop, added=SCHEMA.empty_table())
    assert _write_behind_threads() == []
