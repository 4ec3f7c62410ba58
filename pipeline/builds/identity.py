"""Build identity: which input files a run reads, their checksums, and the build id.

Every per-file ingest output is keyed by the file's content hash, so a rerun that adds
a dump file ingests only that file. A build folder is keyed by the hash of all input
checksums, of the settings that change its results and of the results format, so a rerun with
new dumps, new settings or a litpath that computes differently writes a new build and never
overwrites an earlier one; a setting that changes only how a stage computes (solver ranks and
threads, the memory budget) keeps the build id, and the workflow rebuilds nothing for it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config import schema_of

# The input kinds, from the schema's `inputs` (one ingest reader per kind; the order is the
# build id's: inputs are hashed kind by kind in this order).
INPUT_KINDS: tuple[str, ...] = tuple(schema_of("inputs")["properties"])

# Config sections whose values change what a build contains. `resources` (the memory budget and
# the spill folder) is not one: the stages give the same tables and graph within any budget.
BUILD_SECTIONS = ("ingest", "graph", "solver")
# Settings of those sections that change how the solve runs, not what it computes: every
# grid, tile, broadcast, rank and thread count and backend gives the exact shortest distances
# (the min over the same paths; the order of the float32 additions along a path may differ, so
# two layouts can differ in the last bit, within the solver's --validate tolerance);
# validate_rows only re-checks rows. Changing one keeps the build id, so nothing is rebuilt.
HOW_SETTINGS: dict[str, tuple[str, ...]] = {
    # The ceiling decides whether a build is made, not what it holds; a merge on the delta gives
    # the tables a full merge gives.
    "ingest": ("max_quarantine_fraction", "incremental"),
    "solver": (
        "ranks", "threads", "grid", "tile", "broadcast", "chunk_bytes", "lookahead", "backend",
        "validate_rows", "checkpoint_every", "reuse",
    ),
}  # fmt: skip


# The format of what a build holds, hashed into every build id: bump it with any change of litpath
# that changes a build's results (its tables, graph, weights, distances), so that an upgraded
# litpath makes a new build instead of reusing, or writing into, one the old code made.
#   2: the build id's first recorded format;
#   3: build.json records litpath's version and commit, the comparison's source files and the stages'
#      times; the quarantine ceiling may refuse a file an older litpath ingested.
#   4: the sentences table (SENTENCE text of the predications' sentences) and the readable evidence
#      (predicates and sentences per hop, the papers kind in the store; issue 31).
RESULTS_FORMAT = 4

# The format of one input kind's per-file ingest tables, in the ingest folder's name (InputFile.key)
# from 2 on: bump a kind's with a change of what its ingest writes, so that an upgraded litpath
# ingests those files again instead of merging folders an older one wrote (they are reused by
# name, and the name is the file's content hash otherwise).
#   semmeddb_sentence 2: the sentence text is kept (issue 31); format-1 folders have no text column.
INGEST_FORMATS = {"semmeddb_sentence": 2}

@dataclass(frozen=True)
class InputFile:
    kind: str
    path: Path
    sha256: str
    order: int  # position among the inputs of its kind (PubMed updates apply in this order)

    @property
    def key(self) -> str:
        """Stable folder name of this file's ingest output: readable name + content hash (+ the
        kind's ingest format from 2 on, :data:`INGEST_FORMATS`)."""
        stem = _file_stem(self.path)
        ingest_format = INGEST_FORMATS.get(self.kind, 1)
        return f"{stem}-{self.sha256[:12]}" + (f"-f{ingest_format}" if ingest_format > 1 else "")


def _file_stem(path: Path) -> str:
    """A file name with anything but letters, digits and ``._-`` replaced (a folder and wildcard name)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", path.name)


@dataclass(frozen=True)
class IngestBatch:
    """Input files of one kind that one ingest job reads, one after another (:func:`ingest_batches`)."""

    kind: str
    files: tuple[InputFile, ...]

    @property
    def name(self) -> str:
        """The job's name: a lone file's :attr:`InputFile.key`; else the first and last file names and a
        hash of every member's key, so that a batch which gains a file (or whose file changed) is
        another job, and one whose files did not keeps its name."""
        if len(self.files) == 1:
            return self.files[0].key
        digest = hashlib.sha256("\n".join(f.key for f in self.files).encode()).hexdigest()[:12]
        return f"{_file_stem(self.files[0].path)}..{_file_stem(self.files[-1].path)}-{digest}"


def ingest_batches(
    inputs: list[InputFile], files_per_job: int, skip_kinds: frozenset[str] = frozenset()
) -> list[IngestBatch]:
    """Each kind's files (but ``skip_kinds``') in input order, ``files_per_job`` to a batch.

    Batches are cut by position, so a file appended to a kind (PubMed's next update file sorts
    last) changes only the kind's last batch; that job then reads the new file alone and keeps the
    folders of the others (`litpath ingest --reuse`)."""
    if files_per_job < 1:
        raise ValueError(f"resources.ingest_files_per_job: must be 1 or more, got {files_per_job}")
    batches = []
    for kind in dict.fromkeys(f.kind for f in inputs):
        if kind in skip_kinds:
            continue
        files = [f for f in inputs if f.kind == kind]
        for start in range(0, len(files), files_per_job):
            batches.append(IngestBatch(kind, tuple(files[start : start + files_per_job])))
    return batches


def sha256_of_file(path: Path, cache: dict[str, Any] | None = None) -> str:
    """Content hash, reusing ``cache`` entries whose size and mtime still match."""
    stat = path.stat()
    ident = f"{path.resolve()}"
    if cache is not None:
        hit = cache.get(ident)
        if hit and hit["size"] == stat.st_size and hit["mtime_ns"] == stat.st_mtime_ns:
            return hit["sha256"]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    if cache is not None:
        cache[ident] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": value}
    return value


# The input kinds whose rows no stage reads under a mention source: the SemMedDB ENTITY table
# (a concept occurrence per row, 15 per predication in a release: 137.7 GB of CSV) is read only to
# count mentions by entities ("entities", "both"). Under "predications" (and "auto", which is
# predications: pipeline.merge.mention_source_for) the workflow neither ingests nor merges those
# files: at 30M calibrated predications the ENTITY file's ingest alone was a 15.7-minute job, the
# longest of the build. The files stay among the build's inputs (their checksums in its record
# and id), so a build that changes the mention source ingests them then.
UNREAD_KINDS: dict[str, frozenset[str]] = {
    "auto": frozenset({"semmeddb_entity"}),
    "predications": frozenset({"semmeddb_entity"}),
    "entities": frozenset(),
    "both": frozenset(),
}


def unread_kinds(config: dict[str, Any]) -> frozenset[str]:
    """The input kinds no stage reads under ``config``'s ``ingest.mention_source`` (:data:`UNREAD_KINDS`)."""
    source = (config.get("ingest") or {}).get("mention_source") or schema_of("ingest.mention_source")["default"]
    return UNREAD_KINDS.get(source, frozenset())


def resolve_inputs(config: dict[str, Any], cache_file: Path | None = None) -> list[InputFile]:
    """Expand the configured paths/globs; a pattern that matches nothing is an error."""
    cache: dict[str, Any] = {}
    if cache_file is not None and cache_file.exists():
        try:
            cache = json.loads(cache_file.read_text())
        except json.JSONDecodeError:
            cache = {}
    files: list[InputFile] = []
    for kind in INPUT_KINDS:
        paths: list[Path] = []
        for pattern in config.get("inputs", {}).get(kind, []):
            paths.extend(Path(m) for m in _matching(pattern, f"inputs.{kind}"))
        if kind == "pubmed_xml":
            # Baseline files sort before update files in NLM's naming (pubmed26n0001 <
            # pubmed26n1335); the documented order is file-name order.
            paths.sort(key=lambda p: p.name)
        # A file named twice (two patterns, or two spellings: data/x and data/../data/x) is read
        # once; two files of the same bytes are refused (the merge does not deduplicate SemMedDB rows).
        seen: set[Path] = set()
        by_checksum: dict[str, Path] = {}
        for order, path in enumerate(p for p in paths if not (p.resolve() in seen or seen.add(p.resolve()))):
            checksum = sha256_of_file(path, cache)
            if checksum in by_checksum:
                raise ValueError(
                    f"inputs.{kind}: {by_checksum[checksum]} and {path} hold the same bytes (SHA-256 "
                    f"{checksum[:12]}...): their rows would be read twice (SemMedDB rows are not "
                    "deduplicated); name the file once"
                )
            by_checksum[checksum] = path
            files.append(InputFile(kind, path, checksum, order))
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        # Every Slurm job parses the workflow again, so several processes may write at once:
        # each through its own temporary file, renamed atomically.
        tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=0))
        tmp.replace(cache_file)
    return files


def _matching(pattern: str, key: str) -> list[str]:
    """The files ``pattern`` names, sorted: the file itself where one has that very name (``[``
    and ``]`` are glob syntax, and also in real folder names), else the glob's matches;
    FileNotFoundError naming the key and, for a relative pattern, the folder it was read from."""
    expanded = os.path.expanduser(pattern)
    if os.path.isfile(expanded):
        return [expanded]
    matches = sorted(glob.glob(expanded))
    if not matches:
        where = "" if os.path.isabs(expanded) else f" (relative to {os.getcwd()})"
        raise FileNotFoundError(f"{key}: no file matches {pattern!r}{where}")
    return matches


# Settings added after builds existed, left out of the hash while at their "off" value: a build
# made without the setting has the id it always had, and only turning it on makes a new build.
UNSET_SETTINGS: dict[str, dict[str, Any]] = {"ingest": {"until_year": None}}


def build_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a build id hashes: :data:`BUILD_SECTIONS` without :data:`HOW_SETTINGS`, nor
    the :data:`UNSET_SETTINGS` at their off value."""
    return {
        section: {
            key: value
            for key, value in (config.get(section) or {}).items()
            if key not in HOW_SETTINGS.get(section, ())
            and not (key in UNSET_SETTINGS.get(section, {}) and value == UNSET_SETTINGS[section][key])
        }
        for section in BUILD_SECTIONS
    }


def build_id(inputs: list[InputFile], config: dict[str, Any]) -> str:
    """Hash of the inputs' content and of the settings that change what the build holds."""
    payload = {
        "inputs": [[f.kind, f.order, f.sha256] for f in inputs],
        "config": build_settings(config),
        "format": RESULTS_FORMAT,
    }
    text = json.dumps(payload, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
