"""``litpath build-graph``: Parquet tables -> vertices, edges, graph.bp, graph_counts.json."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.options import config_option, out_option, tables_dir_option
from pipeline.config import ConfigError, load_config, validate_config
from pipeline.graph.build import build_cooccurrence_graph, build_graph


@click.command("build-graph")
@tables_dir_option(
    "Folder of the build's Parquet tables (predications, mentions, citations, concepts, documents)."
)
@out_option("Folder for vertices.parquet, edges.parquet, graph.bp and graph_counts.json.")
@config_option(
    "The build's config (YAML or JSON, checked against schemas/config.schema.yaml): its 'graph' "
    "section sets edge kinds and filters, 'resources' the memory budget; absent keys take the "
    "schema's defaults."
)
@click.option(
    "--cooccurrence-out",
    "cooccurrence_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write the co-occurrence graph (concepts and concept-concept edges only, the graph "
    "the SPOKE comparison uses) to this folder.",
)
@click.option(
    "--cooccurrence-from",
    "cooccurrence_from",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The build's co-occurrence graph, already built from these tables (--scope cooccurrence): "
    "the full graph takes its concept-concept edges instead of counting the predications again "
    "(and counts them where it was built from other tables or settings; graph_counts.json's "
    "concept_concept_edges says which).",
)
@click.option(
    "--scope",
    type=click.Choice(["full", "cooccurrence"]),
    default="full",
    show_default=True,
    help="Which graph --out receives: the full graph, or the co-occurrence graph alone (read from "
    "the predications and concepts only; the workflow builds it in its own job, so that the "
    "evidence's grouping need not wait for the full graph).",
)
def build_graph_command(
    tables_dir: Path, out_dir: Path, config_path: Path | None, cooccurrence_dir: Path | None,
    cooccurrence_from: Path | None, scope: str,
) -> None:
    """Build the weighted concept--abstract graph of one build (and its co-occurrence graph)."""
    if scope == "cooccurrence" and cooccurrence_dir is not None:
        raise click.UsageError("--cooccurrence-out goes with --scope full (with --scope cooccurrence, --out is it)")
    if cooccurrence_from is not None and (scope == "cooccurrence" or cooccurrence_dir is not None):
        raise click.UsageError("--cooccurrence-from goes with --scope full and without --cooccurrence-out")
    try:
        config = load_config(config_path) if config_path else validate_config({})
    except ConfigError as error:  # the message names the file and the key
        raise click.BadParameter(str(error), param_hint="--config") from error
    try:
        # The whole config, not only its graph section: build_graph also reads `resources`
        # (the memory budget and the spill folder).
        if scope == "cooccurrence":
            co = build_cooccurrence_graph(tables_dir, out_dir, config)
            click.echo(
                f"co-occurrence graph: {co['counts']['vertices']} concepts, {co['counts']['edges']} edges, "
                f"digest {co['graph_digest'][:16]} -> {out_dir}"
            )
            return
        record = build_graph(tables_dir, out_dir, config, cooccurrence_dir, cooccurrence_from=cooccurrence_from)
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
