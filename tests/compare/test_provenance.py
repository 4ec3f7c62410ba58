"""How the comparison's provenance names files (pipeline.compare.run.provenance_path)."""

from __future__ import annotations

from pipeline.compare.run import provenance_path


def test_files_under_the_results_folder_are_named_relative_to_it(tmp_path):
    build = tmp_path / "results" / "builds" / "b1"
    assert provenance_path(build, build) == "builds/b1"
    assert provenance_path(build / "compare" / "query_set.json", build) == "builds/b1/compare/query_set.json"
    assert provenance_path(tmp_path / "results" / "spoke" / "m.parquet", build) == "spoke/m.parquet"


def test_files_elsewhere_by_name_and_relative_or_descriptions_as_written(tmp_path):
    build = tmp_path / "results" / "builds" / "b1"
    assert provenance_path(tmp_path / "elsewhere" / "queries.txt", build) == "queries.txt"
    assert provenance_path("config/queries.txt", build) == "config/queries.txt"
    assert provenance_path("SPOKE neighbourhood of DOID:1", build) == "SPOKE neighbourhood of DOID:1"
    assert provenance_path("", build) == ""
    # A build folder outside a builds/ folder: its parent stands for the results folder.
    loose = tmp_path / "one-build"
    assert provenance_path(loose / "mapping" / "m.parquet", loose) == "one-build/mapping/m.parquet"
