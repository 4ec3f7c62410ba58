"""`litpath build-mapping --reuse auto`: a build's mapping linked from another build of its results
folder made from the very same inputs, the same as building it (pipeline/spoke/mapping/reuse.py),
and built wherever an input differs or SPOKE's nodes come from Neo4j."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.data import SPOKE, UMLS, XREFS

from pipeline.builds.layout import BuildLayout, MappingFolder
from pipeline.spoke.commands import build_mapping
from pipeline.spoke.mapping.reuse import mapping_files, mapping_inputs

CUIS = ["C0011849", "C0020538", "C0004096", "C0027051", "C9999999"]


@pytest.fixture(autouse=True)
def clean_checkout(monkeypatch):
    """litpath as from a commit: a checkout with uncommitted changes (a developer's) takes nothing."""
    import pipeline.spoke.mapping.reuse as reuse

    monkeypatch.setattr(reuse, "litpath_provenance", lambda: {"version": "1.0", "commit": "0" * 40, "dirty": False})
    monkeypatch.setattr(reuse, "_code_changed", lambda: False)


def _build(results: Path, build_id: str, cuis: list[str]) -> BuildLayout:
    """A build folder as the workflow leaves it before its mapping: config.yaml and the concepts."""
    build = BuildLayout(results / "builds" / build_id)
    Path(build.tables.path).mkdir(parents=True)
    build.config.write_text("inputs: {}\n")
    pq.write_table(pa.table({"cui": cuis, "name": cuis, "semtypes": [["dsyn"]] * len(cuis)}), build.tables.table("concepts"))
    return build


def _map(out: Path, concepts: Path, *extra: str) -> str:
    args = [
        "--umls-dir", str(UMLS), "--do-xrefs", str(XREFS / "allXREFinDO.tsv"),
        "--gene-info", str(XREFS / "Homo_sapiens.gene_info"), "--unichem", str(XREFS / "src1src47.txt"),
        "--spoke-nodes", str(SPOKE / "mapping_nodes.csv"), "--spoke-format", "csv",
        "--concepts", str(concepts), "--out", str(out), *extra,
    ]  # fmt: skip
    result = CliRunner().invoke(build_mapping, args)
    assert result.exit_code == 0, result.output
    return result.output


def _stats(folder: MappingFolder) -> dict:
    return json.loads(folder.stats.read_text())


def test_a_build_of_the_same_inputs_links_the_earlier_mapping_which_is_the_one_it_would_build(tmp_path):
    results = tmp_path / "results"
    first = _build(results, "aaaa", CUIS)
    _map(first.mapping.path, first.tables.table("concepts"), "--reuse", "auto")
    built = _stats(first.mapping)
    assert built["reuse"] == "built: no other build's mapping was made from these inputs"
    assert built["inputs"]["concepts"] and built["inputs"]["spoke_nodes"]["format"] == "csv"

    second = _build(results, "bbbb", CUIS)
    said = _map(second.mapping.path, second.tables.table("concepts"), "--reuse", "auto")
    assert "taken: build aaaa's mapping" in said
    taken = _stats(second.mapping)
    assert taken["reuse"].startswith("taken: build aaaa's mapping")
    assert {k: v for k, v in taken.items() if k != "reuse"} == {k: v for k, v in built.items() if k != "reuse"}
    for theirs, ours in zip(mapping_files(first.mapping), mapping_files(second.mapping), strict=True):
        assert ours.stat().st_ino == theirs.stat().st_ino, ours  # linked, not written again

    # ... and what building it would have written, file for file
    scratch = MappingFolder(tmp_path / "scratch")
    _map(scratch.path, second.tables.table("concepts"))
    for ours, fresh in zip(mapping_files(second.mapping), mapping_files(scratch), strict=True):
        if ours.suffix == ".parquet":
            assert pq.read_table(ours).equals(pq.read_table(fresh)), ours.name
        else:
            assert ours.read_bytes() == fresh.read_bytes(), ours.name
    # built again into the folder that took them: the first build's files are left as they were
    before = {path: path.read_bytes() for path in mapping_files(first.mapping)}
    _map(second.mapping.path, second.tables.table("concepts"), "--no-gene-identity")
    assert {path: path.read_bytes() for path in mapping_files(first.mapping)} == before
    assert all(ours.stat().st_ino != theirs.stat().st_ino
               for theirs, ours in zip(mapping_files(first.mapping), mapping_files(second.mapping), strict=True))  # fmt: skip
    fresh_stats = _stats(scratch)
    assert fresh_stats["reuse"] == "built (--reuse none)" and fresh_stats["inputs"] is None
    assert {k: v for k, v in fresh_stats.items() if k not in ("reuse", "inputs")} == {
        k: v for k, v in taken.items() if k not in ("reuse", "inputs")
    }


@pytest.mark.parametrize("change", ["concepts", "option", "source file", "moved source"])
def test_a_mapping_is_built_again_where_any_input_differs(tmp_path, change):
    results = tmp_path / "results"
    first = _build(results, "aaaa", CUIS)
    _map(first.mapping.path, first.tables.table("concepts"), "--reuse", "auto")
    second = _build(results, "bbbb", CUIS[:-1] if change == "concepts" else CUIS)
    extra = ["--reuse", "auto"]
    if change == "option":
        extra += ["--no-gene-identity"]
    if change in ("source file", "moved source"):
        moved = tmp_path / "xrefs" / "allXREFinDO.tsv"
        moved.parent.mkdir()
        shutil.copy(XREFS / "allXREFinDO.tsv", moved)
        if change == "source file":  # one more line: other bytes
            with moved.open("a") as handle:
                handle.write("DOID:0000000\tUMLS_CUI:C0000001\n")
        extra += ["--do-xrefs", str(moved)]
    said = _map(second.mapping.path, second.tables.table("concepts"), *extra)
    assert "taken:" not in said
    stats = _stats(second.mapping)
    assert stats["reuse"] == "built: no other build's mapping was made from these inputs"
    assert all(ours.stat().st_ino != theirs.stat().st_ino
               for theirs, ours in zip(mapping_files(first.mapping), mapping_files(second.mapping), strict=True))  # fmt: skip


def test_nothing_is_taken_from_neo4j_nor_outside_a_build(tmp_path, monkeypatch):
    inputs, why = mapping_inputs(None, {}, None, "csv", {})
    assert inputs is None and "Neo4j" in why
    # a folder of its own: built, and why not taken said
    concepts = tmp_path / "concepts.parquet"
    pq.write_table(pa.table({"cui": CUIS, "name": CUIS, "semtypes": [["dsyn"]] * len(CUIS)}), concepts)
    _map(tmp_path / "out", concepts, "--reuse", "auto")
    assert "is not a build's mapping folder" in _stats(MappingFolder(tmp_path / "out"))["reuse"]
    # a checkout whose code has uncommitted changes: its code is not the commit's
    import pipeline.spoke.mapping.reuse as reuse

    monkeypatch.setattr(reuse, "_code_changed", lambda: True)
    inputs, why = mapping_inputs(None, {}, SPOKE / "mapping_nodes.csv", "csv", {})
    assert inputs is None and "uncommitted" in why


def test_only_changes_to_the_code_count_as_uncommitted(tmp_path, monkeypatch):
    """A results file recorded in the checkout (bench/results/) leaves the code the commit's; a
    changed or new file under pipeline/ does not. On a copy of this checkout's git history."""
    import subprocess

    import pipeline.spoke.mapping.reuse as reuse

    repo = Path(reuse.__file__).resolve().parents[3]
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(repo), str(clone)], check=True)
    fake = clone / "pipeline" / "spoke" / "mapping" / "reuse.py"
    monkeypatch.setattr(reuse, "__file__", str(fake))
    monkeypatch.undo()  # the autouse fixture's stand-in too: the real check on the clone
    monkeypatch.setattr(reuse, "__file__", str(fake))
    assert reuse._code_changed() is False
    (clone / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (clone / "bench" / "results" / "scale_runs.md").write_text("a record\n")
    assert reuse._code_changed() is False
    (clone / "pipeline" / "new_module.py").write_text("x = 1\n")
    assert reuse._code_changed() is True
