"""``litpath solve``: plan one graph, print and record the plan, then solve it as planned.

The steps (docs/design.md §8):

1. the graph's size from ``graph.bp`` (n, edges) and, for the rows method, the source set
   (vertex keys, e.g. the comparison's query concepts) turned into vertex ids;
2. the machine file that describes this machine (:func:`pipeline.solve.plan.host.machine_for_planning`,
   which calibrates first when the shipped one was measured elsewhere);
3. the plan (:func:`pipeline.solve.plan.methods.plan_graph`), printed and written to ``plan.json``;
   a method that was asked for and does not fit stops here, with the numbers and the ways out;
4. the solve: ``dense`` runs the distributed Floyd--Warshall into ``distances.bp``, ``rows``
   runs ``apsp-fw --sources`` into a ``distances.bp`` that holds those rows, ``on-demand``
   stores nothing (and removes distances left from an earlier plan);
5. ``solve_summary.json``: the method, the plan and the solver's own summary.

What a rerun keeps (the reuse rule, README "Reruns" and docs/design.md §8):

* a ``distances.bp`` already in place for the same graph (its 64-hex digest) and the same
  method (and, for rows, the same sources) is kept and nothing is solved: re-running the stage
  after, say, an edit of the query set does not redo a dense solve;
* the checkpoints of a dense solve that was killed or failed (``distances.bp.checkpoints``) are
  kept, and the solve resumes from the newest valid one, when they were written for this graph
  with this solve's n, tile, grid and rank count (apsp-fw checks each piece again); otherwise,
  or when the method is not dense, they are removed with a log line saying why;
* ``fresh=True`` (``litpath solve --fresh``, or ``solver.reuse: false`` in the config) removes
  distances and checkpoints and solves from the start.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.builds.layout import GraphFolder
from pipeline.runtime.errors import LitpathError
from pipeline.solve.plan.methods import GraphPlan, PlanError, memory_available_bytes, plan_graph

# A graph's digest (graph.bp's graph_digest attribute): SHA-256 in hex, as the graph build writes it.
DIGEST = re.compile(r"[0-9a-f]{64}")


def path_index_record(graph_bp: Path, digest: str) -> dict[str, Any] | None:
    """The record of the path index beside ``graph_bp`` (graph_counts.json's ``path_index``) when
    the index is there and was built for this graph; None otherwise (the plan then says so)."""
    folder = GraphFolder(Path(graph_bp).parent)
    if not folder.counts.exists() or not folder.path_index.exists():
        return None
    try:
        record = json.loads(folder.counts.read_text()).get("path_index")
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("graph_digest") != digest:
        return None
    return record


def graph_size(graph_bp: Path) -> tuple[int, int, str]:
    """``(n, arcs, digest)`` of a graph.bp from its attributes and ``row_ptr``'s last entry."""
    from pipeline.store.adios import GraphCorrupt, probe_opens
    from pipeline.store.bpfiles import bp_reader

    probe_opens(Path(graph_bp), GraphCorrupt)
    with bp_reader(graph_bp) as reader:
        n = int(reader.read("n"))
        attributes = reader.available_attributes()
        # A string attribute reads as the whole string (n_edges, a number, as a 1-element array).
        digest = str(reader.read_attribute("graph_digest")) if "graph_digest" in attributes else ""
        if "n_edges" in attributes:
            arcs = 2 * int(reader.read_attribute("n_edges")[0])
        else:
            arcs = int(reader.read("row_ptr", [n], [1])[0]) if n else 0
    if not DIGEST.fullmatch(digest):
        raise GraphCorrupt(
            f"{graph_bp}: graph_digest attribute {digest[:80]!r} is not a SHA-256 in hex (64 characters); "
            "the graph was not written by `litpath build-graph`, or is damaged"
        )
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

    vertices = pq.read_table(GraphFolder(graph_dir).vertices, columns=["vid", "key"])
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


def _taken_from_earlier_build(
    graph_bp: Path, output: Path, scope: str, digest: str, method: str, sources: list[int]
) -> str | None:
    """The earlier build's distances of this scope copied to ``output`` when they are of this
    very graph (its digest), method and sources: a citation file leaves the co-occurrence graph
    as it was (pipeline.graph.earlier), and so its solve. The earlier build is the one the merge
    of the build that holds ``graph_bp`` started from; its name, or None (nothing copied)."""
    from pipeline.builds.layout import BuildLayout
    from pipeline.builds.reuse import earlier_tables

    earlier, _ = earlier_tables(BuildLayout(Path(graph_bp).parent.parent).tables.path)
    if earlier is None:
        return None
    theirs = BuildLayout(earlier.root).graph(scope).distances
    if not _existing_solve(theirs, digest, method, sources):
        return None
    shutil.copytree(theirs, output) if theirs.is_dir() else shutil.copyfile(theirs, output)
    return earlier.name


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


class DistancesPathTaken(LitpathError, ValueError):
    """``--distances`` names something a solve did not write (printed as one line)."""


def _refuse_what_is_no_bp(path: Path) -> None:
    """DistancesPathTaken unless ``path`` is an ADIOS2 BP folder (md.idx, and nothing but BP files and
    folders in it), the only thing a solve may remove to write its own: ``--distances`` naming a
    build folder, say, had it deleted whole."""
    if path.is_dir() and (path / "md.idx").is_file() and all(
        entry.name in _BP_ENTRIES or entry.name.startswith("data.") for entry in path.iterdir()
    ):
        return
    what = "a file" if not path.is_dir() else "a folder that is not an ADIOS2 BP output (no md.idx, or other files in it)"
    raise DistancesPathTaken(f"--distances {path}: exists and is {what}; litpath solve removes only distances it wrote. "
                     "Give another path, or remove it yourself")  # fmt: skip


# What an ADIOS2 BP4/BP5 output folder holds (besides its data.N subfiles).
_BP_ENTRIES = {"md.idx", "md.0", "mmd.0", "profiling.json", "data.0", "md.bp", "metadata"}


def _clear_for_solve(
    output: Path, plan: GraphPlan, digest: str, n: int, fresh: bool, log: Callable[[str], None]
) -> None:
    """Before a solve: remove distances this solve will not keep, and checkpoints it cannot
    resume from (the module docstring's reuse rule), each with a log line saying why."""
    from pipeline.solve.apsp_fw import checkpoint_identity, default_checkpoint_dir

    why = "a fresh solve was asked for" if fresh else f"they are not the {plan.method} distances of this graph"
    for stale in (output, output.with_name(output.name + ".partial")):
        if stale.exists():
            _refuse_what_is_no_bp(stale)
            log(f"litpath solve: removing {stale}: {why}")
            _remove(stale)
    checkpoints = default_checkpoint_dir(output)
    if not checkpoints.exists():
        return
    identity = checkpoint_identity(checkpoints)
    if fresh:
        reason = "a fresh solve was asked for"
    elif plan.method != "dense":
        reason = f"this solve stores {plan.method}, not the dense matrix"
    elif identity is None:
        reason = "it holds no complete checkpoint"
    else:
        settings = plan.dense["solver_settings"]
        want = {"graph_digest": digest, "n": str(n), "tile": str(settings["tile"]),
                "grid": str(settings["grid"]), "ranks": str(plan.ranks)}  # fmt: skip
        differ = [f"{k} {identity.get(k)!r} (now {v!r})" for k, v in want.items() if identity.get(k) != v]
        if not differ:
            log(f"litpath solve: resuming the dense solve from {checkpoints} "
                f"(iteration {identity.get('iteration')} of its checkpoint)")  # fmt: skip
            return
        reason = "its checkpoints are of another solve: " + ", ".join(differ)
    log(f"litpath solve: removing {checkpoints}: {reason}")
    _remove(checkpoints)


def solve_graph(
    graph_bp: Path,
    output: Path,
    solver: dict[str, Any],
    *,
    scope: str = "full",
    plan_path: Path | None = None,
    source_keys: list[str] | None = None,
    fresh: bool = False,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Plan, record and run the solve of one graph; returns the summary (see the module docstring).

    ``fresh`` (or ``solver["reuse"]`` false) solves from the start, keeping neither distances
    nor checkpoints. Raises :class:`PlanError` (after writing ``plan_path``) when the method
    asked for does not fit.
    """
    from pipeline.solve.plan.host import machine_for_planning

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
            path_index=path_index_record(graph_bp, digest),
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
    fresh = fresh or not solver.get("reuse", True)
    if not fresh and not output.exists():
        taken = _taken_from_earlier_build(graph_bp, output, scope, digest, plan.method, sources)
        if taken is not None:
            log(f"litpath solve: the {plan.method} distances of this graph taken from build {taken} "
                "(the merge started from it, and its graph is this one)")  # fmt: skip
            summary["taken_from"] = taken
    if not fresh and _existing_solve(output, digest, plan.method, sources):
        log(f"litpath solve: {output} already holds the {plan.method} distances of this graph; kept "
            "(litpath solve --fresh, or solver.reuse: false, solves again)")  # fmt: skip
        summary["reused"] = True
        return summary
    _clear_for_solve(output, plan, digest, n, fresh, log)
    if plan.method == "on-demand":
        log(f"litpath solve: nothing to store for the {scope} graph; the service computes exact paths per query")
        return summary
    summary["solver"] = _run(graph_bp, output, solver, plan, sources, log)
    return summary


# A rows solve of at most this many sources takes seconds (the 18 rows of the 10M co-occurrence
# graph: 1 s on 2 cores), not worth every core of the solver's ranks (solve_cores).
FEW_ROWS = 64


def solve_cores(graph_dir: Path, scope: str, solver: dict[str, Any], sources: int,
                memory_bytes: int | None = None) -> int:  # fmt: skip
    """The cores a workflow's solve job asks for: every core of the solver's ranks (``ranks x
    threads``) unless the solve can only be small -- the method is not ``dense``, the dense
    matrix (n x n float32) cannot fit in ``memory_bytes`` (default: this machine's memory), so
    the plan is rows or on-demand, and the rows, if any, are at most :data:`FEW_ROWS` -- then
    one, and the job runs its solve on one rank (``litpath solve --ranks``). A job that asks for
    every core waits until all are free: on 2 cores, the loads that took them one by one held
    the reruns' 1-s solves, and the comparison after them, for up to 15 s. Every core too when
    the graph's record is not there yet (the scheduler asks again once the job's inputs are)."""
    every = max(1, int(solver.get("ranks") or 1)) * max(1, int(solver.get("threads") or 1))
    try:
        n = int(json.loads(GraphFolder(graph_dir).counts.read_text())["counts"]["vertices"])
    except (OSError, ValueError, KeyError, TypeError):
        return every
    method = str(solver.get("full_graph" if scope == "full" else "cooccurrence_graph", "auto"))
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    dense_possible = method == "dense" or (method == "auto" and 4 * n * n <= memory_bytes)
    many_rows = method in ("auto", "rows") and sources > FEW_ROWS
    return every if dense_possible or many_rows else 1


def _available(machine, solver: dict[str, Any]) -> int:
    """Memory the plan may count on: solver.memory_limit_gib when set, else what is free now,
    never more than the machine file says."""
    if solver.get("memory_limit_gib"):
        return int(float(solver["memory_limit_gib"]) * (1 << 30))
    free = memory_available_bytes()
    return min(free, machine.memory_per_node_bytes) if free else machine.memory_per_node_bytes


def _run(graph_bp: Path, output: Path, solver: dict, plan: GraphPlan, sources: list[int], log) -> dict:
    from pipeline.solve.apsp_fw import DEFAULT_CHECKPOINT_EVERY, run_solver

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
        validate_rows=solver.get("validate_rows", 0),
        checkpoint_every=solver.get("checkpoint_every") or DEFAULT_CHECKPOINT_EVERY, **common,
    )  # fmt: skip


def _write_json(path: Path, data: dict) -> None:
    from pipeline.runtime.files import write_atomically

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(data, indent=2, default=str) + "\n")


__all__ = ["graph_size", "read_keys", "solve_cores", "solve_graph", "source_vertices"]
