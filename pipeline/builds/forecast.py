"""What a run will cost, said before it starts: the disk it will write under the results folder,
what it adds to MongoDB, and about how long it will take (the workflow's ``onstart`` prints it and
refuses a run whose results folder's disk is too small for it).

The figures scale the builds this results folder already holds by the bytes of input they read:
a first build by the last full build's wall time and folder size, a rerun on top of an earlier
build (the merge on the delta, :mod:`pipeline.merge.delta`) by the last such rerun's. A results
folder with no build of the kind to go by gets the calibrated synthetic corpus's figures
(:data:`REFERENCE`), measured on one machine and said to be so: at 10M and 30M predications a first
build took 138 and 136 s per GB of input read, so time and sizes grow about linearly with the input
(bench/results/scale_runs.md, docs/design.md §4).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.builds.identity import InputFile
from pipeline.builds.layout import BuildLayout, ResultsLayout
from pipeline.builds.record import earlier_build_for, written_bytes
from pipeline.config import read_yaml
from pipeline.runtime.errors import LitpathError
from pipeline.runtime.progress import format_bytes, format_seconds

# A run is refused when its results folder's file system has less free space than the forecast;
# this variable (set to 1) lets it start anyway, for a forecast that is wrong.
IGNORE_DISK_FORECAST_ENV = "LITPATH_IGNORE_DISK_FORECAST"

# The kinds whose new files a rerun merges on the delta: those whose ingest writes only the tables
# pipeline.merge.delta takes from a new file (documents, deletions, citations, concepts; checked
# against the ingest of each kind in tests/builds/test_forecast.py). A new PREDICATION or SENTENCE
# file makes the merge a full one.
DELTA_KINDS = frozenset({"pubmed_xml", "citations_table", "cord19_metadata", "semmeddb_citations"})


@dataclass(frozen=True)
class Reference:
    """Costs per byte of input read, measured on the calibrated synthetic corpus (``litpath synth``)."""

    fixed_seconds: float  # a first build of the bundled sample (164 kB): start-up, servers, reports
    fixed_bytes: float  # its build folder (graphs' metadata, the comparison's report and figures)
    seconds_per_byte: float  # what a first build's wall grows by, ingest included
    rerun_share: float  # a rerun with one more PubMed update file, against the first build's wall
    rerun_bytes_share: float  # the bytes that rerun writes, against the first build's folder
    ingest_bytes_per_byte: float  # the ingest folders (kept for every later build)
    build_bytes_per_byte: float  # a build folder: tables, graphs, bucket files, comparison
    store_bytes_per_byte: float  # the record buckets a first build sends to MongoDB
    where: str


# `make run` on a 2-core AMD EPYC at 5244105. 10M calibrated predications (1.645 GB of input read:
# PREDICATION, SENTENCE, CITATIONS, 98 PubMed files, CORD-19, a citation table): first build
# 226.9 s, update reruns 46.5-48.7 s (17-23 % at 10M and 30M), ingest 1.32 GB, build folder
# 3.60 GB, of which bucket files 1.86 GB. The bundled sample (164 kB): 12.5 s, a 3.2 MB build folder.
# The update rerun's own files (its unchanged tables and buckets are links to the first build's):
# 2.06 GB at 10M (7e535aa), 57 % of the first build's 3.60; 5.27 GB at 30M (1fa91d1), 52 % of
# 10.18. Going by the whole folder, that 30M rerun was forecast 9.5 GiB and refused with 9.0 free.
REFERENCE = Reference(
    fixed_seconds=12.0, fixed_bytes=3.0e6, seconds_per_byte=138e-9, rerun_share=0.21, rerun_bytes_share=0.6,
    ingest_bytes_per_byte=0.80, build_bytes_per_byte=2.19, store_bytes_per_byte=1.13,
    where="the calibrated 10M synthetic corpus on a 2-core AMD EPYC",
)  # fmt: skip


@dataclass(frozen=True)
class EarlierBuild:
    """A complete build of the results folder, as a forecast uses it."""

    build_id: str
    seconds: float | None  # build.json's started -> completed (the last run that worked on it)
    input_bytes: int  # of the files it read, as they are now (0: none left to measure)
    folder_bytes: int  # the files of its folder it wrote (:func:`pipeline.builds.record.written_bytes`)
    store_bytes: int  # its bucket files (what a full load sends to MongoDB)
    sent_bytes: int | None  # the bucket bytes its MongoDB load sent (None: not recorded)
    on_the_delta: bool  # its merge brought an earlier build up to date
    completed: str
    added_kinds: frozenset[str] = frozenset()  # a rerun's: the kinds of the files it added and read


@dataclass(frozen=True)
class RunForecast:
    """A run's expected cost, and what it rests on."""

    what: str  # "a first build" / "a rerun on top of build <id>"
    input_bytes: int
    new_input_bytes: int  # not ingested yet
    results_bytes: int  # to be written under the results folder
    store_bytes: int | None  # to be added to MongoDB (None: a rerun's changed buckets, not known)
    seconds: float
    basis: str
    results_dir: Path
    free_bytes: int

    def lines(self) -> list[str]:
        changed = " that changed" if self.what.startswith("a rerun") else ""
        if self.store_bytes is None:
            store = "; MongoDB: only the record buckets that changed"
        elif self.store_bytes == 0:  # a rerun like the last, whose buckets were all there already
            store = "; MongoDB: no new record buckets"
        else:
            store = f"; MongoDB: about {format_bytes(self.store_bytes)} of record buckets{changed}"
        return [
            f"litpath: this run makes {self.what} from {format_bytes(self.input_bytes)} of input "
            f"({format_bytes(self.new_input_bytes)} not ingested yet). Expect about "
            f"{format_seconds(self.seconds)} and {format_bytes(self.results_bytes)} written under "
            f"{self.results_dir} ({format_bytes(self.free_bytes)} free there){store}.",
            f"litpath: (forecast from {self.basis})",
        ]

    def shortfall(self) -> str | None:
        """What the results folder's disk lacks for this run, said for people, or None."""
        if self.results_bytes <= self.free_bytes:
            return None
        return (
            f"this run would write about {format_bytes(self.results_bytes)} under {self.results_dir}, "
            f"whose file system has {format_bytes(self.free_bytes)} free (forecast from {self.basis})"
        )


def earlier_builds(results: ResultsLayout, unread: frozenset[str]) -> list[EarlierBuild]:
    """The results folder's complete builds, oldest first (by build.json's completion)."""
    if not results.builds.exists():
        return []
    builds = []
    for folder in sorted(results.builds.iterdir()):
        layout = BuildLayout(folder)
        record = _read_json(layout.record)
        if not record:
            continue  # not complete
        counts = _read_json(layout.tables.counts) or {}
        incremental = counts.get("incremental") or {}
        inputs = [f for f in record.get("inputs", []) if f.get("kind") not in unread]
        started = _started(record)
        written = record.get("written_bytes")  # counted as it completed, else now (less exact)
        added = set(incremental.get("files_added") or [])
        builds.append(EarlierBuild(
            build_id=folder.name, seconds=_seconds(record),
            input_bytes=sum(_size(Path(f["path"])) for f in inputs if f.get("path")),
            folder_bytes=written if isinstance(written, int) else
            written_bytes(folder, None if started is None else started.timestamp()),
            store_bytes=_folder_bytes(layout.store), sent_bytes=_sent_bytes(layout),
            on_the_delta=bool(incremental.get("used")), completed=str(record.get("completed") or ""),
            added_kinds=frozenset(f.get("kind") for f in inputs if Path(str(f.get("path"))).name in added),
        ))  # fmt: skip
    return sorted(builds, key=lambda b: (b.completed, b.build_id))


def forecast_run(
    results: ResultsLayout,
    inputs: list[InputFile],
    unread: frozenset[str],
    earlier: Path | None,
    new_kinds: frozenset[str],
) -> RunForecast:
    """The forecast of a run that makes a build from ``inputs``; ``earlier``: the build it would be
    merged on top of (:func:`pipeline.builds.record.earlier_build_for`), ``new_kinds`` the kinds of
    the input files that build lacks."""
    # one look at each input file read: its size, and whether (and into how many bytes) it was ingested
    input_bytes = new_input_bytes = ingested_in = ingested_out = 0
    for f in inputs:
        if f.kind in unread:
            continue
        size = _size(f.path)
        input_bytes += size
        folder = results.ingest(f.kind, f.key)
        if folder.counts.exists():
            ingested_in += size
            ingested_out += _folder_bytes(Path(folder.path))
        else:
            new_input_bytes += size
    # the ingest's bytes per input byte: the folders ingested already, else the calibrated corpus's
    ingest_ratio = ingested_out / ingested_in if ingested_in else REFERENCE.ingest_bytes_per_byte
    ingest_bytes = new_input_bytes * ingest_ratio
    history = earlier_builds(results, unread)
    on_the_delta = earlier is not None and new_kinds <= DELTA_KINDS
    full = [b for b in history if not b.on_the_delta and b.input_bytes and b.seconds]
    reruns = [b for b in history if b.on_the_delta and b.input_bytes and b.seconds]
    if on_the_delta:
        what = f"a rerun on top of build {earlier.name} (the merge on the delta)"
        store_bytes = None  # the changed buckets: known from an earlier rerun's load only
        if reruns:
            # the last rerun on files of the same kinds (an update file's costs twice a citation
            # file's at 10M), else the last one
            alike = [b for b in reruns if b.added_kinds == new_kinds]
            last = (alike or reruns)[-1]
            scale = input_bytes / last.input_bytes
            seconds, build_bytes = last.seconds * scale, last.folder_bytes * scale
            after = f" (after a {', '.join(sorted(last.added_kinds))} file)" if last.added_kinds else ""
            basis = _basis(last, "rerun", scale, after)
            store_bytes = None if last.sent_bytes is None else last.sent_bytes * scale
        elif full:
            last = full[-1]
            scale = input_bytes / last.input_bytes
            seconds = last.seconds * scale * REFERENCE.rerun_share
            build_bytes = last.folder_bytes * scale * REFERENCE.rerun_bytes_share
            basis = _basis(last, "first build", scale) + f" and a rerun's share of it on {REFERENCE.where}"
        else:
            seconds = (REFERENCE.fixed_seconds + input_bytes * REFERENCE.seconds_per_byte) * REFERENCE.rerun_share
            build_bytes = (REFERENCE.fixed_bytes + input_bytes * REFERENCE.build_bytes_per_byte) * REFERENCE.rerun_bytes_share
            basis = f"{REFERENCE.where}; no build here to go by"
    else:
        if earlier is not None:
            what = f"a build from every file (a new {', '.join(sorted(new_kinds - DELTA_KINDS))} file does not merge on the delta)"
        elif history:  # none of them an earlier build of some of these files, or ingest.incremental off
            what = "a build from every file"
        else:
            what = "a first build"
        if full:
            last = full[-1]
            scale = input_bytes / last.input_bytes
            seconds, build_bytes, store_bytes = last.seconds * scale, last.folder_bytes * scale, last.store_bytes * scale
            basis = _basis(last, "first build", scale)
        else:
            seconds = REFERENCE.fixed_seconds + input_bytes * REFERENCE.seconds_per_byte
            build_bytes = REFERENCE.fixed_bytes + input_bytes * REFERENCE.build_bytes_per_byte
            store_bytes = input_bytes * REFERENCE.store_bytes_per_byte
            basis = f"{REFERENCE.where}; no build here to go by"
    return RunForecast(
        what=what, input_bytes=input_bytes, new_input_bytes=new_input_bytes,
        results_bytes=int(ingest_bytes + build_bytes), store_bytes=None if store_bytes is None else int(store_bytes),
        seconds=seconds, basis=basis, results_dir=results.root, free_bytes=free_bytes(results.root),
    )  # fmt: skip


def announce(config: dict[str, Any], results: ResultsLayout, inputs: list[InputFile], unread: frozenset[str],
             build_dir: Path, echo: Callable[[str], None]) -> RunForecast:
    """The forecast of the workflow run about to make ``build_dir`` (its ``onstart``): said with
    ``echo``; a :class:`DiskForecastError` when the results folder's disk is too small for it
    (unless :data:`IGNORE_DISK_FORECAST_ENV` says to start anyway)."""
    this = {**config, "resolved_inputs": [{"kind": f.kind, "path": str(f.path), "sha256": f.sha256} for f in inputs]}
    # the merge's own choice (pipeline.merge.commands): none when ingest.incremental is off
    incremental = (config.get("ingest") or {}).get("incremental", True)
    earlier = earlier_build_for(results, this, exclude=build_dir) if incremental else None
    new_kinds: frozenset[str] = frozenset()
    if earlier is not None:
        theirs = {(f["kind"], f["sha256"]) for f in (read_yaml(BuildLayout(earlier).config.read_text()) or {}).get("resolved_inputs", [])}
        new_kinds = frozenset(f.kind for f in inputs if (f.kind, f.sha256) not in theirs and f.kind not in unread)
    forecast = forecast_run(results, inputs, unread, earlier, new_kinds)
    for line in forecast.lines():
        echo(line)
    short = forecast.shortfall()
    if short is not None:
        if not disk_check_ignored():
            raise DiskForecastError(
                f"{short}. Free space first, for example with `litpath builds --config <config> prune "
                f"--keep 1` (every build but the latest, from the folder and MongoDB), or set "
                f"{IGNORE_DISK_FORECAST_ENV}=1 to start anyway."
            )
        echo(f"litpath: {IGNORE_DISK_FORECAST_ENV} is set: the run starts although {short}.")
    return forecast


class DiskForecastError(LitpathError, OSError):
    """A run refused before it starts: its results folder's disk is smaller than its forecast."""


def free_bytes(path: Path) -> int:
    """Free bytes on the file system that holds ``path`` (or would: its nearest existing parent)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def disk_check_ignored() -> bool:
    return os.environ.get(IGNORE_DISK_FORECAST_ENV, "") not in ("", "0")


def _basis(build: EarlierBuild, kind: str, scale: float, after: str = "") -> str:
    return (
        f"this folder's {kind} {build.build_id}{after}: {format_seconds(build.seconds or 0)} and "
        f"{format_bytes(build.folder_bytes)} for {format_bytes(build.input_bytes)} of input, scaled by {scale:.2f}"
    )


def _folder_bytes(folder: Path) -> int:
    """The bytes of the regular files under ``folder`` (0 if there is none)."""
    if not Path(folder).exists():
        return 0
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file() and not p.is_symlink())


def _sent_bytes(layout: BuildLayout) -> int | None:
    """The bucket bytes a build's MongoDB load sent, from its record (None where the record has
    none: no load, or one recorded before loads counted their bytes)."""
    counts = (_read_json(layout.mongo_load) or {}).get("counts") or {}
    sent = [value for key, value in counts.items() if key.endswith("_bytes_written") and isinstance(value, int)]
    return sum(sent) if sent else None


def _started(record: dict[str, Any]) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(record["started"])
    except (KeyError, TypeError, ValueError):
        return None


def _seconds(record: dict[str, Any]) -> float | None:
    started = _started(record)
    try:
        completed = datetime.datetime.fromisoformat(record["completed"])
    except (KeyError, TypeError, ValueError):
        return None
    if started is None:
        return None
    seconds = (completed - started).total_seconds()
    return seconds if seconds > 0 else None


def _size(path: Path) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _read_json(path: Path) -> dict[str, Any] | None:
    # Not pipeline.builds.record's reader, which raises on a damaged file: a forecast is advice, and
    # a build whose record cannot be read is passed over, never a reason not to run.
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
