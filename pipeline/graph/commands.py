"""``litpath build-graph``: Parquet tables -> vertices, edges, graph.bp, graph_counts.json."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from pipeline.graph.build import build_graph, graph_config


def read_config_file(path: Path | None) -> dict:
    """A YAML or JSON config file as a dict (empty when no file is given)."""
    if path is None:
        return {}
    try:
        text = path.read_text()
        config = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise click.BadParameter(f"cannot read {path}: {error}", param_hint="--config") from error
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise click.BadParameter(f"{path}: expected a mapping at the top level", param_hint="--config")
    return config


@click.command("build-graph")
@click.option(
    "--tables",
    "tables_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of the build's Parquet tables (predications, mentions, citations, concepts, documents).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for vertices.parquet, edges.parquet, graph.bp and graph_counts.json.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML/JSON config; its 'graph' section (or the whole file) sets edge kinds and filters.",
)
@click.option(
    "--cooccurrence-out",
    "cooccurrence_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write the co-occurrence graph (concepts and concept-concept edges only, the graph "
    "the SPOKE comparison uses) to this folder.",
)
def build_graph_command(
    tables_dir: Path, out_dir: Path, config_file: Path | None, cooccurrence_dir: Path | None
) -> None:
    """Build the weighted concept--abstract graph of one build (and its co-occurrence graph)."""
    raw = read_config_file(config_file)
    try:
        graph_config(raw)  # checked here, to name the file in the message
    except ValueError as error:
        raise click.BadParameter(f"{config_file}: {error}", param_hint="--config") from error
    try:
        # The whole config, not only its graph section: build_graph also reads `resources`
        # (the memory budget and the spill folder).
        record = build_graph(tables_dir, out_dir, raw, cooccurrence_dir)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from error
    counts = record["counts"]
    click.echo(
        f"graph: {counts['vertices']} vertices ({counts['concept_vertices']} concepts, "
        f"{counts['abstract_vertices']} abstracts), {counts['edges']} edges, "
        f"digest {record['graph_digest'][:16]}, {record['timings']['total']:.2f} s -> {out_dir}"
    )
    if cooccurrence_dir is not None:
        co = record["cooccurrence"]["counts"]
        click.echo(
            f"co-occurrence graph: {co['vertices']} concepts, {co['edges']} edges, "
            f"digest {record['cooccurrence']['graph_digest'][:16]} -> {cooccurrence_dir}"
        )
    removed = {k: v for k, v in counts.items() if k.endswith(("_removed", "_merged")) and v}
    if removed:
        click.echo("filtered: " + ", ".join(f"{k}={v}" for k, v in sorted(removed.items())))
