"""Loading SPOKE dumps into a real Neo4j (the session's local server)."""

from __future__ import annotations

import neo4j
import pytest
from click.testing import CliRunner
from neo4j.exceptions import ConstraintError
from support.data import SPOKE, UMLS, XREFS, rows_of

from pipeline.spoke.commands import load_spoke as load_spoke_command
from pipeline.spoke.dump import DumpError
from pipeline.spoke.load import load_spoke
from pipeline.spoke.mapping.build import MappingSources, build_mapping
from pipeline.spoke.mapping.nodes import spoke_nodes_from_dump, spoke_nodes_from_neo4j

pytestmark = pytest.mark.servers

NODES, EDGES = SPOKE / "nodes.tsv", SPOKE / "edges.sif"
SAMPLE_NODES = {"Anatomy": 3, "Compound": 4, "Disease": 5, "Gene": 10, "SideEffect": 3, "Symptom": 4}
SAMPLE_EDGES = {
    "ASSOCIATES_DaG": 7, "CAUSES_CcSE": 3, "DOWNREGULATES_CdG": 1, "EXPRESSES_AeG": 2, "INTERACTS_GiG": 7,
    "LOCALIZES_DlA": 2, "PRESENTS_DpS": 4, "RESEMBLES_CrC": 1, "RESEMBLES_DrD": 1, "TREATS_CtD": 4,
}  # fmt: skip


def graph_counts(driver: neo4j.Driver) -> tuple[dict[str, int], dict[str, int]]:
    with driver.session() as session:
        nodes = {
            r["label"]: r["n"]
            for r in session.run("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS n")
        }
        edges = {
            r["type"]: r["n"] for r in session.run("MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS n")
        }
    return nodes, edges


def test_load_sample_counts_and_verifies(graph):
    report = load_spoke(graph, NODES, EDGES, "hetionet")
    assert report.verified, report.problems
    assert {k: c.in_neo4j for k, c in report.nodes.items()} == SAMPLE_NODES
    assert {k: c.in_neo4j for k, c in report.edges.items()} == SAMPLE_EDGES
    assert report.totals()["nodes"]["created"] == 29 and report.totals()["edges"]["created"] == 32
    assert graph_counts(graph) == (SAMPLE_NODES, SAMPLE_EDGES)
    with graph.session() as session:
        constraints = {
            (r["labelsOrTypes"][0], r["properties"][0])
            for r in session.run(
                "SHOW CONSTRAINTS YIELD labelsOrTypes, properties, type WHERE type = 'UNIQUENESS'"
            )
        }
    assert constraints == {(label, "identifier") for label in SAMPLE_NODES}


def test_reload_is_idempotent(graph):
    first = load_spoke(graph, NODES, EDGES, "hetionet", batch_size=4)
    second = load_spoke(graph, NODES, EDGES, "hetionet", batch_size=7)
    assert first.verified and second.verified
    assert second.totals()["nodes"]["created"] == 0 and second.totals()["edges"]["created"] == 0
    assert second.totals()["nodes"]["loaded"] == 29 and second.totals()["edges"]["loaded"] == 32
    assert {k: c.in_neo4j for k, c in second.nodes.items()} == SAMPLE_NODES
    assert graph_counts(graph) == (SAMPLE_NODES, SAMPLE_EDGES)


def test_query_by_identifier_and_constraint_enforced(graph):
    load_spoke(graph, NODES, EDGES, "hetionet")
    with graph.session() as session:
        record = session.run(
            "MATCH (c:Compound)-[r:CAUSES_CcSE]->(s:SideEffect {identifier: $cui}) RETURN c.identifier AS c, c.name AS name",
            cui="C0003469",
        ).single()
        assert (record["c"], record["name"]) == ("DB01234", "Dexamethasone")
        genes = [r["g"] for r in session.run(
            "MATCH (:Disease {identifier: 'DOID:0050156'})-[:ASSOCIATES_DaG]->(g:Gene) RETURN g.name AS g ORDER BY g"
        )]  # fmt: skip
        assert genes == ["IL6", "TNF", "VEGFA"]
        with pytest.raises(ConstraintError):
            session.run("CREATE (:Gene {identifier: '3569', name: 'again'})").consume()


def test_duplicate_node_stops_the_load_before_anything_is_written(graph, tmp_path):
    nodes = tmp_path / "nodes.tsv"
    nodes.write_text(NODES.read_text() + "Gene::3569\tIL6 again\tGene\n")
    with pytest.raises(DumpError) as error:
        load_spoke(graph, nodes, EDGES, "hetionet")
    assert str(error.value) == f"{nodes}:31: duplicate node Gene '3569' (first at line 2)"
    assert graph_counts(graph) == ({}, {})


def test_duplicates_rejected_and_reported_the_rest_loaded(graph, tmp_path):
    nodes = tmp_path / "nodes.tsv"
    nodes.write_text(NODES.read_text() + "Gene::3569\tIL6 again\tGene\n")
    edges = tmp_path / "edges.sif"
    edges.write_text(EDGES.read_text() + "Gene::7124\tGiG\tGene::3569\n")
    report = load_spoke(graph, nodes, edges, "hetionet", on_error="reject")
    assert report.verified, report.problems
    assert [str(r) for r in report.rejections] == [
        f"{nodes}:31: duplicate node Gene '3569' (first at line 2)",
        f"{edges}:34: duplicate edge Gene '7124' -[INTERACTS_GiG]-> Gene '3569'",
    ]
    gene, interacts = report.nodes["Gene"], report.edges["INTERACTS_GiG"]
    assert (gene.read, gene.rejected, gene.loaded, gene.in_neo4j) == (11, 1, 10, 10)
    assert (interacts.read, interacts.rejected, interacts.loaded, interacts.in_neo4j) == (8, 1, 7, 7)
    with graph.session() as session:
        assert session.run("MATCH (g:Gene {identifier: '3569'}) RETURN g.name AS n").single()["n"] == "IL6"


def test_malformed_line_is_named_and_nothing_is_loaded(graph, tmp_path):
    edges = tmp_path / "edges.sif"
    lines = EDGES.read_text().splitlines()
    lines[4] = "Gene::3576 GiG Gene::3553"  # spaces, not tabs
    edges.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        DumpError,
        match=rf"^{edges}:5: expected 3 tab-separated fields \(source, metaedge, target\), found 1$",
    ):
        load_spoke(graph, NODES, edges, "hetionet")
    assert graph_counts(graph) == ({}, {})


def test_edge_to_a_missing_node_is_rejected(graph, tmp_path):
    edges = tmp_path / "edges.sif"
    edges.write_text(EDGES.read_text() + "Gene::999999\tGiG\tGene::3569\n")
    with pytest.raises(DumpError, match=r"edges.sif:34: edge endpoint not found: Gene '999999'"):
        load_spoke(graph, NODES, edges, "hetionet")
    report = load_spoke(graph, NODES, edges, "hetionet", on_error="reject")
    assert report.verified and report.rejected_total == 1
    assert report.edges["INTERACTS_GiG"].in_neo4j == 7


def test_csv_layout_with_properties_then_an_edges_only_load(graph, tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(
        "label,identifier,name,properties\n"
        'Disease,DOID:0050156,idiopathic pulmonary fibrosis,"{""mesh_list"": [""D054990""], ""source"": ""DO""}"\n'
        'Protein,P05231,IL6_HUMAN,"{""chromosome"": 7, ""reviewed"": true}"\n'
        "Protein,P13232,IL7_HUMAN,\n"
    )
    report = load_spoke(graph, nodes, None, "csv")
    assert report.verified and report.nodes["Protein"].created == 2
    edges = tmp_path / "edges.csv"
    edges.write_text(
        "source_label,source_identifier,type,target_label,target_identifier,properties\n"
        'Disease,DOID:0050156,ASSOCIATES_DaP,Protein,P05231,"{""score"": 0.8}"\n'
        "Disease,DOID:0050156,ASSOCIATES_DaP,Protein,P13232,\n"
        "Disease,DOID:0050156,ASSOCIATES_DaP,Protein,Q00000,\n"
    )
    report = load_spoke(graph, None, edges, "csv", on_error="reject")
    assert [str(r) for r in report.rejections] == [f"{edges}:4: edge endpoint not found: Protein 'Q00000'"]
    assert report.verified and report.edges["ASSOCIATES_DaP"].created == 2
    with graph.session() as session:
        record = session.run(
            "MATCH (d:Disease)-[r:ASSOCIATES_DaP]->(p:Protein {identifier: 'P05231'}) "
            "RETURN d.mesh_list AS mesh, p.chromosome AS chromosome, p.reviewed AS reviewed, r.score AS score"
        ).single()
    assert dict(record) == {"mesh": ["D054990"], "chromosome": 7, "reviewed": True, "score": 0.8}


def test_mapping_from_neo4j_equals_mapping_from_the_dump(graph):
    nodes_csv = SPOKE / "mapping_nodes.csv"
    assert load_spoke(graph, nodes_csv, None, "csv").verified
    sources = MappingSources.from_umls_dir(
        UMLS, do_xrefs=XREFS / "allXREFinDO.tsv", gene_info=XREFS / "Homo_sapiens.gene_info",
        ncit_swissprot=XREFS / "NCIt-SwissProt_Mapping.txt", unichem=[XREFS / "src1src2.txt"],
    )  # fmt: skip
    from_dump = build_mapping(spoke_nodes_from_dump(nodes_csv, "csv"), sources)
    from_neo4j = build_mapping(spoke_nodes_from_neo4j(graph), sources)
    assert rows_of(from_neo4j.table) == rows_of(from_dump.table)
    assert from_neo4j.nodes == from_dump.nodes


def test_cli_load_spoke(graph, neo4j_uri, neo4j_env, tmp_path):
    report_path = tmp_path / "report.json"
    args = [
        "--nodes",
        str(NODES),
        "--edges",
        str(EDGES),
        "--neo4j-uri",
        neo4j_uri,
        "--report",
        str(report_path),
    ]
    result = CliRunner().invoke(load_spoke_command, args, env=neo4j_env)
    assert result.exit_code == 0, result.output
    assert "verified: counts in Neo4j match what was loaded" in result.output
    assert '"verified": true' in report_path.read_text()
    bad = tmp_path / "nodes.tsv"
    bad.write_text("id\tname\tkind\nGene::1\n")
    result = CliRunner().invoke(
        load_spoke_command, ["--nodes", str(bad), "--neo4j-uri", neo4j_uri], env=neo4j_env
    )
    assert result.exit_code == 1
    assert result.output == f"Error: {bad}:2: expected 3 tab-separated fields (id, name, kind), found 1\n"


def test_configurable_property_names(graph):
    from pipeline.store.neo4j import GraphNaming

    naming = GraphNaming(identifier_property="spoke_id", name_property="pref_name")
    report = load_spoke(graph, NODES, EDGES, "hetionet", naming=naming)
    assert report.verified
    with graph.session() as session:
        record = session.run(
            "MATCH (s:Symptom {spoke_id: 'D003371'}) RETURN s.pref_name AS name, s.identifier AS old"
        ).single()
        assert (record["name"], record["old"]) == ("Cough", None)
    nodes = list(spoke_nodes_from_neo4j(graph, naming=naming, labels=["Symptom"]))
    assert sorted(n.identifier for n in nodes) == ["D003371", "D004417", "D005221", "D005334"]


def test_properties_cannot_rename_a_node(graph, tmp_path):
    """A dump row whose properties hold ``identifier`` is rejected (named, counted), not merged
    and then renamed by ``SET n += row.p``."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(
        "label,identifier,name,properties\n"
        'Disease,DOID:1,fibrosis,"{""identifier"": ""DOID:2""}"\n'
        "Disease,DOID:2,asthma,\n"
    )
    with pytest.raises(DumpError, match=rf"^{nodes}:2: property 'identifier' is reserved"):
        load_spoke(graph, nodes, None, "csv")
    report = load_spoke(graph, nodes, None, "csv", on_error="reject")
    assert report.verified, report.problems
    disease = report.nodes["Disease"]
    assert (disease.read, disease.rejected, disease.loaded, disease.in_neo4j) == (2, 1, 1, 1)
    with graph.session() as session:
        names = {
            r["id"]: r["name"]
            for r in session.run("MATCH (d:Disease) RETURN d.identifier AS id, d.name AS name")
        }
    assert names == {"DOID:2": "asthma"}


def test_a_server_without_the_loaded_spoke_loses_the_report(graph, neo4j_env, tmp_path):
    """The workflow's check before it plans (workflow/rules/common.smk): the SPOKE load report goes
    when Neo4j holds fewer nodes of a label than it says were loaded (a new or emptied server),
    and stays when Neo4j holds them or cannot be reached."""
    import json

    from pipeline.config.connections import Neo4jSettings
    from pipeline.spoke.load import forget_load_the_server_lacks

    settings = Neo4jSettings.from_env(environ=neo4j_env)
    report_path = tmp_path / "load.json"
    report_path.write_text(json.dumps(load_spoke(graph, NODES, EDGES, "hetionet").as_dict()))
    assert forget_load_the_server_lacks(report_path, settings) is None and report_path.exists()

    with graph.session() as session:  # one Gene gone: the server no longer holds what was loaded
        session.run("MATCH (n:Gene) WITH n LIMIT 1 DETACH DELETE n").consume()
    note = forget_load_the_server_lacks(report_path, settings)
    assert note and "Gene 9 of 10" in note and not report_path.exists(), note
    assert (settings.password or "\0") not in note

    report_path.write_text(json.dumps({"nodes": {"Gene": {"loaded": 10}}}))
    unreachable = Neo4jSettings.from_env(uri="bolt://127.0.0.1:1", environ=neo4j_env)
    note = forget_load_the_server_lacks(report_path, unreachable, timeout_s=1.0)
    assert note and "could not check" in note and report_path.exists(), note
    assert forget_load_the_server_lacks(tmp_path / "none.json", settings) is None
    report_path.write_text('{"nodes": {"Gene": {"loa')  # cut short
    note = forget_load_the_server_lacks(report_path, unreachable, timeout_s=1.0)
    assert note and "is not a SPOKE load report" in note and not report_path.exists(), note
