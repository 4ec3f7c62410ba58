"""A build's records: its ``config.yaml`` (the configuration it was made from and its inputs'
checksums), ``run_config.yaml`` (the settings of the run now starting, which the stages read),
and at the end ``build.json`` (provenance, counts, timings) with the ``latest`` pointer.
Which inputs and settings make a build is :mod:`pipeline.builds.identity`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from pipeline.builds.identity import (
    RESULTS_FORMAT,
    InputFile,
    build_id,
    build_settings,
    resolve_inputs,
    sha256_of_file,
)
from pipeline.builds.layout import BuildLayout, ResultsLayout, results_of
from pipeline.cli.options import build_id_option, config_option, option
from pipeline.config import ConfigError, load_config, read_yaml
from pipeline.config.connections import redact_config
from pipeline.runtime.files import fsync_dir as _fsync_dir
from pipeline.runtime.files import write_atomically as _write_atomically
from pipeline.runtime.process import CommandFailed, run_command


def write_build_config(path: str | Path, config: dict[str, Any], inputs: list[list[str]]) -> None:
    """The resolved configuration of one build, with its inputs; stages read this file.

    Credentials are removed first (:func:`pipeline.config.connections.redact_config`): this file is
    copied into build.json, the logs and the MongoDB ``builds`` record.
    """
    import yaml

    document = redact_config(dict(config))
    document["resolved_inputs"] = [{"kind": k, "path": p, "sha256": s} for k, p, s in inputs]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(path, yaml.safe_dump(document, sort_keys=False))


def write_run_config(path: str | Path, config: dict[str, Any]) -> None:
    """The settings of the run now starting (``<build>/run_config.yaml``), without credentials.

    The workflow writes it when a run starts (its ``onstart``) and its stages read it, so a stage
    that runs gets this run's settings, including those that change only how it computes (solver
    ranks and threads, the memory budget). Snakemake does not track the file: rewriting it reruns
    nothing. ``config.yaml`` beside it keeps the configuration the build was made from.
    """
    import yaml

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(path, yaml.safe_dump(redact_config(dict(config)), sort_keys=False))


def earlier_build(build_dir: str | Path) -> Path | None:
    """The complete build in the same results folder that ``build_dir`` can be merged on top of
    (:mod:`pipeline.merge.delta`): :func:`earlier_build_for` the build's config.yaml."""
    this = _read_yaml(BuildLayout(build_dir).config)
    if not this:
        return None
    return earlier_build_for(results_of(build_dir), this, Path(build_dir))


def earlier_build_for(results: ResultsLayout, this: dict[str, Any], exclude: Path | None = None) -> Path | None:
    """The complete build of ``results`` that a build of config ``this`` (with its
    ``resolved_inputs``) can be merged on top of: made by a litpath of this results format, with
    the same build settings, from some of its input files in the same order (by kind and checksum,
    from each build's config.yaml). Of several, the one with the most inputs, then the latest; None
    if there is none. Complete: its build.json, written last, is there. ``exclude``: the build's
    own folder."""
    inputs = [(f["kind"], f["sha256"]) for f in this.get("resolved_inputs", [])]
    best: tuple[tuple[int, float], Path] | None = None
    if not results.builds.exists():
        return None
    for folder in sorted(results.builds.iterdir()):
        other = BuildLayout(folder)
        if (exclude is not None and folder.resolve() == Path(exclude).resolve()) or not other.tables.counts.exists():
            continue
        record, config = _read_json(other.record), _read_yaml(other.config)
        if not record or not config or record.get("litpath", {}).get("results_format") != RESULTS_FORMAT:
            continue
        theirs = [(f["kind"], f["sha256"]) for f in config.get("resolved_inputs", [])]
        if build_settings(config) != build_settings(this) or len(theirs) >= len(inputs):
            continue
        remaining = iter(inputs)
        if all(ident in remaining for ident in theirs):  # a subsequence: same order, some left out
            rank = (len(theirs), other.record.stat().st_mtime)
            if best is None or rank > best[0]:
                best = (rank, folder)
    return best[1] if best else None


@click.command("write-build-config")
@config_option("The run's configuration (the workflow gives <build>/run_config.yaml).", required=True)
@click.option(
    "--checksums",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Checksum cache of the inputs (results/.checksums.json): unchanged files are not hashed again.",
)
@build_id_option("Refuse unless the inputs and config still make this build id.", name="expected_id")
@option(
    "--config-out", "out", old=("--out",), required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the build's config (<build>/config.yaml)",
)  # fmt: skip
def write_build_config_command(
    config_path: Path, checksums: Path | None, expected_id: str | None, out: Path
) -> None:
    """Record the configuration a build is made from and its input files' checksums (<build>/config.yaml)."""
    try:
        config = load_config(config_path)
    except ConfigError as exc:  # names the file and the key
        raise click.BadParameter(str(exc), param_hint="--config") from None
    inputs = resolve_inputs(config, cache_file=checksums)
    actual = build_id(inputs, config)
    if expected_id is not None and actual != expected_id:
        raise click.ClickException(
            f"the inputs or the configuration changed since the workflow started: they make build {actual}, "
            f"not {expected_id}; run the workflow again"
        )
    write_build_config(out, config, [[f.kind, str(f.path), f.sha256] for f in inputs])
    click.echo(f"build {actual}: configuration and {len(inputs)} input file(s) recorded in {out}")


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def _read_yaml(path: Path) -> Any:
    return read_yaml(path.read_text()) if path.exists() else None


def litpath_provenance() -> dict[str, Any]:
    """Which litpath made a build: its version, the results format (:data:`RESULTS_FORMAT`) and,
    when it runs from a git checkout, the commit and whether the checkout had changes."""

    from pipeline import __version__
    from pipeline.config import REPO_ROOT

    record: dict[str, Any] = {"version": __version__, "results_format": RESULTS_FORMAT, "commit": None, "dirty": None}
    try:
        def git(*args: str) -> str:
            return run_command(["git", "-C", str(REPO_ROOT), *args], what="git", timeout=30).stdout.strip()

        record["commit"] = git("rev-parse", "HEAD")
        # Tracked files changed (untracked ones, results and caches among them, do not count).
        record["dirty"] = bool(git("status", "--porcelain", "--untracked-files=no"))
    except CommandFailed:
        pass  # not a checkout (an installed package), or no git: the version says it all
    return record


def source_files(settings: dict[str, Any], cache: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The files besides the literature dumps that shape a build's results: SPOKE's dump, the
    mapping sources (UMLS's MRCONSO.RRF and MRCUI.RRF from ``mapping.umls_dir``), the query set
    and the row sources, each ``{setting, path, bytes, sha256}`` (a missing one with ``sha256``
    None). Hashes reuse ``cache`` (results/.checksums.json) for files whose size and mtime match."""
    from pipeline.config import file_settings

    found = []
    for key, value in file_settings(settings, used_only=True):
        if key.startswith("inputs."):
            continue  # the build's inputs, recorded with their checksums under "inputs"
        path = Path(value)
        files = [path / name for name in ("MRCONSO.RRF", "MRCUI.RRF")] if key == "mapping.umls_dir" else [path]
        for file in files:
            entry: dict[str, Any] = {"setting": key, "path": str(file), "bytes": None, "sha256": None}
            if file.is_file():
                entry["bytes"] = file.stat().st_size
                entry["sha256"] = sha256_of_file(file, cache)
            found.append(entry)
    return found


def stage_times(build_dir: Path, inputs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Wall time and peak memory of each stage of the build, from Snakemake's benchmark files
    (``<results>/logs/<build>/<rule>.benchmark.tsv``; the ingest of each input file under
    ``logs/ingest/<kind>/<key>.benchmark.tsv``): ``{stage: {seconds, max_rss_mib}}``. A stage
    that ran in an earlier run (an input ingested then) keeps that run's figures."""
    import csv

    results = results_of(build_dir)
    files = sorted(results.build_logs(build_dir.name).glob("*.benchmark.tsv"))
    names = [f.name.removesuffix(".benchmark.tsv") for f in files]
    # The SPOKE load is not a build's (one Neo4j serves every build); its last run's figures.
    if results.spoke_log(".benchmark.tsv").is_file():
        files.append(results.spoke_log(".benchmark.tsv"))
        names.append("spoke/load")
    for entry in inputs:
        key = InputFile(entry["kind"], Path(entry["path"]), entry["sha256"], 0).key
        files.append(results.ingest_log(entry["kind"], key, ".benchmark.tsv"))
        names.append(f"ingest/{entry['kind']}/{key}")
    stages: dict[str, dict[str, float]] = {}
    for name, file in zip(names, files, strict=True):
        try:
            with file.open() as handle:
                row = next(csv.DictReader(handle, delimiter="\t"))
        except (OSError, StopIteration):
            continue
        stages[name] = {"seconds": _number(row, "s"), "max_rss_mib": _number(row, "max_rss")}
    return stages


def _number(row: dict[str, str], column: str) -> float | None:
    try:
        return round(float(row[column]), 3)
    except (KeyError, TypeError, ValueError):  # "NA" where Snakemake could not measure
        return None


def written_bytes(folder: Path, started: float | None) -> int:
    """The bytes of the files under a build ``folder`` that the build wrote (``started``: the
    run's start, a timestamp): not those a rerun hard-linked from an earlier build (unchanged
    tables, bucket files taken whole, the bases of its bucket files: 1.6 of a 10M update rerun's
    3.6 GB), which are older than the start and linked from elsewhere. Exact while the earlier
    build is there, as when the build completes (:func:`finish_build` records it); later, a link
    whose other end was removed counts, as does a file the build wrote in an earlier run."""
    total = 0
    for path in Path(folder).rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        st = path.stat()
        if st.st_nlink == 1 or started is None or st.st_mtime >= started:
            total += st.st_size
    return total


def finish_build(build_dir: Path) -> dict[str, Any]:
    """Write ``build.json`` (provenance, counts, timings) and point ``<results>/latest`` here.

    The pointer moves only after every stage's output exists, so ``latest`` always names a
    complete build. build.json is written atomically and on disk before ``latest`` moves; the
    pointer is replaced atomically (a new symlink of a unique name renamed over the old one), so
    two workflows finishing into one results folder each leave a whole pointer.
    """
    import datetime
    import secrets

    layout, results = BuildLayout(build_dir), results_of(build_dir)
    config = read_yaml(layout.config.read_text())
    # The settings of the latest run (the comparison's, say, may have changed since the build was
    # made); the inputs are the build's own.
    settings = _read_yaml(layout.run_config) or config
    checksums_file = results.checksums
    cache = _read_json(checksums_file) or {}
    run_config = layout.run_config
    record = {
        "build_id": build_dir.name,
        "litpath": litpath_provenance(),
        # The workflow writes run_config.yaml as the run starts (its onstart).
        "started": (
            datetime.datetime.fromtimestamp(run_config.stat().st_mtime, datetime.UTC).isoformat(timespec="seconds")
            if run_config.exists() else None
        ),
        "completed": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "inputs": config.get("resolved_inputs", []),
        "sources": source_files(settings, cache),
        "stages": stage_times(build_dir, config.get("resolved_inputs", [])),
        "config": redact_config({k: v for k, v in settings.items() if k != "resolved_inputs"}),
        "ingest": _read_json(layout.tables.counts),
        "graph": _read_json(layout.graph("full").counts),
        "solve": _read_json(layout.graph("full").summary),
        "cooccurrence": {
            "graph": _read_json(layout.graph("cooccurrence").counts),
            "solve": _read_json(layout.graph("cooccurrence").summary),
        },
        "mongo": _read_json(layout.mongo_load),
    }
    # what the build wrote, counted while the builds it linked files from are there: what a
    # forecast of the next such run scales (pipeline.builds.forecast)
    record["written_bytes"] = written_bytes(layout.root, run_config.stat().st_mtime if run_config.exists() else None)
    if cache != (_read_json(checksums_file) or {}):  # the sources' hashes, kept for the next run
        _write_atomically(checksums_file, json.dumps(cache, indent=0))
    _write_atomically(layout.record, json.dumps(record, indent=2, default=str) + "\n")
    latest = results.latest
    tmp = latest.with_name(f".latest.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    tmp.symlink_to(layout.root.relative_to(results.root))
    try:
        tmp.replace(latest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(latest.parent)
    return record


