"""``litpath solve``: plan one graph, print and record the plan, then solve it as planned.

The steps (docs/design.md §8):

1. the graph's size from ``graph.bp`` (n, edges) and, for the rows method, the source set
   (vertex keys, e.g. the comparison's query concepts) turned into vertex ids;
2. the machine file that describes this machine (:func:`pipeline.plan.host.machine_for_planning`,
   which calibrates first when the shipped one was measured elsewhere);
3. the plan (:func:`pipeline.plan.methods.plan_graph`), printed and written to ``plan.json``;
   a method that was asked for and does not fit stops here, with the numbers and the ways out;
4. the solve: ``dense`` runs the distributed Floyd--Warshall into ``distances.bp``, ``rows``
   runs ``apsp-fw --sources`` into a ``distances.bp`` that holds those rows, ``on-demand``
   stores nothing (and removes distances left from an earlier plan);
5. ``solve_summary.json``: the method, the plan and the solver's own summary.

A ``distances.bp`` already in place for the same graph and the same method (and sources) is
kept: re-running the stage after, say, an edit of the query set does not redo a dense solve.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.plan.methods import GraphPlan, PlanError, memory_available_bytes, plan_graph


def graph_size(graph_bp: Path) -> tuple[int, int, str]:
    """``(n, arcs, digest)`` of a graph.bp from its attributes and ``row_ptr``'s last entry."""
    from pipeline.bpfiles import bp_reader
    from pipeline.store.adios import GraphCorrupt, probe_opens

    probe_opens(Path(graph_bp), GraphCorrupt)
    with bp_reader(graph_bp) as reader:
        n = int(reader.read("n"))
        attributes = reader.available_attributes()
        digest = str(reader.read_attribute("graph_digest")[0]) if "graph_digest" in attributes else ""
        if "n_edges" in attributes:
            arcs = 2 * int(reader.read_attribute("n_edges")[0])
        else:
            arcs = int(reader.read("row_ptr", [n], [1])[0]) if n else 0
    return n, arcs, digest


def read_keys(path: Path) -> list[str]:
    """Vertex keys, one per line (blank lines and ``#`` comments ignored), in file order, once each."""
    keys = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        key = line.split("#", 1)[0].strip()
        if key:
            keys.append(key)
    return list(dict.fromkeys(keys))


def source_vertices(graph_dir: Path, keys: list[str]) -> tuple[list[int], list[str]]:
    """Vertex ids of the keys that are vertices of the graph (sorted), and the keys that are not."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    vertices = pq.read_table(graph_dir / "vertices.parquet", columns=["vid", "key"])
    position = pc.index_in(pa.array(keys, pa.string()), value_set=vertices.column("key").combine_chunks())
    vids, missing = [], []
    for key, pos in zip(keys, position.to_pylist(), strict=True):
        if pos is None:
            missing.append(key)
        else:
            vids.append(int(vertices.column("vid")[pos].as_py()))
    return sorted(set(vids)), missing


def _existing_solve(output: Path, digest: str, method: str, sources: list[int]) -> bool:
    """True when ``output`` already holds this graph's distances by this method (and sources)."""
    if method == "on-demand" or not output.exists() or not digest:
        return False
    from pipeline.store.adios import DistanceMatrix

    try:
        with DistanceMatrix(output) as stored:
            if stored.attributes.get("graph_digest") != digest or stored.layout != method:
                return False
            return method == "dense" or list(stored.sources) == list(sources)
    except (OSError, ValueError, KeyError):
        return False


def _remove_distances(output: Path) -> None:
    from pipeline.solve import default_checkpoint_dir

    for stale in (output, output.with_name(output.name + ".partial"), default_checkpoint_dir(output)):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()


def solve_graph(
    graph_bp: Path,
    output: Path,
    solver: dict[str, Any],
    *,
    scope: str = "full",
    plan_path: Path | None = None,
    source_keys: list[str] | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Plan, record and run the solve of one graph; returns the summary (see the module docstring).

    Raises :class:`PlanError` (after writing ``plan_path``) when the method asked for does not fit.
    """
    from pipeline.plan.host import machine_for_planning

    graph_bp, output = Path(graph_bp), Path(output)
    n, arcs, digest = graph_size(graph_bp)
    sources: list[int] = []
    missing: list[str] = []
    if source_keys:
        sources, missing = source_vertices(graph_bp.parent, source_keys)
        if missing:
            log(f"litpath solve: {len(missing)} of {len(source_keys)} source keys are not vertices of the "
                f"{scope} graph (e.g. {', '.join(missing[:5])}); their rows cannot be stored")  # fmt: skip
    machine, note = machine_for_planning(solver.get("machine") or None, log=log)
    try:
        plan = plan_graph(
            scope, n, arcs, solver, machine, sources=len(sources) or None,
            memory_available_bytes=_available(machine, solver), machine_note=note,
        )  # fmt: skip
    except PlanError as exc:
        if plan_path is not None:
            _write_json(plan_path, {"scope": scope, "n": n, "arcs": arcs, "refused": str(exc)})
        raise
    log(plan.describe())
    if plan_path is not None:
        _write_json(plan_path, plan.as_dict())
    summary: dict[str, Any] = {
        "scope": scope,
        "method": plan.method,
        "graph_digest": digest,
        "n": n,
        "distances": str(output) if plan.method != "on-demand" else None,
        "sources": {"requested": len(source_keys or []), "in_graph": len(sources), "not_in_graph": missing},
        "plan": plan.as_dict(),
        "solver": None,
    }
    if _existing_solve(output, digest, plan.method, sources):
        log(f"litpath solve: {output} already holds the {plan.method} distances of this graph; kept")
        summary["reused"] = True
        return summary
    _remove_distances(output)
    if plan.method == "on-demand":
        log(f"litpath solve: nothing to store for the {scope} graph; the service computes exact paths per query")
        return summary
    summary["solver"] = _run(graph_bp, output, solver, plan, sources, log)
    return summary


def _available(machine, solver: dict[str, Any]) -> int:
    """Memory the plan may count on: solver.memory_limit_gib when set, else what is free now,
    never more than the machine file says."""
    if solver.get("memory_limit_gib"):
        return int(float(solver["memory_limit_gib"]) * (1 << 30))
    free = memory_available_bytes()
    return min(free, machine.memory_per_node_bytes) if free else machine.memory_per_node_bytes


def _run(graph_bp: Path, output: Path, solver: dict, plan: GraphPlan, sources: list[int], log) -> dict:
    from pipeline.solve import run_solver

    common = dict(
        ranks=plan.ranks,
        threads=solver.get("threads"),
        backend=solver.get("backend", "cpu"),
        on_progress=log,
        # apsp-fw checks memory too; it gets the same limit the plan used.
        extra_args=["--memory-limit", str(plan.memory_available_bytes)] if solver.get("memory_limit_gib") else [],
    )
    if plan.method == "rows":
        return run_solver(graph_bp, output, sources=sources, **common)
    settings = plan.dense["solver_settings"]
    return run_solver(
        graph_bp, output, grid=settings["grid"], tile=settings["tile"], broadcast=settings["broadcast"],
        lookahead=settings["lookahead"], chunk_bytes=solver.get("chunk_bytes"),
        validate_rows=solver.get("validate_rows", 0), **common,
    )  # fmt: skip


def _write_json(path: Path, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


__all__ = ["graph_size", "read_keys", "solve_graph", "source_vertices"]
