"""Build identity: which input files a run reads, their checksums, and the build id.

Every per-file ingest output is keyed by the file's content hash, so a rerun that adds
a dump file ingests only that file. A build folder is keyed by the hash of all input
checksums and of the settings that change its results, so a rerun with new dumps or new
settings writes a new build and never overwrites an earlier one; a setting that changes only
how a stage computes (solver ranks and threads, the memory budget) keeps the build id, and the
workflow rebuilds nothing for it.
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

import click

from pipeline.cli.options import build_id_option, config_option, option
from pipeline.config import ConfigError, load_config
from pipeline.config.connections import redact_config
from pipeline.ingest.registry import KINDS
from pipeline.runtime.files import fsync_dir as _fsync_dir
from pipeline.runtime.files import write_atomically as _write_atomically

# The input kinds are the ingest readers' (one reader per kind).
INPUT_KINDS = KINDS

# Config sections whose values change what a build contains. `resources` (the memory budget and
# the spill folder) is not one: the stages give the same tables and graph within any budget.
BUILD_SECTIONS = ("ingest", "graph", "solver")
# Settings of those sections that change how the solve runs, not what it computes: every
# grid, tile, broadcast, rank and thread count and backend gives the exact shortest distances
# (the min over the same paths; the order of the float32 additions along a path may differ, so
# two layouts can differ in the last bit, within the solver's --validate tolerance);
# validate_rows only re-checks rows. Changing one keeps the build id, so nothing is rebuilt.
HOW_SETTINGS: dict[str, tuple[str, ...]] = {
    # The ceiling decides whether a build is made, not what it holds.
    "ingest": ("max_quarantine_fraction",),
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
RESULTS_FORMAT = 3

# Where `make run` keeps the state of the local MongoDB-wire and Neo4j servers (services/local),
# relative to the checkout it runs in.
LOCAL_SERVERS_STATE = Path(".local-servers")


@dataclass(frozen=True)
class InputFile:
    kind: str
    path: Path
    sha256: str
    order: int  # position among the inputs of its kind (PubMed updates apply in this order)

    @property
    def key(self) -> str:
        """Stable folder name of this file's ingest output: readable name + content hash."""
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", self.path.name)
        return f"{stem}-{self.sha256[:12]}"


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
            matches = sorted(glob.glob(os.path.expanduser(pattern)))
            if not matches:
                raise FileNotFoundError(f"inputs.{kind}: no file matches {pattern!r}")
            paths.extend(Path(m) for m in matches)
        if kind == "pubmed_xml":
            # Baseline files sort before update files in NLM's naming (pubmed26n0001 <
            # pubmed26n1335); the documented order is file-name order.
            paths.sort(key=lambda p: p.name)
        seen: set[Path] = set()
        for order, path in enumerate(p for p in paths if not (p in seen or seen.add(p))):
            files.append(InputFile(kind, path, sha256_of_file(path, cache), order))
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        # Every Slurm job parses the workflow again, so several processes may write at once:
        # each through its own temporary file, renamed atomically.
        tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=0))
        tmp.replace(cache_file)
    return files


def build_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a build id hashes: :data:`BUILD_SECTIONS` without :data:`HOW_SETTINGS`."""
    return {
        section: {
            key: value
            for key, value in (config.get(section) or {}).items()
            if key not in HOW_SETTINGS.get(section, ())
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
    import yaml

    return yaml.safe_load(path.read_text()) if path.exists() else None


def litpath_provenance() -> dict[str, Any]:
    """Which litpath made a build: its version, the results format (:data:`RESULTS_FORMAT`) and,
    when it runs from a git checkout, the commit and whether the checkout had changes."""
    import subprocess

    from pipeline import __version__
    from pipeline.config import REPO_ROOT

    record: dict[str, Any] = {"version": __version__, "results_format": RESULTS_FORMAT, "commit": None, "dirty": None}
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True,
                                  timeout=30, check=True).stdout.strip()  # fmt: skip

        record["commit"] = git("rev-parse", "HEAD")
        # Tracked files changed (untracked ones, results and caches among them, do not count).
        record["dirty"] = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
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

    logs = build_dir.parent.parent / "logs"
    files = sorted((logs / build_dir.name).glob("*.benchmark.tsv"))
    names = [f.name.removesuffix(".benchmark.tsv") for f in files]
    # The SPOKE load is not a build's (one Neo4j serves every build); its last run's figures.
    if (logs / "spoke" / "load.benchmark.tsv").is_file():
        files.append(logs / "spoke" / "load.benchmark.tsv")
        names.append("spoke/load")
    for entry in inputs:
        key = InputFile(entry["kind"], Path(entry["path"]), entry["sha256"], 0).key
        files.append(logs / "ingest" / entry["kind"] / f"{key}.benchmark.tsv")
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


def finish_build(build_dir: Path) -> dict[str, Any]:
    """Write ``build.json`` (provenance, counts, timings) and point ``<results>/latest`` here.

    The pointer moves only after every stage's output exists, so ``latest`` always names a
    complete build. build.json is written atomically and on disk before ``latest`` moves; the
    pointer is replaced atomically (a new symlink of a unique name renamed over the old one), so
    two workflows finishing into one results folder each leave a whole pointer.
    """
    import datetime
    import secrets

    import yaml

    config = yaml.safe_load((build_dir / "config.yaml").read_text())
    # The settings of the latest run (the comparison's, say, may have changed since the build was
    # made); the inputs are the build's own.
    settings = _read_yaml(build_dir / "run_config.yaml") or config
    checksums_file = build_dir.parent.parent / ".checksums.json"
    cache = _read_json(checksums_file) or {}
    run_config = build_dir / "run_config.yaml"
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
        "ingest": _read_json(build_dir / "tables" / "counts.json"),
        "graph": _read_json(build_dir / "graph" / "graph_counts.json"),
        "solve": _read_json(build_dir / "solve_summary.json"),
        "cooccurrence": {
            "graph": _read_json(build_dir / "cooccurrence" / "graph_counts.json"),
            "solve": _read_json(build_dir / "cooccurrence" / "solve_summary.json"),
        },
        "mongo": _read_json(build_dir / "mongo_load.json"),
    }
    if cache != (_read_json(checksums_file) or {}):  # the sources' hashes, kept for the next run
        _write_atomically(checksums_file, json.dumps(cache, indent=0))
    _write_atomically(build_dir / "build.json", json.dumps(record, indent=2, default=str) + "\n")
    latest = build_dir.parent.parent / "latest"
    tmp = latest.with_name(f".latest.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    tmp.symlink_to(Path("builds") / build_dir.name)
    try:
        tmp.replace(latest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(latest.parent)
    return record


def describe_latest(config: dict[str, Any]) -> str:
    """A short, human-readable account of the latest build and what to do next."""
    latest = Path(config["results_dir"]) / "latest"
    if not latest.exists():
        return f"No completed build under {config['results_dir']}/ yet."
    record = _read_json(latest / "build.json") or {}
    build_dir = latest.resolve()
    lines = ["", f"litpath build {record.get('build_id')} is complete: {build_dir}"]
    for scope, graph_record, solve in (
        ("full", record.get("graph"), record.get("solve")),
        ("cooccurrence", (record.get("cooccurrence") or {}).get("graph"), (record.get("cooccurrence") or {}).get("solve")),
    ):
        counts = (graph_record or {}).get("counts", {})
        folder = build_dir / ("graph" if scope == "full" else "cooccurrence")
        lines.append(
            f"  {scope + ' graph:':<20}{folder}/  ({counts.get('vertices', '?')} vertices, "
            f"{counts.get('edges', '?')} edges): {_solved(solve)}"
        )
    lines += [
        f"  {'tables:':<20}{build_dir / 'tables'}/*.parquet",
        f"  {'record:':<20}{build_dir / 'build.json'}",
    ]
    for extra in ("mapping/coverage.md", "compare/report.html"):
        if (build_dir / extra).exists():
            lines.append(f"  {extra.split('/')[0] + ':':<20}{build_dir / extra}")
    example = example_pair(build_dir)
    lines += [
        "",
        "Serve paths over HTTP (127.0.0.1:8000, OpenAPI at /docs), in a shell that knows the servers",
        "(MongoDB for a hop's papers, Neo4j for /v1/compare):",
        *servers_env_step(),
        f"  .venv/bin/litpath serve --results-dir {config['results_dir']}",
    ]
    if example:
        source, target = example
        lines += [
            "then, for example:",
            f"  curl 'http://127.0.0.1:8000/v1/path?source={source}&target={target}'",
        ]
    return "\n".join(lines)


def servers_env_step(state_root: Path = LOCAL_SERVERS_STATE) -> list[str]:
    """How a new shell learns the servers' addresses and passwords: from the local servers that
    `make run` started (their state is in ``state_root``), else from the user's own variables."""
    if state_root.is_dir():
        return ["  source <(.venv/bin/python -m services.local.servers env)   # their LITPATH_* variables"]
    return ["  # with LITPATH_MONGO_URI and LITPATH_NEO4J_URI, _USER, _PASSWORD set as for the run"]


def _solved(solve: dict[str, Any] | None) -> str:
    """How a graph's distances were solved, from its solve_summary.json."""
    if not solve:
        return "not solved"
    method = solve.get("method", "dense")
    seconds = ((solve.get("solver") or {}).get("seconds") or {}).get("solve")
    took = f" in {seconds:.2f} s" if isinstance(seconds, (int, float)) else ""
    if method == "dense":
        return f"dense distances.bp{took}"
    if method == "rows":
        return f"rows of {solve.get('sources', {}).get('in_graph', '?')} sources in distances.bp{took}, the rest on demand"
    return "exact paths computed on demand by the service (nothing stored)"


def example_pair(build_dir: Path) -> tuple[str, str] | None:
    """Two concepts of the build joined by a path of at least two hops, for the example query:
    the first concept and the farthest concept it reaches (by the stored row or on demand)."""
    import numpy as np

    from pipeline.query.graph import open_graph

    graph = open_graph(build_dir, "full")
    try:
        concept_vids = np.flatnonzero(graph.is_concept)
        if len(concept_vids) < 2:
            return None
        source = int(concept_vids[0])
        row = graph.stored_row(source)
        if row is None:
            from pipeline.query import sssp

            row = sssp.rows(graph.adjacency, [source])[0]
        row = row[concept_vids]
        finite = np.isfinite(row) & (concept_vids != source)
        if not finite.any():
            return None
        # The farthest reachable concept makes a path worth looking at.
        target = int(concept_vids[finite][np.argmax(row[finite])])
        return graph.keys[source], graph.keys[target]
    finally:
        graph.close()
