"""The build record and the `latest` pointer: no credentials, written whole, safe to race."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import yaml

from pipeline.builds.record import finish_build, write_build_config

CONFIG = {
    "results_dir": "results",
    "mongo": {"enabled": True, "uri": "mongodb://litpath:pa&ss;word@db.example/?authSource=admin&tls=true"},
    "graph": {"min_support": 1},
}


def _build(results: Path, build_id: str) -> Path:
    build_dir = results / "builds" / build_id
    write_build_config(build_dir / "config.yaml", CONFIG, [["pubmed_xml", "a.xml.gz", "0" * 64]])
    return build_dir


def test_build_config_and_record_hold_no_credentials(tmp_path: Path) -> None:
    build_dir = _build(tmp_path, "b1")
    record = finish_build(build_dir)
    stored = yaml.safe_load((build_dir / "config.yaml").read_text())
    assert stored["mongo"]["uri"] == "mongodb://***@db.example/?authSource=admin&tls=true"
    assert record["config"]["mongo"]["uri"] == stored["mongo"]["uri"]
    for path in (build_dir / "config.yaml", build_dir / "build.json"):
        assert "pa&ss;word" not in path.read_text()
    assert json.loads((build_dir / "build.json").read_text())["build_id"] == "b1"
    assert (tmp_path / "latest").resolve() == build_dir.resolve()


def test_finish_build_by_hand_refuses_an_incomplete_build(tmp_path: Path) -> None:
    """`litpath finish-build` on a folder without its tables, graphs and solves had moved latest
    to it (found in review): refused, naming what is missing, latest left where it was."""
    from click.testing import CliRunner

    from pipeline.builds.commands import finish_build as finish_build_command
    from pipeline.builds.layout import BuildLayout

    done = _build(tmp_path, "b1")
    finish_build(done)
    empty = _build(tmp_path, "b2")
    result = CliRunner().invoke(finish_build_command, ["--build-dir", str(empty)])
    assert result.exit_code != 0 and "is not a complete build (tables/counts.json, graph/graph_counts.json" in result.output
    assert (tmp_path / "latest").resolve() == done.resolve() and not (empty / "build.json").exists()
    layout = BuildLayout(empty)
    for scope in ("full", "cooccurrence"):
        for path in (layout.graph(scope).counts, layout.graph(scope).summary):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
    layout.tables.path.mkdir(parents=True, exist_ok=True)
    layout.tables.counts.write_text("{}")
    result = CliRunner().invoke(finish_build_command, ["--build-dir", str(empty)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "latest").resolve() == empty.resolve()


def test_the_record_counts_the_bytes_the_build_wrote_not_those_it_linked(tmp_path: Path) -> None:
    import os

    other = tmp_path / "earlier.bin"
    other.write_bytes(b"e" * 5000)
    os.utime(other, (1_000_000_000,) * 2)  # written long before this build's run
    build_dir = _build(tmp_path, "b1")
    (build_dir / "run_config.yaml").write_text("{}\n")
    os.link(other, build_dir / "linked.bin")
    (build_dir / "own.bin").write_bytes(b"o" * 300)
    own = sum(p.stat().st_size for p in build_dir.rglob("*") if p.is_file() and p.name != "linked.bin")
    assert finish_build(build_dir)["written_bytes"] == own
    assert json.loads((build_dir / "build.json").read_text())["written_bytes"] == own


def test_two_workflows_finishing_at_once_leave_a_whole_pointer(tmp_path: Path) -> None:
    """Each finish renames its own uniquely named symlink over `latest` (no shared temporary name)."""
    builds = [_build(tmp_path, f"b{i}") for i in range(2)]
    errors: list[BaseException] = []

    def finish_many(build_dir: Path) -> None:
        try:
            for _ in range(50):
                finish_build(build_dir)
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=finish_many, args=(b,)) for b in builds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert (tmp_path / "latest").resolve() in {b.resolve() for b in builds}
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".latest")]
    assert not [p.name for b in builds for p in b.iterdir() if p.name.endswith(".tmp")]


# --- what the build id hashes ---------------------------------------------------------------


def _inputs(tmp_path: Path, content: str = "1,2,3\n"):
    from pipeline.builds.identity import resolve_inputs

    dump = tmp_path / "predications.csv"
    dump.write_text(content)
    return resolve_inputs({"inputs": {"semmeddb_predication": [str(dump)]}})


def test_build_id_keeps_to_what_changes_the_results(tmp_path: Path) -> None:
    """How the solve runs (ranks, threads, grid, tiles, ...) and the memory budget leave the build
    id alone, so changing them rebuilds no table, graph, load or mapping; what the graph holds and
    how the solve's method is chosen do not."""
    from pipeline.builds.identity import build_id
    from pipeline.config import validate_config

    inputs = _inputs(tmp_path)
    base = build_id(inputs, validate_config({}))
    how = {
        "solver": {"ranks": 8, "threads": 4, "grid": "2x4", "tile": 64, "broadcast": "chunked-ring",
                   "chunk_bytes": 4096, "lookahead": False, "backend": "reference", "validate_rows": 0,
                   "checkpoint_every": 5, "reuse": False},
        "resources": {"memory_gib": 2, "spill_dir": str(tmp_path / "spill")},
        "ingest": {"max_quarantine_fraction": 0.5},
    }  # fmt: skip
    assert build_id(inputs, validate_config(how)) == base
    assert build_id(inputs, validate_config({"solver": {"ranks": 2, "threads": 2}})) == base
    for what in (
        {"graph": {"edge_kinds": ["concept_concept"]}},
        {"graph": {"min_support": 2}},
        {"ingest": {"mention_source": "predications"}},
        {"solver": {"full_graph": "on-demand"}},
        {"solver": {"max_hours": 2.0}},
    ):
        assert build_id(inputs, validate_config(what)) != base, what
    assert build_id(_inputs(tmp_path, "1,2,4\n"), validate_config({})) != base


def test_write_build_config_command(tmp_path: Path) -> None:
    """`litpath write-build-config` (the workflow's build_config rule): the run's config without
    credentials and each input with its checksum; a build id that no longer matches is refused."""
    from click.testing import CliRunner

    from pipeline.builds.identity import build_id
    from pipeline.builds.record import write_build_config_command, write_run_config
    from pipeline.config import validate_config

    inputs = _inputs(tmp_path)
    config = validate_config(
        {**CONFIG, "inputs": {"semmeddb_predication": [str(tmp_path / "predications.csv")]}}
    )
    expected = build_id(inputs, config)
    settings = tmp_path / "builds" / expected / "run_config.yaml"
    write_run_config(settings, config)
    assert "pa&ss;word" not in settings.read_text()
    out = settings.with_name("config.yaml")
    args = ["--config", str(settings), "--checksums", str(tmp_path / "checksums.json"), "--config-out", str(out)]
    result = CliRunner().invoke(write_build_config_command, [*args, "--build-id", expected])
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(out.read_text())
    assert written["resolved_inputs"] == [
        {"kind": "semmeddb_predication", "path": str(tmp_path / "predications.csv"), "sha256": inputs[0].sha256}
    ]
    assert written["mongo"]["uri"] == "mongodb://***@db.example/?authSource=admin&tls=true"
    assert json.loads((tmp_path / "checksums.json").read_text())  # the hash is cached for the next run

    refused = CliRunner().invoke(write_build_config_command, [*args, "--build-id", "0123456789ab"])
    assert refused.exit_code == 1
    assert f"they make build {expected}, not 0123456789ab" in refused.output
    (tmp_path / "bad.yaml").write_text("solver: {rankz: 1}\n")
    bad = CliRunner().invoke(write_build_config_command, ["--config", str(tmp_path / "bad.yaml"), "--config-out", str(out)])
    assert bad.exit_code == 2 and "'rankz' was unexpected" in bad.output


def test_build_record_has_the_latest_runs_settings(tmp_path: Path) -> None:
    """build.json: the build's inputs from config.yaml, the settings of the latest run (its
    run_config.yaml, e.g. a comparison rerun with another hop limit) when there is one."""
    from pipeline.builds.record import write_run_config

    build_dir = _build(tmp_path, "b1")
    assert finish_build(build_dir)["config"]["graph"] == {"min_support": 1}
    write_run_config(build_dir / "run_config.yaml", {**CONFIG, "compare": {"hops": 2}})
    record = finish_build(build_dir)
    assert record["config"]["compare"] == {"hops": 2}
    assert record["inputs"] == [{"kind": "pubmed_xml", "path": "a.xml.gz", "sha256": "0" * 64}]
    assert record["config"]["mongo"]["uri"] == "mongodb://***@db.example/?authSource=admin&tls=true"


def test_describe_says_how_a_new_shell_finds_the_local_servers(tmp_path: Path) -> None:
    from pipeline.query.describe import servers_env_step

    (tmp_path / ".local-servers").mkdir()
    assert servers_env_step(tmp_path / ".local-servers") == [
        "  source <(.venv/bin/python -m services.local.servers env)   # their LITPATH_* variables"
    ]
    assert "LITPATH_NEO4J_URI" in servers_env_step(tmp_path / "elsewhere")[0]


def test_describe_prints_the_example_query_the_graph_stage_recorded(tmp_path: Path, monkeypatch) -> None:
    """The example comes from the full graph's record (found by the graph stage), without
    opening the graph, which took 9 s at the end of a 10M `make run`; a build without one still
    gets an example searched on its graph."""
    from pipeline.builds.layout import BuildLayout, ResultsLayout
    from pipeline.query import describe

    build = ResultsLayout(tmp_path).builds / "b1"
    build.mkdir(parents=True)
    example = {"source": "C0000001", "target": "C0000009", "hops": 3}
    record = {"build_id": "b1", "graph": {"path_index": {"sampled_queries": {"pairs": 40, "example": example}}}}
    BuildLayout(build).record.write_text(json.dumps(record))
    ResultsLayout(tmp_path).latest.symlink_to(build)

    def opened(build_dir: Path) -> None:
        raise AssertionError("the graph was opened")

    monkeypatch.setattr(describe, "example_pair", opened)
    text = describe.describe_latest({"results_dir": str(tmp_path)})
    assert "curl 'http://127.0.0.1:8000/v1/path?source=C0000001&target=C0000009'" in text
    del record["graph"]["path_index"]["sampled_queries"]["example"]
    BuildLayout(build).record.write_text(json.dumps(record))
    monkeypatch.setattr(describe, "example_pair", lambda build_dir: ("C0000002", "C0000003"))
    assert "source=C0000002&target=C0000003" in describe.describe_latest({"results_dir": str(tmp_path)})


def test_describe_says_what_is_wrong_with_latest(tmp_path: Path) -> None:
    """A latest whose build is gone, has no record, or a damaged one: a sentence saying so, never
    a traceback or "build None is complete" (found in review)."""
    from pipeline.builds.layout import BuildLayout, ResultsLayout
    from pipeline.query.describe import describe_latest

    results = ResultsLayout(tmp_path)
    build = results.builds / "b1"
    build.mkdir(parents=True)
    results.latest.symlink_to("builds/b1")
    config = {"results_dir": str(tmp_path)}
    assert describe_latest(config) == (
        f"{results.latest} names {build}, which has no build record (build.json): not a completed build."
    )
    BuildLayout(build).record.write_text('{"build_id": "b1", "gra')
    assert describe_latest(config).startswith(f"{BuildLayout(build).record} is not readable JSON (")
    BuildLayout(build).record.write_text("[]")
    assert "has no build record" in describe_latest(config)
    shutil.rmtree(build)
    assert describe_latest(config) == (
        f"{results.latest} names builds/b1, which is gone (a build removed by hand?): no completed build "
        "to describe; the next build moves latest on."
    )
    results.latest.unlink()
    assert describe_latest(config) == f"No completed build under {tmp_path}/ yet."


# --- provenance: which code and which reference files made a build ----------------------------


def test_build_record_says_which_litpath_and_which_sources_made_it(tmp_path: Path) -> None:
    """build.json names litpath's version, results format and commit, every file besides the dumps
    that shapes the results with its sha256 (UMLS's two files from the folder), and each stage's
    time and peak memory from the benchmark files."""
    import hashlib
    import subprocess

    from pipeline import __version__
    from pipeline.builds.identity import RESULTS_FORMAT

    nodes, umls = tmp_path / "nodes.tsv", tmp_path / "umls"
    nodes.write_text("id\tname\tkind\nDOID:1\tx\tDisease\n")
    umls.mkdir()
    (umls / "MRCONSO.RRF").write_text("C0000001|ENG|P|L1|PF|S1|Y|A1||||MSH|PT|D1|x|0|N||\n")
    build_dir = _build(tmp_path / "results", "b1")
    (build_dir / "run_config.yaml").write_text(
        yaml.safe_dump({**CONFIG, "spoke": {"enabled": True, "nodes": str(nodes)}, "mapping": {"umls_dir": str(umls)}})
    )
    logs = tmp_path / "results" / "logs"
    (logs / "b1").mkdir(parents=True)
    (logs / "b1" / "solve.benchmark.tsv").write_text("s\th:m:s\tmax_rss\n12.5\t0:00:12\t300.25\n")
    (logs / "ingest" / "pubmed_xml").mkdir(parents=True)
    (logs / "ingest" / "pubmed_xml" / f"a.xml.gz-{'0' * 12}.benchmark.tsv").write_text("s\tmax_rss\n1.0\tNA\n")

    record = finish_build(build_dir)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert record["litpath"]["version"] == __version__ and record["litpath"]["results_format"] == RESULTS_FORMAT
    assert record["litpath"]["commit"] == (head or None) and isinstance(record["litpath"]["dirty"], bool)
    assert record["started"] and record["started"] <= record["completed"]
    sources = {(s["setting"], Path(s["path"]).name): s for s in record["sources"]}
    assert sources["spoke.nodes", "nodes.tsv"]["sha256"] == hashlib.sha256(nodes.read_bytes()).hexdigest()
    assert sources["mapping.umls_dir", "MRCONSO.RRF"]["bytes"] == (umls / "MRCONSO.RRF").stat().st_size
    assert sources["mapping.umls_dir", "MRCUI.RRF"]["sha256"] is None  # named, and missing: said so
    assert record["stages"]["solve"] == {"seconds": 12.5, "max_rss_mib": 300.25}
    assert record["stages"][f"ingest/pubmed_xml/a.xml.gz-{'0' * 12}"] == {"seconds": 1.0, "max_rss_mib": None}
    # The hashes are kept for the next run (the checksum cache of the inputs).
    assert str(nodes.resolve()) in json.loads((tmp_path / "results" / ".checksums.json").read_text())


def test_build_id_changes_with_the_results_format(tmp_path: Path, monkeypatch) -> None:
    """An upgrade that changes results bumps RESULTS_FORMAT: the same inputs then make a new build."""
    import pipeline.builds.identity as buildinfo
    from pipeline.config import validate_config

    inputs = _inputs(tmp_path)
    before = buildinfo.build_id(inputs, validate_config({}))
    monkeypatch.setattr(buildinfo, "RESULTS_FORMAT", buildinfo.RESULTS_FORMAT + 1)
    assert buildinfo.build_id(inputs, validate_config({})) != before
