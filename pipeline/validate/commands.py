"""``litpath validate-slice``: the time-sliced validation of a slice build against a later one."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.builds.layout import SCOPES, BuildLayout
from pipeline.cli.options import build_dir_option
from pipeline.validate.time_slice import DEFAULT_SOURCES, PRECISION_KS


@click.command("validate-slice")
@build_dir_option("The time slice: a build made with ingest.until_year.")
@click.option(
    "--later-build-dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A build of later literature (the same inputs without the cut, or a later cut).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for validation.json, validation.md and roc.png [default: <slice build>/validation].",
)
@click.option("--graph", "scope", type=click.Choice(SCOPES), default="cooccurrence", show_default=True)
@click.option(
    "--sources",
    type=click.IntRange(min=1),
    default=DEFAULT_SOURCES,
    show_default=True,
    help="Concepts whose pairs are scored (all pairs when the slice has no more concepts).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sources' draw.")
def validate_slice_command(
    build_dir: Path, later_build_dir: Path, out_dir: Path | None, scope: str, sources: int, seed: int
) -> None:
    """Rank the concept pairs not adjacent at the slice's year by their path cost in the slice,
    against the pairs a later build made adjacent: ROC AUC and precision at k."""
    from pipeline.validate.report import write_report
    from pipeline.validate.time_slice import validate_slice

    try:
        record = validate_slice(
            build_dir, later_build_dir, scope=scope, sources=sources, seed=seed, ks=PRECISION_KS
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    folder = write_report(record, out_dir or BuildLayout(build_dir).validation.path)
    auc = "n/a" if record["roc_auc"] is None else f"{record['roc_auc']:.3f}"
    click.echo(
        f"litpath validate-slice: up to {record['until_year']}: {record['candidates']:,} candidate pairs, "
        f"{record['positives']:,} adjacent later; ROC AUC {auc}; report in {folder.report}"
    )
