"""The plan before every solve: dense, rows or on-demand, the stop message, the machine check."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.solve.plan import host
from pipeline.solve.plan.machine import Machine
from pipeline.solve.plan.methods import (
    PlanError,
    SsspModel,
    graph_bytes,
    nodes_for_dense,
    plan_graph,
    rows_workspace_bytes,
)

SOLVER = {"ranks": 1, "threads": 2, "grid": "auto", "tile": "auto", "broadcast": "auto", "lookahead": "auto"}


def _with_sssp(machine: Machine, base: float = 1e-8, speedup: float = 2.0) -> Machine:
    return dataclasses.replace(
        machine, sssp={"base": base, "penalty_a": 0.0, "penalty_d": 0.0, "threads_speedup": speedup}
    )


def test_small_graph_goes_dense(toy_machine):
    plan = plan_graph("full", 1000, 8000, {**SOLVER}, toy_machine)
    assert plan.method == "dense" and plan.requested == "auto"
    # 2 n^3 ops at the toy's 200 Gop/s on 2 threads, plus small diagonal and panel terms
    assert plan.dense["seconds"] == pytest.approx(2 * 1000**3 / 2e11, rel=0.2)
    assert plan.dense["fits_memory"] and plan.dense["fits_time"]
    assert "-> dense" in plan.describe()


def test_graph_too_large_for_memory_falls_back(toy_machine):
    machine = _with_sssp(toy_machine)
    n, arcs = 200_000, 2_000_000
    plan = plan_graph("full", n, arcs, {**SOLVER}, machine)
    assert not plan.dense["fits_memory"] and plan.method == "on-demand"  # no source set
    assert "dense does not fit in memory" in plan.reason
    with_rows = plan_graph("cooccurrence", n, arcs, {**SOLVER}, machine, sources=64)
    assert with_rows.method == "rows"
    # 64 sources x (arcs + n) x 10 ns on one thread, 2x faster on the two threads
    assert with_rows.rows["seconds"] == pytest.approx(64 * (arcs + n) * 1e-8 / 2.0)
    assert with_rows.rows["memory_per_rank_bytes"] == graph_bytes(n, arcs) + 64 * n * 4 + rows_workspace_bytes(n, arcs, 64, 2)
    assert plan.on_demand["worst_query_seconds"] == pytest.approx((arcs + n) * 1e-8)


def test_asked_for_dense_that_does_not_fit_stops_with_the_numbers_and_ways_out(toy_machine):
    with pytest.raises(PlanError) as caught:
        plan_graph("full", 200_000, 2_000_000, {**SOLVER, "full_graph": "dense"}, toy_machine)
    message = str(caught.value)
    assert message.startswith("solver.full_graph = dense cannot run here: dense does not fit in memory.")
    assert "n = 200,000 vertices and 1,000,000 edges" in message
    assert "per rank on 1 rank(s)" in message and "available" in message
    assert "way out: run the dense solve on" in message and "node(s) like this one" in message
    assert "way out: set solver.full_graph: on-demand" in message
    assert "way out: set solver.full_graph: rows" in message


def test_asked_for_dense_over_the_time_budget_stops(toy_machine):
    n = 40_000  # 6.4 GB fits the toy's 16 GiB; 2 n^3 / 2e11 = 640 s > 0.1 h
    settings = {**SOLVER, "cooccurrence_graph": "dense", "max_hours": 0.1}
    with pytest.raises(PlanError) as caught:
        plan_graph("cooccurrence", n, 400_000, settings, toy_machine)
    message = str(caught.value)
    assert "solver.cooccurrence_graph = dense cannot run here: dense is predicted to take" in message
    assert "> max_hours 0.1 h" in message and "raise solver.max_hours above 0.1" in message
    auto = plan_graph("cooccurrence", n, 400_000, {**SOLVER, "max_hours": 0.1}, toy_machine)
    assert auto.method == "on-demand" and "max_hours 0.1 h" in auto.reason
    assert plan_graph("cooccurrence", n, 400_000, {**SOLVER, "max_hours": 1}, toy_machine).method == "dense"


def test_rows_without_sources_and_explicit_on_demand(toy_machine):
    with pytest.raises(PlanError, match="no source set"):
        plan_graph("full", 1000, 8000, {**SOLVER, "full_graph": "rows"}, toy_machine)
    plan = plan_graph("full", 1000, 8000, {**SOLVER, "full_graph": "on-demand"}, toy_machine)
    assert plan.method == "on-demand" and plan.reason == "asked for"
    with pytest.raises(PlanError, match="none of"):
        plan_graph("full", 1000, 8000, {**SOLVER, "full_graph": "sometimes"}, toy_machine)


def test_nodes_for_dense_fit_memory_and_budget(toy_machine):
    found = nodes_for_dense(200_000, 1, toy_machine, budget_seconds=1e9)
    assert found is not None
    assert found["memory_per_rank_bytes"] <= 0.9 * toy_machine.memory_per_node_bytes
    # one node fewer would not hold the matrix: 4 n^2 bytes spread over half as many ranks
    assert 4 * 200_000**2 / (found["ranks"] / 2) > 0.9 * toy_machine.memory_per_node_bytes


def test_sssp_model_penalty_grows_with_the_graph():
    model = SsspModel(base=10e-9, penalty_a=30e-9, penalty_d=1e8)
    assert model.seconds_per_unit(0) == pytest.approx(10e-9)
    assert model.seconds_per_unit(1e8) == pytest.approx(25e-9)
    assert model.search_seconds(1000, 10_000) == pytest.approx(model.seconds_per_unit(graph_bytes(1000, 10_000)) * 11_000)


# ------------------------------------------------------------------ a machine file for this machine

HERE = {"cpu_model": "AMD EPYC 9654", "cores": 2, "simd": "avx512", "memory_bytes": 16 << 30}


def test_machine_mismatches_name_what_differs(toy_machine):
    described = dataclasses.replace(
        toy_machine, description={"cpu_model": "Intel Xeon", "cores": 2, "simd": "avx512", "memory_bytes": 16 << 30}
    )
    assert host.machine_mismatches(described, {**HERE, "cpu_model": "Intel Xeon"}) == []
    found = host.machine_mismatches(described, {**HERE, "cores": 4, "memory_bytes": 64 << 30})
    assert any("CPU 'Intel Xeon' in the file, 'AMD EPYC 9654' here" in d for d in found)
    assert any("2 cores in the file, 4 here" in d for d in found)
    assert any("16.0 GiB in the file, 64.0 GiB here" in d for d in found)


def test_a_machine_file_from_elsewhere_is_recalibrated_once(toy_machine, tmp_path, monkeypatch):
    shipped = dataclasses.replace(toy_machine, description={"cpu_model": "Intel Xeon", "cores": 2})
    shipped_path = shipped.save(tmp_path / "shipped.yaml")
    monkeypatch.delenv("LITPATH_MACHINE", raising=False)
    monkeypatch.setenv("LITPATH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(host, "default_machine_path", lambda: shipped_path)
    monkeypatch.setattr(host, "describe_this_machine", lambda: dict(HERE))
    calls = []

    def calibrate(name, log):
        calls.append(name)
        return dataclasses.replace(toy_machine, name=name, description=dict(HERE))

    logged = []
    machine, note = host.machine_for_planning(log=logged.append, calibrate=calibrate)
    assert calls and machine.description["cpu_model"] == "AMD EPYC 9654"
    assert "measured elsewhere (CPU 'Intel Xeon' in the file, 'AMD EPYC 9654' here)" in note
    assert "calibrated here" in note and any("calibrating this machine first" in line for line in logged)
    cached = list((tmp_path / "cache" / "machines").glob("*.yaml"))
    assert len(cached) == 1
    again, note = host.machine_for_planning(log=logged.append, calibrate=calibrate)
    assert len(calls) == 1 and "calibrated here earlier" in note  # measured once per machine
    # A file that describes this machine is used as it is.
    matching = dataclasses.replace(toy_machine, description=dict(HERE)).save(tmp_path / "here.yaml")
    monkeypatch.setattr(host, "default_machine_path", lambda: matching)
    _, note = host.machine_for_planning(log=logged.append, calibrate=calibrate)
    assert note == "here.yaml describes this machine" and len(calls) == 1


def test_an_explicit_machine_file_is_used_but_a_mismatch_is_said(toy_machine, tmp_path, monkeypatch):
    path = dataclasses.replace(toy_machine, description={"cpu_model": "cluster CPU", "cores": 64}).save(
        tmp_path / "cluster.yaml"
    )
    monkeypatch.setattr(host, "describe_this_machine", lambda: dict(HERE))
    logged = []
    machine, note = host.machine_for_planning(str(path), log=logged.append, calibrate=None)
    assert machine.description["cpu_model"] == "cluster CPU"
    assert "chosen explicitly but does not describe this machine" in note and logged


@pytest.mark.parametrize(
    "n, arcs, rows, threads",
    [(1, 0, 1, 1), (100, 400, 3, 2), (200_000, 2_000_000, 64, 2), (2_020_722, 56_110_728, 64, 2), (10**8, 10**9, 1, 8)],
)
def test_rows_workspace_is_the_solvers_own_figure(n, arcs, rows, threads):
    """The planner's rows memory uses the solver's workspace formula (solver/core/distance_rows.cpp),
    asked of the built library itself."""
    from pipeline.query import sssp

    solver = sssp.library().litpath_sssp_rows_workspace_bytes(n, arcs, rows, threads)
    assert rows_workspace_bytes(n, arcs, rows, threads) == solver


def test_on_demand_plan_reports_the_path_index_and_what_a_query_cost(toy_machine):
    machine = _with_sssp(toy_machine)
    n, arcs = 200_000, 2_000_000
    without = plan_graph("full", n, arcs, {**SOLVER}, machine)
    assert without.on_demand["path_index"] is None
    assert "no path index (rerun the graph stage)" in without.describe()
    record = {"hubs": 120, "arcs": 400_000, "bytes": 3_202_408, "share_of_graph": 0.13, "build_seconds": 1.5,
              "graph_digest": "ab" * 8, "sampled_queries": {"pairs": 40, "p50_ms": 3.25, "p90_ms": 9.5}}  # fmt: skip
    plan = plan_graph("full", n, arcs, {**SOLVER}, machine, path_index=record)
    assert plan.on_demand["memory_bytes"] == without.on_demand["memory_bytes"] + record["bytes"]
    assert plan.on_demand["workspace_bytes"] == 64 * n
    assert plan.on_demand["path_index"]["sampled_queries"]["p90_ms"] == 9.5
    text = plan.describe()
    assert "path index 120 hub rows" in text and "(13% of the graph)" in text
    assert "a query took p50 3.2 ms, p90 9.5 ms (40 random pairs)" in text
    unsampled = plan_graph("full", n, arcs, {**SOLVER}, machine, path_index={**record, "sampled_queries": None})
    assert "a query took" not in unsampled.describe() and "path index 120 hub rows" in unsampled.describe()
