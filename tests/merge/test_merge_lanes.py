"""The merge's rules in two lanes at once (:data:`pipeline.merge.MERGE_LANES`, one thread each)
give the same tables, bit for bit, and the same counts as one rule after another: for every
mention source, on fresh synthetic corpora with PubMed update files (deletions, revisions) and
CORD-19 papers matched by DOI, in memory and over a tiny budget (every rule in partitions)."""

from __future__ import annotations

import random

import pyarrow.parquet as pq
import pytest
from support import pipeline_runs

from pipeline.merge import MERGE_LANES, merge_ingested, merge_lanes, merge_steps
from pipeline.merge import sentences as merge_sentences

TABLES = ("documents", "mentions", "citations", "concepts", "predications", "sentences", "quarantine")
TINY_BUDGET_GIB = 256 / 2**20


@pytest.fixture(scope="module", params=[random.randrange(1 << 30) for _ in range(2)], ids=lambda s: f"seed{s}")
def ingested(request, tmp_path_factory):
    return pipeline_runs.ingested(tmp_path_factory.mktemp("lanes"), 2500, seed=request.param, n_update_files=2)


def _without_run_notes(counts: dict) -> dict:
    """counts.json less what says how the merge ran: its seconds, its lanes, and its partitions
    (a lane has half the budget, so a rule may work in more of them)."""
    kept = {k: v for k, v in counts.items() if k != "seconds"}
    kept["merge"] = {k: v for k, v in counts["merge"].items() if k != "merge_lanes" and not k.endswith("_partitions")}
    return kept


@pytest.mark.parametrize("budget_gib", [0, TINY_BUDGET_GIB], ids=["in-memory", "partitioned"])
@pytest.mark.parametrize("mention_source", ["predications", "entities", "both"])
def test_two_lanes_equal_one_rule_after_another(ingested, tmp_path, mention_source, budget_gib, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    outputs = {}
    for lanes in (1, 2):
        resources = {"merge_lanes": lanes, "memory_gib": budget_gib, "spill_dir": str(tmp_path / "spill")}
        config = {"mention_source": mention_source, "resources": resources}
        outputs[lanes] = (tmp_path / f"lanes{lanes}", merge_ingested(ingested, tmp_path / f"lanes{lanes}", config))
    (one, one_counts), (two, two_counts) = outputs[1], outputs[2]
    assert "merge_lanes" not in one_counts["merge"] and two_counts["merge"]["merge_lanes"] == 2
    assert _without_run_notes(one_counts) == _without_run_notes(two_counts)
    assert list(two_counts["tables"]) == [*[name for name, _, _ in merge_steps(None, None, mention_source, two)],
                                          "quarantine"]  # fmt: skip
    for name in TABLES:
        first, second = pq.read_table(one / f"{name}.parquet"), pq.read_table(two / f"{name}.parquet")
        assert first.num_rows == one_counts["tables"][name]
        assert first.equals(second), name
    if budget_gib:  # the partitioned runs did partition
        assert two_counts["merge"].get("document_partitions", 0) > 1


def test_every_rule_is_in_one_lane():
    names = [name for lane in MERGE_LANES for name in lane]
    assert sorted(names) == sorted(name for name, _, _ in merge_steps(None, None, "predications", None))
    assert len(names) == len(set(names))


def test_lanes_follow_the_setting_and_the_cores(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    assert merge_lanes({}) == 2  # the schema's default
    assert merge_lanes({"resources": {"merge_lanes": 1}}) == 1
    assert merge_lanes({"resources": {"merge_lanes": 8}}) == len(MERGE_LANES)
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0}, raising=False)
    assert merge_lanes({"resources": {"merge_lanes": 2}}) == 1  # one core: no second lane


def test_an_error_in_one_lane_is_the_merges_error(ingested, tmp_path, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1}, raising=False)

    def broken(*_args, **_kwargs):
        raise OSError("disk full while writing the sentences")

    monkeypatch.setattr(merge_sentences, "write_sentences", broken)
    monkeypatch.setattr("pipeline.merge.write_sentences", broken)
    with pytest.raises(OSError, match="disk full"):
        merge_ingested(ingested, tmp_path / "out", {"resources": {"merge_lanes": 2}})
    # the other lane ran to its end: its tables are whole
    assert pq.read_table(tmp_path / "out" / "documents.parquet").num_rows > 0
    assert not (tmp_path / "out" / "counts.json").exists()
