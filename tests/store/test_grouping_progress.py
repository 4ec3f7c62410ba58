"""The progress lines of a first build's evidence and papers groupings: counted in percent of the
work (pipeline.runtime.progress.PhasedWork) -- the predications read, each range grouped, each
range written -- so that the line moves from the first batch read, never goes back, ends at
100 %, and names the range it is on; and the bucket file is the one written without a line."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from support.progress_lines import RecordedLines, TickingClock

from pipeline.runtime.progress import PERCENT, PhasedWork, Progress
from pipeline.store.evidence_rows import EVIDENCE_BYTES_PER_ROW
from pipeline.store.paper_evidence import PAPER_BYTES_PER_ROW
from pipeline.store.record_buckets import (
    GROUPING_SHARES,
    GroupingSettings,
    KindRecords,
    _told,
    group_kind,
)

BYTES_PER_ROW = {"evidence": EVIDENCE_BYTES_PER_ROW, "papers": PAPER_BYTES_PER_ROW}


@pytest.mark.parametrize("kind", ["evidence", "papers"])
@pytest.mark.parametrize("ranges", [1, 3])
def test_a_grouping_counts_its_work_in_percent_range_by_range(built, tmp_path, kind, ranges):
    tables, graph = built
    rows = pq.ParquetFile(tables / "predications.parquet").metadata.num_rows
    # a budget that gives the grouping ``ranges`` ranges, each in half of it
    budget = 2 * -(-rows * BYTES_PER_ROW[kind] // ranges) if ranges > 1 else 1 << 34
    settings = GroupingSettings(budget_bytes=budget, spill_dir=tmp_path / "spill")
    recorded = RecordedLines()
    counts = group_kind(kind, tables, graph, settings, tmp_path / "told.arrow", reuse=False, progress_for=recorded)
    assert counts[f"{kind}_partitions" if kind == "evidence" else "paper_partitions"] == ranges

    assert [(line.total, line.unit) for line in recorded.lines] == [(100, PERCENT)]
    done = recorded.done
    assert done == sorted(done), "the line went back"
    assert done[-1] == pytest.approx(100.0)
    shares = GROUPING_SHARES[kind]
    # the first report is a batch read, before anything is grouped
    assert recorded.reports[0][0] == "reading the predications"
    assert 0 < done[0] <= 100 * shares["read"] + 1e-9
    # after the reading, each range is named as it is written, and moves the line by its rows
    expected = ["writing"] if ranges == 1 else [f"writing range {k} of {ranges}" for k in range(1, ranges + 1)]
    assert recorded.stages() == ["reading the predications", *expected]
    read_done = max(value for stage, value in recorded.reports if stage == "reading the predications")
    assert read_done == pytest.approx(100 * shares["read"])
    text = recorded.stream.getvalue()
    assert " %, " in text and "/ 100" not in text  # "writing range 1 of 3, 41.2 %", the share alone

    # the same file as a grouping that tells no line
    group_kind(kind, tables, graph, settings, tmp_path / "untold.arrow", reuse=False)
    assert (tmp_path / "told.arrow").read_bytes() == (tmp_path / "untold.arrow").read_bytes()


@pytest.mark.parametrize("kind", ["evidence", "papers"])
def test_a_rebuild_on_an_earlier_build_counts_the_rows_written(tmp_path, kind):
    """A rebuild regroups the changed records first and streams the reused buckets after: its
    line counts rows written, and starts before the regrouping."""
    from support.pipeline_runs import ingested_in_input_order

    from pipeline.builds.layout import BuildLayout
    from pipeline.graph.build import build_graph
    from pipeline.merge import merge_ingested

    corpus = ingested_in_input_order(tmp_path / "corpus", scale=5_000, seed=5, n_update_files=1, profile="calibrated")
    update = max(i for i, (file_kind, _, _) in enumerate(corpus) if file_kind == "pubmed_xml")
    settings = GroupingSettings(budget_bytes=1 << 30, spill_dir=tmp_path / "spill")
    builds = []
    for name, dirs in (("one", [f for i, (_, _, f) in enumerate(corpus) if i != update]),
                       ("two", [f for _, _, f in corpus])):  # fmt: skip
        build = BuildLayout(tmp_path / name)
        merge_ingested(dirs, build.tables.path, {}, previous=builds[-1].tables.path if builds else None)
        build_graph(build.tables.path, build.graph("full").graph_dir, {})
        recorded = RecordedLines()
        counts = group_kind(kind, build.tables.path, build.graph("full").graph_dir, settings, build.bucket_file(kind),
                            progress_for=recorded)  # fmt: skip
        builds.append(build)
    assert counts[f"{kind}_reuse"] == "on build one"
    assert [line.unit for line in recorded.lines] == ["rows"]
    written = recorded.done  # rows written, told every 256 buckets
    assert written == sorted(written) and all(value <= counts[f"{kind}_in_build"] for value in written)
    assert recorded.lines[0].finish() >= 0  # a line to finish, as the command does


def test_a_grouping_without_phases_counts_the_rows_written(built, tmp_path):
    tables, graph = built
    recorded = RecordedLines()
    counts = group_kind("documents", tables, graph, GroupingSettings(1 << 30, tmp_path), tmp_path / "documents.arrow",
                        reuse=False, progress_for=recorded)  # fmt: skip
    assert [(line.total, line.unit) for line in recorded.lines] == [(counts["documents_in_build"], "rows")]
    afresh = KindRecords("papers", lambda: [], None, work=PhasedWork(GROUPING_SHARES["papers"]))
    assert _told(afresh, recorded) is None  # the work tells the line
    assert afresh.work is not None and afresh.work.line is recorded.lines[-1]
    assert (recorded.lines[-1].total, recorded.lines[-1].unit) == (100, PERCENT)


def test_phased_work_moves_a_line_by_each_phase_share():
    line = Progress("litpath test", 100, PERCENT, every_s=0.0, stream=io.StringIO(), clock=TickingClock())
    work = PhasedWork({"read": 0.2, "group": 0.5, "write": 0.3})
    work.advance("read", 5, 10)  # before a line is set: counted, not told
    assert line.done == 0
    work.line = line
    work.stage("reading")
    work.advance("read", 5, 10)
    assert line.done == pytest.approx(20.0)
    work.advance("group", 1, 4)
    assert line.done == pytest.approx(32.5)
    work.complete("group")  # a phase through at once, whatever was told of its parts
    assert line.done == pytest.approx(70.0)
    work.advance("group", 3, 4)  # never past its share
    assert line.done == pytest.approx(70.0)
    work.advance("write", 4, 4)
    assert line.done == pytest.approx(100.0)
    work.advance("write", 4, 4)  # never past the whole
    assert line.done == pytest.approx(100.0)
    assert "litpath test: reading, 20.0 %, " in line.stream.getvalue()
    with pytest.raises(KeyError):
        work.advance("sort", 1, 1)
    with pytest.raises(ValueError, match="sum to"):
        PhasedWork({"read": 0.2, "group": 0.5})
    line.finish("7 buckets")
    assert line.stream.getvalue().splitlines()[-1].startswith("litpath test: 7 buckets, done in ")


def test_the_measured_shares_are_whole():
    for kind, shares in GROUPING_SHARES.items():
        assert set(shares) == {"read", "group", "write"}, kind
        assert sum(shares.values()) == pytest.approx(1.0), kind


@pytest.mark.parametrize("kind", ["documents", "papers"])
def test_the_command_says_every_row_it_grouped(built, tmp_path, kind):
    """The last line says the rows of the bucket file, whatever the line counted: the rows written
    are told a batch of 256 buckets at a time, so a small file's line had said none and a large
    one's fell short by the last batch (2,945,989 of the 10M first build's 2,976,233 documents)."""
    import json

    from click.testing import CliRunner

    from pipeline.store.commands import bucket_records_command

    tables, graph = built
    out = tmp_path / f"{kind}.buckets.arrow"
    result = CliRunner().invoke(bucket_records_command, ["--kind", kind, "--tables-dir", str(tables), "--graph-dir",
                                                         str(graph), "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(out.with_name(out.name + ".json").read_text())["counts"][f"{kind}_in_build"]
    assert rows > 100
    last = [line for line in result.output.splitlines() if line.startswith(f"litpath bucket-records {kind}:")][-1]
    assert f" buckets, {rows:,} rows, done in " in last
