"""The tests' data files (tests/data: real-format samples of each dump, SPOKE, UMLS) and the
helpers that read an ingest's output."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent.parent / "data"
SPOKE = DATA / "spoke"
UMLS = DATA / "umls"
XREFS = SPOKE / "xrefs"


def rows(out_dir: Path, table: str) -> list[dict]:
    return pq.read_table(out_dir / f"{table}.parquet").to_pylist()


def counts(out_dir: Path) -> dict:
    result = json.loads((out_dir / "counts.json").read_text())
    assert result["rows_read"] == result["rows_accepted"] + result["rows_quarantined"]
    assert result["rows_quarantined"] == len(rows(out_dir, "quarantine"))
    return result


def rows_of(table) -> set[tuple[str, ...]]:
    """An Arrow table's rows as a set of tuples, for comparisons that ignore row order."""
    return set(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))
