"""The comparison over a SPOKE that litpath did not load (tests/support/foreign_spoke.py, written
by plain Cypher): mapped by lookup, compared end to end, every pair's row computed by hand."""

from __future__ import annotations

import json

import neo4j
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.foreign_spoke import (
    ACETAMINOPHEN,
    ACETAMINOPHEN_CUI,
    EXPECTED_DENY_HUB,
    EXPECTED_H1,
    EXPECTED_H3_CHANGES,
    IL6,
    IL7_GENE,
    LITERATURE_CUIS,
    QUERY,
    empty_foreign_spoke,
    write_foreign_spoke,
    write_literature_build,
    write_sources,
)

from pipeline.compare.classify import Comparator
from pipeline.compare.commands import compare
from pipeline.compare.spoke import CuiMapping, NodeRef, SpokeGraph
from pipeline.spoke.mapping.build import build_mapping_by_lookup, write_mapping
from pipeline.spoke.mapping.nodes import Neo4jNodes

pytestmark = pytest.mark.servers


@pytest.fixture(scope="module")
def foreign_results(neo4j_uri, neo4j_auth, tmp_path_factory):
    """results/ with the literature build and the mapping built by lookup from the foreign SPOKE."""
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    write_foreign_spoke(driver)
    root = tmp_path_factory.mktemp("foreign")
    sources = write_sources(root / "xrefs")
    write_literature_build(root)
    result = build_mapping_by_lookup(Neo4jNodes(driver), sources, literature_cuis=LITERATURE_CUIS)
    write_mapping(result.table, root / "latest" / "mapping")
    (root / "latest" / "mapping" / "mapping_stats.json").write_text(
        json.dumps(
            {
                "releases": {
                    "spoke": "foreign fixture",
                    "spoke_source": "Neo4j (lookup)",
                    "umls": "2099AA (test)",
                }
            }
        )
    )
    (root / "queries.txt").write_text("\n".join(QUERY) + "\n")
    try:
        yield root
    finally:
        empty_foreign_spoke(driver)
        driver.close()


def run(root, neo4j_env, out, *extra):
    args = ["--build-dir", str(root / "latest"), "--mapping", str(root / "latest" / "mapping" / "cui_spoke_mapping.parquet"),
            "--queries", str(root / "queries.txt"), "--out", str(out), "--neo4j-uri", neo4j_env["LITPATH_NEO4J_URI"],
            *extra]  # fmt: skip
    result = CliRunner().invoke(
        compare, args, catch_exceptions=False, env={**neo4j_env, "LITPATH_MONGO_URI": ""}
    )
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out / "paths.parquet").to_pylist()
    return result, {(r["source"], r["target"]): r for r in rows}


def test_every_pair_of_the_foreign_spoke_as_computed_by_hand(foreign_results, neo4j_env, tmp_path):
    result, rows = run(foreign_results, neo4j_env, tmp_path)
    assert {pair: (r["scenario"], r["cause"], r["spoke_distance"]) for pair, r in rows.items()} == EXPECTED_H1
    # COVID-19 -> Gene 3569 (an integer identifier in Neo4j) -> P05231: the SPOKE path names it "3569"
    assert rows[("C5203670", IL6)]["spoke_paths"] == (
        "DOID:0080600 COVID-19 (Disease) -[ASSOCIATES_DaG]-> 3569 IL6 (Gene); "
        "3569 IL6 (Gene) -[ENCODES_GeP]-> P05231 IL6_HUMAN (Protein)"
    )
    # acetaminophen is reached through Fever, a node with two labels, reported as the Symptom it is
    # mapped as; the path never steps on the obsolete Q99999
    covid_acetaminophen = json.loads(rows[("C5203670", "C0000970")]["detail"])["pair_link"]
    assert [(n["identifier"], n["label"]) for n in covid_acetaminophen["nodes"]] == [
        ("DOID:0080600", "Disease"), ("D005334", "Disease:Symptom"), ("inchikey:RZVAJINKPMORJF-UHFFFAOYSA-N", "Compound"),
    ]  # fmt: skip
    for row in rows.values():
        assert "Q99999" not in (row["spoke_paths"] or "") and "Q99999" not in row["detail"]
    assert "warning" not in result.output  # h = 1 needs no relationship filter
    run_record = json.loads((tmp_path / "run.json").read_text())
    assert run_record["causes"] == {
        "4": {"literature-disconnected": 3, "literature-absent": 4},
        "none": {"unmapped": 5, "spoke-disconnected": 0},
    }
    assert run_record["provenance"]["releases"]["spoke"] == "foreign fixture (Neo4j (lookup))"
    assert run_record["provenance"]["releases"]["umls"] == "2099AA (test)"
    # angiosarcoma's one node is obsolete: the lookup never mapped it
    mapping_rows = pq.read_table(
        foreign_results / "latest" / "mapping" / "cui_spoke_mapping.parquet"
    ).to_pylist()
    assert "C0018923" not in {r["cui"] for r in mapping_rows}


def test_a_mapping_that_names_an_obsolete_node_leaves_its_concept_unmapped(
    foreign_results, neo4j_uri, neo4j_auth
):
    """A mapping made before SPOKE marked the node obsolete (or by another tool): the comparison
    treats the node as absent, and says so."""
    mapping = CuiMapping(
        [
            ("C0018923", "Disease", "DOID:0001816", "indirect"),
            ("C5203670", "Disease", "DOID:0080600", "indirect"),
        ]
    )
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as driver:
        spoke = SpokeGraph(driver)
        comparison = Comparator(mapping, spoke).compare_sequences([["C5203670", "C0018923"]])[0]
    assert comparison.unmapped == ["C0018923"] and comparison.scenario == "3c"
    assert spoke.obsolete == {NodeRef("Disease", "DOID:0001816")}


def test_a_hop_limit_above_one_without_a_filter_warns_and_lets_the_hub_join(
    foreign_results, neo4j_env, tmp_path
):
    result, rows = run(foreign_results, neo4j_env, tmp_path, "--hops", "3")
    expected = {pair: EXPECTED_H3_CHANGES.get(pair, value[0]) for pair, value in EXPECTED_H1.items()}
    assert {pair: r["scenario"] for pair, r in rows.items()} == expected
    assert "warning: hop limit h = 3 with no relationship filter" in result.output
    hub = json.loads(rows[(IL6, IL7_GENE)]["detail"])["spoke_hops"][0]
    assert [r["type"] for r in hub["relationships"]] == ["ENCODES_OeP", "ENCODES_OeP", "ENCODES_GeP"]
    run_record = json.loads((tmp_path / "run.json").read_text())
    assert run_record["provenance"]["warnings"][0].startswith("hop limit h = 3 with no relationship filter")
    assert "> **Warning:** hop limit h = 3" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("hops", ["1", "3"])
def test_a_deny_list_keeps_the_hub_out_of_hops_and_scenario_4(foreign_results, neo4j_env, tmp_path, hops):
    """With ENCODES_OeP denied, IL7 gene's only other way to the rest is through the obsolete
    Q99999, which does not count: whatever h, and for scenario 4's search too."""
    result, rows = run(
        foreign_results, neo4j_env, tmp_path, "--hops", hops, "--deny-relationships", "ENCODES_OeP"
    )
    assert {
        pair: (r["scenario"], r["cause"], r["spoke_distance"]) for pair, r in rows.items()
    } == EXPECTED_DENY_HUB
    assert "warning" not in result.output
    provenance = json.loads((tmp_path / "run.json").read_text())["provenance"]
    assert provenance["relationships"] == {"allow": [], "deny": ["ENCODES_OeP"]}
    assert "SPOKE paths follow all but ENCODES_OeP" in (tmp_path / "report.md").read_text()


def test_an_allow_list_follows_only_its_types(foreign_results, neo4j_env, tmp_path):
    _, rows = run(foreign_results, neo4j_env, tmp_path, "--allow-relationships", "ASSOCIATES_DaG,ENCODES_GeP")
    assert rows[("C5203670", IL6)]["scenario"] == "1"  # both its hops are of the allowed types
    # scenario 4 pairs through RESEMBLES_DrD, TREATS_CtD or PRESENTS_DpS are now 'none'
    assert rows[("C5203670", "C0025598")]["scenario"] == "none"
    assert rows[("C5203670", "C0025598")]["cause"] == "spoke-disconnected"


def test_a_node_with_two_labels_mapped_under_both_is_one_node(foreign_results, neo4j_uri, neo4j_auth):
    """Fever is a Symptom and a Disease: two CUIs mapped to it under each label are joined by
    one node (length 0), not searched as a path from the node to itself."""
    mapping = CuiMapping(
        [("C0015967", "Symptom", "D005334", "direct"), ("C0000099", "Disease", "D005334", "direct"),
         ("C5203670", "Disease", "DOID:0080600", "indirect")]
    )  # fmt: skip
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as driver:
        comparison = Comparator(mapping, SpokeGraph(driver)).compare_sequences(
            [["C5203670", "C0015967", "C0000099"]]
        )[0]
    assert comparison.scenario == "1" and [hop.link.length for hop in comparison.spoke_hops] == [1, 0]
    assert comparison.spoke_hops[0].link.nodes[-1]["label"] == "Symptom"


def test_both_labels_of_one_node_get_its_paths(foreign_results, neo4j_uri, neo4j_auth):
    """Fever is a Symptom and a Disease. Two CUIs mapped to it under each label, each paired with
    acetaminophen (one relationship away; a Compound, whose mapped node sorts before both of
    Fever's, so both pairs are one pair of Neo4j nodes in one orientation): both are connected.
    One path query per pair of Neo4j nodes had kept only one of the two, which one depending on
    a set's order (the hash seed), so the other hop's link, and its scenario, changed between
    runs (found in review)."""
    mapping = CuiMapping(
        [("C0015967", "Symptom", "D005334", "direct"), ("C0000099", "Disease", "D005334", "direct"),
         (ACETAMINOPHEN_CUI, "Compound", ACETAMINOPHEN, "indirect")]
    )  # fmt: skip
    pairs = [("C0015967", ACETAMINOPHEN_CUI), ("C0000099", ACETAMINOPHEN_CUI)]
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as driver:
        links = SpokeGraph(driver).links(pairs, mapping, hops=1)
    assert {pair: links[tuple(sorted(pair))].length for pair in pairs} == {pair: 1 for pair in pairs}


def test_pairs_set_apart_as_one_node_are_those_of_one_node_in_neo4j(foreign_results, neo4j_uri, neo4j_auth):
    """Two CUIs are trivially connected when they map to one Neo4j node that is there and not
    obsolete: Fever under its two labels is one node; angiosarcoma, obsolete, joins nothing, so
    its two CUIs are classified like any pair (found in review: the mapping's names alone said
    the reverse of both)."""
    from pipeline.compare.classify import same_node_pairs

    mapping = CuiMapping(
        [("C0015967", "Symptom", "D005334", "direct"), ("C0000099", "Disease", "D005334", "direct"),
         ("C0018923", "Disease", "DOID:0001816", "direct"), ("C0000098", "Disease", "DOID:0001816", "direct")]
    )  # fmt: skip
    pairs = [("C0015967", "C0000099"), ("C0018923", "C0000098"), ("C0015967", "C0018923")]
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as driver:
        assert same_node_pairs(pairs, mapping, SpokeGraph(driver)) == {("C0015967", "C0000099")}
