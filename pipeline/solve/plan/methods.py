"""The plan before every solve: dense, rows or on-demand, per graph, with its predicted cost.

A build has two graphs (:mod:`pipeline.query.graph`). Before either is solved, :func:`plan_graph`
predicts, on the machine file that describes this machine (:func:`machine_for_planning`):

``dense``
    the n x n matrix by the distributed blocked Floyd--Warshall: time and memory per rank
    from the HyPerMod model (:mod:`pipeline.solve.plan.model`), for the configured ranks and the
    best (or the configured) grid, tile, broadcast and look-ahead;
``rows``
    the distance rows of a source set by Dijkstra (``apsp-fw --sources``): m sources spread
    over ranks x threads, each costing ``tau(graph bytes) * (arcs + n)`` seconds with tau
    measured by ``litpath plan-calibrate`` (:class:`SsspModel`);
``on-demand``
    nothing stored: the service answers each query with a bidirectional Dijkstra, whose
    worst case is one full search. With the graph's path index (built by the graph stage,
    :mod:`pipeline.query.path_index`) the plan also gives the index's size and build time and
    what a query cost on this graph when the index was built (its sampled p50 and p90); the
    service's memory is then the graph, the index and its search workspaces.

and picks one as ``solver.full_graph`` / ``solver.cooccurrence_graph`` say. ``auto`` takes
dense when it fits the memory and ``solver.max_hours``, else rows when there is a source
set, else on-demand. A method that was asked for and does not fit raises :class:`PlanError`
at once, with the numbers and the ways out (how many nodes like this one dense would need,
the other methods) -- never an hours-long surprise or a late out-of-memory.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline.runtime.errors import LitpathError
from pipeline.runtime.progress import format_bytes, format_seconds
from pipeline.solve.plan.machine import Machine, MachineError
from pipeline.solve.plan.search import candidates

METHODS = ("dense", "rows", "on-demand")
SETTINGS = ("auto", *METHODS)
MEMORY_HEADROOM = 0.9  # plan to use at most this share of the memory available
# Without a calibrated Dijkstra model: seconds per (arc + vertex) of one search, a cautious
# figure for a large graph that no longer fits in cache (measured 10-40 ns on x86 servers).
UNCALIBRATED_SECONDS_PER_UNIT = 40e-9
# The path service's memory a vertex besides the graph's arrays: keys, names and their lookups,
# measured at 6.0M vertices (bench/results/path_index.md: 5.3 GiB at ready, less the CSR, weights
# and index of both graphs, over the full graph's vertices: about 350 bytes).
SERVICE_BYTES_PER_VERTEX = 360


def rows_workspace_bytes(n: int, arcs: int, rows: int, threads: int) -> int:
    """Bytes ``apsp-fw --sources`` needs besides the CSR and its rows: the packed, renumbered
    copy of the graph and one bucket search a thread (mirrors ``distance_rows_workspace_bytes``
    in solver/core/distance_rows.cpp: distances, bins of 4 candidates a vertex within
    [64, 2^23], bucket entries counted at 3 a vertex; 4-byte vertex ids below 2^32)."""
    if rows <= 0 or n <= 0:
        return 0
    id_bytes = 4 if n <= 2**32 - 1 else 8
    labelled = id_bytes + 8
    packed = (8 if id_bytes == 4 else 16) * arcs + 8 * (n + 1) + 2 * id_bytes * n
    blocks = (n - 1) // 65536 + 1
    bin_slots = blocks * max(min(max(4 * n, 64), 1 << 23) // blocks, 64)
    search = 8 * n + labelled * bin_slots + labelled * 3 * n
    return packed + min(max(threads, 1), rows) * search


class PlanError(LitpathError, RuntimeError):
    """The method asked for does not fit; the message has the numbers and the ways out."""


@dataclass(frozen=True)
class SsspModel:
    """Dijkstra cost on this machine: seconds per (arc + vertex) of one single-source search
    as a function of the graph's working-set bytes m, for one search thread,

        tau(m) = base + penalty(m),   penalty(m) = a * m / (m + d)   (HyPerMod's hyperbola)

    ``threads_speedup`` is the measured speed-up of all cores searching different sources at
    once over one (below the core count when memory bandwidth is shared).
    """

    base: float
    penalty_a: float
    penalty_d: float
    threads: int = 1
    threads_speedup: float = 1.0
    source: str = "calibrated"

    def seconds_per_unit(self, working_set_bytes: float) -> float:
        m = max(0.0, float(working_set_bytes))
        return self.base + self.penalty_a * m / (m + self.penalty_d) if self.penalty_d > 0 else self.base

    def search_seconds(self, n: int, arcs: int) -> float:
        """One single-source search on one thread."""
        return self.seconds_per_unit(graph_bytes(n, arcs)) * (arcs + n)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SsspModel:
        return cls(
            base=float(data["base"]),
            penalty_a=float(data.get("penalty_a", 0.0)),
            penalty_d=float(data.get("penalty_d", 0.0)),
            threads=int(data.get("threads", 1)),
            threads_speedup=float(data.get("threads_speedup", 1.0)),
            source=str(data.get("source", "calibrated")),
        )


def graph_bytes(n: int, arcs: int) -> int:
    """The CSR a search walks (row_ptr int64, col_idx int64, cost float32) plus its per-vertex state."""
    return 8 * (n + 1) + 12 * arcs + 24 * n


def sssp_model(machine: Machine) -> SsspModel:
    data = machine.sssp
    if data:
        try:
            return SsspModel.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise MachineError(f"{machine.source or machine.name}: malformed sssp_model: {exc}") from exc
    return SsspModel(UNCALIBRATED_SECONDS_PER_UNIT, 0.0, 0.0, source="uncalibrated default")


@dataclass
class GraphPlan:
    """The plan of one graph: what each method would cost here and the one chosen."""

    scope: str
    n: int
    arcs: int  # stored directed entries of the CSR (2 x undirected edges)
    requested: str
    method: str
    reason: str
    ranks: int
    threads: int
    max_hours: float
    memory_available_bytes: int
    dense: dict[str, Any]
    rows: dict[str, Any] | None
    on_demand: dict[str, Any]
    machine: dict[str, Any]
    ways_out: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """The plan as a few lines for a person (printed before the solve starts)."""
        lines = [
            f"plan for the {self.scope} graph: n = {self.n:,} vertices, {self.arcs // 2:,} edges; "
            f"{self.ranks} rank(s) x {self.threads} thread(s); machine {self.machine.get('name')} "
            f"({self.machine.get('source')})",
        ]
        dense = self.dense
        fits = "fits" if dense["fits_memory"] else "does NOT fit"
        lines.append(
            f"  dense      {format_seconds(dense['seconds']):>10}  {format_bytes(dense['memory_per_rank_bytes'])}/rank "
            f"({fits} in {format_bytes(self.memory_available_bytes)}), {dense['config']}"
        )
        if self.rows is not None:
            rows = self.rows
            fits = "fits" if rows["fits_memory"] else "does NOT fit"
            lines.append(
                f"  rows       {format_seconds(rows['seconds']):>10}  {rows['sources']:,} sources, "
                f"{format_bytes(rows['memory_per_rank_bytes'])}/rank ({fits}); Dijkstra model: {rows['model']}"
            )
        else:
            lines.append("  rows             --  no source set")
        od = self.on_demand
        lines.append(
            f"  on-demand       0 s  the service keeps the graph ({format_bytes(od['memory_bytes'])}); "
            f"a query costs at most one full search (~{format_seconds(od['worst_query_seconds'])})"
        )
        index = od.get("path_index")
        if index is None:
            lines.append(
                "                       no path index (rerun the graph stage): queries scan whole hub rows"
            )
        else:
            sampled = index.get("sampled_queries") or {}
            typical = (
                f"; a query took p50 {sampled['p50_ms']:.1f} ms, p90 {sampled['p90_ms']:.1f} ms "
                f"({sampled['pairs']} random pairs)"
                if sampled
                else ""
            )
            lines.append(
                f"                       path index {index['hubs']:,} hub rows, {format_bytes(index['bytes'])} "
                f"({index['share_of_graph']:.0%} of the graph), built in {format_seconds(index['build_seconds'])}"
                f"{typical}"
            )
        lines.append(
            f"  -> {self.method} ({self.reason}); solver.{_setting_name(self.scope)} = {self.requested}, "
            f"time budget solver.max_hours = {self.max_hours:g} h"
        )
        lines += [f"     way out: {way}" for way in self.ways_out]
        return "\n".join(lines)


def _setting_name(scope: str) -> str:
    return "full_graph" if scope == "full" else "cooccurrence_graph"






def _dense_prediction(
    n: int, ranks: int, machine: Machine, solver: dict[str, Any], available_per_node: int
) -> dict[str, Any]:
    from pipeline.solve.plan.auto import resolve_auto

    chosen = resolve_auto(
        n, ranks, solver.get("grid", "auto"), solver.get("tile", "auto"), solver.get("broadcast", "auto"),
        machine, lookahead=solver.get("lookahead", "auto"), backend=solver.get("backend", "cpu"),
        threads=solver.get("threads"),
    )  # fmt: skip
    per_rank = int(chosen["predicted_memory_per_rank_bytes"] or 0)
    on_node = machine.ranks_on_node(ranks)
    return {
        "seconds": float(chosen["predicted_seconds"] or math.inf),
        "memory_per_rank_bytes": per_rank,
        "memory_per_node_bytes": per_rank * on_node,
        "fits_memory": per_rank * on_node <= MEMORY_HEADROOM * available_per_node,
        "config": (
            f"grid {chosen['grid']}, tile {chosen['tile']}, {chosen['broadcast']}, "
            f"look-ahead {'on' if chosen['lookahead'] else 'off'}"
        ),
        "solver_settings": {k: chosen[k] for k in ("grid", "tile", "broadcast", "lookahead")},
        "semiring_ops": 2.0 * float(n) ** 3,
        "model": chosen["model"],
    }


def nodes_for_dense(
    n: int, ranks_per_node: int, machine: Machine, budget_seconds: float, max_nodes: int = 1 << 16
) -> dict[str, Any] | None:
    """The fewest nodes like this one (``ranks_per_node`` ranks each) on which the dense solve
    fits in memory and the time budget, by the model (extrapolated beyond the rank counts
    measured); None when not even ``max_nodes`` would do."""
    cluster = replace(machine, ranks_per_node=max(1, ranks_per_node))
    nodes = 1
    while nodes <= max_nodes:
        ranks = nodes * ranks_per_node
        ranked = candidates(n, ranks, cluster, lookaheads=(True,))
        best = ranked[0]
        if best.fits_memory and best.seconds <= budget_seconds:
            return {
                "nodes": nodes,
                "ranks": ranks,
                "seconds": best.seconds,
                "memory_per_rank_bytes": best.memory_per_rank_bytes,
                "config": best.config.label(),
            }
        nodes *= 2
    return None


def plan_graph(
    scope: str,
    n: int,
    arcs: int,
    solver: dict[str, Any],
    machine: Machine,
    *,
    sources: int | None = None,
    memory_available_bytes: int | None = None,
    machine_note: str = "",
    path_index: dict[str, Any] | None = None,
) -> GraphPlan:
    """The plan of one graph; raises :class:`PlanError` when the requested method cannot run.

    ``path_index``: the record of the graph's path index (graph_counts.json's ``path_index``,
    when it is this graph's), or None when it has none."""
    setting = _setting_name(scope)
    requested = str(solver.get(setting, "auto"))
    if requested not in SETTINGS:
        raise PlanError(f"solver.{setting}: {requested!r} is none of {', '.join(SETTINGS)}")
    ranks = int(solver.get("ranks", 1))
    threads = int(solver.get("threads") or machine.threads_per_rank(ranks))
    max_hours = float(solver.get("max_hours", 0.25))
    budget = max_hours * 3600.0
    on_node = machine.ranks_on_node(ranks)
    available = int(memory_available_bytes or machine.memory_per_node_bytes)

    dense = _dense_prediction(n, ranks, machine, solver, available)
    dense["fits_time"] = dense["seconds"] <= budget

    model = sssp_model(machine)
    csr = graph_bytes(n, arcs)
    search = model.search_seconds(n, arcs)
    speedup = model.threads_speedup if threads > 1 else 1.0
    rows = None
    if sources:
        per_rank_sources = math.ceil(sources / ranks)
        rows_seconds = per_rank_sources * search / max(1.0, min(speedup, threads))
        # CSR, the rank's rows (float32) and the searches' state.
        rows_memory = csr + per_rank_sources * n * 4 + rows_workspace_bytes(n, arcs, per_rank_sources, threads)
        rows = {
            "sources": int(sources),
            "seconds": rows_seconds,
            "memory_per_rank_bytes": int(rows_memory),
            "fits_memory": rows_memory * on_node <= MEMORY_HEADROOM * available,
            "fits_time": rows_seconds <= budget,
            "model": f"{model.seconds_per_unit(csr) * 1e9:.1f} ns per arc+vertex ({model.source})",
        }
    index_bytes = int(path_index["bytes"]) if path_index else 0
    on_demand = {
        # CSR, the path index, the float64 weights (8 bytes an edge) and the vertex tables.
        "memory_bytes": int(csr + index_bytes + 4 * arcs + n * SERVICE_BYTES_PER_VERTEX),
        # Each search workspace the service keeps (services/api/settings.py has the whole formula).
        "workspace_bytes": int(64 * n),
        "worst_query_seconds": search,
        "path_index": _index_summary(path_index),
    }

    method, reason, ways_out = _choose(scope, requested, dense, rows, budget, max_hours)
    plan = GraphPlan(
        scope=scope,
        n=int(n),
        arcs=int(arcs),
        requested=requested,
        method=method,
        reason=reason,
        ranks=ranks,
        threads=threads,
        max_hours=max_hours,
        memory_available_bytes=available,
        dense=dense,
        rows=rows,
        on_demand=on_demand,
        machine={
            "name": machine.name,
            "source": machine.source or "(in memory)",
            "cpu_model": machine.description.get("cpu_model"),
            "note": machine_note,
        },
        ways_out=ways_out,
    )
    if method == "refused":
        plan.method = requested
        raise PlanError(_refusal(plan, machine, budget))
    return plan


def _index_summary(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the plan says of a path index: its size, build time and sampled query cost."""
    if not record:
        return None
    keys = ("hubs", "arcs", "bytes", "share_of_graph", "build_seconds", "sampled_queries")
    return {key: record.get(key) for key in keys}


def _choose(scope, requested, dense, rows, budget, max_hours) -> tuple[str, str, list[str]]:
    dense_fits = dense["fits_memory"] and dense["fits_time"]
    rows_fit = rows is not None and rows["fits_memory"] and rows["fits_time"]
    why_not_dense = (
        "dense does not fit in memory"
        if not dense["fits_memory"]
        else f"dense is predicted to take {format_seconds(dense['seconds'])} > max_hours {max_hours:g} h"
    )
    if requested == "dense":
        return ("dense", "asked for, fits", []) if dense_fits else ("refused", why_not_dense, [])
    if requested == "rows":
        if rows is None:
            return "refused", "rows asked for but there is no source set", []
        return ("rows", "asked for, fits", []) if rows_fit else ("refused", "rows do not fit", [])
    if requested == "on-demand":
        return "on-demand", "asked for", []
    if dense_fits:
        return "dense", "auto: fits the memory and the time budget", []
    if rows_fit:
        return "rows", f"auto: {why_not_dense}; the {rows['sources']:,} source rows fit", []
    reason = f"auto: {why_not_dense}" + ("; the source rows do not fit" if rows is not None else "; no source set")
    return "on-demand", reason, []


def _refusal(plan: GraphPlan, machine: Machine, budget: float) -> str:
    """The stop message: what was asked, the numbers, and the ways out."""
    setting = _setting_name(plan.scope)
    dense = plan.dense
    lines = [
        f"solver.{setting} = {plan.requested} cannot run here: {plan.reason}.",
        f"The {plan.scope} graph has n = {plan.n:,} vertices and {plan.arcs // 2:,} edges.",
        f"dense: predicted {format_seconds(dense['seconds'])} and {format_bytes(dense['memory_per_rank_bytes'])} per rank on "
        f"{plan.ranks} rank(s) ({format_bytes(dense['memory_per_node_bytes'])} on this node, "
        f"{format_bytes(plan.memory_available_bytes)} available; budget max_hours = {plan.max_hours:g} h).",
    ]
    if plan.rows is not None:
        rows = plan.rows
        lines.append(
            f"rows: {rows['sources']:,} sources, predicted {format_seconds(rows['seconds'])}, "
            f"{format_bytes(rows['memory_per_rank_bytes'])} per rank."
        )
    ways = []
    if plan.requested == "dense":
        cluster = nodes_for_dense(plan.n, plan.ranks, machine, budget)
        if cluster is not None:
            ways.append(
                f"run the dense solve on {cluster['nodes']} node(s) like this one ({cluster['ranks']} ranks, "
                f"{cluster['config']}): predicted {format_seconds(cluster['seconds'])}, "
                f"{format_bytes(cluster['memory_per_rank_bytes'])} per rank (the model extrapolated; "
                "calibrate on that cluster with `litpath plan-calibrate`)"
            )
        else:
            ways.append("no cluster of up to 65,536 nodes like this one fits the dense matrix in the budget")
        if dense["fits_memory"] and not dense["fits_time"]:
            ways.append(f"raise solver.max_hours above {dense['seconds'] / 3600:.2f} to run it here anyway")
    if plan.requested != "on-demand":
        ways.append(f"set solver.{setting}: on-demand (exact paths computed per query by the service)")
    if plan.requested != "rows":
        ways.append(
            f"set solver.{setting}: rows with a source set (solver.row_sources) to store exact rows for those keys"
        )
    plan.ways_out = ways
    lines += [f"  way out: {way}" for way in ways]
    return "\n".join(lines)


def memory_available_bytes() -> int:
    """MemAvailable of this machine (0 when unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


__all__ = [
    "METHODS", "SETTINGS", "GraphPlan", "PlanError", "SsspModel", "graph_bytes", "memory_available_bytes",
    "nodes_for_dense", "plan_graph", "sssp_model",
]  # fmt: skip
