"""``litpath export``: KGX TSV of the sample's graphs and SSSOM TSV of a hand-made mapping, checked
against the build's own tables, the SSSOM file by the ``sssom`` library itself, the KGX files
by the ``kgx`` library's validator (in a virtual environment of its own: kgx 2.6 needs numpy < 2
and pyarrow 15, which this project's pins exclude; docs/design.md §6.8) and against the format's
specification and the Biolink model's published schema (the biolink-model package)."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from pipeline.builds.layout import BuildLayout, ExportFolder
from pipeline.cli import cli
from pipeline.export.kgx import SEMTYPE_CATEGORIES
from pipeline.spoke.mapping.build import MAPPING


def _biolink_model() -> dict:
    """The Biolink model's published schema (the biolink-model package's biolink_model.yaml)."""
    from importlib.resources import files

    return yaml.safe_load((files("biolink_model") / "schema" / "biolink_model.yaml").read_text())


BIOLINK = _biolink_model()


def _element(curie: str) -> str:
    """A Biolink CURIE's element name in the schema: biolink:PhenotypicFeature -> phenotypic feature,
    biolink:occurs_together_in_literature_with -> occurs together in literature with."""
    local = curie.removeprefix("biolink:")
    if "_" in local or local.islower():
        return local.replace("_", " ")
    return re.sub(r"(?<!^)(?=[A-Z])", " ", local).lower()


def _ancestors(name: str, kind: str) -> list[str]:
    chain = [name]
    while BIOLINK[kind][chain[-1]].get("is_a"):
        chain.append(BIOLINK[kind][chain[-1]]["is_a"])
    return chain


def _enum(name: str) -> set[str]:
    return set(BIOLINK["enums"][name]["permissible_values"])


# KGX TSV: the columns a nodes and an edges file must have (kgx's TSV source and Biolink 4).
NODE_REQUIRED = {"id", "category"}
EDGE_REQUIRED = {
    "id",
    "subject",
    "predicate",
    "object",
    "knowledge_level",
    "agent_type",
    "primary_knowledge_source",
}
# SSSOM 1.0's mapping_justification values (the sssom-schema's enumeration).
JUSTIFICATIONS = {f"semapv:{name}" for name in (
    "MappingReview", "ManualMappingCuration", "LogicalReasoning", "LexicalMatching", "CompositeMatching",
    "UnspecifiedMatching", "SemanticSimilarityThresholdMatching", "LexicalSimilarityThresholdMatching",
    "MappingChaining", "MappingInversion", "StructuralMatching", "InstanceBasedMatching",
    "BackgroundKnowledgeBasedMatching",
)}  # fmt: skip
CURIE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*:[^\s|]+$")


@pytest.fixture(scope="module")
def exported(tmp_path_factory, sample_results):
    # a copy of the session's sample build, which gets a mapping of our own
    build_dir = tmp_path_factory.mktemp("results") / "build"
    shutil.copytree((sample_results / "latest").resolve(), build_dir)
    _hand_made_mapping(build_dir)
    out = tmp_path_factory.mktemp("export")
    result = CliRunner().invoke(cli, ["export", "--build-dir", str(build_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return build_dir, ExportFolder(out), result.output


# (cui, label, identifier, method, route) -> (object_id, predicate, justification), checked by hand
MAPPING_CASES = [
    (("C0002395", "Disease", "DOID:10652", "indirect", "DO:UMLS_CUI"),
     ("DOID:10652", "skos:exactMatch", "semapv:MappingChaining")),
    (("C0004057", "Compound", "CHEMBL25", "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
     ("CHEMBL.COMPOUND:CHEMBL25", "skos:exactMatch", "semapv:MappingChaining")),
    (("C0004057", "Compound", "DB00945", "direct", "MRCONSO:DRUGBANK"),
     ("DRUGBANK:DB00945", "skos:exactMatch", "semapv:UnspecifiedMatching")),
    (("C0010200", "SideEffect", "C0010200", "identity", "identity:SideEffect.identifier"),
     ("UMLS:C0010200", "skos:exactMatch", "semapv:UnspecifiedMatching")),
    (("C0021760", "Gene", "3569", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
     ("NCBIGene:3569", "skos:exactMatch", "semapv:MappingChaining")),
    (("C0021760", "Protein", "P05231", "indirect", "UniProt>MRCONSO:MSH"),
     ("UniProtKB:P05231", "skos:exactMatch", "semapv:MappingChaining")),
    (("C1800706", "Disease", "DOID:0050156", "indirect", "MRCUI:RO:C1800706>DO:UMLS_CUI"),
     ("DOID:0050156", "skos:relatedMatch", "semapv:MappingChaining")),
    (("C0015967", "Symptom", "D005334", "indirect", "MRCUI:RB:C0015967>MRCONSO:MSH"),
     ("MESH:D005334", "skos:broadMatch", "semapv:MappingChaining")),
    (("C0010200", "Symptom", "D003371", "indirect", "MRCUI:SY:C0010200>MRCONSO:MSH"),
     ("MESH:D003371", "skos:exactMatch", "semapv:MappingChaining")),
    (("C0003469", "Pathway", "WP1234", "direct", "MRCONSO:WP"),
     ("SPOKE.Pathway:WP1234", "skos:exactMatch", "semapv:UnspecifiedMatching")),
    # NCBI taxa and GO terms under Biolink's own prefixes, not a made-up urn (found in review)
    (("C0020114", "Organism", "9606", "direct", "MRCONSO:NCBI"),
     ("NCBITaxon:9606", "skos:exactMatch", "semapv:UnspecifiedMatching")),
    (("C0005525", "BiologicalProcess", "GO:0008150", "direct", "MRCONSO:GO"),
     ("GO:0008150", "skos:exactMatch", "semapv:UnspecifiedMatching")),
]  # fmt: skip


def _hand_made_mapping(build_dir) -> None:
    mapping = BuildLayout(build_dir).mapping
    mapping.table.parent.mkdir(parents=True, exist_ok=True)
    rows = [dict(zip(MAPPING.names, case, strict=True)) for case, _ in MAPPING_CASES]
    pq.write_table(pa.Table.from_pylist(rows, schema=MAPPING), mapping.table)


def _tsv(path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t"))


def test_every_category_and_predicate_litpath_writes_is_in_the_biolink_model():
    from pipeline.export.kgx import EDGE_KINDS, NAMED_THING, PUBLICATION

    for category in {*SEMTYPE_CATEGORIES.values(), NAMED_THING, PUBLICATION}:
        assert _element(category) in BIOLINK["classes"], category
    for predicate, knowledge_level, agent_type, _ in EDGE_KINDS.values():
        assert _element(predicate) in BIOLINK["slots"], predicate
        assert knowledge_level in _enum("KnowledgeLevelEnum") and agent_type in _enum("AgentTypeEnum")


def test_biolink_names_are_read_as_the_schema_spells_them():
    assert _element("biolink:PhenotypicFeature") == "phenotypic feature"
    assert _element("biolink:occurs_together_in_literature_with") == "occurs together in literature with"
    assert "named thing" in _ancestors("disease", "classes")
    assert "related to" not in _ancestors("publications", "slots")  # an association slot, not a predicate


@pytest.mark.parametrize("scope", ["full", "cooccurrence"])
def test_kgx_files_follow_the_format(exported, scope):
    _, folder, _ = exported
    nodes, edges = _tsv(folder.kgx_nodes(scope)), _tsv(folder.kgx_edges(scope))
    assert NODE_REQUIRED <= set(nodes[0]) and EDGE_REQUIRED <= set(edges[0])
    ids = [node["id"] for node in nodes]
    assert len(ids) == len(set(ids)), "node ids are unique"
    known = set(SEMTYPE_CATEGORIES.values()) | {"biolink:NamedThing", "biolink:Publication"}
    for node in nodes:
        assert CURIE.match(node["id"]) and node["id"].split(":")[0] in {"UMLS", "NCBIGene", "PMID", "doi"}, (
            node
        )
        assert node["category"] and set(node["category"].split("|")) <= known, node
    node_ids = set(ids)
    knowledge_levels, agent_types = _enum("KnowledgeLevelEnum"), _enum("AgentTypeEnum")
    for edge in edges:
        assert edge["subject"] in node_ids and edge["object"] in node_ids, edge
        # a Biolink predicate: a slot below "related to"
        assert "related to" in _ancestors(_element(edge["predicate"]), "slots"), edge
        assert "association" in _ancestors(_element(edge["category"]), "classes"), edge
        assert edge["knowledge_level"] in knowledge_levels and edge["agent_type"] in agent_types, edge
        assert edge["primary_knowledge_source"].startswith("infores:")
        assert edge["aggregator_knowledge_source"].startswith("infores:")


def _expected_curie(key: str, build_dir) -> str:
    """A vertex key's KGX id, worked out here from the documents table: a CORD-19 paper without a
    PMID is its DOI's (the only one with that DOI in the sample)."""
    if key.startswith("CORD:"):
        documents = pq.read_table(BuildLayout(build_dir).tables.table("documents")).to_pylist()
        (doi,) = [d["doi"] for d in documents if d["doc_id"] == key]
        return f"doi:{doi}"
    return key.replace("GENE:", "NCBIGene:") if ":" in key else f"UMLS:{key}"


def test_cord19_papers_are_their_dois_where_theirs_alone():
    """The Biolink model has no CORD prefix (KGX's validator refused CORD: ids, found in review):
    a paper without a PMID is doi:<doi>, unless its DOI is another such paper's, or has a space
    or a "|" (KGX splits lists at it)."""
    from pipeline.export.kgx import node_id

    dois = {"CORD:a1": "doi:10.1/x"}
    assert node_id("CORD:a1", dois) == "doi:10.1/x" and node_id("CORD:b2", dois) == "CORD:b2"
    assert node_id("PMID:7", dois) == "PMID:7" and node_id("C0000001", dois) == "UMLS:C0000001"


def test_cord_dois_keeps_only_dois_of_one_paper(tmp_path):
    from pipeline.export.kgx import cord_dois

    tables = BuildLayout(tmp_path).tables
    tables.path.mkdir(parents=True)
    rows = [("CORD:a1", "10.1/x"), ("CORD:b2", "10.1/shared"), ("CORD:c3", "10.1/shared"),
            ("CORD:d4", None), ("CORD:e5", "10.1/a|b"), ("PMID:7", "10.1/p")]  # fmt: skip
    pq.write_table(pa.table({"doc_id": [r[0] for r in rows], "doi": [r[1] for r in rows]}), tables.table("documents"))
    assert cord_dois(tmp_path) == {"CORD:a1": "doi:10.1/x"}


@pytest.mark.parametrize("scope", ["full", "cooccurrence"])
def test_kgx_edges_carry_the_graphs_weights_and_the_tables_counts(exported, scope):
    build_dir, folder, _ = exported
    files = BuildLayout(build_dir).graph(scope)
    keys = pq.read_table(files.vertices).column("key").to_pylist()
    graph_edges = pq.read_table(files.folder.edges).to_pylist()
    edges = _tsv(folder.kgx_edges(scope))
    assert len(edges) == len(graph_edges)
    curie = {key: _expected_curie(key, build_dir) for key in keys}
    predications = pq.read_table(BuildLayout(build_dir).tables.table("predications")).to_pandas()
    pair = predications[["subject_cui", "object_cui"]].apply(lambda r: tuple(sorted(r)), axis=1)
    by_pair = predications.assign(pair=pair).groupby("pair")
    n_predications, n_papers = by_pair["predication_id"].nunique(), by_pair["doc_id"].nunique()
    mentions = pq.read_table(BuildLayout(build_dir).tables.table("mentions")).to_pandas()
    mention_count = {(d, c): n for d, c, n in mentions[["doc_id", "cui", "count"]].itertuples(index=False)}
    kinds = set()
    for expected, edge in zip(graph_edges, edges, strict=True):
        a, b = keys[expected["src"]], keys[expected["dst"]]
        kinds.add(expected["kind"])
        assert math.isclose(float(edge["weight"]), expected["weight"], rel_tol=1e-12)
        assert math.isclose(float(edge["cost"]), expected["cost"], rel_tol=1e-7)
        if expected["kind"] == "concept_concept":
            assert {edge["subject"], edge["object"]} == {curie[a], curie[b]}
            key = tuple(sorted((a, b)))
            assert (int(edge["n_predications"]), int(edge["n_papers"])) == (
                n_predications[key],
                n_papers[key],
            )
        elif expected["kind"] == "concept_abstract":
            assert (edge["subject"], edge["predicate"], edge["object"]) == (
                curie[b],
                "biolink:mentions",
                curie[a],
            )
            assert int(edge["n_mentions"]) == mention_count[(b, a)]
        else:
            assert (edge["subject"], edge["object"]) == (curie[a], curie[b])
    assert kinds == ({"concept_concept"} if scope == "cooccurrence" else {"concept_concept", "concept_abstract",
                                                                            "abstract_abstract"})  # fmt: skip


def test_sssom_file_follows_the_format_and_the_hand_checked_mappings(exported):
    _, folder, output = exported
    text = folder.sssom.read_text()
    metadata = yaml.safe_load("\n".join(line[1:] for line in text.splitlines() if line.startswith("#")))
    for required in ("curie_map", "mapping_set_id", "license"):
        assert metadata.get(required), required
    assert re.match(r"^[a-z][a-z0-9+.-]*:", metadata["mapping_set_id"]), "mapping_set_id is a URI"
    rows = _tsv(folder.sssom)
    assert {"subject_id", "predicate_id", "object_id", "mapping_justification"} <= set(rows[0])
    for row in rows:
        for column in ("subject_id", "predicate_id", "object_id", "mapping_justification"):
            assert CURIE.match(row[column]), (column, row)
            assert row[column].split(":")[0] in metadata["curie_map"], (column, row)
    assert {row["mapping_justification"] for row in rows} <= JUSTIFICATIONS
    found = {
        (r["subject_id"], r["object_id"], r["comment"]): (r["predicate_id"], r["mapping_justification"])
        for r in rows
    }
    assert len(rows) == len(MAPPING_CASES)
    for (cui, _label, _identifier, _method, route), (object_id, predicate, justification) in MAPPING_CASES:
        assert found[(f"UMLS:{cui}", object_id, f"route {route}")] == (predicate, justification)
    assert f"{len(MAPPING_CASES)} mappings" in output
    # the Biolink model's expansions; a made-up urn only for a label litpath knows no prefix of
    assert metadata["curie_map"]["GO"] == "http://purl.obolibrary.org/obo/GO_"
    assert metadata["curie_map"]["NCBITaxon"] == "http://purl.obolibrary.org/obo/NCBITaxon_"
    made_up = {prefix for prefix, iri in metadata["curie_map"].items() if iri.startswith("urn:")}
    assert made_up == {"SPOKE.Pathway"}


def test_names_with_pipes_quotes_tabs_and_line_breaks_survive_a_kgx_reader(tmp_path):
    """KGX reads its TSV without quoting and splits any value at "|" (found in review): names
    are written on one line, unquoted, with "|" as "/"; a reader that splits lines at tabs gets
    every field back, and the SSSOM file's labels are on one line too."""
    from pipeline.export.kgx import _clean, _writer

    path = tmp_path / "nodes.tsv"
    handle, writer = _writer(path, ("id", "category", "name"))
    names = ['"Leading quote', 'Alpha | beta "quoted" name', "tab\there\nnewline"]
    with handle:
        writer.writerows((f"UMLS:C{i:07d}", "biolink:Disease", _clean(name)) for i, name in enumerate(names))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[2] for line in lines[1:]] == [
        '"Leading quote', 'Alpha / beta "quoted" name', "tab here newline",
    ]  # fmt: skip


def test_sssom_file_parses_and_validates_with_the_sssom_library(exported):
    from sssom.constants import SchemaValidationType
    from sssom.parsers import parse_sssom_table
    from sssom.validators import validate

    _, folder, _ = exported
    parsed = parse_sssom_table(folder.sssom)
    assert len(parsed.df) == len(MAPPING_CASES)
    assert set(parsed.df["object_id"]) == {expected[0] for _, expected in MAPPING_CASES}
    reports = validate(
        parsed,
        [SchemaValidationType.JsonSchema, SchemaValidationType.PrefixMapCompleteness],
        fail_on_error=False,
    )
    problems = [result.message for report in reports.values() for result in report.results]
    assert not problems, problems[:3]


def test_export_record_counts_what_was_written(exported):
    build_dir, folder, _ = exported
    record = json.loads(folder.record.read_text())
    assert record["build_id"] == BuildLayout(build_dir).build_id
    for scope, counts in record["kgx"].items():
        assert counts["nodes"] == len(_tsv(folder.kgx_nodes(scope)))
        assert counts["edges"] == len(_tsv(folder.kgx_edges(scope)))
    assert record["sssom"] == {"mappings": len(MAPPING_CASES)}


def test_export_without_a_mapping_writes_no_sssom(tmp_path, sample_results):
    build_dir = tmp_path / "build"
    shutil.copytree((sample_results / "latest").resolve(), build_dir)
    result = CliRunner().invoke(cli, ["export", "--build-dir", str(build_dir), "--graph", "cooccurrence"])
    assert result.exit_code == 0, result.output
    folder = BuildLayout(build_dir).export
    assert folder.kgx_edges("cooccurrence").exists() and not folder.kgx_edges("full").exists()
    assert not folder.sssom.exists() and "no CUI mapping" in result.output
    assert pd.read_csv(folder.kgx_nodes("cooccurrence"), sep="\t")["id"].str.match(r"^(UMLS|NCBIGene):").all()


# kgx itself, in a virtual environment of its own (it cannot join this project's pins: kgx 2.6
# needs numpy < 2 and pyarrow 15), cached beside the other slow builds; scripts/kgx_validate.py
# runs its validator offline on the Biolink model that kgx's own dependencies install.
KGX_PINS = ("kgx==2.6.0", "numpy==1.26.4", "pyarrow==15.0.2")


def _kgx_python() -> Path:
    import os
    import subprocess
    import sys

    cache = Path(os.environ.get("LITPATH_CACHE", Path.home() / ".cache" / "litpath"))
    env = cache / ("kgx-env-" + "-".join(pin.replace("==", "") for pin in KGX_PINS))
    python = env / "bin" / "python"
    if not (env / ".complete").exists():
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *KGX_PINS], check=True, timeout=900)
        (env / ".complete").write_text(" ".join(KGX_PINS) + "\n")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["full", "cooccurrence"])
def test_the_kgx_library_finds_no_error(exported, scope):
    """The issue's check, by the kgx library: its Transformer reads our TSV pair and its Validator
    reports no error against the Biolink model."""
    import subprocess

    _, folder, _ = exported
    script = Path(__file__).resolve().parents[2] / "scripts" / "kgx_validate.py"
    result = subprocess.run(
        [str(_kgx_python()), str(script), str(folder.kgx_nodes(scope)), str(folder.kgx_edges(scope))],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.startswith("Biolink "), result.stdout[:500]
    report = json.loads(result.stdout.split("\n", 1)[1])
    assert not report.get("ERROR"), report


def test_sssom_labels_are_written_on_one_line(exported, tmp_path):
    """A concept name with a tab or a line break (SSSOM/TSV is TSV: one record a line)."""
    from pipeline.builds.tables import table_path
    from pipeline.export.sssom import write_sssom

    build_dir = tmp_path / "build"
    shutil.copytree(exported[0], build_dir)
    concepts_path = table_path(BuildLayout(build_dir).tables.path, "concepts")
    concepts = pq.read_table(concepts_path)
    cui = MAPPING_CASES[0][0][0]
    cuis = concepts.column("cui").to_pylist()
    assert cui in cuis
    names = ["Ill\tnamed\nconcept" if c == cui else n for c, n in zip(cuis, concepts.column("name").to_pylist(), strict=True)]
    renamed = concepts.set_column(concepts.column_names.index("name"), "name", pa.array(names, pa.string()))
    pq.write_table(renamed, concepts_path)
    folder = ExportFolder(tmp_path / "export")
    write_sssom(build_dir, folder)
    rows = _tsv(folder.sssom)
    assert len(rows) == len(MAPPING_CASES)
    assert [r["subject_label"] for r in rows if r["subject_id"] == f"UMLS:{cui}"] == ["Ill named concept"]
