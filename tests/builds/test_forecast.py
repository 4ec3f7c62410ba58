"""The run forecast (pipeline.builds.forecast): what a run will cost, from the results folder's own
builds scaled by the bytes of input, else from the calibrated corpus's figures; and the refusal of
a run whose results folder's disk is too small. Every expected figure is worked out here by hand
from the files the test writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pipeline.builds import forecast
from pipeline.builds.forecast import REFERENCE, DiskForecastError, announce, forecast_run
from pipeline.builds.identity import RESULTS_FORMAT, InputFile
from pipeline.builds.layout import ResultsLayout
from pipeline.builds.record import write_build_config

REPO = Path(__file__).resolve().parents[2]
SETTINGS = {"ingest": {"mention_source": "auto"}, "graph": {"min_support": 1}}
MB = 1_000_000


def _input(folder: Path, kind: str, name: str, size: int, sha: str, order: int = 0) -> InputFile:
    path = folder / name
    path.write_bytes(b"x" * size)
    return InputFile(kind=kind, path=path, sha256=sha * 64, order=order)


def _corpus(folder: Path) -> list[InputFile]:
    folder.mkdir(exist_ok=True)
    return [
        _input(folder, "semmeddb_predication", "p.csv", 3 * MB, "1"),
        _input(folder, "semmeddb_entity", "e.csv", 50 * MB, "2"),  # not read (UNREAD): never counted
        _input(folder, "pubmed_xml", "n1.xml", 1 * MB, "3"),
    ]


UNREAD = frozenset({"semmeddb_entity"})


def _complete_build(results: ResultsLayout, build_id: str, inputs: list[InputFile], seconds: float,
                    folder_bytes: int, store_bytes: int, on_the_delta: bool, completed: str) -> Path:  # fmt: skip
    """A complete build folder: config.yaml, build.json (started -> completed ``seconds`` apart),
    its tables' counts, and files of ``folder_bytes`` in all, ``store_bytes`` of them bucket files."""
    layout = results.build(build_id)
    write_build_config(layout.config, SETTINGS, [[f.kind, str(f.path), f.sha256] for f in inputs])
    Path(layout.tables.path).mkdir(parents=True)
    counts = {"incremental": {"used": True}} if on_the_delta else {}
    layout.tables.counts.write_text(json.dumps(counts))
    layout.store.mkdir(parents=True)
    (layout.store / "papers.buckets.arrow").write_bytes(b"b" * store_bytes)
    started = "2026-01-01T00:00:00+00:00"
    record = {"litpath": {"results_format": RESULTS_FORMAT}, "started": started, "completed": completed,
              "inputs": [{"kind": f.kind, "path": str(f.path), "sha256": f.sha256} for f in inputs]}  # fmt: skip
    record["started"] = _minus(completed, seconds)
    text = json.dumps(record)
    fixed = sum(p.stat().st_size for p in layout.root.rglob("*") if p.is_file()) + len(text)
    (layout.root / "graph.bin").write_bytes(b"g" * (folder_bytes - fixed))
    layout.record.write_text(text)
    assert sum(p.stat().st_size for p in layout.root.rglob("*") if p.is_file()) == folder_bytes
    return layout.root


def _minus(iso: str, seconds: float) -> str:
    import datetime

    return (datetime.datetime.fromisoformat(iso) - datetime.timedelta(seconds=seconds)).isoformat(timespec="seconds")


@pytest.fixture
def plenty_of_space(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forecast, "free_bytes", lambda path: 10**15)


def test_a_first_build_with_nothing_to_go_by_takes_the_calibrated_figures(tmp_path: Path, plenty_of_space) -> None:
    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    f = forecast_run(results, inputs, UNREAD, earlier=None, new_kinds=frozenset())
    read = 4 * MB  # PREDICATION and the PubMed file; ENTITY is not read
    assert (f.input_bytes, f.new_input_bytes) == (read, read)
    assert f.seconds == pytest.approx(REFERENCE.fixed_seconds + read * REFERENCE.seconds_per_byte)
    assert f.results_bytes == int(read * REFERENCE.ingest_bytes_per_byte + REFERENCE.fixed_bytes
                                  + read * REFERENCE.build_bytes_per_byte)
    assert f.store_bytes == int(read * REFERENCE.store_bytes_per_byte)
    assert f.what == "a first build" and "no build here to go by" in f.basis
    assert f.shortfall() is None


def test_a_build_scales_the_folders_last_full_build_by_its_input(tmp_path: Path, plenty_of_space) -> None:
    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    # two earlier full builds of the first 3 MB; the later one counts
    _complete_build(results, "old", inputs[:2], seconds=500, folder_bytes=9 * MB, store_bytes=1 * MB,
                    on_the_delta=False, completed="2026-01-01T00:20:00+00:00")  # fmt: skip
    _complete_build(results, "full", inputs[:2], seconds=300, folder_bytes=6 * MB, store_bytes=2 * MB,
                    on_the_delta=False, completed="2026-01-01T00:30:00+00:00")  # fmt: skip
    # the PREDICATION file ingested already (2 MB of ingest for its 3 MB), the PubMed file not
    folder = results.ingest(inputs[0].kind, inputs[0].key)
    Path(folder.path).mkdir(parents=True)
    folder.counts.write_text("{}")
    folder.table("predications").write_bytes(b"t" * (2 * MB - 2))
    f = forecast_run(results, inputs, UNREAD, earlier=None, new_kinds=frozenset())
    scale = 4 / 3
    assert f.new_input_bytes == 1 * MB
    assert f.seconds == pytest.approx(300 * scale)
    assert f.results_bytes == int(1 * MB * (2 / 3) + 6 * MB * scale)
    assert f.store_bytes == int(2 * MB * scale)
    assert "full" in f.basis and "scaled by 1.33" in f.basis
    assert f.what.startswith("a build from every file")  # builds here, none to merge on top of


def test_a_rerun_goes_by_the_last_rerun_else_by_a_share_of_the_full_build(tmp_path: Path, plenty_of_space) -> None:
    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    first = _complete_build(results, "first", inputs[:2], seconds=400, folder_bytes=8 * MB, store_bytes=2 * MB,
                            on_the_delta=False, completed="2026-01-01T00:30:00+00:00")  # fmt: skip
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"pubmed_xml"}))
    scale = 4 / 3
    assert f.what == "a rerun on top of build first (the merge on the delta)"
    assert f.seconds == pytest.approx(400 * scale * REFERENCE.rerun_share)
    assert f.store_bytes is None  # only the changed record buckets
    # its files: a share of the first build's folder (the rest are links to it), not the whole
    # folder, which refused a 30M folder's first rerun with room for it
    full = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"semmeddb_predication"}))
    assert full.results_bytes - f.results_bytes == pytest.approx(8 * MB * scale * (1 - REFERENCE.rerun_bytes_share), abs=2)
    assert 0.5 <= REFERENCE.rerun_bytes_share < 1
    _complete_build(results, "rerun", inputs[:2], seconds=60, folder_bytes=7 * MB, store_bytes=2 * MB,
                    on_the_delta=True, completed="2026-01-01T00:40:00+00:00")  # fmt: skip
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"pubmed_xml"}))
    assert f.seconds == pytest.approx(60 * scale)
    assert "rerun rerun" in f.basis
    assert f.store_bytes is None and "only the record buckets that changed" in f.lines()[0]  # its load sent ?
    # ... its MongoDB load's record says what it sent: that, scaled
    counts = {"documents_bytes_written": 300_000, "papers_bytes_written": 200_000, "documents_written": 7}
    (results.build("rerun").root / "mongo_load.json").write_text(json.dumps({"counts": counts}))
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"pubmed_xml"}))
    assert f.store_bytes == int(500_000 * scale)
    assert f"MongoDB: about {forecast.format_bytes(f.store_bytes)} of record buckets that changed" in f.lines()[0]
    # ... and where it sent none (every bucket was there), so it says
    (results.build("rerun").root / "mongo_load.json").write_text(json.dumps({"counts": {"documents_bytes_written": 0}}))
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"pubmed_xml"}))
    assert f.store_bytes == 0 and "MongoDB: no new record buckets." in f.lines()[0]
    # a new SemMedDB file does not merge on the delta: the full build's figures
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"semmeddb_predication"}))
    assert f.seconds == pytest.approx(400 * scale) and f.store_bytes == int(2 * MB * scale)
    assert "does not merge on the delta" in f.what


def test_a_reruns_bytes_leave_out_the_files_it_linked_from_an_earlier_build(tmp_path: Path, plenty_of_space) -> None:
    """What a rerun wrote is what the next one will: not the earlier build's files it hard-linked
    (unchanged tables, its bucket files' bases), which are older than its start; build.json's
    count, made as it completed, where the earlier build is gone since."""
    import os

    from pipeline.builds.record import written_bytes

    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    first = _complete_build(results, "first", inputs[:2], seconds=400, folder_bytes=8 * MB, store_bytes=2 * MB,
                            on_the_delta=False, completed="2026-01-01T00:30:00+00:00")  # fmt: skip
    rerun = _complete_build(results, "rerun", inputs[:2], seconds=60, folder_bytes=3 * MB, store_bytes=MB,
                            on_the_delta=True, completed="2026-01-01T00:40:00+00:00")  # fmt: skip
    started = forecast._started(json.loads((rerun / "build.json").read_text())).timestamp()
    base = first / "store" / "papers.buckets.arrow"  # 2 MB, written by the first build
    os.utime(base, (started - 600,) * 2)
    os.link(base, rerun / "store" / "papers.buckets.base.arrow")
    assert written_bytes(rerun, started) == 3 * MB
    assert written_bytes(first, forecast._started(json.loads((first / "build.json").read_text())).timestamp()) == 8 * MB
    # a file of the rerun's own that a later build linked is still the rerun's (newer than its start)
    later = results.build("later").root
    later.mkdir(parents=True)
    os.link(rerun / "graph.bin", later / "graph.bin")
    assert written_bytes(rerun, started) == 3 * MB
    f = forecast_run(results, inputs, UNREAD, earlier=rerun, new_kinds=frozenset({"pubmed_xml"}))
    assert f.results_bytes == int(f.new_input_bytes * REFERENCE.ingest_bytes_per_byte + 3 * MB * 4 / 3)
    # the first build removed, its file is the rerun's alone: counted now, but not by build.json's
    # count, which the forecast takes where there is one
    (first / "store" / "papers.buckets.arrow").unlink()
    assert written_bytes(rerun, started) == 5 * MB
    record = json.loads((rerun / "build.json").read_text())
    (rerun / "build.json").write_text(json.dumps({**record, "written_bytes": 3 * MB}))
    f = forecast_run(results, inputs, UNREAD, earlier=rerun, new_kinds=frozenset({"pubmed_xml"}))
    assert f.results_bytes == int(f.new_input_bytes * REFERENCE.ingest_bytes_per_byte + 3 * MB * 4 / 3)


def test_a_rerun_goes_by_the_last_rerun_that_added_files_of_its_kinds(tmp_path: Path, plenty_of_space) -> None:
    """An update file's rerun costs about twice a citation file's (10M): each is forecast from
    the last rerun on files of its own kinds where there is one, else from the last rerun."""
    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    first = _complete_build(results, "first", inputs[:1], seconds=400, folder_bytes=8 * MB, store_bytes=2 * MB,
                            on_the_delta=False, completed="2026-01-01T00:30:00+00:00")  # fmt: skip
    for name, seconds, completed in (("update", 60, "2026-01-01T00:40:00+00:00"), ("cited", 20, "2026-01-01T00:50:00+00:00")):
        rerun = _complete_build(results, name, [inputs[0], inputs[2]], seconds=seconds, folder_bytes=3 * MB,
                                store_bytes=MB, on_the_delta=True, completed=completed)  # fmt: skip
        counts = {"incremental": {"used": True, "files_added": [inputs[2].path.name]}}
        (rerun / "tables" / "counts.json").write_text(json.dumps(counts))
        if name == "cited":  # its build.json says the file it added was a citation file
            record = json.loads((rerun / "build.json").read_text())
            record["inputs"][1]["kind"] = "citations_table"
            (rerun / "build.json").write_text(json.dumps(record))
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"pubmed_xml"}))
    assert f.seconds == pytest.approx(60) and "rerun update (after a pubmed_xml file)" in f.basis
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"citations_table"}))
    assert f.seconds == pytest.approx(20) and "rerun cited (after a citations_table file)" in f.basis
    f = forecast_run(results, inputs, UNREAD, earlier=first, new_kinds=frozenset({"cord19_metadata"}))
    assert f.seconds == pytest.approx(20) and "rerun cited" in f.basis  # none alike: the last


def test_announce_finds_the_earlier_build_and_the_new_files_kinds(tmp_path: Path, plenty_of_space) -> None:
    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    _complete_build(results, "first", [inputs[0]], seconds=400, folder_bytes=8 * MB, store_bytes=2 * MB,
                    on_the_delta=False, completed="2026-01-01T00:30:00+00:00")  # fmt: skip
    said: list[str] = []
    f = announce(SETTINGS, results, inputs, UNREAD, results.build("new").root, said.append)
    assert f.what == "a rerun on top of build first (the merge on the delta)"
    assert said == f.lines() and "Expect about" in said[0]
    off = {**SETTINGS, "ingest": {"mention_source": "auto", "incremental": False}}  # the merge takes no earlier build
    assert announce(off, results, inputs, UNREAD, results.build("new").root, said.append).what.startswith(
        "a build from every file")
    other = {**SETTINGS, "graph": {"min_support": 2}}  # other build settings: nothing to merge on top of
    assert announce(other, results, inputs, UNREAD, results.build("new").root, said.append).what.startswith(
        "a build from every file")


def test_a_run_the_disk_cannot_hold_is_refused_unless_told_otherwise(tmp_path: Path, monkeypatch) -> None:
    results = ResultsLayout(tmp_path / "results")
    inputs = _corpus(tmp_path / "in")
    monkeypatch.setattr(forecast, "free_bytes", lambda path: 1 * MB)
    said: list[str] = []
    with pytest.raises(DiskForecastError) as refused:
        announce(SETTINGS, results, inputs, UNREAD, results.build("new").root, said.append)
    message = str(refused.value)
    assert str(results.root) in message and "prune --keep" in message and forecast.IGNORE_DISK_FORECAST_ENV in message
    assert len(said) == 2  # the forecast was said first
    monkeypatch.setenv(forecast.IGNORE_DISK_FORECAST_ENV, "1")
    announce(SETTINGS, results, inputs, UNREAD, results.build("new").root, said.append)
    assert forecast.IGNORE_DISK_FORECAST_ENV in said[-1] and "the run starts although" in said[-1]


def test_free_bytes_of_a_folder_not_made_yet_is_its_parents(tmp_path: Path) -> None:
    import shutil

    assert forecast.free_bytes(tmp_path / "not" / "yet") == pytest.approx(shutil.disk_usage(tmp_path).free, rel=0.01)


def test_the_kinds_said_to_merge_on_the_delta_are_those_whose_ingest_the_delta_takes(tmp_path: Path) -> None:
    """DELTA_KINDS against the merge's own rule (a new file may hold only DELTA_FILE_TABLES), on the
    bundled sample's file of each kind ingested for real."""
    from pipeline.ingest.run import ingest_file
    from pipeline.merge.delta import DELTA_FILE_TABLES

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    on_the_delta = set()
    for kind, patterns in config["inputs"].items():
        path = sorted((REPO).glob(patterns[0]))[0]
        ingest_file(kind, path, tmp_path / kind)
        tables = json.loads((tmp_path / kind / "counts.json").read_text())["tables"]
        if set(tables) <= DELTA_FILE_TABLES:
            on_the_delta.add(kind)
    assert on_the_delta == forecast.DELTA_KINDS

