"""The commands of the build record: ``finish-build`` (build.json and ``latest``) and ``schemas``
(the published table and API documents). ``write-build-config`` is in :mod:`pipeline.builds.record`."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.builds.layout import BuildLayout, results_of
from pipeline.cli.options import build_dir_option


@click.command("finish-build")
@build_dir_option("The build folder (results/builds/<id>)")
def finish_build(build_dir: Path) -> None:
    """Write the build record (build.json) and point results/latest at this build, once its
    tables, both graphs and their solves are there (the workflow's build_record rule waits for
    them; by hand, on a folder without them, latest would name an incomplete build)."""
    from pipeline.builds.record import finish_build as finish

    layout = BuildLayout(build_dir)
    needed = [layout.tables.counts, *(f for scope in ("full", "cooccurrence")
                                      for f in (layout.graph(scope).counts, layout.graph(scope).summary))]  # fmt: skip
    missing = [str(path.relative_to(layout.root)) for path in needed if not path.exists()]
    if missing:
        raise click.ClickException(
            f"{build_dir} is not a complete build ({', '.join(missing)} missing): latest is left as it is"
        )
    record = finish(build_dir)
    click.echo(f"litpath finish-build: build {record['build_id']} recorded in {BuildLayout(build_dir).record}; "
               f"{results_of(build_dir).latest} points at it")  # fmt: skip


@click.command("schemas")
def schemas() -> None:
    """Rewrite schemas/tables/*.json, and the plugins' documents (the API's openapi.json), from the code."""
    from pipeline.builds.schemas_export import write_documents

    written = write_documents()
    click.echo("\n".join(f"wrote {p}" for p in written) or "schemas are up to date")
