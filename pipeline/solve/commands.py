"""``litpath solve``: plan one graph, print and record the plan, then solve it as planned
(:mod:`pipeline.solve.stage`); its summary goes to a file and the terminal gets one line."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.builds.layout import GraphFolder
from pipeline.cli.options import config_option, input_option, option
from pipeline.config import load_config
from pipeline.runtime.files import write_atomically


@click.command("solve")
@input_option("graph.bp", exists=True, dir_okay=True)
# distances.bp is one artifact the caller names (an ADIOS2 BP5 "file", a folder on disk only as
# BP5's own layout), written only when the plan stores distances, beside files solve does not own
# (graph.bp's folder, or the build's top); so not `--out`, the folder a command writes into, but
# a single output named for what it holds, like --summary and --plan. apsp-fw's own --output stays.
@option(
    "--distances", "distances_path", old=("--output",), required=True, type=click.Path(path_type=Path),
    help="distances.bp to write (dense or rows)",
)  # fmt: skip
@config_option("Build config (solver section)")
@click.option("--summary", type=click.Path(dir_okay=False), help="Write the solve summary (method, plan, solver) here")
@click.option(
    "--scope",
    type=click.Choice(["full", "cooccurrence"]),
    default="full",
    show_default=True,
    help="Which graph this is: its method comes from solver.full_graph or solver.cooccurrence_graph",
)
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False), help="Write the plan here (default: beside graph.bp)")
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
@click.option(
    "--ranks",
    type=click.IntRange(min=1),
    default=None,
    help="MPI ranks for this solve instead of solver.ranks (the process grid then chosen to fit them); "
    "the workflow gives a solve that can only be small one core (pipeline.solve.stage.solve_cores)",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Solve from the start: keep neither distances of this graph nor checkpoints (solver.reuse: false)",
)
def solve(
    input_path: Path, distances_path: Path, config_path: Path | None, summary: str | None, scope: str,
    plan_path: str | None, sources_path: str | None, method: str | None, ranks: int | None, fresh: bool,
) -> None:  # fmt: skip
    """Plan the solve of one graph (dense, rows or on-demand), print the plan, then solve as planned."""
    from pipeline.solve.stage import read_keys, solve_graph

    settings = load_config(config_path)["solver"] if config_path else load_config_defaults()["solver"]
    if method:
        settings["full_graph" if scope == "full" else "cooccurrence_graph"] = method
    if ranks is not None and ranks != settings.get("ranks"):
        settings["ranks"], settings["grid"] = ranks, "auto"  # a grid of the configured ranks would not fit
    sources_path = sources_path or (settings.get("row_sources") if scope == "full" else None) or None
    keys = read_keys(Path(sources_path)) if sources_path else None
    result = solve_graph(
        input_path, distances_path, settings, scope=scope,
        plan_path=Path(plan_path) if plan_path else GraphFolder(input_path.parent).plan,
        source_keys=keys, fresh=fresh,
    )  # fmt: skip
    text = json.dumps(result, indent=2, default=str)
    if summary:
        write_atomically(Path(summary), text + "\n")
        # The record is in the file; the terminal (and the workflow's log) gets one line.
        click.echo(f"{describe_solve(result)}; summary in {summary}")
    else:
        click.echo(text)


def describe_solve(result: dict) -> str:
    """One line for a solve summary: what was stored for which graph, how fast, whether checked."""
    head = f"litpath solve: {result['scope']} graph, n = {result['n']:,}: "
    if result.get("reused"):
        return head + f"kept the {result['method']} distances already stored for this graph"
    if result["method"] == "on-demand":
        return head + "on-demand (nothing stored; the service computes exact paths per query)"
    solver = result.get("solver") or {}
    seconds = (solver.get("seconds") or {}).get("solve")
    took = f" in {seconds:.2f} s" if isinstance(seconds, (int, float)) else ""
    if result["method"] == "rows":
        return head + f"rows of {result['sources']['in_graph']:,} sources{took}"
    rate = solver.get("semiring_gflops")
    checked = solver.get("validate")
    return head + (
        f"dense (grid {solver.get('grid')}, tile {solver.get('tile')}){took}"
        + (f", {rate:.1f} GF/s" if isinstance(rate, (int, float)) else "")
        + (f", {checked['rows']} rows validated" if checked else "")
    )


def load_config_defaults() -> dict:
    from pipeline.config import validate_config

    return validate_config({})
