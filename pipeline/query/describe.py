"""``litpath describe``: where the latest build's outputs are and what to do with them."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.options import config_option
from pipeline.config import load_config


@click.command("describe")
@config_option("The workflow's config (its results_dir)", default="config/config.yaml")
def describe(config_path: Path) -> None:
    """Say where the latest build's outputs are and what to do with them."""
    from pipeline.builds.record import describe_latest

    click.echo(describe_latest(load_config(config_path)))
