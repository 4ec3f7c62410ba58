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


def test_releases_as_stated_else_as_the_inputs_name_them(tmp_path):
    import json

    import yaml

    from pipeline.compare.run import build_inputs, releases_of

    build = tmp_path / "builds" / "b1"
    build.mkdir(parents=True)
    inputs = [
        {"kind": "semmeddb_citations", "path": "d/semmedVER43_R_CITATIONS.csv", "sha256": "a" * 64},
        {
            "kind": "semmeddb_predication",
            "path": "d/semmedVER43_R_PREDICATION.csv.gz",
            "sha256": "0123456789ab" + "f" * 52,
        },
    ]
    (build / "config.yaml").write_text(yaml.safe_dump({"resolved_inputs": inputs}))
    assert build_inputs(build) == inputs  # before build.json, from config.yaml
    mapping = build / "mapping"
    mapping.mkdir()
    (mapping / "mapping_stats.json").write_text(
        json.dumps(
            {"releases": {"umls": "2024AA (release.dat)", "spoke": None, "spoke_source": "Neo4j x (lookup)"}}
        )
    )
    found = releases_of(build_inputs(build), mapping / "cui_spoke_mapping.parquet", {})
    assert found == {
        "spoke": "(Neo4j x (lookup))",
        "umls": "2024AA (release.dat)",
        "semmeddb": "VER43_R (file semmedVER43_R_PREDICATION.csv.gz, sha256 0123456789ab)",
    }
    stated = releases_of([], None, {"spoke": "SPOKE v5 (2025-06)", "umls": ""})
    assert stated == {"spoke": "SPOKE v5 (2025-06)", "umls": "not recorded", "semmeddb": "not recorded"}
