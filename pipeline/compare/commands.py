"""``litpath compare``: classify the literature paths of a query set against SPOKE and report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from pipeline.spoke.commands import neo4j_options
from pipeline.store.neo4j import Neo4jSettings, Neo4jUnavailable, open_driver


@click.command("compare")
@click.option(
    "--build",
    "build_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Build folder (results/builds/<id> or results/latest)",
)
@click.option(
    "--mapping",
    "mapping_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="CUI -> SPOKE mapping (cui_spoke_mapping.parquet or .csv)",
)
@click.option(
    "--queries",
    "queries_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Query set: CUIs or SPOKE identifiers, one per line, or CSV with cui/spoke_identifier",
)
@click.option(
    "--hops",
    default=1,
    show_default=True,
    type=click.IntRange(1, 4),
    help="SPOKE hop limit h: a hop is connected when SPOKE joins the two concepts within h relationships",
)
@click.option(
    "--pair-hops",
    default=None,
    type=click.IntRange(1, 4),
    help="Hop limit for pairs with no literature path (scenario 4); default: --hops",
)
@click.option(
    "--pairs",
    "pair_mode",
    default="unordered",
    show_default=True,
    type=click.Choice(["ordered", "unordered"]),
    help="All ordered or unordered pairs of the query set",
)
@click.option(
    "--mongo-uri",
    default=None,
    help="MongoDB evidence store (default $LITPATH_MONGO_URI; none: documents of direct hops unknown)",
)
@click.option("--mongo-database", default="litpath", show_default=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder")
@neo4j_options
def compare(
    build_dir: str, mapping_path: str, queries_path: str, hops: int, pair_hops: int | None, pair_mode: str,
    mongo_uri: str | None, mongo_database: str, out_dir: str, neo4j: Neo4jSettings,
) -> None:  # fmt: skip
    """Classify literature paths against SPOKE (scenarios 1, 2a, 2b, 3a, 3b, 3c, 4) and write the report."""
    from pipeline.compare.classify import Comparator
    from pipeline.compare.literature import open_build
    from pipeline.compare.report import write_report
    from pipeline.compare.run import read_query_set, run_comparison
    from pipeline.compare.spoke import CuiMapping, SpokeGraph

    try:
        mapping = CuiMapping.from_file(mapping_path)
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--mapping") from None
    try:
        query = read_query_set(queries_path, mapping)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(str(exc), param_hint="--queries") from None
    try:
        build = open_build(build_dir)
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--build") from None

    mongo_client = None
    mongo_uri = mongo_uri or os.environ.get("LITPATH_MONGO_URI") or None
    if mongo_uri:
        from pymongo import MongoClient

        mongo_client = MongoClient(mongo_uri, serverSelectionTimeoutMS=3000, connectTimeoutMS=3000)
    try:
        with open_driver(neo4j) as driver:
            spoke = SpokeGraph(driver, database=neo4j.database, naming=neo4j.naming, where=neo4j.describe())
            comparator = Comparator(mapping, spoke, hops=hops, pair_hops=pair_hops)
            run = run_comparison(
                build, mapping, comparator, query, ordered=pair_mode == "ordered",
                mongo_db=None if mongo_client is None else mongo_client[mongo_database],
                settings={"mapping_file": str(Path(mapping_path).resolve()), "neo4j": neo4j.describe()},
            )  # fmt: skip
    except Neo4jUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if mongo_client is not None:
            mongo_client.close()
    names = {key: build.name_of(key) for comp in run.comparisons for key in comp.concepts}
    build.close()
    paths = write_report(run, out_dir, names)
    summary = {"pairs": len(run.comparisons), "counts": run.counts(), "neo4j_round_trips": run.round_trips,
               "outputs": {k: str(v) for k, v in paths.items()}}  # fmt: skip
    from pipeline.compare.report import no_mapped_concepts

    if no_mapped_concepts(run):
        click.echo("litpath compare: no concept of the query set maps to a SPOKE node in Neo4j", err=True)
    click.echo(json.dumps(summary, indent=2))


__all__ = ["compare"]
