"""The quarantine ceiling (ingest.max_quarantine_fraction): a release whose layout drifted fails
its ingest with one clear line instead of building an empty graph; the sample passes it."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.ingest.base import IngestError
from pipeline.ingest.run import check_quarantine, ingest_file

REPO = Path(__file__).resolve().parents[2]
SAMPLE_PREDICATION = REPO / "config" / "sample" / "semmeddb" / "semmedVER43_R_PREDICATION.csv.gz"


def litpath(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def drifted_release(tmp_path: Path) -> Path:
    """The sample's PREDICATION dump with one column added to every row, as a newer release might."""
    lines = gzip.decompress(SAMPLE_PREDICATION.read_bytes()).decode("latin-1").splitlines()
    drifted = tmp_path / "semmedVER50_R_PREDICATION.csv.gz"
    drifted.write_bytes(gzip.compress("".join(f"{line},\\N\n" for line in lines).encode("latin-1")))
    return drifted


def test_a_release_with_an_extra_column_fails_its_ingest_with_one_line(tmp_path):
    out = tmp_path / "ingest"
    run = litpath("ingest", "--kind", "semmeddb_predication", "--input", str(drifted_release(tmp_path)),
                  "--out", str(out))  # fmt: skip
    assert run.returncode == 1, run.stderr
    (error,) = [line for line in run.stderr.splitlines() if line.startswith("litpath: error: ")]
    assert "semmedVER50_R_PREDICATION.csv.gz: 2,001 of 2,001 rows quarantined (100.00%)" in error
    assert "ingest.max_quarantine_fraction = 0.01" in error
    assert "the first, line 1" in error and f"All quarantined rows: {out / 'quarantine.parquet'}" in error
    assert "Traceback" not in run.stderr
    # Not a finished ingest (no counts.json), and the rows are there to look at.
    assert not (out / "counts.json").exists()
    assert pq.read_table(out / "quarantine.parquet").num_rows == 2001


def test_the_sample_passes_and_the_ceiling_comes_from_the_environment(tmp_path):
    run = litpath("ingest", "--kind", "semmeddb_predication", "--input", str(SAMPLE_PREDICATION),
                  "--out", str(tmp_path / "sample"))  # fmt: skip
    assert run.returncode == 0, run.stderr
    counts = json.loads((tmp_path / "sample" / "counts.json").read_text())
    assert counts["rows_quarantined"] == 1 and counts["first_quarantined"]["line"] >= 1
    # The sample's one bad row in 2,001 is 0.05 %: under the floor of 10 rows a ceiling of 0 still passes it.
    lax = litpath("ingest", "--kind", "semmeddb_predication", "--input", str(SAMPLE_PREDICATION),
                  "--out", str(tmp_path / "strict"), env={"LITPATH_MAX_QUARANTINE_FRACTION": "0"})  # fmt: skip
    assert lax.returncode == 0, lax.stderr
    # The ceiling comes from the environment (the workflow's way): 1 lets even the drifted release in.
    off = litpath("ingest", "--kind", "semmeddb_predication", "--input", str(drifted_release(tmp_path)),
                  "--out", str(tmp_path / "off"), env={"LITPATH_MAX_QUARANTINE_FRACTION": "1"})  # fmt: skip
    assert off.returncode == 0, off.stderr


def test_merge_holds_cached_ingests_to_the_builds_ceiling(tmp_path):
    """A file ingested under a laxer ceiling (its counts.json is cached) does not pass into a build
    that asks for less."""
    folder = tmp_path / "drifted"
    ingest_file("semmeddb_predication", drifted_release(tmp_path), folder)  # the library: no ceiling
    config = tmp_path / "run_config.yaml"
    config.write_text("ingest:\n  max_quarantine_fraction: 0.5\n")
    run = litpath("merge", "--out", str(tmp_path / "tables"), "--config", str(config), str(folder))
    assert run.returncode == 1 and "above the ceiling ingest.max_quarantine_fraction = 0.5" in run.stderr
    assert not (tmp_path / "tables" / "counts.json").exists()


@pytest.mark.parametrize("read,bad,ceiling,fails", [
    (1000, 10, 0.01, False), (1000, 11, 0.01, True), (0, 0, 0, False), (10, 10, 1.0, False),
    (72, 1, 0.01, False),  # one bad row of a small file: not a layout
    (5, 5, 0.01, True),  # every row of a small file: a layout
    (100, 9, 0.01, False), (100, 10, 0.01, True),
])  # fmt: skip
def test_check_quarantine_boundaries(read, bad, ceiling, fails):
    counts = {"source_file": "f.csv", "rows_read": read, "rows_quarantined": bad,
              "first_quarantined": {"line": 3, "field": "pmid", "reason": "not a number"} if bad else None}  # fmt: skip
    if fails:
        with pytest.raises(IngestError, match=r"line 3 field pmid: not a number"):
            check_quarantine(counts, ceiling, Path("q.parquet"))
    else:
        check_quarantine(counts, ceiling, Path("q.parquet"))
