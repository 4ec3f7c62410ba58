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


def test_workflow_stops_with_the_message(tmp_path: Path) -> None:
    """Snakemake's validate() against the same schema, before any rule is planned."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["solver"]["ranks"] = "two"
    path = _config_file(tmp_path, yaml.safe_dump(config))
    done = subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(REPO),
         "--configfile", str(path), "--dry-run"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]
    assert "'two' is not of type 'integer'" in output and "['solver']['properties']['ranks']" in output, output[-3000:]


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
