"""Click commands of the ingest stage: ``ingest`` (files of one kind, each into its own folder), ``merge`` and ``synth``.

The lead wires them into the ``litpath`` group (``cli.add_command(ingest)`` ...).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from pipeline.cli.options import input_option, out_option, report_option
from pipeline.ingest.registry import KINDS
from pipeline.ingest.run import (
    DEFAULT_MAX_QUARANTINE_FRACTION,
    MAX_QUARANTINE_ENV,
    ingest_files,
)
from pipeline.runtime.files import write_atomically

_CEILING_HELP = (
    "Fail when more than this fraction of a file's rows is quarantined (ingest.max_quarantine_fraction; "
    f"default ${MAX_QUARANTINE_ENV}, else {DEFAULT_MAX_QUARANTINE_FRACTION})"
)


@click.command("ingest")
@click.option("--kind", type=click.Choice(KINDS), required=True, help="Input format of the files.")
@input_option("An input file (.gz allowed); repeat for several files of this kind.", multiple=True)
@out_option("Folder for that file's tables: one --out per --input, in the same order.", old=("--out-dir",), multiple=True)
@click.option(
    "--reuse", is_flag=True,
    help="Keep an --out folder that already holds a finished ingest of the same file (same bytes, same "
    "kind; counts.json written) instead of reading the file again.",
)
@report_option("Write the counts of every file (JSON, in input order, each marked reused or not) here.")
@click.option(
    "--max-quarantine-fraction", type=click.FloatRange(0, 1), envvar=MAX_QUARANTINE_ENV,
    default=DEFAULT_MAX_QUARANTINE_FRACTION, show_envvar=True, help=_CEILING_HELP,
)  # fmt: skip
def ingest(
    kind: str,
    input_path: tuple[Path, ...],
    out_dir: tuple[Path, ...],
    reuse: bool,
    report_path: Path | None,
    max_quarantine_fraction: float,
) -> None:
    """Read literature dump files of one kind into Parquet tables, quarantine.parquet and counts.json,
    one --out folder per file."""
    if len(input_path) != len(out_dir):
        raise click.UsageError(
            f"{len(input_path)} --input and {len(out_dir)} --out: give one --out folder per input file, in order"
        )
    if len(set(out_dir)) != len(out_dir):
        raise click.UsageError("two --input files were given the same --out folder")
    # An IngestError (a damaged file, the quarantine ceiling) is one `litpath: error:` line.
    results = ingest_files(
        kind, list(zip(input_path, out_dir, strict=True)), reuse=reuse, max_quarantine_fraction=max_quarantine_fraction
    )
    if report_path is not None:
        files = [{"folder": str(folder), **counts} for folder, counts in zip(out_dir, results, strict=True)]
        report_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(report_path, json.dumps({"kind": kind, "files": files}, indent=2) + "\n")


@click.command("synth")
@out_option("Output folder.")
@click.option(
    "--scale", type=click.IntRange(min=1), default=2000, show_default=True, help="Number of predications."
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--update-files", type=click.IntRange(min=0), default=1, show_default=True, help="PubMed update files."
)
@click.option(
    "--profile",
    type=click.Choice(["compact", "calibrated"]),
    default="compact",
    show_default=True,
    help="calibrated: a sample of a release-sized corpus (rows, text lengths and concept graph fitted to a "
    "SemMedDB release and the COAST paper; the yardsticks' profile); compact: a small dense vocabulary "
    "(the bundled sample's).",
)
@click.option(
    "--citation-updates",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Extra OCC files of new citation pairs, after the first.",
)
@click.option(
    "--anchors",
    "anchors_file",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="TSV (cui, name, semtype) of real concepts to place among the most frequent ones.",
)
@click.option(
    "--config-out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write a workflow config that builds this corpus (the other settings: --config-base's).",
)
@click.option(
    "--config-base",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("config/config.yaml"),
    show_default=True,
    help="With --config-out: the config whose settings (SPOKE, mapping, query set, solver, ...) the written config keeps.",
)
def synth(
    out_dir: Path, scale: int, seed: int, update_files: int, profile: str, citation_updates: int,
    anchors_file: Path | None, config_out: Path | None, config_base: Path,
) -> None:  # fmt: skip
    """Write a synthetic corpus in the real dump layouts (SemMedDB, PubMed, CORD-19, OCC)."""
    from pipeline.ingest.synth import generate_corpus, read_anchor_concepts, write_corpus_config

    if config_out is not None and not config_base.is_file():  # only --config-out reads it
        raise click.BadParameter(f"{config_base} is not a file", param_hint="--config-base")
    anchors = read_anchor_concepts(anchors_file) if anchors_file else []
    manifest = generate_corpus(
        out_dir, scale, seed=seed, n_update_files=update_files, anchors=anchors,
        profile=profile, n_citation_updates=citation_updates,
    )  # fmt: skip
    click.echo(
        f"wrote {len(manifest['files'])} files to {out_dir} (manifest.json lists them in ingest order)"
    )
    if config_out is not None:
        write_corpus_config(out_dir, manifest, config_base, config_out)
        click.echo(f"wrote {config_out}: `make run CONFIG={config_out}` builds this corpus")
