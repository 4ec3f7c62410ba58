"""CLI commands of the SPOKE stage: ``load-spoke`` and ``build-mapping``.

Both turn a user's mistake (Neo4j down or refusing the login, a malformed dump line, a
missing file) into one ``click`` error line, never a stack trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.builds.layout import MappingFolder
from pipeline.cli.options import neo4j_options, out_option, report_option
from pipeline.runtime.files import write_atomically
from pipeline.spoke.dump import FORMATS, DumpError
from pipeline.store.neo4j import Neo4jSettings, Neo4jUnavailable, open_driver


@click.command("load-spoke")
@click.option("--nodes", "nodes_path", type=click.Path(exists=True, dir_okay=False), help="Nodes file")
@click.option("--edges", "edges_path", type=click.Path(exists=True, dir_okay=False), help="Edges file")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="hetionet", show_default=True)
@click.option(
    "--metaedges",
    type=click.Path(exists=True, dir_okay=False),
    help="Hetionet metagraph.json or metaedges.tsv (default: the built-in Hetionet v1.0 table)",
)
@click.option("--batch-size", type=click.IntRange(1), default=10_000, show_default=True)
@click.option(
    "--on-error",
    type=click.Choice(["fail", "reject"]),
    default="fail",
    show_default=True,
    help="fail: any bad row stops the load before anything is written; reject: skip and report bad rows",
)
@report_option("Write the load report (JSON) here")
@neo4j_options
def load_spoke(
    nodes_path: str | None,
    edges_path: str | None,
    fmt: str,
    metaedges: str | None,
    batch_size: int,
    on_error: str,
    report_path: Path | None,
    neo4j: Neo4jSettings,
) -> None:
    """Load a SPOKE-style dump (Hetionet layout or CSV) into Neo4j: idempotent, counted, verified."""
    from pipeline.spoke.hetionet import read_metaedges
    from pipeline.spoke.load import load_spoke as run_load

    if not nodes_path and not edges_path:
        raise click.UsageError("give --nodes, --edges or both")
    try:
        table = read_metaedges(metaedges) if fmt == "hetionet" else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--metaedges") from None
    try:
        with open_driver(neo4j) as driver:
            report = run_load(
                driver, nodes_path, edges_path, fmt,
                database=neo4j.database, naming=neo4j.naming, metaedges=table,
                batch_size=batch_size, on_error=on_error,  # type: ignore[arg-type]
            )  # fmt: skip
    except (Neo4jUnavailable, DumpError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None
    # Which Neo4j was loaded (credentials never part of it): on the terminal and in the report.
    click.echo(f"litpath load-spoke: into {neo4j.describe()}")
    click.echo(report.to_text())
    if report_path:
        write_atomically(
            report_path, json.dumps({"neo4j": neo4j.describe(), **report.as_dict()}, indent=2) + "\n"
        )
    if not report.verified:
        raise click.ClickException("the counts in Neo4j do not match the load (see above)")


@click.command("build-mapping")
@click.option(
    "--umls-dir",
    type=click.Path(exists=True, file_okay=False),
    help="UMLS META folder (MRCONSO.RRF, MRCUI.RRF)",
)
@click.option(
    "--mrconso", type=click.Path(exists=True, dir_okay=False), help="MRCONSO.RRF (default: in --umls-dir)"
)
@click.option(
    "--mrcui",
    type=click.Path(exists=True, dir_okay=False),
    help="MRCUI.RRF (default: in --umls-dir if present)",
)
@click.option(
    "--do-xrefs", type=click.Path(exists=True, dir_okay=False), help="Disease Ontology allXREFinDO.tsv"
)
@click.option(
    "--gene-info",
    type=click.Path(exists=True, dir_okay=False),
    help="NCBI gene_info (e.g. Homo_sapiens.gene_info.gz)",
)
@click.option(
    "--ncit-swissprot", type=click.Path(exists=True, dir_okay=False), help="NCIt-SwissProt_Mapping.txt"
)
@click.option(
    "--unichem",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="UniChem ChEMBL mapping, src1src2.txt[.gz] (DrugBank) or src1src47.txt[.gz] (RxNorm); repeatable",
)
@click.option(
    "--unichem-structure",
    type=click.Path(exists=True, dir_okay=False),
    help="UniChem STRUCTURE table dump, structure.tsv[.gz] (InChIKey -> UCI; with --unichem-reference)",
)
@click.option(
    "--unichem-reference",
    type=click.Path(exists=True, dir_okay=False),
    help="UniChem REFERENCE table dump, reference.tsv[.gz] (UCI -> DrugBank)",
)
@click.option(
    "--uberon-obo",
    type=click.Path(exists=True, dir_okay=False),
    help="UBERON release, uberon.obo or uberon-basic.obo[.gz] (Anatomy: xrefs to UMLS, NCIt, FMA)",
)
@click.option(
    "--cl-obo",
    type=click.Path(exists=True, dir_okay=False),
    help="Cell Ontology release, cl.obo or cl-basic.obo[.gz] (CellType: xrefs to UMLS, NCIt, FMA)",
)
@click.option(
    "--spoke-nodes",
    type=click.Path(exists=True, dir_okay=False),
    help="SPOKE nodes dump file (default: read Neo4j)",
)
@click.option("--spoke-format", type=click.Choice(FORMATS), default="hetionet", show_default=True)
@click.option(
    "--spoke-read",
    type=click.Choice(["lookup", "scan"]),
    default="lookup",
    show_default=True,
    help="How Neo4j is read: lookup (only the identifiers a route can use; for SPOKE's own server) "
    "or scan (every node of the 13 labels)",
)
@click.option(
    "--mrcui-relations",
    default="SY",
    show_default=True,
    help="MRCUI relations that carry a retired CUI to its successor, comma-separated (SY, RB, RN, RO)",
)
@click.option(
    "--gene-identity/--no-gene-identity",
    default=True,
    show_default=True,
    help="Map the literature's GENE:<entrez> keys (SemMedDB gene arguments without a CUI) to SPOKE Gene nodes",
)
@click.option(
    "--obsolete-property",
    default="vestige",
    show_default=True,
    help="Node property marking obsolete SPOKE nodes (true or 'True'), which are skipped; empty: none",
)
@click.option(
    "--spoke-release", default="", help="SPOKE's release, for the provenance (e.g. 'SPOKE v5, 2025-06')"
)
@click.option(
    "--concepts",
    type=click.Path(exists=True, dir_okay=False),
    help="Literature concepts Parquet (cui, name, semtypes)",
)
@click.option(
    "--reuse", type=click.Choice(["none", "auto"]), default="none", show_default=True,
    help="auto: where --out is a build's mapping folder and SPOKE's nodes come from its dump "
    "(--spoke-nodes), link the mapping of another build of the same results folder made from the "
    "very same inputs (concepts, sources, dump, options, litpath) instead of building it again",
)  # fmt: skip
@out_option("Output folder")
@neo4j_options
def build_mapping(
    umls_dir: str | None,
    mrconso: str | None,
    mrcui: str | None,
    do_xrefs: str | None,
    gene_info: str | None,
    ncit_swissprot: str | None,
    unichem: tuple[str, ...],
    unichem_structure: str | None,
    unichem_reference: str | None,
    uberon_obo: str | None,
    cl_obo: str | None,
    spoke_nodes: str | None,
    spoke_format: str,
    spoke_read: str,
    mrcui_relations: str,
    gene_identity: bool,
    obsolete_property: str,
    spoke_release: str,
    concepts: str | None,
    reuse: str,
    out_dir: Path,
    neo4j: Neo4jSettings,
) -> None:
    """Build the CUI -> SPOKE mapping (identity, direct, indirect) and its coverage report."""
    from pipeline.runtime.errors import LitpathError
    from pipeline.runtime.progress import Progress
    from pipeline.spoke.coverage import compute_coverage, read_concepts, write_coverage
    from pipeline.spoke.mapping import build as mapping
    from pipeline.spoke.mapping.nodes import Neo4jNodes, spoke_nodes_from_dump, spoke_nodes_from_neo4j
    from pipeline.spoke.mapping.rules import ALL_MRCUI_RELATIONS, MAPPABLE_LABELS

    relations = tuple(r.strip().upper() for r in mrcui_relations.split(",") if r.strip())
    unknown = sorted(set(relations) - set(ALL_MRCUI_RELATIONS))
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)}: not an MRCUI successor relation ({', '.join(ALL_MRCUI_RELATIONS)})",
            param_hint="--mrcui-relations",
        )
    options = mapping.MappingOptions(
        mrcui_relations=relations, gene_identity=gene_identity, obsolete_property=obsolete_property or None
    )
    try:
        sources = mapping.MappingSources.from_umls_dir(
            umls_dir, mrconso=mrconso, mrcui=mrcui, do_xrefs=do_xrefs, gene_info=gene_info,
            ncit_swissprot=ncit_swissprot, unichem=list(unichem),
            unichem_structure=unichem_structure, unichem_reference=unichem_reference,
            uberon_obo=uberon_obo, cl_obo=cl_obo,
        )  # fmt: skip
        # hashed only where asked to reuse: a mapping built with --reuse none records no inputs
        inputs, not_taken = (None, "") if reuse == "none" else _mapping_inputs(
            sources, concepts, spoke_nodes, spoke_format, out_dir, {
                "mrcui_relations": relations, "gene_identity": gene_identity,
                "obsolete_property": obsolete_property, "spoke_release": spoke_release, "umls_dir": umls_dir,
            },
        )  # fmt: skip
        if inputs is not None:
            from pipeline.spoke.mapping.reuse import take_earlier_mapping

            stats, taken_from = take_earlier_mapping(out_dir, inputs)
            if stats is not None:
                stats["reuse"] = f"taken: build {taken_from}'s mapping, made from these very inputs"
                write_atomically(MappingFolder(out_dir).stats, json.dumps(stats, indent=2, default=str) + "\n")
                click.echo(f"litpath build-mapping: {stats['reuse']} (linked, not built again)")
                return
            not_taken = taken_from
        concept_table = read_concepts(concepts) if concepts else None
        literature = set(concept_table.column("cui").to_pylist()) if concept_table is not None else None
        if spoke_nodes:
            nodes = spoke_nodes_from_dump(spoke_nodes, spoke_format)
            result = mapping.build_mapping(nodes, sources, literature_cuis=literature, options=options)
            spoke_source = f"dump {Path(spoke_nodes).name}"
        else:
            with open_driver(neo4j) as driver:
                if spoke_read == "scan":
                    nodes = spoke_nodes_from_neo4j(driver, database=neo4j.database, naming=neo4j.naming)
                    result = mapping.build_mapping(
                        nodes, sources, literature_cuis=literature, options=options
                    )
                else:
                    spoke = Neo4jNodes(driver, database=neo4j.database, naming=neo4j.naming)
                    progress = Progress("litpath build-mapping", None, "lookups")
                    result = mapping.build_mapping_by_lookup(
                        spoke, sources, literature_cuis=literature, options=options, progress=progress
                    )
                    progress.finish(f"{sum(result.stats['nodes_found'].values()):,} SPOKE nodes found")
            spoke_source = f"Neo4j {neo4j.describe()} ({spoke_read})"
    except (Neo4jUnavailable, DumpError, ValueError, OSError, LitpathError) as exc:
        raise click.ClickException(str(exc)) from None

    from pipeline.spoke.mapping.reuse import unlink_mapping_files

    unlink_mapping_files(MappingFolder(out_dir))  # never written through a link to another build's
    paths = mapping.write_mapping(result.table, out_dir)
    coverage = compute_coverage(result.table, result.nodes, concept_table, labels=MAPPABLE_LABELS)
    coverage_paths = write_coverage(coverage, out_dir)
    releases = {
        "spoke": spoke_release or None,
        "spoke_source": spoke_source,
        "umls": mapping.umls_release(umls_dir, sources.mrconso),
    }
    stats = {"spoke_nodes": dict(result.nodes), "releases": releases, **result.stats}
    # what the mapping was made from, for a later build's --reuse auto (pipeline.spoke.mapping.reuse)
    stats["inputs"] = inputs
    stats["reuse"] = f"built: {not_taken}" if reuse == "auto" else "built (--reuse none)"
    if concept_table is not None:
        stats["concepts"] = {"total": coverage.concepts, "mapped": coverage.concepts_mapped,
                             "unmapped": coverage.concepts_unmapped}  # fmt: skip
    write_atomically(MappingFolder(out_dir).stats, json.dumps(stats, indent=2, default=str) + "\n")
    for name, path in {**paths, **coverage_paths}.items():
        click.echo(f"{name:>10}: {path}")
    click.echo(f"rows: {result.table.num_rows} {json.dumps(result.stats['rows_per_method'])}")
    for name, fs in result.stats["files"].items():
        if fs["malformed"]:
            click.echo(
                f"warning: {name}: {fs['malformed']} unreadable lines, first: {fs['first_malformed']}",
                err=True,
            )
    if "warning" in result.stats:
        click.echo(f"warning: {result.stats['warning']}", err=True)
    for warning in result.stats.get("lookup", {}).get("warnings", []):
        click.echo(f"warning: {warning}", err=True)


def _mapping_inputs(sources, concepts: str | None, spoke_nodes: str | None, spoke_format: str, out_dir: Path,
                    options: dict) -> tuple[dict | None, str]:  # fmt: skip
    """:func:`pipeline.spoke.mapping.reuse.mapping_inputs` of this command's sources and options."""
    from dataclasses import fields

    from pipeline.spoke.mapping.reuse import checksum_cache, mapping_inputs

    # every source file MappingSources holds (a list field, such as UniChem's, one entry a file):
    # taken from its fields, so that a source added there is never left out of the comparison
    named: dict[str, str | Path] = {}
    for field in fields(sources):
        value = getattr(sources, field.name)
        if isinstance(value, list):
            named.update({f"{field.name}[{i}]": path for i, path in enumerate(value)})
        elif value is not None:
            named[field.name] = value
    # each path as given beside its checksum: the statistics name them
    options = {**options, "paths": {name: str(path) for name, path in named.items()},
               "spoke_nodes_path": str(spoke_nodes) if spoke_nodes else None}  # fmt: skip
    return mapping_inputs(concepts, named, spoke_nodes, spoke_format, options, checksum_cache(out_dir))
