"""A build's CUI -> SPOKE mapping taken from another build of its results folder that made it
from the very same inputs, instead of built again (``litpath build-mapping --reuse auto``).

The mapping is a function of its inputs alone when SPOKE's nodes come from SPOKE's dump
(``--spoke-nodes``): the literature's concepts table, the UMLS and cross-reference files, the
dump, the mapping's options and the litpath that runs it. Those are written down as the
mapping's ``inputs`` (mapping_stats.json: each file's SHA-256, the options, litpath's version
and commit); a build whose mapping records the same ``inputs`` has the same nine files, which
are linked (hard links, else copies) instead of written again. A rerun on new literature rarely
changes the concepts table (a new PubMed file names concepts the tables already hold), so its
mapping is the earlier build's; at 10M calibrated predications the mapping job took 2 s of a
42-s update rerun, and with a release's SPOKE and UMLS it reads gigabytes of dumps.

Nothing is taken where the nodes are read from Neo4j (``--spoke-read lookup|scan`` without a
dump): a server can change between two runs with nothing in the results folder saying so. Nor by
litpath run from a checkout whose ``pipeline/`` has uncommitted changes: its commit does not name
its code.

A taken file is the other build's own (a hard link): a mapping built later into a folder that
took one first removes its files (:func:`unlink_mapping_files`), since the writers open a path in
place and would change the other build's file too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.builds.identity import sha256_of_file
from pipeline.builds.layout import BuildLayout, MappingFolder, results_of
from pipeline.builds.record import litpath_provenance
from pipeline.builds.reuse import link_or_copy
from pipeline.runtime.process import CommandFailed, run_command

# Bumped whenever what the mapping's files hold changes for the same inputs in a way the
# litpath version and commit would not say (never so far).
REUSE_FORMAT = 1


def mapping_inputs(concepts: str | Path | None, source_files: dict[str, str | Path | None],
                   spoke_nodes: str | Path | None, spoke_format: str, options: dict[str, Any],
                   cache: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str]:  # fmt: skip
    """What the mapping is made from, as :func:`take_earlier_mapping` compares it: each file's
    SHA-256 (``cache``: results/.checksums.json's, by size and mtime), ``options`` and litpath;
    and "" -- or None and why the mapping cannot be taken from another build."""
    if not spoke_nodes:
        return None, "SPOKE's nodes are read from Neo4j, which may have changed since any other build"
    provenance = litpath_provenance()
    if provenance.get("commit") and _code_changed():
        return None, "litpath runs from a checkout whose pipeline/ has uncommitted changes"

    def digest(path: str | Path | None) -> str | None:
        return None if path is None else sha256_of_file(Path(path), cache)

    inputs = {
        "format": REUSE_FORMAT,
        "litpath": {"version": provenance["version"], "commit": provenance.get("commit")},
        "concepts": digest(concepts),
        "files": {name: digest(path) for name, path in sorted(source_files.items()) if path is not None},
        "spoke_nodes": {"sha256": digest(spoke_nodes), "format": spoke_format},
        "options": options,
    }
    # as stored (JSON: tuples become lists), so that equal inputs compare equal to a record read back
    return json.loads(json.dumps(inputs, sort_keys=True, default=str)), ""


def _code_changed() -> bool:
    """Whether the checkout's code (``pipeline/``: tracked files changed, or new files) is not
    its commit's. Not the whole checkout's ``dirty`` of the build record: results recorded in the
    checkout (bench/results/) change no mapping."""
    package = Path(__file__).resolve().parents[2]
    try:
        changed = run_command(["git", "-C", str(package.parent), "status", "--porcelain", "--", str(package)],
                              what="git", timeout=30).stdout.strip()  # fmt: skip
    except CommandFailed:
        return True  # a commit named but its files not checked: nothing is taken
    return bool(changed)


def checksum_cache(out_dir: Path) -> dict[str, Any] | None:
    """The results folder's checksum cache (read only) when ``out_dir`` is a build's mapping
    folder: the workflow has hashed the mapping's sources for the build record."""
    build = _build_of(out_dir)
    if build is None:
        return None
    try:
        cache = json.loads(results_of(build.root).checksums.read_text())
    except (OSError, ValueError):
        return None
    return cache if isinstance(cache, dict) else None


def _build_of(out_dir: Path) -> BuildLayout | None:
    """The build whose mapping folder ``out_dir`` is, else None."""
    build = BuildLayout(Path(out_dir).resolve().parent)
    if Path(build.mapping.path) != Path(out_dir).resolve() or not build.config.exists():
        return None
    return build


def take_earlier_mapping(out_dir: Path, inputs: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Where ``out_dir`` is a build's mapping folder and another build of its results folder has a
    whole mapping whose recorded ``inputs`` are these: its files linked into ``out_dir`` and its
    statistics (the newest such build's); else None. And which build, or why none."""
    build = _build_of(out_dir)
    if build is None:
        return None, f"{out_dir} is not a build's mapping folder"
    candidates = []
    for folder in results_of(build.root).builds.iterdir():
        other = BuildLayout(folder)
        if folder.name == build.root.name or not other.mapping.stats.is_file():
            continue
        candidates.append((other.mapping.stats.stat().st_mtime, folder.name, other.mapping))
    for _, name, mapping in sorted(candidates, reverse=True):
        try:
            stats = json.loads(mapping.stats.read_text())
        except (OSError, ValueError):
            continue
        files = mapping_files(mapping)
        if stats.get("inputs") != inputs or not all(path.is_file() for path in files):
            continue
        mine = mapping_files(MappingFolder(Path(out_dir)))
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        for theirs, ours in zip(files, mine, strict=True):
            link_or_copy(theirs, ours)
        return stats, name
    return None, "no other build's mapping was made from these inputs"


def mapping_files(folder: MappingFolder) -> list[Path]:
    """The files ``litpath build-mapping`` writes but its statistics (written last, by it)."""
    return [folder.table, folder.csv, folder.coverage, *folder.coverage_tables().values()]


def unlink_mapping_files(folder: MappingFolder) -> None:
    """Remove the mapping's files from ``folder`` before they are written: any of them may be a
    link to another build's (:func:`take_earlier_mapping`), which writing in place would change."""
    for path in [*mapping_files(folder), folder.stats]:
        path.unlink(missing_ok=True)


__all__ = [
    "REUSE_FORMAT", "checksum_cache", "mapping_files", "mapping_inputs", "take_earlier_mapping", "unlink_mapping_files",
]  # fmt: skip
