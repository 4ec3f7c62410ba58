"""``litpath load-mongo``: one build's documents, concepts, evidence and provenance into MongoDB;
``litpath builds list|prune|rm``: which builds the results folder and the store hold, and removing
them from both (:mod:`pipeline.store.retention`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from pymongo.errors import PyMongoError

from pipeline.builds.layout import GraphFolder
from pipeline.cli.options import (
    build_id_option,
    mongo_database_option,
    mongo_uri_option,
    option,
    report_option,
    tables_dir_option,
)
from pipeline.config import read_config_file
from pipeline.config.connections import redact_uri, scrub
from pipeline.runtime.files import write_atomically
from pipeline.runtime.resources import memory_budget_bytes, spill_parent, sweep_stale_spills
from pipeline.store.evidence import build_status
from pipeline.store.mongo import load_build
from pipeline.store.store_format import KINDS


def _progress_printer(every_s: float = 5.0):
    """Progress lines with an ETA per collection loaded (pipeline.runtime.progress)."""
    from pipeline.runtime.progress import Progress

    lines: dict[str, Progress] = {}

    def progress(collection: str, written: int, total: int | None) -> None:
        line = lines.get(collection)
        if line is None:
            line = lines[collection] = Progress(f"litpath load-mongo {collection}", total, "documents", every_s=every_s)
        line.update(written)
        if total is not None and written >= total:
            line.finish()

    return progress


def _read_record(record_file: Path) -> dict:
    """A YAML/JSON provenance record (a build's config.yaml), which must be a mapping."""
    if record_file.suffix != ".json":
        return read_config_file(record_file)  # ConfigError naming the file (and line) when it is no mapping
    try:
        record = json.loads(record_file.read_text())
    except ValueError as error:
        raise click.BadParameter(f"{record_file}: not valid JSON ({error})", param_hint="--build-record") from None
    if not isinstance(record, dict):
        raise click.BadParameter(f"{record_file}: expected a mapping", param_hint="--build-record")
    return record


def _build_record(graph_dir: Path, record_file: Path | None) -> dict:
    """The provenance record: a given YAML/JSON file, else what graph_counts.json says."""
    if record_file is not None:
        return _read_record(record_file)
    counts_file = GraphFolder(graph_dir).counts
    if not counts_file.exists():
        return {}
    graph = json.loads(counts_file.read_text())
    return {
        "config": {"graph": graph.get("config", {})},
        "counts": {"graph": graph.get("counts", {})},
        "timings": {"graph": graph.get("timings", {})},
        "graph_digest": graph.get("graph_digest"),
        "weight_scheme": graph.get("weight_scheme"),
    }


def _stage_config(record: dict) -> dict | None:
    """The build's config (the record itself, or its "config"): it sets the memory budget, the
    spill folder and the sentences quoted per hop, as for the ingest, merge and graph stages."""
    return record if "resources" in record else record.get("config")


def _status_read_back(uri: str, database: str, build_id: str) -> str | None:
    """The build's ``builds`` status as a fresh connection reads it (None: no record)."""
    from pipeline.store.mongo import connect

    client = connect(uri, app="litpath-load")
    try:
        return build_status(client[database], build_id)
    finally:
        client.close()


@click.command("load-mongo")
@mongo_uri_option(
    "MongoDB URI (default $LITPATH_MONGO_URI). With a password, give it in the environment "
    "only: a command line is visible to every user of the machine.",
    required=True,
    old=("--uri",),
)
@mongo_database_option(old=("--database",))
@build_id_option("The build's id (the hash that names its folder).", required=True)
@tables_dir_option("Folder of the build's Parquet tables.")
@option(
    "--graph-dir", "graph_dir", old=("--graph",), default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The build-graph output folder (vertices.parquet, edges.parquet, graph_counts.json); needed when "
    "a kind is grouped here (no bucket file) or there is no --build-record.",
)  # fmt: skip
@click.option(
    "--build-record",
    "record_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML/JSON provenance (inputs with checksums, config, counts); default: from graph_counts.json.",
)
@click.option(
    "--batch-size", default=64, show_default=True, type=click.IntRange(min=1),
    help="Record buckets per insert at most (and 8 MB).",
)  # fmt: skip
@option(
    "--buckets-dir", "buckets_dir", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of bucket files (`litpath bucket-records`, a build's store/): the kinds found there are sent "
    "from them, the others grouped here.",
)  # fmt: skip
@option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
        help="Write only these kinds (repeatable; default: every kind not in a --loaded report).")  # fmt: skip
@click.option(
    "--complete/--partial", "complete", default=True, show_default=True,
    help="--partial writes the kinds and leaves the build loading (the workflow loads each kind as soon as "
    "its bucket file is written); --complete, with every kind written now or in a --loaded report, marks it complete.",
)
@option(
    "--loaded", "loaded_reports", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The report of a --partial load of this build (repeatable): its kinds are read back, not written again.",
)  # fmt: skip
@report_option("Write the load's counts here as JSON (the workflow's record of the load).", old=("--out",))
def load_mongo_command(
    mongo_uri, mongo_database, build_id, tables_dir, graph_dir, record_file, batch_size, buckets_dir,
    kinds, complete, loaded_reports, report_path,
) -> None:  # fmt: skip
    """Store one build in MongoDB: only the record buckets the store lacks (idempotent: a rerun leaves the same documents)."""
    from pipeline.builds.layout import bucket_file, bucket_file_record
    from pipeline.store.mongo import LoadedKind
    from pipeline.store.record_buckets import BucketFileError

    if graph_dir is None and record_file is None:
        raise click.UsageError("give --build-record or --graph-dir (whose graph_counts.json is the record)")
    loaded = _loaded_kinds(loaded_reports, build_id, mongo_database)
    kinds = tuple(kind for kind in KINDS if kind in kinds) if kinds else tuple(k for k in KINDS if k not in loaded)
    if set(kinds) & set(loaded):
        raise click.UsageError(f"{', '.join(sorted(set(kinds) & set(loaded)))}: both in --kind and in a --loaded report")
    if complete and set(KINDS) - set(kinds) - set(loaded):
        raise click.UsageError(f"--complete needs every kind: {', '.join(sorted(set(KINDS) - set(kinds) - set(loaded)))} "
                               "neither in --kind nor in a --loaded report (or load them with --partial)")  # fmt: skip
    record = _build_record(graph_dir, record_file)
    config = _stage_config(record)
    files = {}
    if buckets_dir is not None:
        files = {kind: bucket_file(buckets_dir, kind) for kind in kinds
                 if bucket_file_record(bucket_file(buckets_dir, kind)).exists()}  # fmt: skip
    grouped_here = [kind for kind in kinds if kind not in files]
    if grouped_here and graph_dir is None:
        raise click.UsageError(f"{', '.join(grouped_here)} have no bucket file: give --graph-dir to group them here")
    what = ("build" if len(kinds) == len(KINDS) else f"the {', '.join(kinds)} of build" if kinds
            else "nothing new (every kind was loaded before) for build")  # fmt: skip
    click.echo(f"loading {what} {build_id} into {redact_uri(mongo_uri)} database {mongo_database}"
               + (f"; grouping {', '.join(grouped_here)} here (no bucket file)" if grouped_here else
                  f"; from the bucket files in {buckets_dir}" if kinds else "")
               + (f"; {', '.join(loaded)} loaded before (read back)" if loaded else ""), err=True)  # fmt: skip
    started = time.perf_counter()
    try:
        counts = load_build(
            mongo_uri,
            mongo_database,
            build_id,
            tables_dir,
            graph_dir,
            record,
            batch_size=batch_size,
            progress=_progress_printer(),
            budget_bytes=memory_budget_bytes(config),
            spill_dir=spill_parent(config, (graph_dir or tables_dir).parent),
            sentences_per_hop=((config or {}).get("evidence") or {}).get("sentences_per_hop"),
            bucket_files=files,
            kinds=kinds,
            loaded={kind: LoadedKind(**value) for kind, value in loaded.items()},
            complete=complete,
        )
        # The report is the workflow's record that the build is in the store: written only once
        # the store says so too. The services believe "complete" until they read it again
        # (pipeline/store/evidence.py), so a marking lost in the server's unflushed tail must
        # fail the load here, not leave evidence unknown until someone notices.
        status = _status_read_back(mongo_uri, mongo_database, build_id) if complete else "loading"
    except (FileNotFoundError, BucketFileError) as error:
        raise click.ClickException(str(error)) from error
    except PyMongoError as error:
        # A driver message may quote parts of a URI it could not parse (a password with an
        # unescaped '/' reads as a port): scrubbed of the credentials, and no traceback.
        raise click.ClickException(
            f"MongoDB at {redact_uri(mongo_uri)}: {type(error).__name__}: {scrub(str(error), mongo_uri)}"
        ) from None
    if complete and status != "complete":
        raise click.ClickException(
            f"MongoDB at {redact_uri(mongo_uri)}: build {build_id} was marked complete, but its builds record "
            f"reads back as {'missing' if status is None else repr(status)}; the load is not recorded, run it again"
        )
    click.echo("mongo: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    if report_path is not None:
        summary = {"uri": redact_uri(mongo_uri), "database": mongo_database, "build_id": build_id, "counts": counts}
        if not complete:  # what a --loaded reads back: the kinds written and how long they took
            summary |= {"partial": True, "kinds": list(kinds), "seconds": round(time.perf_counter() - started, 3)}
        write_atomically(report_path, json.dumps(summary, indent=2, default=str) + "\n")


def _loaded_kinds(reports: tuple[Path, ...], build_id: str, database: str) -> dict[str, dict]:
    """The kinds the --partial load ``reports`` wrote, {kind: {"counts", "seconds"}}; each report
    must be a partial load of this build into this database, and name its kinds once."""
    loaded: dict[str, dict] = {}
    for path in reports:
        try:
            report = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise click.UsageError(f"{path}: not a load report ({error})") from error
        if not report.get("partial") or not isinstance(report.get("kinds"), list) or not report["kinds"]:
            raise click.UsageError(f"{path}: not the report of a --partial load")
        if (report.get("build_id"), report.get("database")) != (build_id, database):
            raise click.UsageError(f"{path}: a load of build {report.get('build_id')} into {report.get('database')}, "
                                   f"not of {build_id} into {database}")  # fmt: skip
        for kind in report["kinds"]:
            if kind in loaded:
                raise click.UsageError(f"{path}: {kind} is in two --loaded reports")
            # the report's counts are its kinds' (and the store format): each kind takes them all
            loaded[kind] = {"counts": report["counts"], "seconds": float(report["seconds"]) / len(report["kinds"])}
    return loaded


@click.command("bucket-records")
@option("--kind", "kind", required=True, type=click.Choice(KINDS),
        help="Which records: documents and papers need the tables only, concepts and evidence the graph too.")  # fmt: skip
@option("--tables-dir", "tables_dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Folder of the build's Parquet tables.")  # fmt: skip
@option(
    "--graph-dir", "graph_dir", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A build-graph output folder (needed for concepts and evidence): the full graph for the "
    "concepts' vertex ids; for the evidence, whose edges are the concept-concept edges, the full "
    "graph or the co-occurrence graph (the same edges when the full graph has that kind).",
)  # fmt: skip
@click.option(
    "--build-record", "record_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The build's config (YAML/JSON): its memory budget, spill folder and evidence settings.",
)  # fmt: skip
@option("--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
        help="The bucket file to write (a build's store/<kind>.buckets.arrow; its .json record beside it).")  # fmt: skip
@option("--reuse/--no-reuse", "reuse", default=True, show_default=True,
        help="On top of the earlier build of a merge on the delta, reuse its buckets of the records that did not change.")  # fmt: skip
def bucket_records_command(kind, tables_dir, graph_dir, record_file, out_path, reuse) -> None:
    """Group one kind of a build's store records into record buckets, for `litpath load-mongo --buckets-dir`."""
    from pipeline.runtime.progress import PERCENT, Progress
    from pipeline.store.record_buckets import GroupingSettings, group_kind

    config = _stage_config(_read_record(record_file)) if record_file is not None else None
    settings = GroupingSettings(
        budget_bytes=memory_budget_bytes(config),
        spill_dir=spill_parent(config, out_path.parent),
        sentences_per_hop=((config or {}).get("evidence") or {}).get("sentences_per_hop"),
    )
    sweep_stale_spills(settings.spill_dir)  # the evidence or papers spilled by a job that was killed
    try:
        lines: list[Progress] = []

        def progress_for(total: int | None, unit: str) -> Progress:
            lines.append(Progress(f"litpath bucket-records {kind}", total, unit))
            return lines[-1]

        counts = group_kind(kind, tables_dir, graph_dir, settings, out_path, reuse=reuse, progress_for=progress_for)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from error
    done = f"{counts[f'{kind}_buckets']:,} buckets" + (f", {counts[f'{kind}_reused_buckets']:,} of them "
                                                      "reused" if f"{kind}_reused_buckets" in counts else "")  # fmt: skip
    if lines:
        rows = counts[f"{kind}_in_build"]
        if lines[-1].unit == PERCENT:  # the line counted the work in percent, not the rows
            done += f", {rows:,} rows"
        else:  # told a batch of 256 buckets at a time: the rows of the last batch too (of all, for a small file)
            lines[-1].done = rows
        lines[-1].finish(done)
    else:  # the earlier build's file taken as it is: nothing was grouped
        click.echo(f"litpath bucket-records {kind}: {done}, {counts[f'{kind}_reuse']}", err=True)
    click.echo(f"{kind}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))


# --- litpath builds ------------------------------------------------------------------------------


# The longest a `litpath builds` store operation may take (a scan of every bucket, a compaction).
STORE_SCAN_TIMEOUT_MS = 30 * 60 * 1000


class _BuildsContext:
    """The results folder and, when MongoDB is on and reachable by a URI, the store."""

    def __init__(self, config_path: Path, mongo_uri: str | None) -> None:
        import os

        from pipeline.builds.layout import ResultsLayout
        from pipeline.config import load_config
        from pipeline.config.connections import MONGO_URI_ENV

        config = load_config(config_path)
        self.results = ResultsLayout(config["results_dir"])
        mongo = config.get("mongo", {})
        self.uri = mongo_uri or mongo.get("uri") or os.environ.get(MONGO_URI_ENV) or None
        self.database = mongo.get("database", "litpath")
        self.mongo_on = bool(mongo.get("enabled", True))
        self.enabled = self.mongo_on and self.uri is not None
        self.client = None

    def refuse_folders_alone(self, folders_only: bool) -> None:
        """A removal with MongoDB on but no URI known would remove the folders and leave the
        builds' records and buckets in the store (a plain shell has no $LITPATH_MONGO_URI: `make
        run` sets it for itself): refused, unless ``--folders-only`` says that is meant."""
        if self.mongo_on and self.uri is None and not folders_only:
            raise click.ClickException(
                "mongo.enabled is on, but no MongoDB URI is known (--mongo-uri, mongo.uri or "
                "$LITPATH_MONGO_URI; for make run's local server: source <(.venv/bin/python -m "
                "services.local.for_run --config CONFIG)): removing the folders alone would leave "
                "the builds' records and buckets in the store. Give the URI, or --folders-only to "
                "remove the folders and leave the store as it is"
            )

    def db(self):
        if not self.enabled:
            return None
        from pipeline.store.mongo import connect

        # Collecting the unused buckets and compacting scan the whole store: 9 s for the compaction
        # of a 12 GB local store (10M calibrated predications, two builds), so each operation may
        # take minutes where the other commands' 10 s bound would cut a prune short halfway.
        self.client = self.client or connect(self.uri, app="litpath-builds", socket_timeout_ms=STORE_SCAN_TIMEOUT_MS)
        return self.client[self.database]

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def store_note(self) -> str:
        store = (f"store: {redact_uri(self.uri)}/{self.database}" if self.enabled
                 else "store: not consulted (mongo.enabled is off, or no URI: --mongo-uri / $LITPATH_MONGO_URI)")  # fmt: skip
        return f"results: {self.results.root.resolve()}; {store}"


def _with_store(context: _BuildsContext, action):
    try:
        return action(context.db())
    except PyMongoError as error:
        raise click.ClickException(
            f"MongoDB at {redact_uri(context.uri)}: {type(error).__name__}: {scrub(str(error), context.uri or '')}"
        ) from None
    finally:
        context.close()


@click.group("builds")
@option("--config", "config_path", default=Path("config/config.yaml"), show_default=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="The workflow's config: its results_dir and mongo settings.")  # fmt: skip
@option("--mongo-uri", "mongo_uri", default=None,
        help="MongoDB URI (default: mongo.uri, else $LITPATH_MONGO_URI); give a password in the environment only.")  # fmt: skip
@click.pass_context
def builds(ctx: click.Context, config_path: Path, mongo_uri: str | None) -> None:
    """The builds of the results folder and the MongoDB store: list, prune, rm."""
    ctx.obj = _BuildsContext(config_path, mongo_uri)


@builds.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a table.")
@click.pass_obj
def builds_list(context: _BuildsContext, as_json: bool) -> None:
    """Every build, oldest first: its folder's size (and how much of it is files shared with other
    builds: a rerun links the earlier build's unchanged files), its status in the store, which is latest."""
    from pipeline.runtime.progress import format_bytes
    from pipeline.store.retention import list_builds

    entries = _with_store(context, lambda db: list_builds(context.results, db))
    if as_json:
        click.echo(json.dumps([e.as_dict() for e in entries], indent=2))
        return
    click.echo(context.store_note())
    for e in entries:
        folder = format_bytes(e.folder_bytes) if e.folder is not None else "no folder"
        shared = f"{format_bytes(e.shared_bytes)} shared" if e.shared_bytes else ""
        status = e.store_status or "not in the store"
        marks = ("  latest" if e.latest else "") + ("" if e.complete else "  incomplete (no build.json)")
        click.echo(f"{e.build_id}  {e.created or '?':25}  {folder:>10}  {shared:>16}  {status:16}{marks}")
    if not entries:
        click.echo(f"no builds under {context.results.builds}")


def _report_removal(report: dict) -> None:
    from pipeline.runtime.progress import format_bytes

    removed = report["removed"]
    click.echo(f"removed {len(removed)} build(s){': ' + ', '.join(removed) if removed else ''}; "
               f"{format_bytes(report['folders_bytes'])} of folders freed")  # fmt: skip
    if "buckets_deleted" in report:
        deleted = report["buckets_deleted"]
        click.echo(report.get("buckets_note") or "buckets no build lists, deleted: "
                   + ", ".join(f"{kind} {n:,}" for kind, n in deleted.items()))  # fmt: skip
    compaction = report.get("compaction")
    if compaction is not None:
        click.echo(f"store compacted: {format_bytes(compaction.get('bytesFreed', 0))} freed" if compaction["compacted"]
                   else f"store not compacted: {compaction['reason']}")  # fmt: skip


_FOLDERS_ONLY_HELP = "With MongoDB on but no URI known: remove the folders and leave the store as it is."


@builds.command("prune")
@click.option("--keep", type=click.IntRange(min=1), required=True, help="Complete builds to keep, the newest (latest always among them).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, remove nothing.")
@click.option("--folders-only", is_flag=True, help=_FOLDERS_ONLY_HELP)
@click.pass_obj
def builds_prune(context: _BuildsContext, keep: int, dry_run: bool, folders_only: bool) -> None:
    """Remove all but the newest KEEP complete builds of the results folder, from the folder and
    the store. A folder without build.json (a run may still be writing it) is left, for rm."""
    from pipeline.store.retention import list_builds, prune_candidates, remove_builds

    def prune(db):
        entries = list_builds(context.results, db)
        doomed = prune_candidates(entries, keep)
        left = [e.build_id for e in entries if e.folder is not None and not e.complete]
        if left:
            click.echo("left: " + ", ".join(left) + " (no build.json: a run may still be writing it; rm removes it)")
        if dry_run:
            click.echo("would remove: " + (", ".join(doomed) or "nothing"))
            return None
        return remove_builds(context.results, db, doomed)

    if not dry_run:
        context.refuse_folders_alone(folders_only)
    click.echo(context.store_note())
    report = _with_store(context, prune)
    if report is not None:
        _report_removal(report)


@builds.command("rm")
@click.argument("build_ids", nargs=-1, required=True)
@click.option("--folders-only", is_flag=True, help=_FOLDERS_ONLY_HELP)
@click.pass_obj
def builds_rm(context: _BuildsContext, build_ids: tuple[str, ...], folders_only: bool) -> None:
    """Remove the named builds from the results folder and the store (never the one latest names)."""
    from pipeline.store.retention import RetentionError, remove_builds

    context.refuse_folders_alone(folders_only)
    click.echo(context.store_note())
    try:
        report = _with_store(context, lambda db: remove_builds(context.results, db, list(build_ids)))
    except RetentionError as error:
        raise click.ClickException(str(error)) from None
    _report_removal(report)
