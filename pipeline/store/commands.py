"""``litpath load-mongo``: one build's documents, concepts, evidence and provenance into MongoDB."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml
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
from pipeline.config.connections import redact_uri, scrub
from pipeline.runtime.files import write_atomically
from pipeline.runtime.resources import memory_budget_bytes, spill_parent
from pipeline.store.evidence import build_status
from pipeline.store.mongo import load_build


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


def _build_record(graph_dir: Path, record_file: Path | None) -> dict:
    """The provenance record: a given YAML/JSON file, else what graph_counts.json says."""
    if record_file is not None:
        text = record_file.read_text()
        record = json.loads(text) if record_file.suffix == ".json" else yaml.safe_load(text)
        if not isinstance(record, dict):
            raise click.BadParameter(f"{record_file}: expected a mapping", param_hint="--build-record")
        return record
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
    "--graph-dir", "graph_dir", old=("--graph",), required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The build-graph output folder (vertices.parquet, edges.parquet, graph_counts.json).",
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
@report_option("Write the load's counts here as JSON (the workflow's record of the load).", old=("--out",))
def load_mongo_command(
    mongo_uri, mongo_database, build_id, tables_dir, graph_dir, record_file, batch_size, report_path
) -> None:
    """Store one build in MongoDB: only the record buckets the store lacks (idempotent: a rerun leaves the same documents)."""
    record = _build_record(graph_dir, record_file)
    # The build's config (the record itself, or its "config") sets the memory budget and the
    # spill folder, as for the ingest, merge and graph stages.
    config = record if "resources" in record else record.get("config")
    click.echo(f"loading build {build_id} into {redact_uri(mongo_uri)} database {mongo_database}", err=True)
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
            spill_dir=spill_parent(config, graph_dir.parent),
        )
        # The report is the workflow's record that the build is in the store: written only once
        # the store says so too. The services believe "complete" until they read it again
        # (pipeline/store/evidence.py), so a marking lost in the server's unflushed tail must
        # fail the load here, not leave evidence unknown until someone notices.
        status = _status_read_back(mongo_uri, mongo_database, build_id)
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from error
    except PyMongoError as error:
        # A driver message may quote parts of a URI it could not parse (a password with an
        # unescaped '/' reads as a port): scrubbed of the credentials, and no traceback.
        raise click.ClickException(
            f"MongoDB at {redact_uri(mongo_uri)}: {type(error).__name__}: {scrub(str(error), mongo_uri)}"
        ) from None
    if status != "complete":
        raise click.ClickException(
            f"MongoDB at {redact_uri(mongo_uri)}: build {build_id} was marked complete, but its builds record "
            f"reads back as {'missing' if status is None else repr(status)}; the load is not recorded, run it again"
        )
    click.echo("mongo: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    if report_path is not None:
        summary = {"uri": redact_uri(mongo_uri), "database": mongo_database, "build_id": build_id, "counts": counts}
        write_atomically(report_path, json.dumps(summary, indent=2, default=str) + "\n")
