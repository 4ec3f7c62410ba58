"""earlier_build: which complete build a new build's merge may start from (pipeline.merge.delta)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pipeline.builds.identity import RESULTS_FORMAT
from pipeline.builds.layout import BuildLayout, ResultsLayout
from pipeline.builds.record import earlier_build, write_build_config

SETTINGS = {"ingest": {"mention_source": "auto"}, "graph": {"min_support": 1}, "solver": {"full_graph": "auto"}}
FILES = [["semmeddb_predication", "p.csv", "1" * 64], ["pubmed_xml", "n1.xml", "2" * 64],
         ["pubmed_xml", "n2.xml", "3" * 64], ["citations_table", "occ.csv", "4" * 64]]  # fmt: skip


def _build(results: Path, build_id: str, files: list[list[str]], complete: bool = True, settings=SETTINGS,
           results_format: int = RESULTS_FORMAT, mtime: float | None = None) -> Path:  # fmt: skip
    layout = ResultsLayout(results).build(build_id)
    write_build_config(layout.config, settings, files)
    if complete:
        Path(layout.tables.path).mkdir(parents=True)
        layout.tables.counts.write_text("{}")
        layout.record.write_text(json.dumps({"litpath": {"results_format": results_format}}))
        if mtime is not None:
            os.utime(layout.record, (mtime, mtime))
    return layout.root


def test_the_complete_build_with_most_of_the_inputs_is_chosen(tmp_path: Path) -> None:
    new = _build(tmp_path, "new", FILES, complete=False)
    assert earlier_build(new) is None  # nothing beside it yet
    _build(tmp_path, "two", [FILES[0], FILES[1]], mtime=2_000_000)
    three = _build(tmp_path, "three", [FILES[0], FILES[1], FILES[3]], mtime=1_000_000)
    assert earlier_build(new) == three
    newer_three = _build(tmp_path, "three-b", [FILES[0], FILES[2], FILES[3]], mtime=3_000_000)
    assert earlier_build(new) == newer_three  # as many inputs: the latest


def test_builds_that_do_not_fit_are_passed_over(tmp_path: Path) -> None:
    new = _build(tmp_path, "new", FILES, complete=False)
    _build(tmp_path, "incomplete", FILES[:2], complete=False)
    _build(tmp_path, "other-settings", FILES[:2], settings={**SETTINGS, "graph": {"min_support": 2}})
    _build(tmp_path, "older-format", FILES[:2], results_format=RESULTS_FORMAT - 1)
    _build(tmp_path, "reordered", [FILES[1], FILES[0]])
    _build(tmp_path, "foreign-file", [FILES[0], ["pubmed_xml", "n9.xml", "9" * 64]])
    _build(tmp_path, "same-inputs", FILES)
    assert earlier_build(new) is None
    # a setting that changes only how a stage runs is no difference
    fits = _build(tmp_path, "fits", FILES[:3], settings={**SETTINGS, "ingest": {"mention_source": "auto",
                                                                                  "incremental": False}})  # fmt: skip
    assert earlier_build(new) == fits
    assert earlier_build(BuildLayout(tmp_path / "builds" / "missing").root) is None
