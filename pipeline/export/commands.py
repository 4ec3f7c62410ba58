"""``litpath export``: a build's graphs as KGX TSV and its CUI mapping as SSSOM TSV."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.builds.layout import SCOPES, BuildLayout, ExportFolder
from pipeline.cli.options import build_dir_option
from pipeline.runtime.files import write_atomically


@click.command("export")
@build_dir_option("The build to export (results/latest or results/builds/<id>).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the files [default: <build>/export].",
)
@click.option(
    "--graph",
    "scopes",
    type=click.Choice(SCOPES),
    multiple=True,
    help="A graph to export (repeatable) [default: every graph the build has].",
)
def export_command(build_dir: Path, out_dir: Path | None, scopes: tuple[str, ...]) -> None:
    """Write the build's graphs as KGX TSV (<graph>_nodes.tsv, <graph>_edges.tsv) and its CUI -> SPOKE
    mapping as SSSOM TSV (cui_spoke_mapping.sssom.tsv, when the build has a mapping)."""
    import pyarrow.parquet as pq

    from pipeline.export.kgx import write_kgx
    from pipeline.export.sssom import write_sssom
    from pipeline.runtime.progress import Progress

    build = BuildLayout(build_dir.resolve())
    folder = ExportFolder(out_dir or build.export.path)
    chosen = scopes or tuple(scope for scope in SCOPES if build.graph(scope).vertices.exists())
    if not chosen:
        raise click.ClickException(f"{build_dir}: no graph to export (no vertices.parquet)")
    record: dict = {"build_id": build.build_id, "kgx": {}, "sssom": None}
    for scope in chosen:
        if not build.graph(scope).vertices.exists():
            raise click.ClickException(f"{build_dir}: the build has no {scope} graph")
    # the rows to write, from the Parquet metadata: an ETA on a graph of hundreds of millions of edges
    total = sum(
        pq.ParquetFile(path).metadata.num_rows
        for scope in chosen
        for path in (build.graph(scope).vertices, build.graph(scope).folder.edges)
    )
    progress = Progress("litpath export", total, "rows")
    for scope in chosen:
        record["kgx"][scope] = write_kgx(build.root, scope, folder, progress)
        click.echo(
            f"litpath export: {scope} graph: {record['kgx'][scope]['nodes']:,} nodes, "
            f"{record['kgx'][scope]['edges']:,} edges in {folder.kgx_nodes(scope).parent}"
        )
    if build.mapping.table.exists():
        record["sssom"] = {"mappings": write_sssom(build.root, folder)}
        click.echo(f"litpath export: {record['sssom']['mappings']:,} mappings in {folder.sssom}")
    else:
        click.echo("litpath export: no CUI mapping in this build (litpath build-mapping), so no SSSOM file")
    progress.finish(f"{len(chosen)} graph(s)")
    write_atomically(folder.record, json.dumps(record, indent=2) + "\n")
