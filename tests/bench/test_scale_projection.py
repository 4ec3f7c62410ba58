"""The scale runs' wall by phase (bench/scale_run.py) and its projection (bench/project_release.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from support.bench_scripts import bench_module

scale_run = bench_module("scale_run")
project_release = bench_module("project_release")
T0 = datetime(2026, 11, 28, 12, 0, 0)


def job(rule: str, start: float, end: float) -> tuple[str, float, datetime, datetime]:
    return rule, end - start, T0 + timedelta(seconds=start), T0 + timedelta(seconds=end)


def test_phases_split_the_span_and_count_side_by_side_jobs_once():
    jobs = [
        job("load_spoke", 0, 5), job("ingest_file", 1, 50), job("ingest_file", 2, 60),
        job("merge_tables", 62, 100), job("build_graph", 101, 130), job("bucket_records", 101, 160),
        job("bucket_records", 131, 170), job("load_mongo", 171, 200), job("compare", 201, 210),
    ]  # fmt: skip
    phases = scale_run.phase_walls(jobs)
    assert list(phases) == list(scale_run.PHASES)
    assert phases == {"ingest": 62, "merge": 38, "graph and grouping": 70, "load": 30, "finish": 10}
    assert sum(phases.values()) == 210  # the span, first job to last


def test_kind_loads_beside_the_grouping_count_in_the_graph_phase():
    jobs = [
        job("ingest_file", 0, 50), job("merge_tables", 50, 100), job("build_graph", 100, 130),
        job("bucket_records", 100, 120), job("load_mongo_kind", 121, 150),  # documents, early
        job("bucket_records", 130, 170), job("solve", 171, 173),
        job("load_mongo_kind", 171, 190), job("load_mongo", 190, 195), job("compare", 195, 200),
    ]  # fmt: skip
    phases = scale_run.phase_walls(jobs)
    assert phases == {"ingest": 50, "merge": 50, "graph and grouping": 73, "load": 22, "finish": 5}


def test_no_phases_without_one_merge_and_one_load():
    assert scale_run.phase_walls([job("merge_tables", 0, 10), job("compare", 10, 12)]) is None


@pytest.mark.parametrize("exponent", [0.8, 1.0, 1.3])
def test_phase_projection_recovers_a_power_law(exponent):
    def record(n: int) -> dict:
        return {"label": f"{n}", "span_s": 0.0,
                "phases_s": {"ingest": 2e-3 * n**exponent, "merge": 1e-3 * n**exponent, "finish": 3.0}}  # fmt: skip

    runs = [(n, record(n)) for n in (10**6, 10**7, 3 * 10**7)]
    result = project_release.project(runs, cores=2, target=10**8, by="phase")
    projected = {row["rule"]: row["projected_s"] for row in result["stages"]}
    assert projected["ingest"] == pytest.approx(2e-3 * 1e8**exponent, rel=1e-3)
    assert projected["merge"] == pytest.approx(1e-3 * 1e8**exponent, rel=1e-3)
    assert projected["finish"] == 3.0  # under the log's resolution everywhere: taken as measured
    assert result["projected_total_s"] == pytest.approx(sum(projected.values()), abs=0.2)


def test_phase_projection_needs_the_phases():
    with pytest.raises(ValueError, match="no wall by phase"):
        project_release.project([(10**6, {"label": "old run", "span_s": 1.0})], cores=2, target=10**8, by="phase")


def test_joined_phases_are_fitted_as_their_sum():
    """Two phases whose split moves from run to run (the load left after the grouping) but whose sum
    grows as a power law: fitted as one, the projection is the sum's; a phase named wrong is refused."""

    def record(n: int, load_share: float) -> dict:
        together = 4e-3 * n**1.05
        return {"label": f"{n}", "span_s": 0.0,
                "phases_s": {"ingest": 2e-3 * n, "graph and grouping": together * (1 - load_share),
                             "load": together * load_share, "finish": 3.0}}  # fmt: skip

    runs = [(10**6, record(10**6, 0.3)), (10**7, record(10**7, 0.4)), (3 * 10**7, record(3 * 10**7, 0.05))]
    joined = (("graph and grouping", "load"),)
    result = project_release.project(runs, cores=2, target=10**8, by="phase", joined=joined)
    projected = {row["rule"]: row["projected_s"] for row in result["stages"]}
    assert list(projected) == ["ingest", "graph and grouping + load", "finish"]
    assert projected["graph and grouping + load"] == pytest.approx(4e-3 * 1e8**1.05, rel=1e-3)
    apart = project_release.project(runs, cores=2, target=10**8, by="phase")
    assert apart["projected_total_s"] > result["projected_total_s"]  # the moving split, fitted apart, grows faster
    with pytest.raises(ValueError, match="no phase 'loading'"):
        project_release.project(runs, cores=2, target=10**8, by="phase", joined=(("graph and grouping", "loading"),))


def test_a_record_keeps_the_largest_processes_the_servers_and_those_over_the_budget():
    """scale_runs.json keeps, of a run's sampled processes, the local servers, every one over the
    budget and the KEPT_PROCESSES largest others, with the number sampled: its line in
    scale_runs.md reads the same from what it keeps."""
    rows = [{"pid": i, "peak_mib": float(100 + 37 * i % 1000), "command": f"litpath job {i}", "server": False}
            for i in range(300)]  # fmt: skip
    rows += [{"pid": 1000, "peak_mib": 50.0, "command": "java mongo", "server": True},
             {"pid": 1001, "peak_mib": 9000.0, "command": "litpath huge", "server": False},
             {"pid": 1002, "peak_mib": 8500.0, "command": "litpath big", "server": False}]  # fmt: skip
    sampled = {"interval_s": 0.5, "processes": rows}
    kept = scale_run.kept_samples(sampled, 8.0)
    peaks = [r["peak_mib"] for r in kept["processes"]]
    assert kept["processes_sampled"] == len(rows) and peaks == sorted(peaks, reverse=True)
    others = sorted((r for r in rows if not r["server"]), key=lambda r: -r["peak_mib"])
    assert [r for r in kept["processes"] if not r["server"]] == others[: scale_run.KEPT_PROCESSES]
    assert any(r["server"] for r in kept["processes"])
    assert scale_run.sampled_rss_sentence(kept, 8.0) == scale_run.sampled_rss_sentence(sampled, 8.0)
    assert "2 over the 8 GiB budget" in scale_run.sampled_rss_sentence(kept, 8.0)
    assert scale_run.kept_samples(kept, 8.0) == kept  # kept twice: the same
    # a budget so low that every process is over it keeps them all
    assert len(scale_run.kept_samples(sampled, 0.01)["processes"]) == len(rows)
