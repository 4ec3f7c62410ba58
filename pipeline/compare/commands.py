"""``litpath query-set`` and ``litpath compare``: the query set, then its literature paths
classified against SPOKE and the report."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pipeline.cli.options import (
    build_dir_option,
    mongo_database_option,
    mongo_uri_option,
    neo4j_options,
    out_option,
)
from pipeline.store.neo4j import Neo4jSettings, Neo4jUnavailable, open_driver

SCENARIO4_CAP_HELP = (
    "Safety cap of the SPOKE search for pairs with no literature path (scenario 4: 'path exists in SPOKE', "
    "no bound in the paper); beyond it the pair is 'none'"
)


def query_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--queries and the SPOKE neighbourhood options (--seed ...): what makes a query set."""

    @click.option(
        "--queries",
        "queries_path",
        type=click.Path(exists=True, dir_okay=False),
        help="Query set: CUIs or SPOKE identifiers, one per line; CSV with cui/spoke_identifier; or query_set.json",
    )
    @click.option("--seed", help="Also take the SPOKE nodes around this node (identifier, e.g. DOID:0080600)")
    @click.option("--seed-label", help="Label of the seed node (faster; empty: any label)")
    @click.option(
        "--seed-hops",
        type=click.IntRange(1, 3),
        default=1,
        show_default=True,
        help="Relationships from the seed",
    )
    @click.option(
        "--seed-labels",
        multiple=True,
        default=("Disease", "Protein"),
        show_default=True,
        help="Labels of the nodes taken (repeatable)",
    )
    @click.option(
        "--seed-limit",
        type=click.IntRange(min=1),
        default=500,
        show_default=True,
        help="At most this many nodes, in the order: distance, support (shortest paths from the seed), label, "
        "identifier; the record says how many were cut",
    )
    @click.option(
        "--seed-cutoff",
        "seed_cutoffs",
        multiple=True,
        help="Edge threshold of the neighbourhood, TYPE[|TYPE].property>=number (e.g. "
        "INTERACTS_PiP.confidence>=0.7), as SPOKE's Neighborhood Explorer; repeatable",
    )
    @functools.wraps(command)
    def wrapper(
        *args: Any, seed_labels: tuple[str, ...], seed_cutoffs: tuple[str, ...], **kwargs: Any
    ) -> Any:
        from pipeline.compare.spoke import EdgeCutoff

        try:
            cutoffs = [EdgeCutoff.parse(text) for text in seed_cutoffs]
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--seed-cutoff") from None
        return command(*args, seed_labels=list(seed_labels), seed_cutoffs=cutoffs, **kwargs)

    return wrapper


def spoke_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """How SPOKE is read: the relationship filter and the obsolete-node property."""

    @click.option(
        "--allow-relationships",
        default="",
        help="Only these SPOKE relationship types (comma-separated) in hop checks, scenario 4 and the neighbourhood",
    )
    @click.option(
        "--deny-relationships",
        default="",
        help="Every SPOKE relationship type but these (comma-separated), e.g. ENCODES_OeP,INTERACTS_PiC",
    )
    @click.option(
        "--obsolete-property",
        default="vestige",
        show_default=True,
        help="Node property marking obsolete SPOKE nodes (true or 'True'), never mapped nor on a path; empty: none",
    )
    @functools.wraps(command)
    def wrapper(*args: Any, allow_relationships: str, deny_relationships: str, **kwargs: Any) -> Any:
        from pipeline.compare.spoke import RelationshipFilter

        def names(text: str) -> tuple[str, ...]:
            return tuple(name.strip() for name in text.split(",") if name.strip())

        try:
            relationships = RelationshipFilter(names(allow_relationships), names(deny_relationships))
        except ValueError as exc:
            raise click.BadParameter(
                str(exc), param_hint="--allow-relationships/--deny-relationships"
            ) from None
        return command(*args, relationships=relationships, **kwargs)

    return wrapper


def _mapping(mapping_path: str):
    from pipeline.compare.spoke import CuiMapping

    try:
        return CuiMapping.from_file(mapping_path)
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--mapping") from None


def _spoke_graph(driver, neo4j, relationships, obsolete_property):
    """SPOKE as the comparison reads it: the Neo4j settings, the relationship filter and the
    property that marks obsolete nodes (both commands that walk SPOKE build it the same way)."""
    from pipeline.compare.spoke import SpokeGraph

    return SpokeGraph(
        driver,
        database=neo4j.database,
        naming=neo4j.naming,
        where=neo4j.describe(),
        relationships=relationships,
        obsolete_property=obsolete_property or None,
    )


def resolve_query_set(
    queries_path, seed, seed_label, seed_hops, seed_labels, seed_limit, mapping, spoke, seed_cutoffs=()
):
    """The query set from the file and/or the SPOKE neighbourhood of ``seed``."""
    from pipeline.compare.run import QuerySet, neighbourhood_entries, read_query_set

    if not queries_path and not seed:
        raise click.UsageError("give a query set: --queries FILE and/or --seed SPOKE_ID")
    query = QuerySet("", [])
    if queries_path:
        try:
            query = read_query_set(queries_path, mapping)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(str(exc), param_hint="--queries") from None
    if seed:
        if spoke is None:
            raise click.UsageError("--seed needs SPOKE's Neo4j (--neo4j-uri or $LITPATH_NEO4J_URI)")
        try:
            entries, record = neighbourhood_entries(
                spoke, mapping, seed, seed_label=seed_label or None, hops=seed_hops, labels=seed_labels,
                limit=seed_limit, cutoffs=seed_cutoffs,
            )  # fmt: skip
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--seed") from None
        query = QuerySet(query.path or f"SPOKE neighbourhood of {seed}", [*query.entries, *entries], record)
    return query


@click.command("query-set")
@click.option(
    "--mapping",
    "mapping_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="CUI -> SPOKE mapping (cui_spoke_mapping.parquet or .csv)",
)
@query_options
@spoke_options
@out_option("Output folder")
@neo4j_options
def query_set_command(
    mapping_path, queries_path, seed, seed_label, seed_hops, seed_labels, seed_limit, seed_cutoffs, relationships,
    obsolete_property, out_dir, neo4j: Neo4jSettings,
) -> None:  # fmt: skip
    """Resolve the comparison's query set to CUIs: query_set.json and query_concepts.txt."""
    from pipeline.compare.run import write_query_set

    mapping = _mapping(mapping_path)
    if seed:
        try:
            with open_driver(neo4j) as driver:
                spoke = _spoke_graph(driver, neo4j, relationships, obsolete_property)
                query = resolve_query_set(queries_path, seed, seed_label, seed_hops, seed_labels, seed_limit,
                                          mapping, spoke, seed_cutoffs)  # fmt: skip
        except Neo4jUnavailable as exc:
            raise click.ClickException(str(exc)) from None
    else:
        query = resolve_query_set(queries_path, None, None, 1, seed_labels, seed_limit, mapping, None)
    paths = write_query_set(query, out_dir)
    hood = query.neighbourhood or {}
    if hood:
        click.echo(f"SPOKE neighbourhood of {seed}: {hood['nodes_found']} nodes found, {hood['nodes_kept']} kept: "
                   f"{hood['summary']}")  # fmt: skip
    if hood.get("warning"):
        click.echo(f"warning: {hood['warning']}", err=True)
    unresolved = [e.entry for e in query.unresolved]
    click.echo(
        f"query set: {len(query.entries)} entries, {len(query.concepts)} concepts"
        + (f", {len(unresolved)} entries without a CUI ({', '.join(unresolved[:5])})" if unresolved else "")
        + f" -> {paths['record']}"
    )


@click.command("compare")
@build_dir_option("Build folder (results/builds/<id> or results/latest)", old=("--build",))
@click.option(
    "--graph",
    "scope",
    type=click.Choice(["cooccurrence", "full"]),
    default="cooccurrence",
    show_default=True,
    help="The literature graph compared: the co-occurrence graph (as in the paper) or the full graph",
)
@click.option(
    "--mapping",
    "mapping_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="CUI -> SPOKE mapping (cui_spoke_mapping.parquet or .csv)",
)
@query_options
@click.option(
    "--hops",
    default=1,
    show_default=True,
    type=click.IntRange(1, 4),
    help="SPOKE hop limit h: a hop is connected when SPOKE joins the two concepts within h relationships",
)
@click.option(
    "--scenario4-max-hops",
    "scenario4_max_hops",
    default=12,
    show_default=True,
    type=click.IntRange(1, 32),
    help=SCENARIO4_CAP_HELP,
)
@click.option(
    "--pairs",
    "pair_mode",
    default="unordered",
    show_default=True,
    type=click.Choice(["ordered", "unordered"]),
    help="All ordered or unordered pairs of the query set",
)
@mongo_uri_option(
    "MongoDB evidence store (default $LITPATH_MONGO_URI; none: documents of direct hops unknown). "
    "With a password, give it in the environment only: a command line is visible to every user."
)
@click.option("--no-mongo", is_flag=True, help="Use no evidence store, even when $LITPATH_MONGO_URI is set")
@mongo_database_option()
@click.option(
    "--evidence-buckets",
    "evidence_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The build's evidence bucket file (litpath bucket-records --kind evidence): hop evidence read "
    "from it, the records its MongoDB load stores, instead of from MongoDB (which is then not used).",
)
@spoke_options
@click.option(
    "--release",
    "releases",
    multiple=True,
    help="A release the report names, KEY=VALUE with KEY spoke, umls or semmeddb (default: as the inputs "
    "name them); repeatable",
)
@out_option("Output folder")
@neo4j_options
def compare(
    build_dir: Path, scope: str, mapping_path: str, queries_path: str | None, seed: str | None,
    seed_label: str | None, seed_hops: int, seed_labels: list[str], seed_limit: int, seed_cutoffs, hops: int,
    scenario4_max_hops: int, pair_mode: str, mongo_uri: str | None, no_mongo: bool, mongo_database: str,
    evidence_file: Path | None, relationships, obsolete_property: str, releases: tuple[str, ...], out_dir: Path,
    neo4j: Neo4jSettings,
) -> None:  # fmt: skip
    """Classify literature paths against SPOKE (scenarios 1, 2a, 2b, 3a, 3b, 3c, 4) and write the report."""
    from pipeline.compare.classify import Comparator
    from pipeline.compare.report import no_mapped_concepts, write_report
    from pipeline.compare.run import RELEASES, build_inputs, provenance_path, releases_of, run_comparison
    from pipeline.query.build import open_build

    stated = {}
    for text in releases:
        key, equals, value = text.partition("=")
        if not equals or key.strip() not in RELEASES:
            raise click.BadParameter(f"{text!r} is not KEY=VALUE with KEY one of {', '.join(RELEASES)}",
                                     param_hint="--release")  # fmt: skip
        stated[key.strip()] = value.strip()
    mapping = _mapping(mapping_path)
    try:
        # Distances of another graph are an error here: a report from mismatched artifacts is worse than none.
        build = open_build(build_dir, scopes=[scope], on_mismatch="raise")
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--build-dir") from None
    graph = build.graph(scope)
    concepts = build.concepts()

    mongo_client = None
    no_mongo = no_mongo or evidence_file is not None  # the build's own evidence: no store needed
    if not no_mongo:
        mongo_uri = mongo_uri if mongo_uri is not None else os.environ.get("LITPATH_MONGO_URI")
    if not no_mongo and mongo_uri:
        from pipeline.store.mongo import connect

        mongo_client = connect(mongo_uri, timeout_ms=3000, socket_timeout_ms=30_000, app="litpath-compare")
    try:
        with open_driver(neo4j) as driver:
            spoke = _spoke_graph(driver, neo4j, relationships, obsolete_property)
            query = resolve_query_set(queries_path, seed, seed_label, seed_hops, seed_labels, seed_limit,
                                      mapping, spoke, seed_cutoffs)  # fmt: skip
            comparator = Comparator(mapping, spoke, hops=hops, scenario4_max_hops=scenario4_max_hops)
            run = run_comparison(
                graph, mapping, comparator, query, ordered=pair_mode == "ordered",
                mongo_db=None if mongo_client is None else mongo_client[mongo_database],
                evidence_file=evidence_file,
                settings={"mapping_file": provenance_path(Path(mapping_path).resolve(), graph.build_dir),
                          "neo4j": neo4j.describe(),
                          "releases": releases_of(build_inputs(graph.build_dir), mapping_path, stated)},
                semtypes={} if concepts is None else concepts.semtypes_by_cui(),
            )  # fmt: skip
    except Neo4jUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if mongo_client is not None:
            mongo_client.close()
    names = {key: graph.name_of(key) for comp in run.comparisons for key in comp.concepts}
    build.close()
    paths = write_report(run, out_dir, names)
    if no_mapped_concepts(run):
        click.echo("litpath compare: no concept of the query set maps to a SPOKE node in Neo4j", err=True)
    for warning in run.provenance.get("warnings", []):
        click.echo(f"litpath compare: warning: {warning}", err=True)
    # The record is run.json (counts, pairs, provenance); the terminal gets one line.
    counts = ", ".join(f"{scenario} {n:,}" for scenario, n in run.counts().items())
    click.echo(f"litpath compare: {len(run.comparisons):,} pairs of the {scope} graph by scenario: {counts}; "
               f"report in {paths['html']}")  # fmt: skip


__all__ = ["compare", "query_set_command", "resolve_query_set", "spoke_options"]
