"""The `litpath` command line: one entry point whose sub-commands the workflow rules call."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pipeline.config import ConfigError, load_config


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """litpath: literature knowledge graph -> all-pairs shortest paths -> SPOKE comparison."""


@cli.command()
@click.option("--input", "input_path", required=True, type=click.Path(exists=True), help="graph.bp or .mtx")
@click.option("--output", required=True, type=click.Path(), help="distances.bp to write")
@click.option("--config", "config_path", type=click.Path(exists=True), help="Build config (solver section)")
@click.option("--summary", type=click.Path(), help="Write the solver's JSON summary here")
def solve(input_path: str, output: str, config_path: str | None, summary: str | None) -> None:
    """Run the distributed Floyd-Warshall solver (mpirun with the configured ranks)."""
    from pipeline.plan.auto import resolve_auto
    from pipeline.solve import run_solver, vertex_count

    settings = load_config(config_path)["solver"] if config_path else load_config_defaults()["solver"]
    # `auto` grid, tile, broadcast and look-ahead come from the performance model (HyPerMod).
    plan = resolve_auto(
        vertex_count(input_path),
        settings["ranks"],
        settings["grid"],
        settings["tile"],
        settings["broadcast"],
        None,
        lookahead=settings["lookahead"],
        threads=settings["threads"],
    )
    settings.update(
        grid=plan["grid"], tile=plan["tile"], broadcast=plan["broadcast"], lookahead=plan["lookahead"]
    )
    result = run_solver(
        input_path,
        output,
        ranks=settings["ranks"],
        grid=settings["grid"],
        tile=settings["tile"],
        broadcast=settings["broadcast"],
        chunk_bytes=settings["chunk_bytes"],
        lookahead=settings["lookahead"],
        threads=settings["threads"],
        backend=settings["backend"],
        validate_rows=settings["validate_rows"],
    )
    result["plan"] = plan
    text = json.dumps(result, indent=2)
    if summary:
        Path(summary).write_text(text + "\n")
    click.echo(text)


def load_config_defaults() -> dict:
    from pipeline.config import validate_config

    return validate_config({})


@cli.command("finish-build")
@click.option("--build-dir", required=True, type=click.Path(exists=True, file_okay=False))
def finish_build(build_dir: str) -> None:
    """Write the build record (build.json) and point results/latest at this build."""
    from pipeline.buildinfo import finish_build as finish

    record = finish(Path(build_dir))
    click.echo(json.dumps(record, indent=2))


@cli.command()
@click.option("--config", "config_path", default="config/config.yaml", type=click.Path(exists=True))
def describe(config_path: str) -> None:
    """Say where the latest build's outputs are and what to do with them."""
    from pipeline.buildinfo import describe_latest

    click.echo(describe_latest(load_config(config_path)))


@cli.command()
def schemas() -> None:
    """Rewrite schemas/tables/*.json and schemas/openapi.json from the code."""
    from pipeline.schemas_export import write_documents

    written = write_documents()
    click.echo("\n".join(f"wrote {p}" for p in written) or "schemas are up to date")


def _register_area_commands() -> None:
    """Sub-commands that live next to their stage's code."""
    from pipeline.compare.commands import compare
    from pipeline.graph.commands import build_graph_command
    from pipeline.ingest.commands import ingest, merge, synth
    from pipeline.plan.commands import calibrate_command, check_command, plan_command
    from pipeline.spoke.commands import build_mapping, load_spoke
    from pipeline.store.commands import load_mongo_command
    from services.api.commands import serve

    commands = (ingest, merge, synth, build_graph_command, load_mongo_command, load_spoke, build_mapping)
    for command in (*commands, serve, compare):
        cli.add_command(command)
    cli.add_command(plan_command, "plan")
    cli.add_command(calibrate_command, "plan-calibrate")
    cli.add_command(check_command, "plan-check")


def main() -> None:
    _register_area_commands()
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (ConfigError, FileNotFoundError, PermissionError) as exc:
        click.echo(f"litpath: error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
