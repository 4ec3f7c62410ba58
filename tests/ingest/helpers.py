"""Shared helpers of the ingest tests."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent.parent / "data"


def rows(out_dir: Path, table: str) -> list[dict]:
    return pq.read_table(out_dir / f"{table}.parquet").to_pylist()


def counts(out_dir: Path) -> dict:
    result = json.loads((out_dir / "counts.json").read_text())
    assert result["rows_read"] == result["rows_accepted"] + result["rows_quarantined"]
    assert result["rows_quarantined"] == len(rows(out_dir, "quarantine"))
    return result
