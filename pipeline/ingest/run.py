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

import gc
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.ingest.base import IngestCounts, IngestError, IngestRun, InputFile
from pipeline.ingest.registry import reader_for
from pipeline.progress import Progress

# While a file is read, Python's cyclic garbage collector runs every this many seconds instead of
# after every 700 new container objects. The readers make millions of short-lived tuples and
# lists (block bookkeeping, the record path); at 10M predications the automatic collections
# took 1.2 s of a 14 s ingest (1,576 young, 143 middle, 13 full collections), and reading with
# them paused was 0.6-1.2 s faster, peak memory unchanged (AMD EPYC, 2 cores). Few cycles are
# made, and the timed collection still frees them.
GC_INTERVAL_S = 5.0


@contextmanager
def _timed_garbage_collection() -> Iterator[None]:
    """Automatic cyclic collection off inside the block, a full ``gc.collect()`` every
    :data:`GC_INTERVAL_S` from a helper thread instead; the previous setting comes back at the end."""
    interval_s = GC_INTERVAL_S
    was_enabled = gc.isenabled()
    gc.disable()
    stop = threading.Event()

    def collect() -> None:
        while not stop.wait(interval_s):
            gc.collect()

    collector = threading.Thread(target=collect, name="ingest-gc", daemon=True)
    collector.start()
    try:
        yield
    finally:
        stop.set()
        collector.join()
        if was_enabled:
            gc.enable()


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
        with _timed_garbage_collection():
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
