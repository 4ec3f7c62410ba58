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
@click.option("--input", "input_path", required=True, type=click.Path(exists=True), help="graph.bp")
@click.option("--output", required=True, type=click.Path(), help="distances.bp to write (dense or rows)")
@click.option("--config", "config_path", type=click.Path(exists=True), help="Build config (solver section)")
@click.option("--summary", type=click.Path(), help="Write the solve summary (method, plan, solver) here")
@click.option(
    "--scope",
    type=click.Choice(["full", "cooccurrence"]),
    default="full",
    show_default=True,
    help="Which graph this is: its method comes from solver.full_graph or solver.cooccurrence_graph",
)
@click.option("--plan", "plan_path", type=click.Path(), help="Write the plan here (default: beside graph.bp)")
@click.option(
    "--sources",
    "sources_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Vertex keys (one per line) whose rows the rows method stores (default: solver.row_sources)",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "dense", "rows", "on-demand"]),
    default=None,
    help="Override the config's method for this graph",
)
def solve(
    input_path: str, output: str, config_path: str | None, summary: str | None, scope: str,
    plan_path: str | None, sources_path: str | None, method: str | None,
) -> None:  # fmt: skip
    """Plan the solve of one graph (dense, rows or on-demand), print the plan, then solve as planned."""
    from pipeline.plan.methods import PlanError
    from pipeline.solve import SolverError
    from pipeline.solve_graph import read_keys, solve_graph

    settings = load_config(config_path)["solver"] if config_path else load_config_defaults()["solver"]
    if method:
        settings["full_graph" if scope == "full" else "cooccurrence_graph"] = method
    sources_path = sources_path or (settings.get("row_sources") if scope == "full" else None) or None
    keys = read_keys(Path(sources_path)) if sources_path else None
    try:
        result = solve_graph(
            Path(input_path), Path(output), settings, scope=scope,
            plan_path=Path(plan_path) if plan_path else Path(input_path).parent / "plan.json",
            source_keys=keys,
        )  # fmt: skip
    except PlanError as exc:
        raise click.ClickException(str(exc)) from None
    except SolverError as exc:
        raise click.ClickException(str(exc)) from None
    text = json.dumps(result, indent=2, default=str)
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
    from pipeline.compare.commands import compare, query_set_command
    from pipeline.graph.commands import build_graph_command
    from pipeline.ingest.commands import ingest, merge, synth
    from pipeline.plan.commands import calibrate_command, check_command, plan_command
    from pipeline.spoke.commands import build_mapping, load_spoke
    from pipeline.store.commands import load_mongo_command
    from services.api.commands import serve

    commands = (ingest, merge, synth, build_graph_command, load_mongo_command, load_spoke, build_mapping)
    for command in (*commands, serve, compare, query_set_command):
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
