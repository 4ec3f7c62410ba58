"""``litpath merge``: the per-file ingest folders of a build into its tables
(:func:`pipeline.merge.merge_ingested`), after the quarantine ceiling is checked again."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.builds.layout import BuildLayout, TableFolder
from pipeline.builds.record import earlier_build
from pipeline.cli.options import config_option, out_option
from pipeline.config import default_of, read_config_file
from pipeline.ingest.base import IngestError
from pipeline.ingest.run import DEFAULT_MAX_QUARANTINE_FRACTION, check_quarantine
from pipeline.merge import MENTION_SOURCES, merge_ingested


@click.command("merge")
@out_option("Folder for the merged tables.", old=("--out-dir",))
@config_option("YAML config; its 'ingest' section (or the top level) is passed to the merge.")
@click.option(
    "--mention-source",
    type=click.Choice(MENTION_SOURCES),
    default=None,
    help="Overrides the config's mention_source.",
)
@click.option(
    "--previous-build",
    default="none",
    show_default=True,
    help="An earlier complete build whose tables this merge brings up to date on the delta (its inputs: "
    "some of FILE_DIRS, in order; same settings), or 'auto': the best such build beside the build --out "
    "belongs to, unless the config's ingest.incremental is false. The tables equal a full merge's.",
)
@click.argument(
    "file_dirs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, file_okay=False)
)
def merge(
    out_dir: Path,
    config_path: Path | None,
    mention_source: str | None,
    previous_build: str,
    file_dirs: tuple[Path, ...],
) -> None:
    """Merge per-file ingest folders FILE_DIRS (in input order) into build-level tables."""
    config: dict = {}
    if config_path is not None:
        loaded = read_config_file(config_path)  # one line naming the file, not a traceback
        config = dict(loaded.get("ingest", loaded))
        if "resources" in loaded:  # the memory budget (not an ingest setting)
            config["resources"] = loaded["resources"]
    if mention_source:
        config["mention_source"] = mention_source
    previous = _previous_tables(previous_build, out_dir, config.pop("incremental", default_of("ingest.incremental")))
    # The ceiling again, at the build's value: a file ingested (and cached) under a higher one
    # must not pass into a build that asks for less.
    ceiling = config.pop("max_quarantine_fraction", DEFAULT_MAX_QUARANTINE_FRACTION)
    for folder in file_dirs:
        counts_file = TableFolder(folder).counts
        if counts_file.is_file():
            check_quarantine(json.loads(counts_file.read_text()), ceiling, TableFolder(folder).quarantine)
    try:
        counts = merge_ingested(list(file_dirs), out_dir, config, previous=previous)
    except IngestError as exc:
        raise click.ClickException(str(exc)) from exc
    # The whole record is counts.json; the terminal (and the workflow's log) gets one line.
    quarantined = counts["rows_quarantined"] + counts["merge_quarantined"]
    click.echo(
        f"litpath merge: {counts['rows_read']:,} rows of {len(counts['files'])} files, {quarantined:,} quarantined"
        + (f" (in {TableFolder(out_dir).quarantine})" if quarantined else "")
        + f"; concept mentions from {counts['mention_source']}; counts in {TableFolder(out_dir).counts}"
    )


def _previous_tables(previous_build: str, out_dir: Path, incremental: bool) -> Path | None:
    """The tables folder ``--previous-build`` names: none, a build folder, or ``auto``
    (:func:`~pipeline.builds.record.earlier_build` of the build whose tables folder is ``out_dir``)."""
    if previous_build == "none":
        return None
    if previous_build != "auto":
        folder = BuildLayout(Path(previous_build)).tables
        if not folder.counts.exists():
            raise click.BadParameter(f"{folder.counts} does not exist: not a complete build", param_hint="--previous-build")
        return folder.path
    build = BuildLayout(Path(out_dir).parent)
    if not incremental or Path(build.tables.path).resolve() != Path(out_dir).resolve():
        return None
    earlier = earlier_build(build.root)
    if earlier is not None:
        click.echo(f"litpath merge: on top of build {earlier.name} (ingest.incremental)", err=True)
    return None if earlier is None else BuildLayout(earlier).tables.path
