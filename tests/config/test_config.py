"""The config schema (schemas/config.schema.yaml) is the one definition of the configuration: a
wrong key or a wrong type stops a run with a message naming it (README, "Running on real dumps"),
partial configs are completed from its defaults, and config/config.yaml documents every key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.config import (
    REPO_ROOT,
    ConfigError,
    check_setting,
    load_config,
    load_schema,
    read_yaml,
    schema_of,
    validate_config,
)
from pipeline.graph.build import graph_config

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_wrong_key_is_refused_naming_it(tmp_path: Path) -> None:
    path = _config_file(tmp_path, "solver:\n  rankz: 2\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == (
        f"{path}: solver: Additional properties are not allowed ('rankz' was unexpected)"
    )


def test_wrong_type_is_refused_naming_the_key(tmp_path: Path) -> None:
    path = _config_file(tmp_path, "solver:\n  ranks: two\ngraph:\n  novelty_only: 1\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value).splitlines() == [
        f"{path}: graph.novelty_only: 1 is not of type 'boolean'",
        f"{path}: solver.ranks: 'two' is not of type 'integer'",
    ]


def test_litpath_command_stops_with_the_message(tmp_path: Path) -> None:
    """What a user sees: one line naming file and key, exit status 2, no traceback."""
    path = _config_file(tmp_path, "graph:\n  min_suport: 2\n")
    done = subprocess.run(
        [str(BIN / "litpath"), "describe", "--config", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"litpath: error: {path}: graph: Additional properties are not allowed ('min_suport' was unexpected)"
    )


def _refused_dry_run(config: Path) -> str:
    """What a refused `snakemake --dry-run` of the workflow with ``config`` printed."""
    done = subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(REPO),
         "--configfile", str(config), "--dry-run"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]
    return output


def test_workflow_stops_with_the_message(tmp_path: Path) -> None:
    """The workflow checks its merged config as litpath does, before any rule is planned (where
    Snakemake's validate() printed the whole section's schema)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["solver"]["ranks"] = "two"
    path = _config_file(tmp_path, yaml.safe_dump(config))
    output = _refused_dry_run(path)
    assert f"{path}: solver.ranks: 'two' is not of type 'integer'" in output, output[-3000:]


def test_workflow_refuses_a_key_written_twice(tmp_path: Path) -> None:
    """Snakemake's own reader keeps the last of two equal keys; the workflow reads each config
    file as litpath does too, so the run stops naming both lines."""
    text = (REPO / "config" / "config.yaml").read_text()
    path = _config_file(tmp_path, text + "results_dir: elsewhere\n")
    output = _refused_dry_run(path)
    assert "found the key 'results_dir' a second time" in output, output[-3000:]
    assert f"line {len(text.splitlines()) + 1}, column 1" in output, output[-3000:]


def test_partial_config_gets_the_schema_defaults() -> None:
    schema = load_schema()
    filled = validate_config({"graph": {"min_support": 3}})
    assert filled["graph"]["min_support"] == 3
    assert filled["graph"]["edge_kinds"] == schema["properties"]["graph"]["properties"]["edge_kinds"]["default"]
    assert filled["solver"]["ranks"] == schema_of("solver.ranks")["default"] == 1
    assert filled["compare"]["neighbourhood"]["labels"] == ["Disease", "Protein"]


def test_graph_section_comes_from_the_schema_alone() -> None:
    """No default of the graph stage's own: an empty config, the bare section and the section of a
    whole config all give the schema's defaults (edge kinds in canonical order)."""
    defaults = {k: v["default"] for k, v in schema_of("graph")["properties"].items()}
    assert graph_config({}) == graph_config({"graph": {}}) == graph_config({"resources": {}}) == defaults
    assert graph_config({"edge_kinds": ["abstract_abstract", "concept_concept"]})["edge_kinds"] == [
        "concept_concept", "abstract_abstract",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match=r"graph\.edge_kinds: \[\] should be non-empty"):
        graph_config({"graph": {"edge_kinds": []}})


def test_check_setting_names_the_key() -> None:
    assert check_setting("ingest.mention_source", "both") == "both"
    with pytest.raises(ConfigError, match=r"^config: ingest\.mention_source: 'sum' is not one of"):
        check_setting("ingest.mention_source", "sum")
    with pytest.raises(KeyError, match="no key 'ingest.nothing'"):
        schema_of("ingest.nothing")


def _schema_keys(schema: dict, prefix: str = "") -> set[str]:
    keys = set()
    for name, sub in schema.get("properties", {}).items():
        keys.add(prefix + name)
        keys |= _schema_keys(sub, f"{prefix}{name}.")
    return keys


def _config_keys(config: dict, prefix: str = "") -> set[str]:
    keys = set()
    for name, value in config.items():
        keys.add(prefix + name)
        if isinstance(value, dict):
            keys |= _config_keys(value, f"{prefix}{name}.")
    return keys


def test_config_yaml_documents_every_key_of_the_schema() -> None:
    """config/config.yaml is the commented reference: every key the schema defines appears there
    (resolved_inputs excepted: the workflow writes it into a build's config.yaml, nobody sets it)."""
    shipped = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    defined = _schema_keys(load_schema()) - {"resolved_inputs"}
    assert sorted(defined - _config_keys(shipped)) == []
    assert sorted(_config_keys(shipped) - defined) == []
    validate_config(shipped, "config/config.yaml")


# --- a config of one's own may not name the bundled sample's files ----------------------------


def test_sample_files_are_refused_in_a_config_of_ones_own(tmp_path):
    """Every way of naming a sample file is caught (relative, absolute, a glob, a link into the
    sample); a file not read by the run (SPOKE off) or the sample's own config pass."""
    from pipeline.config import REPO_ROOT, SAMPLE_CONFIG, refuse_sample_files

    link = tmp_path / "linked-spoke"
    link.symlink_to(REPO_ROOT / "config" / "sample" / "spoke")
    own = tmp_path / "mine.yaml"
    config = validate_config({
        "inputs": {"semmeddb_predication": [str(tmp_path / "pred.csv.gz")],
                   "pubmed_xml": ["config/sample/pubmed/updatefiles/*.xml.gz"]},
        "spoke": {"enabled": True, "nodes": str(link / "nodes.tsv"), "edges": str(tmp_path / "edges.sif")},
        "mapping": {"umls_dir": str(REPO_ROOT / "config" / "sample" / "umls"), "unichem": ["x.txt"]},
        "compare": {"enabled": False, "queries": "config/sample/spoke/query_concepts.txt"},
    })  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        refuse_sample_files(config, [own], base=REPO_ROOT)
    message = str(refused.value)
    assert message.startswith(f"{own}: these settings still name files of the bundled sample")
    named = [line.split(":")[0].strip() for line in message.splitlines() if line.startswith("  ")]
    assert named == ["inputs.pubmed_xml", "spoke.nodes", "mapping.umls_dir"]  # queries: compare is off
    refuse_sample_files(config, [SAMPLE_CONFIG])  # the sample's own config: its files are its own
    refuse_sample_files(config, [])  # no config file given: the workflow's default, the sample
    mine = validate_config({"inputs": {"semmeddb_predication": [str(tmp_path / "pred.csv.gz")]}})
    refuse_sample_files(mine, [own], base=tmp_path)


def test_synth_config_points_at_copies_of_the_reference_files(tmp_path):
    """`litpath synth --config-out` writes a config of its own: the SPOKE, mapping and query files
    of the sample are copied beside the corpus, so the workflow accepts it."""
    from pipeline.config import REPO_ROOT, refuse_sample_files
    from pipeline.ingest.synth import write_corpus_config

    manifest = {"scale": 10, "seed": 1, "files": [{"kind": "semmeddb_predication", "path": "p.csv.gz"}]}
    out = write_corpus_config(tmp_path / "corpus", manifest, REPO_ROOT / "config" / "config.yaml",
                              tmp_path / "corpus" / "config.yaml")  # fmt: skip
    written = yaml.safe_load(out.read_text())
    refuse_sample_files(written, [out], base=REPO_ROOT)
    assert (tmp_path / "corpus" / "reference" / "umls" / "MRCONSO.RRF").is_file()
    assert written["spoke"]["nodes"] == str(tmp_path / "corpus" / "reference" / "spoke" / "nodes.tsv")
    assert all(Path(p).is_file() for p in written["mapping"]["unichem"])


@pytest.mark.parametrize(
    "path",
    sorted({*REPO_ROOT.glob("config/**/*.yaml"), *REPO_ROOT.glob("schemas/*.yaml"), *REPO_ROOT.glob("config/*.yml")}),
    ids=lambda path: str(path.relative_to(REPO_ROOT)),
)
def test_read_yaml_gives_what_safe_load_gives(path: Path) -> None:
    text = path.read_text()
    assert read_yaml(text) == yaml.safe_load(text)


def test_read_yaml_refuses_what_safe_load_refuses() -> None:
    for text in ("!!python/object/apply:os.system ['true']", "key: [unclosed"):
        with pytest.raises(yaml.YAMLError):
            yaml.safe_load(text)
        with pytest.raises(yaml.YAMLError):
            read_yaml(text)


def test_a_key_written_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    """YAML keeps the last value without a word: the baseline files would silently leave the build."""
    path = _config_file(tmp_path, "inputs:\n  pubmed_xml: [baseline/*.xml.gz]\n  pubmed_xml: [updatefiles/*.xml.gz]\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert message.startswith(f"{path}: not valid YAML:") and "found the key 'pubmed_xml' a second time" in message
    assert "line 2, column 3" in message and "line 3, column 3" in message
    # the same key in two mappings, and a merge key's override, are not repeats
    assert read_yaml("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}
    assert read_yaml("d: &d {x: 1, y: 2}\ne:\n  <<: *d\n  y: 3\n")["e"] == {"x": 1, "y": 3}


@pytest.mark.parametrize("text, key", [
    ("solver:\n  ranks: 2.0\n", "solver.ranks: 2.0 is not of type 'integer'"),
    ("resources:\n  ingest_files_per_job: 8.0\n", "resources.ingest_files_per_job: 8.0 is not of type 'integer'"),
    ("solver:\n  ranks: true\n", "solver.ranks: True is not of type 'integer'"),
])  # fmt: skip
def test_an_integer_is_written_as_one(tmp_path: Path, text: str, key: str) -> None:
    """JSON Schema takes 8.0 for an integer; a stage would fail on it after the ingest."""
    path = _config_file(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == f"{path}: {key}"


@pytest.mark.parametrize("text, expected", [
    ("solver:\n  ranks: 2\n  grid: 2x2\n", "solver.grid: 2x2 is a grid of 4 ranks, but solver.ranks is 2"),
    ("solver:\n  full_graph: rows\n", "solver.full_graph: rows stores the rows of solver.row_sources, which is empty"),
    ("spoke:\n  enabled: true\n  nodes: n.tsv\n",
     "spoke.load: true loads SPOKE's dump into Neo4j, but spoke.edges is empty (or set spoke.load: false"),
    ("spoke:\n  enabled: true\ncompare:\n  enabled: true\n", "spoke.edges are empty"),
    ("spoke:\n  enabled: true\n  load: false\ncompare:\n  enabled: true\n",
     "compare.enabled: the comparison needs a query set: compare.queries (a file) and/or compare.neighbourhood.seed"),
    ("compare:\n  enabled: true\n  queries: q.txt\n", "compare.enabled needs spoke.enabled"),
])  # fmt: skip
def test_settings_no_run_could_use_are_refused_before_it_starts(tmp_path: Path, text: str, expected: str) -> None:
    path = _config_file(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert expected in str(error.value) and str(error.value).startswith(f"{path}: ")


def test_settings_a_run_can_use_pass(tmp_path: Path) -> None:
    for text in (
        "solver:\n  ranks: 4\n  grid: 2x2\n",
        "solver:\n  full_graph: rows\n  row_sources: sources.txt\n",
        "spoke:\n  enabled: true\n  load: false\ncompare:\n  enabled: true\n  neighbourhood: {seed: 'DOID:0080600'}\n",
    ):
        load_config(_config_file(tmp_path, text))
    load_config(REPO / "config" / "config.yaml")


def test_a_home_folder_is_expanded(tmp_path: Path) -> None:
    """Not a folder named "~" under the working directory."""
    path = _config_file(tmp_path, "results_dir: ~/litpath-results\nsolver:\n  row_sources: ~/sources.txt\n")
    config = load_config(path)
    assert config["results_dir"] == str(Path.home() / "litpath-results")
    assert config["solver"]["row_sources"] == str(Path.home() / "sources.txt")


def test_a_config_not_in_utf8_is_refused_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes("# donn\u00e9es\nresults_dir: r\n".encode("latin-1"))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == f"{path}: not UTF-8 text (byte 6: b'\\xe9'); save it as UTF-8"


def test_make_runs_check_stops_the_run_when_it_breaks(tmp_path: Path, monkeypatch, capsys) -> None:
    """for_run's output is `source`d by make run: any failure of its check must print `return 1`."""
    from services.local import for_run

    def broken(path):
        raise RuntimeError("a check that broke")

    monkeypatch.setattr(for_run, "load_config", broken)
    assert for_run.main(["--config", str(tmp_path / "config.yaml")]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip() == "return 1"
    assert "RuntimeError: a check that broke" in captured.err and "the check of" in captured.err
