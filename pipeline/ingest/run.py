"""Ingest one input file: :func:`ingest_file` runs the kind's reader over it and writes into ``out_dir``:

* ``<table>.parquet`` for each table the kind produces, always present even when empty;
* ``quarantine.parquet`` (schema ``QUARANTINE``), always present;
* ``counts.json`` = ``{source_file, kind, sha256, rows_read, rows_accepted,
  rows_quarantined, first_quarantined, seconds, tables}`` where ``rows_read == rows_accepted +
  rows_quarantined`` is checked before writing.

A failed read leaves no table behind, and ``counts.json`` is written last, so its presence
marks a finished ingest. :func:`ingest_files` runs one kind's reader over several files in one
process (the workflow's ``ingest_batch`` jobs), and with ``reuse`` keeps a folder that already
holds a finished ingest of the very same bytes (:func:`finished_ingest`).

A file with more of its rows quarantined than the ceiling (``ingest.max_quarantine_fraction``,
:func:`check_quarantine`) fails without a counts.json, its quarantine.parquet left for
inspection: a release whose layout drifted quarantines every row, and a build made from the rest
would look complete.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.builds.identity import sha256_of_file
from pipeline.builds.layout import TableFolder
from pipeline.ingest.base import IngestCounts, IngestError, IngestRun, InputFile
from pipeline.ingest.registry import reader_for
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import Progress

# While a file is read, Python's cyclic garbage collector runs every this many seconds instead of
# after every 700 new container objects. The readers make millions of short-lived tuples and
# lists (block bookkeeping, the record path); at 10M predications the automatic collections
# took 1.2 s of a 14 s ingest (1,576 young, 143 middle, 13 full collections), and reading with
# them paused was 0.6-1.2 s faster, peak memory unchanged (AMD EPYC, 2 cores). Few cycles are
# made, and the timed collection still frees them.
GC_INTERVAL_S = 5.0

# The default ceiling of quarantined rows per file (schemas/config.schema.yaml,
# ingest.max_quarantine_fraction); the workflow passes the config's value in this variable, which
# `litpath ingest` reads (an environment variable, so that changing the ceiling does not make
# Snakemake ingest every file again).
DEFAULT_MAX_QUARANTINE_FRACTION = 0.01
MAX_QUARANTINE_ENV = "LITPATH_MAX_QUARANTINE_FRACTION"
# Below this many quarantined rows a file fails only when every row was quarantined: in a small
# file (a CORD-19 extract, a citation table of 70 rows) one bad row is over 1 % and says nothing of
# its layout, while a layout that drifted quarantines every row whatever the file's size.
MIN_QUARANTINED_TO_FAIL = 10


def export_quarantine_ceiling(config: dict[str, Any], environ: dict[str, str] | None = None) -> None:
    """Put the config's ``ingest.max_quarantine_fraction`` into the environment that the workflow's
    ingest jobs inherit (:data:`MAX_QUARANTINE_ENV`)."""
    import os

    env = os.environ if environ is None else environ
    env[MAX_QUARANTINE_ENV] = str((config.get("ingest") or {}).get("max_quarantine_fraction",
                                                                   DEFAULT_MAX_QUARANTINE_FRACTION))  # fmt: skip


def check_quarantine(counts: dict[str, Any], ceiling: float, quarantine_file: Path) -> None:
    """IngestError when more than ``ceiling`` of a file's rows were quarantined (and at least
    :data:`MIN_QUARANTINED_TO_FAIL` of them, or all): the message names the file, the count and
    fraction, the first reason with its line, and where the rows are."""
    read, bad = counts["rows_read"], counts["rows_quarantined"]
    if not read or bad / read <= ceiling or (bad < MIN_QUARANTINED_TO_FAIL and bad < read):
        return
    first = counts.get("first_quarantined")
    reason = ""
    if first:
        field = f" field {first['field']}" if first.get("field") else ""
        reason = f"; the first, line {first['line']:,}{field}: {first['reason']}"
    raise IngestError(
        f"{counts['source_file']}: {bad:,} of {read:,} rows quarantined ({bad / read:.2%}), above the ceiling "
        f"ingest.max_quarantine_fraction = {ceiling:g}{reason}. All quarantined rows: {quarantine_file}. "
        "Nearly every row quarantined means the file's layout is not the one this reader knows (a column "
        "added or dropped in this release?); raise the ceiling only if these rows are expected to be bad."
    )


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


def ingest_file(
    kind: str, path: Path, out_dir: Path, *, max_quarantine_fraction: float | None = None, **options: Any
) -> IngestCounts:
    """Read one input file of ``kind`` and write its tables, quarantine and counts.json.

    ``options`` go to the kind's read function (PREDICATION's ``block_path``, for one). More of
    the file's rows quarantined than ``max_quarantine_fraction`` (None: no ceiling; `litpath
    ingest` always gives one) raises IngestError (:func:`check_quarantine`) and writes no counts.json.
    """
    reader = reader_for(kind)
    path = Path(path)
    out_dir = Path(out_dir)
    started = time.perf_counter()
    progress = Progress(
        f"litpath ingest {path.name}", path.stat().st_size if path.is_file() else None, "bytes"
    )
    # counts.json marks a finished ingest: an old one must not vouch for the tables of this run.
    TableFolder(out_dir).counts.unlink(missing_ok=True)
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
        first_quarantined=run.first_quarantined,
    )
    quarantine_file = TableFolder(out_dir).quarantine
    if max_quarantine_fraction is not None:
        check_quarantine(counts.to_dict(), max_quarantine_fraction, quarantine_file)
    write_atomically(TableFolder(out_dir).counts, json.dumps(counts.to_dict(), indent=2) + "\n")
    progress.finish(
        f"{run.rows_read:,} rows read, {run.rows_quarantined:,} quarantined"
        + (f" (in {quarantine_file})" if run.rows_quarantined else "")
    )
    return counts


def finished_ingest(kind: str, path: Path, out_dir: Path) -> dict[str, Any] | None:
    """The counts of a finished ingest of this very file in ``out_dir``, or None.

    Finished: counts.json is there (it is written last) and names this kind and file name, its
    sha256 is the file's as it is now, and every table the kind produces is beside it. The reader
    is the same too: the workflow names each folder after the kind's ingest format
    (``InputFile.key``), which changes whenever a reader's tables would."""
    counts = _whole_ingest_folder(kind, path, out_dir)
    if counts is None or counts.get("sha256") != sha256_of_file(Path(path)):
        return None
    return counts


def _whole_ingest_folder(kind: str, path: Path, out_dir: Path) -> dict[str, Any] | None:
    """:func:`finished_ingest` but for the file's checksum: the folder's counts when it holds
    every table of a finished ingest of a file of this kind and name, else None."""
    folder = TableFolder(out_dir)
    try:
        counts = json.loads(folder.counts.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(counts, dict) or counts.get("kind") != kind or counts.get("source_file") != Path(path).name:
        return None
    tables = [*reader_for(kind).produces, "quarantine"]
    if not all(folder.table(name).exists() for name in tables):
        return None
    return counts


def forget_reports_of_lost_ingests(jobs: Sequence[tuple[Path, str, Sequence[tuple[Path, Path]]]]) -> str | None:
    """Before the workflow plans a run: remove the report of every ingest job (``(report, kind,
    [(input file, its folder), ...])``) one of whose folders no longer holds a whole ingest of its
    file, so that the job runs again and ingests that file (``--reuse`` keeps the others); a line
    saying so for the log, else None.

    A job's declared output is its report, not the folders the merge reads (rules/ingest.smk):
    with a folder removed (disk space made, a folder of a file thought bad deleted) Snakemake found
    the report and ran nothing, and the merge stopped on the missing folder. The checksum is left
    to the job: a folder is named after its file's content (``InputFile.key``), and hashing every
    input here would cost what the run's own checks already do once."""
    lost: list[Path] = []
    for report, kind, files in jobs:
        if not Path(report).exists():
            continue
        gone = [folder for path, folder in files if _whole_ingest_folder(kind, path, folder) is None]
        if gone:
            Path(report).unlink(missing_ok=True)
            lost.extend(gone)
    if not lost:
        return None
    return (f"{len(lost)} ingest folder(s) no longer hold a whole ingest of their file (first: {lost[0]}): "
            "their jobs run again and ingest them")  # fmt: skip


def ingest_files(
    kind: str,
    files: Sequence[tuple[Path, Path]],
    *,
    reuse: bool = False,
    max_quarantine_fraction: float | None = None,
) -> list[dict[str, Any]]:
    """:func:`ingest_file` over each ``(path, out_dir)`` of one kind, in order, in this process.

    The workflow ingests many small files of a kind (PubMed's ~1,300 a release) a few to a job:
    one job per file cost each its interpreter start (0.6 s of a 3.6 s PubMed file) and Snakemake
    a scheduling round whose cost grows with the jobs still waiting. ``reuse``: a folder that
    already holds a finished ingest of the same file (:func:`finished_ingest`) is kept, its
    quarantine checked against today's ceiling, so a job whose batch gained a new file reads only
    that one. Returns each file's counts with ``"reused"`` set; the first failure raises."""
    results = []
    batch = Progress(f"litpath ingest {kind}", len(files), "files")
    for path, out_dir in files:
        path, out_dir = Path(path), Path(out_dir)
        counts = finished_ingest(kind, path, out_dir) if reuse else None
        if counts is not None:
            if max_quarantine_fraction is not None:
                check_quarantine(counts, max_quarantine_fraction, TableFolder(out_dir).quarantine)
            batch.note(f"litpath ingest {path.name}: already ingested in {out_dir}, kept")
            results.append({**counts, "reused": True})
        else:
            done = ingest_file(kind, path, out_dir, max_quarantine_fraction=max_quarantine_fraction)
            results.append({**done.to_dict(), "reused": False})
        batch.advance()
    if len(files) > 1:
        kept = sum(result["reused"] for result in results)
        batch.finish(f"{len(files) - kept} read, {kept} kept")
    return results
