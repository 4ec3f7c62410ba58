"""Ingest one input file: :func:`ingest_file` runs the kind's reader over it and writes into ``out_dir``:

* ``<table>.parquet`` for each table the kind produces, always present even when empty;
* ``quarantine.parquet`` (schema ``QUARANTINE``), always present;
* ``counts.json`` = ``{source_file, kind, sha256, rows_read, rows_accepted,
  rows_quarantined, seconds, tables}`` where ``rows_read == rows_accepted +
  rows_quarantined`` is checked before writing.

A failed read leaves no table behind, and ``counts.json`` is written last, so its presence
marks a finished ingest.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pipeline.ingest.base import IngestCounts, IngestError, IngestRun, InputFile
from pipeline.ingest.registry import reader_for
from pipeline.progress import Progress


def ingest_file(kind: str, path: Path, out_dir: Path, **options: Any) -> IngestCounts:
    """Read one input file of ``kind`` and write its tables, quarantine and counts.json.

    ``options`` go to the kind's read function (PREDICATION's ``block_path``, for one).
    """
    reader = reader_for(kind)
    path = Path(path)
    out_dir = Path(out_dir)
    started = time.perf_counter()
    progress = Progress(
        f"litpath ingest {path.name}", path.stat().st_size if path.is_file() else None, "bytes"
    )
    # counts.json marks a finished ingest: an old one must not vouch for the tables of this run.
    (out_dir / "counts.json").unlink(missing_ok=True)
    source = InputFile(path, progress)
    run = IngestRun(out_dir, path.name, reader.produces)
    try:
        reader.read(source, run, **options)
        digest = source.sha256()
        rows = run.close()
    except BaseException:
        run.discard()
        raise
    finally:
        source.close()
    # Checked always (not `assert`, which `python -O` removes): rows in = accepted + quarantined.
    broken = None
    if run.rows_read != run.rows_accepted + run.rows_quarantined:
        broken = (
            f"read {run.rows_read:,} != accepted {run.rows_accepted:,} + quarantined {run.rows_quarantined:,}"
        )
    elif rows["quarantine"] != run.rows_quarantined:
        broken = f"{rows['quarantine']:,} quarantine rows written for {run.rows_quarantined:,} quarantined"
    if broken is not None:
        run.discard()
        raise IngestError(f"{path}: counts invariant broken (a bug in the {kind} reader): {broken}")
    counts = IngestCounts(
        source_file=path.name,
        kind=kind,
        sha256=digest,
        rows_read=run.rows_read,
        rows_accepted=run.rows_accepted,
        rows_quarantined=run.rows_quarantined,
        seconds=round(time.perf_counter() - started, 3),
        tables=rows,
    )
    (out_dir / "counts.json").write_text(json.dumps(counts.to_dict(), indent=2) + "\n")
    progress.finish(f"{run.rows_read:,} rows read, {run.rows_quarantined:,} quarantined")
    return counts
