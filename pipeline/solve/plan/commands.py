"""Click commands of the performance model (HyPerMod); the lead wires them into ``litpath``:

    litpath plan --n 1000000 --ranks 64 [--machine FILE] [--heatmap fig8.png]
    litpath plan-calibrate [--name NAME] [--machine-out config/machines/NAME.yaml]
    litpath plan-check [--machine FILE] [--case n,P,RxC,b,broadcast[,on|off]] [--report rows.json] ...

``python -m pipeline.solve.plan {plan,calibrate,check}`` runs them without the main CLI.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from pipeline.cli.options import option, report_option
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import format_bytes, format_seconds
from pipeline.solve.plan.machine import BROADCAST_VARIANTS, MACHINES_DIR, MachineError, load_machine
from pipeline.solve.plan.model import SolverConfig
from pipeline.solve.plan.search import candidates


def _machine(path: str | None):
    try:
        return load_machine(path)
    except MachineError as exc:
        raise click.BadParameter(str(exc), param_hint="--machine") from exc






HEATMAP_FORMATS = {".png", ".svg", ".pdf"}


def _int_list(text: str, option: str) -> list[int]:
    """A comma-separated list of positive whole numbers (``1e5`` allowed); BadParameter naming
    ``option`` otherwise, where a traceback came out (found in review)."""
    try:
        values = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected whole numbers separated by commas", param_hint=option) from None
    if not values or any(v < 1 for v in values):
        raise click.BadParameter(f"{text!r}: expected positive whole numbers", param_hint=option)
    return values


@click.command("plan")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Vertices of the graph.")
@click.option("--ranks", type=click.IntRange(min=1), required=True, help="MPI ranks P.")
@click.option(
    "--machine",
    "machine_path",
    type=click.Path(),
    default=None,
    help="Machine description (default $LITPATH_MACHINE, else config/machines/dev-vm-2core.yaml).",
)
@click.option("--backend", default="cpu", show_default=True, help="Kernel backend of the machine file.")
@click.option(
    "--tile", "tiles", default=None, help="Tile edges to consider, comma-separated (default 32..1024)."
)
@click.option(
    "--broadcast",
    "broadcasts",
    type=click.Choice(BROADCAST_VARIANTS),
    multiple=True,
    help="Broadcast variants to consider (repeatable; default all).",
)
@click.option("--top", type=click.IntRange(min=1), default=8, show_default=True, help="Alternatives listed.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option(
    "--heatmap",
    type=click.Path(),
    default=None,
    help="Also render a Figure 8-style heat map (predicted rate over ranks x n) to this PNG.",
)
@click.option(
    "--heatmap-n",
    default="1024,4096,16384,65536,262144,1048576",
    show_default=True,
    help="n values (columns) of the heat map.",
)
@click.option(
    "--heatmap-ranks",
    default="1,2,4,8,16,64,256,1024",
    show_default=True,
    help="Rank counts (rows) of the heat map.",
)
def plan_command(
    n, ranks, machine_path, backend, tiles, broadcasts, top, as_json, heatmap, heatmap_n, heatmap_ranks
):
    """Predict APSP time and memory per rank; print the best configuration and alternatives."""  # noqa: D401
    machine = _machine(machine_path)
    if heatmap:  # every option checked before anything is printed (matplotlib's own error was a traceback)
        if Path(heatmap).suffix.lower() not in HEATMAP_FORMATS:
            raise click.BadParameter(
                f"{heatmap}: the file's suffix says its format: one of {', '.join(sorted(HEATMAP_FORMATS))}",
                param_hint="--heatmap",
            )
        heat_n, heat_ranks = _int_list(heatmap_n, "--heatmap-n"), _int_list(heatmap_ranks, "--heatmap-ranks")
    try:
        ranked = candidates(
            n, ranks, machine, backend=backend,
            tiles=_int_list(tiles, "--tile") if tiles else None,
            broadcasts=list(broadcasts) or None,
        )  # fmt: skip
    except MachineError as exc:
        raise click.BadParameter(str(exc), param_hint="--backend") from exc
    if as_json:
        click.echo(json.dumps([p.as_dict() for p in ranked[:top]], indent=1, default=str))
    else:
        best = ranked[0]
        click.echo(f"machine: {machine.name} ({machine.source}); n = {n}, P = {ranks}, backend {backend}, "
                   f"{best.threads} thread(s) per rank")  # fmt: skip
        if not best.fits_memory:
            click.echo(
                f"WARNING: no configuration fits in memory ({format_bytes(best.memory_limit_bytes)} per rank)"
            )
        c = best.config
        click.echo(
            f"best: --grid {c.grid} --tile {c.tile} --broadcast {c.broadcast} --lookahead {'on' if c.lookahead else 'off'}"
        )
        click.echo(
            f"      predicted {format_seconds(best.seconds)} ({best.rate / 1e9:.1f} GF/s), "
            f"{best.iterations} iterations, memory {format_bytes(best.memory_per_rank_bytes)} per rank"
        )
        phases = ", ".join(f"{k} {format_seconds(v)}" for k, v in best.phases.items())
        click.echo(f"      per phase (sum over iterations, busiest rank): {phases}")
        click.echo("")
        click.echo(f"{'#':>3}  {'grid':>6} {'tile':>5} {'broadcast':>13} {'look-ahead':>10} {'seconds':>10} "
                   f"{'GF/s':>9} {'mem/rank':>10} {'vs best':>8}")  # fmt: skip
        for i, p in enumerate(ranked[:top], 1):
            c = p.config
            fits = "" if p.fits_memory else "  out of memory"
            click.echo(
                f"{i:>3}  {c.grid:>6} {c.tile:>5} {c.broadcast:>13} {'on' if c.lookahead else 'off':>10} "
                f"{p.seconds:>10.4g} {p.rate / 1e9:>9.1f} {format_bytes(p.memory_per_rank_bytes):>10} "
                f"{p.seconds / best.seconds:>7.2f}x{fits}"
            )
    if heatmap:
        from pipeline.solve.plan.heatmap import render_heatmap

        out = render_heatmap(heatmap, heat_n, heat_ranks, machine, backend)
        click.echo(f"heat map: {out}", err=as_json)


@click.command("plan-calibrate")
@click.option("--name", default="dev-vm-2core", show_default=True, help="Machine name.")
@option(
    "--machine-out", "machine_out", old=("--out",), type=click.Path(dir_okay=False, path_type=Path),
    default=None, help="Machine file to write (default config/machines/NAME.yaml).",
)  # fmt: skip
@click.option(
    "--max-ranks",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Broadcasts are measured at 2..max-ranks ranks on this node.",
)
@click.option("--seconds", type=float, default=6.0, show_default=True, help="Time per compute benchmark run.")
def calibrate_command(name, machine_out, max_ranks, seconds):
    """Run the micro-benchmarks on this machine, fit HyPerMod, write the machine file."""
    from pipeline.solve.plan.calibrate import CalibrationError, calibrate

    try:
        machine = calibrate(
            name, max_ranks=max_ranks, phase_seconds=seconds, log=lambda s: click.echo(s, err=True)
        )
    except CalibrationError as exc:
        raise click.ClickException(str(exc)) from exc
    path = machine.save(machine_out or MACHINES_DIR / f"{name}.yaml")
    click.echo(f"wrote {path}")


def _parse_case(text: str) -> tuple[int, SolverConfig]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (5, 6):
        raise click.BadParameter(f"{text!r}: expected n,P,RxC,tile,broadcast[,on|off]", param_hint="--case")
    try:
        n, ranks, grid, tile, variant = int(parts[0]), int(parts[1]), parts[2], int(parts[3]), parts[4]
        rows, cols = (int(x) for x in grid.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected n,P,RxC,tile,broadcast[,on|off] with whole numbers",
                                 param_hint="--case") from None  # fmt: skip
    if min(n, ranks, rows, cols, tile) < 1:
        raise click.BadParameter(f"{text!r}: n, P, the grid and the tile must be positive", param_hint="--case")
    if rows * cols != ranks:
        raise click.BadParameter(f"{text!r}: grid {grid} does not have {ranks} ranks", param_hint="--case")
    if variant not in BROADCAST_VARIANTS:
        raise click.BadParameter(f"{text!r}: unknown broadcast {variant!r}", param_hint="--case")
    lookahead = len(parts) < 6 or parts[5].lower() in ("on", "true", "1")
    return n, SolverConfig(rows, cols, tile, variant, lookahead)


DEFAULT_CASES = (
    "1024,1,1x1,128,ring",
    "2048,2,1x2,128,ring",
    "3072,3,1x3,256,two-ring",
    "4096,4,2x2,256,chunked-ring",
    "4096,2,2x1,256,bcast,off",
)


@click.command("plan-check")
@click.option("--machine", "machine_path", type=click.Path(), default=None, help="Machine description.")
@click.option("--case", "cases", multiple=True, help="n,P,RxC,tile,broadcast[,on|off] (repeatable).")
@click.option(
    "--repeats", type=click.IntRange(min=1), default=1, show_default=True, help="Runs per case (best kept)."
)
@report_option("Write the rows (predicted and measured) as JSON here.", old=("--json",))
def check_command(machine_path, cases, repeats, report_path):
    """Run apsp-fw at several (n, P, b) here and report predicted vs measured solve time."""
    from pipeline.solve.plan.check import CheckCase, markdown_table, run_check, summarize

    machine = _machine(machine_path)
    parsed = [CheckCase(*_parse_case(c)) for c in (cases or DEFAULT_CASES)]
    with tempfile.TemporaryDirectory(prefix="plan-check-") as tmp:
        rows = run_check(parsed, machine, Path(tmp), repeats, log=lambda s: click.echo(s, err=True))
    click.echo(markdown_table(rows))
    s = summarize(rows)
    click.echo(f"\nmedian |error| {100 * s['median_abs_error']:.1f} %, worst {100 * s['max_abs_error']:.1f} % "
               f"over {s['cases']} cases")  # fmt: skip
    if report_path:
        write_atomically(report_path, json.dumps(rows, indent=1, default=str))


@click.group("hypermod")
def main() -> None:
    """HyPerMod: performance model and planner of apsp-fw."""


main.add_command(plan_command, "plan")
main.add_command(calibrate_command, "calibrate")
main.add_command(check_command, "check")
