"""``litpath describe``: where the latest build's outputs are and what to do with them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click

from pipeline.builds.layout import BuildLayout, ResultsLayout
from pipeline.cli.options import config_option
from pipeline.config import load_config


@click.command("describe")
@config_option("The workflow's config (its results_dir)", default="config/config.yaml")
def describe(config_path: Path) -> None:
    """Say where the latest build's outputs are and what to do with them."""
    click.echo(describe_latest(load_config(config_path)))


# Where `make run` keeps the state of the local MongoDB-wire and Neo4j servers (services/local),
# relative to the checkout it runs in.
LOCAL_SERVERS_STATE = Path(".local-servers")


def describe_latest(config: dict[str, Any]) -> str:
    """A short, human-readable account of the latest build and what to do next."""
    latest = ResultsLayout(config["results_dir"]).latest
    if latest.is_symlink() and not latest.exists():
        return (f"{latest} names {latest.readlink()}, which is gone (a build removed by hand?): "
                "no completed build to describe; the next build moves latest on.")  # fmt: skip
    if not latest.exists():
        return f"No completed build under {config['results_dir']}/ yet."
    record_file = BuildLayout(latest.resolve()).record
    try:
        record = _read_json(record_file)
    except ValueError as error:
        return f"{record_file} is not readable JSON ({error}): the build's record is damaged."
    if not isinstance(record, dict):
        return f"{latest} names {latest.resolve()}, which has no build record ({record_file.name}): not a completed build."
    build_dir = latest.resolve()
    layout = BuildLayout(build_dir)
    lines = ["", f"litpath build {record.get('build_id')} is complete: {build_dir}"]
    for scope, graph_record, solve in (
        ("full", record.get("graph"), record.get("solve")),
        ("cooccurrence", (record.get("cooccurrence") or {}).get("graph"), (record.get("cooccurrence") or {}).get("solve")),
    ):
        counts = (graph_record or {}).get("counts", {})
        folder = BuildLayout(build_dir).graph(scope).graph_dir
        lines.append(
            f"  {scope + ' graph:':<20}{folder}/  ({counts.get('vertices', '?')} vertices, "
            f"{counts.get('edges', '?')} edges): {_solved(solve)}"
        )
        beside = beside_the_paper(graph_record) if scope == "full" else ""
        if beside:
            lines.append(f"  {'':<20}beside the COAST paper: {beside}")
    lines += [
        f"  {'tables:':<20}{layout.tables.path}/*.parquet",
        f"  {'record:':<20}{layout.record}",
    ]
    for label, extra in (("mapping:", layout.mapping.coverage), ("compare:", layout.compare.report)):
        if extra.exists():
            lines.append(f"  {label:<20}{extra}")
    example = recorded_example(record) or example_pair(build_dir)
    lines += [
        "",
        "Serve paths over HTTP (127.0.0.1:8000, OpenAPI at /docs), in a shell that knows the servers",
        "(MongoDB for a hop's papers, Neo4j for /v1/compare):",
        *servers_env_step(),
        f"  .venv/bin/litpath serve --results-dir {shlex.quote(str(config['results_dir']))}",
    ]
    if example:
        source, target = example
        lines += [
            "then, for example:",
            f"  curl 'http://127.0.0.1:8000/v1/path?source={source}&target={target}'",
        ]
    return "\n".join(lines)


# graph_counts.json's paper_scaled keys that grow with the corpus -> what the paper calls them
_SCALED = {"abstract_vertices": "abstracts", "edges_concept_abstract": "paper–concept relations",
           "edges_abstract_abstract": "citation relations"}  # fmt: skip


def beside_the_paper(graph_record: dict[str, Any] | None) -> str:
    """The full graph's counts that grow with the corpus beside the COAST paper's, scaled to the
    build's PREDICATION rows (graph_counts.json's ``paper_scaled``, pipeline.graph.paper_figures):
    a ratio far from 1 says the build counts something else than the paper did (the mention
    source, above all). Empty for a build made before those counts were recorded."""
    scaled = (graph_record or {}).get("paper_scaled") or {}
    parts = [
        f"{name} {row['build']:,} (paper, scaled: {row['paper_scaled']:,}"
        + (f", ratio {row['ratio']:.2f})" if row.get("ratio") is not None else ")")
        for key, name in _SCALED.items()
        if (row := scaled.get(key)) and "paper_scaled" in row
    ]
    return "; ".join(parts)


def servers_env_step(state_root: Path = LOCAL_SERVERS_STATE) -> list[str]:
    """How a new shell learns the servers' addresses and passwords: from the local servers that
    `make run` started (their state is in ``state_root``), else from the user's own variables."""
    if state_root.is_dir():
        return ["  source <(.venv/bin/python -m services.local.servers env)   # their LITPATH_* variables"]
    return ["  # with LITPATH_MONGO_URI and LITPATH_NEO4J_URI, _USER, _PASSWORD set as for the run"]


def _solved(solve: dict[str, Any] | None) -> str:
    """How a graph's distances were solved, from its solve_summary.json."""
    if not solve:
        return "not solved"
    method = solve.get("method", "dense")
    seconds = ((solve.get("solver") or {}).get("seconds") or {}).get("solve")
    took = f" in {seconds:.2f} s" if isinstance(seconds, (int, float)) else ""
    if method == "dense":
        return f"dense distances.bp{took}"
    if method == "rows":
        return f"rows of {solve.get('sources', {}).get('in_graph', '?')} sources in distances.bp{took}, the rest on demand"
    return "exact paths computed on demand by the service (nothing stored)"


def recorded_example(record: dict[str, Any]) -> tuple[str, str] | None:
    """The example query the graph stage found (two concepts a path of at least two hops joins,
    ``path_index.sampled_queries.example`` of the full graph's record,
    :func:`pipeline.graph.path_index.sample_queries`); None for a build made before it did."""
    sampled = (((record.get("graph") or {}).get("path_index") or {}).get("sampled_queries")) or {}
    example = sampled.get("example")
    return (example["source"], example["target"]) if example else None


def example_pair(build_dir: Path) -> tuple[str, str] | None:
    """Two concepts of the build joined by a path of at least two hops, for the example query of
    a build without a recorded one: the first concept and the farthest concept it reaches (by
    the stored row or on demand; it opens the whole graph, 9 s at 10M calibrated predications)."""
    import numpy as np

    from pipeline.query.graph import open_graph

    graph = open_graph(build_dir, "full")
    try:
        concept_vids = np.flatnonzero(graph.is_concept)
        if len(concept_vids) < 2:
            return None
        source = int(concept_vids[0])
        row = graph.stored_row(source)
        if row is None:
            from pipeline.query import sssp

            row = sssp.rows(graph.adjacency, [source])[0]
        row = row[concept_vids]
        finite = np.isfinite(row) & (concept_vids != source)
        if not finite.any():
            return None
        # The farthest reachable concept makes a path worth looking at.
        target = int(concept_vids[finite][np.argmax(row[finite])])
        return graph.keys[source], graph.keys[target]
    finally:
        graph.close()


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None
