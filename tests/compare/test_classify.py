"""Scenario rules (pure) and classification of hand-built paths against a real Neo4j."""

from __future__ import annotations

import pytest

from pipeline.compare.classify import Comparator, query_pairs, scenario_of, spoke_hops_of
from pipeline.compare.literature import LiteraturePath
from pipeline.compare.spoke import CuiMapping, NodeRef, SpokeGraph

from .conftest import C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, MAPPING_ROWS


def test_scenario_of_rules():
    assert scenario_of(True, 3, 2, 2) == "1"
    assert scenario_of(True, 3, 2, 1) == "2a"
    assert scenario_of(True, 2, 1, 0) == "2b"
    assert scenario_of(False, 2, 1, 1) == "3a"
    assert scenario_of(False, 3, 2, 1) == "3b"
    assert scenario_of(False, 3, 2, 0) == "3c"
    assert scenario_of(False, 1, 0, 0) == "3c"
    assert scenario_of(False, 0, 0, 0) == "3c"
    with pytest.raises(ValueError):
        scenario_of(True, 1, 0, 0)


def test_spoke_hops_collapse_unmapped():
    hops, skipped = spoke_hops_of(["a", "x", "b", "y", "z", "c"], {"a", "b", "c"})
    assert hops == [("a", "b"), ("b", "c")] and skipped == [["x"], ["y", "z"]]
    assert spoke_hops_of(["x", "a"], {"a"}) == ([], [])


def test_query_pairs_ordered_and_unordered():
    assert query_pairs(["a", "b", "c", "a"], ordered=False) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert len(query_pairs(["a", "b", "c"], ordered=True)) == 6


def test_mapping_lookups_one_to_many_and_many_to_one():
    mapping = CuiMapping((c, label, ident, method) for c, label, ident, method, _ in MAPPING_ROWS)
    assert mapping.nodes_of(C5) == (NodeRef("Protein", "P00003"), NodeRef("Protein", "P00033"))
    assert mapping.cuis_of("DOID:1") == [C1, C12]
    assert mapping.cuis_of("P00001", "Protein") == [C3, C11] and mapping.cuis_of("P00001", "Gene") == []
    assert mapping.nodes_of(C8) == ()


# ---------------------------------------------------------------------------------- with Neo4j

H1_CASES = {  # each scenario at least twice; paths of length 1, repeats, one-to-many included
    (C1, C3, C4): "1",
    (C5, C4): "1",  # length 1, C5 connects only through its second node P00033
    (C1, C12, C3): "1",  # C1 and C12 are one SPOKE node
    (C1, C3, C1): "1",  # a repeated concept
    (C1, C3, C4, C10): "2a",
    (C6, C5, C4, C1): "2a",
    (C1, C2): "2b",
    (C6, C7, C3): "2b",
    (C1, C8, C3): "3a",
    (C7, C9, C2, C8, C10): "3a",
    (C3, C8, C4, C9, C10): "3b",
    (C6, C5, C8, C1): "3b",
    (C8, C9): "3c",
    (C8, C1): "3c",
    (C1, C8, C2): "3c",
    (C13, C1): "3c",  # C13's mapped node is not in Neo4j: unmapped
}
H2_CASES = {
    (C1, C3, C4, C10): "1",
    (C4, C10): "1",
    (C3, C8, C4, C9, C10): "3a",
    (C7, C9, C2, C8, C10): "3a",
    (C1, C2): "2b",
    (C1, C8, C2): "3c",
}


@pytest.fixture(scope="module")
def mapping() -> CuiMapping:
    return CuiMapping((c, label, ident, method) for c, label, ident, method, _ in MAPPING_ROWS)


@pytest.mark.servers
@pytest.mark.parametrize("hops,cases", [(1, H1_CASES), (2, H2_CASES)], ids=["h1", "h2"])
def test_sequences_classified_in_two_round_trips(spoke_driver, mapping, hops, cases):
    spoke = SpokeGraph(spoke_driver)
    results = Comparator(mapping, spoke, hops=hops).compare_sequences(list(cases))
    assert {tuple(r.concepts): r.scenario for r in results} == cases
    assert spoke.round_trips == 2  # one node lookup, one batched path query for every hop


@pytest.mark.servers
def test_evidence_names_spoke_nodes_and_relationships(spoke_driver, mapping):
    comparator = Comparator(mapping, SpokeGraph(spoke_driver), hops=1)
    exact, one_to_many, reverse, same, collapsed, none = comparator.compare_sequences(
        [[C1, C3, C4], [C5, C4], [C4, C5], [C1, C12, C3], [C1, C8, C3], [C1, C2]]
    )
    first = exact.spoke_hops[0].link
    assert [n["identifier"] for n in first.nodes] == ["DOID:1", "P00001"]
    assert first.nodes[0]["name"] == "disease one" and first.nodes[0]["label"] == "Disease"
    assert first.relationships == [
        {"type": "ASSOCIATES_DaP", "from": "DOID:1", "to": "P00001", "forward": True}
    ]
    assert [h.link.relationships[0]["type"] for h in exact.spoke_hops] == ["ASSOCIATES_DaP", "INTERACTS_PiP"]
    assert [n["identifier"] for n in one_to_many.spoke_hops[0].link.nodes] == ["P00033", "P00002"]
    assert [m["identifier"] for m in one_to_many.mapped[C5]] == ["P00003", "P00033"]
    hop = reverse.spoke_hops[0].link
    assert [n["identifier"] for n in hop.nodes] == ["P00002", "P00033"] and not hop.relationships[0][
        "forward"
    ]
    assert same.spoke_hops[0].link.length == 0 and same.spoke_hops[0].link.nodes[0]["identifier"] == "DOID:1"
    assert collapsed.unmapped == [C8] and collapsed.spoke_hops[0].skipped == [C8]
    assert not none.spoke_hops[0].link.connected and none.spoke_hops[0].link.nodes == []
    assert "DOID:1 disease one (Disease) -[ASSOCIATES_DaP]-> P00001 P1_HUMAN (Protein)" == first.describe()


@pytest.mark.servers
def test_two_hop_evidence_follows_the_spoke_path(spoke_driver, mapping):
    (result,) = Comparator(mapping, SpokeGraph(spoke_driver), hops=2).compare_sequences([[C4, C10]])
    link = result.spoke_hops[0].link
    assert link.length == 2
    assert [n["identifier"] for n in link.nodes] == ["P00002", "P00009", "DOID:10"]
    assert [(r["type"], r["forward"]) for r in link.relationships] == [
        ("INTERACTS_PiP", False), ("ASSOCIATES_DaP", False)
    ]  # fmt: skip


@pytest.mark.servers
@pytest.mark.parametrize(
    "pair,hops,expected",
    [
        ((C4, C5), 1, "4"),
        ((C11, C1), 1, "4"),
        ((C1, C5), 1, "none"),
        ((C7, C10), 1, "none"),
        ((C7, C10), 2, "4"),
    ],
)
def test_pairs_without_literature_path(spoke_driver, mapping, pair, hops, expected):
    comparator = Comparator(mapping, SpokeGraph(spoke_driver), hops=1, pair_hops=hops)
    (result,) = comparator.compare_paths([LiteraturePath(pair[0], pair[1], reachable=False)])
    assert result.scenario == expected
    assert (result.pair_link is not None) and result.pair_link.connected == (expected == "4")


@pytest.mark.servers
def test_unreachable_neo4j_is_a_clear_error(mapping):
    import neo4j

    from pipeline.store.neo4j import Neo4jUnavailable

    driver = neo4j.GraphDatabase.driver("bolt://127.0.0.1:9", auth=None, connection_timeout=1)
    try:
        with pytest.raises(Neo4jUnavailable, match="not reachable"):
            Comparator(mapping, SpokeGraph(driver, where="bolt://127.0.0.1:9")).compare_sequences([[C1, C3]])
    finally:
        driver.close()
