"""Scenario rules (pure) and classification of hand-built paths against a real Neo4j."""

from __future__ import annotations

import pytest
from support.comparison_world import C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, MAPPING_ROWS

from pipeline.compare.classify import (
    NOT_JOINED,
    Comparator,
    joined_walk,
    query_pairs,
    scenario_of,
    spoke_hops_of,
)
from pipeline.compare.literature import LiteraturePath
from pipeline.compare.spoke import CuiMapping, NodeRef, SpokeGraph, SpokeLink


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
    # one node lookup, one batched path query for every hop, one for the ends' SPOKE distances
    assert spoke.round_trips == 3


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
    "pair,cap,expected,length",
    [
        ((C4, C5), 1, "4", 1),
        ((C11, C1), 1, "4", 1),
        ((C1, C5), 1, "none", None),  # DOID:1 -> P00001 -> P00002 <- P00033: three relationships
        ((C1, C5), 2, "none", None),
        ((C1, C5), 3, "4", 3),
        ((C1, C5), None, "4", 3),  # the default cap (12): "path exists in SPOKE", any length
        ((C7, C10), 1, "none", None),
        ((C7, C10), 2, "4", 2),
        ((C7, C5), None, "4", 5),  # DB00007 -> DOID:2 -> DOID:10 -> P00009 -> P00002 <- P00033
        ((C6, C1), None, "none", None),  # Gene 6 - P00003 is a SPOKE component of its own
    ],
)
def test_pairs_without_literature_path(spoke_driver, mapping, pair, cap, expected, length):
    """Scenario 4 is "path exists in SPOKE": any length up to the safety cap; beyond it, none."""
    kwargs = {} if cap is None else {"scenario4_max_hops": cap}
    comparator = Comparator(mapping, SpokeGraph(spoke_driver), hops=1, **kwargs)
    (result,) = comparator.compare_paths([LiteraturePath(pair[0], pair[1], reachable=False)])
    assert result.scenario == expected
    assert (result.pair_link is not None) and result.pair_link.connected == (expected == "4")
    assert result.pair_link.length == length
    assert result.hops == (cap or 12)  # the cap searched is reported with the pair


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


# ----------------------------------------------------------------- one SPOKE walk (exact match)


class _Connections:
    """A stand-in for SpokeConnections: which node pairs are joined, and how long the link is."""

    def __init__(self, present, joined):
        self.present = present
        self.joined = {tuple(sorted(pair)): length for pair, length in joined.items()}

    def node_link(self, x, y):
        if x == y:
            return SpokeLink(True, 1, 0)
        length = self.joined.get(tuple(sorted((x, y))))
        return None if length is None else SpokeLink(True, 1, length)


def _node(name):
    return NodeRef("Protein", name)


def test_joined_walk_chooses_one_node_per_concept():
    a, b1, b2, c = _node("A"), _node("B1"), _node("B2"), _node("C")
    present = {"a": [a], "b": [b1, b2], "c": [c]}
    # a-b1 and b2-c join, but no single node of b joins both sides: no SPOKE walk.
    assert joined_walk(["a", "b", "c"], _Connections(present, {(a, b1): 1, (b2, c): 1})) is None
    # b2 joins both sides: the walk goes through it.
    walk = joined_walk(["a", "b", "c"], _Connections(present, {(a, b1): 1, (a, b2): 1, (b2, c): 1}))
    assert walk == [a, b2, c]
    # both nodes of b join both sides: the shorter total wins, then the smaller node.
    both = {(a, b1): 2, (b1, c): 2, (a, b2): 1, (b2, c): 2}
    assert joined_walk(["a", "b", "c"], _Connections(present, both)) == [a, b2, c]
    tie = {(a, b1): 1, (b1, c): 1, (a, b2): 1, (b2, c): 1}
    assert joined_walk(["a", "b", "c"], _Connections(present, tie)) == [a, b1, c]
    # a concept without a present node breaks every walk
    assert joined_walk(["a", "d"], _Connections({**present, "d": []}, {})) is None
    # one concept repeated: the same node joins itself
    assert joined_walk(["a", "a"], _Connections(present, {})) == [a, a]


def test_scenario_of_needs_one_walk_for_exact_match():
    assert scenario_of(True, 3, 2, 2, joined=True) == "1"
    assert scenario_of(True, 3, 2, 2, joined=False) == "2a"
    assert scenario_of(False, 3, 2, 2, joined=True) == "3a"
    assert scenario_of(False, 3, 2, 2, joined=False) == "3b"


@pytest.mark.servers
def test_exact_match_needs_one_joined_spoke_path(spoke_driver, mapping):
    """C5 maps to P00003 and P00033. C6 (Gene 6) joins P00003, C4 (P00002) joins P00033: each hop
    of C6 > C5 > C4 connects in SPOKE, but through different nodes of C5, so no single SPOKE path
    runs C6 > C5 > C4: not an exact match (the per-hop reading would have called it 1)."""
    comparator = Comparator(mapping, SpokeGraph(spoke_driver), hops=1)
    split, joined = comparator.compare_sequences([[C6, C5, C4], [C5, C4]])
    assert split.n_connected == 2 and len(split.spoke_hops) == 2
    assert split.scenario == "2a"
    assert NOT_JOINED in split.notes and split.spoke_walk is None
    assert [h.link.nodes[-1]["identifier"] for h in split.spoke_hops] == ["P00003", "P00002"]
    assert joined.scenario == "1"
    assert [n["identifier"] for n in joined.spoke_walk] == ["P00033", "P00002"]
    # The hop evidence of an exact match is the link between the chosen nodes.
    (exact,) = comparator.compare_sequences([[C1, C3, C4]])
    assert [n["identifier"] for n in exact.spoke_walk] == ["DOID:1", "P00001", "P00002"]
    assert exact.spoke_hops[1].link.nodes[0]["identifier"] == exact.spoke_walk[1]["identifier"]


def test_report_examples_list_a_few_documents_per_hop_the_table_all():
    """A hop of a large corpus can rest on thousands of papers: the report's examples list
    EXAMPLE_DOCUMENTS_PER_HOP and say how many more; paths.parquet keeps every one."""
    from pipeline.compare.classify import Comparison
    from pipeline.compare.literature import LiteratureHop
    from pipeline.compare.report import EXAMPLE_DOCUMENTS_PER_HOP, _documents_text

    many = [f"PMID:{i}" for i in range(EXAMPLE_DOCUMENTS_PER_HOP + 1234)]
    hops = [
        LiteratureHop("C1", "C2", 1.0, documents=many),
        LiteratureHop("C2", "C3", 1.0, documents=None),
        LiteratureHop("C3", "C4", 1.0, documents=[]),
        LiteratureHop("C4", "C5", 1.0, documents=["PMID:7"]),
    ]
    path = LiteraturePath("C1", "C5", True, concepts=["C1", "C2", "C3", "C4", "C5"], hops=hops)
    comp = Comparison("C1", "C5", "2b", ["C1", "C2", "C3", "C4", "C5"], {}, [], [], literature=path)
    shown = ",".join(many[:EXAMPLE_DOCUMENTS_PER_HOP])
    assert _documents_text(comp, EXAMPLE_DOCUMENTS_PER_HOP) == (
        f"C1-C2: {shown} and 1,234 more; C2-C3: ?; C3-C4: -; C4-C5: PMID:7"
    )
    assert _documents_text(comp).startswith(f"C1-C2: {','.join(many)}; C2-C3")


def test_report_examples_show_each_hops_top_predicates_and_one_sentence():
    """The examples say why a hop holds: its EXAMPLE_PREDICATES_PER_HOP most frequent predicates
    with their counts (and how many more), and its first quoted sentence (the most recent) with
    PMID and year; a hop whose evidence is unknown is left out."""
    from pipeline.compare.classify import Comparison
    from pipeline.compare.literature import LiteratureHop
    from pipeline.compare.report import evidence_text

    predicates = [{"predicate": p, "count": n} for p, n in (("TREATS", 1200), ("NEG_TREATS", 3), ("CAUSES", 2), ("ISA", 1))]
    sentences = [
        {"sentence_id": 9, "pmid": 1002, "year": 2020, "predicate": "TREATS", "subject": "C1", "text": "A treats B."},
        {"sentence_id": 3, "pmid": 1001, "year": 2015, "predicate": "TREATS", "subject": "C1", "text": "Older."},
    ]
    hops = [
        LiteratureHop("C1", "C2", 1.0, documents=["PMID:1002"], predicates=predicates, sentences=sentences),
        LiteratureHop("C2", "C3", 1.0),  # unknown
        LiteratureHop("C3", "C4", 1.0, documents=["PMID:7"], predicates=[{"predicate": "ISA", "count": 1}],
                      sentences=[{"sentence_id": 1, "pmid": 7, "year": None, "predicate": "ISA", "subject": "C4",
                                  "text": None}]),  # fmt: skip
    ]
    path = LiteraturePath("C1", "C4", True, concepts=["C1", "C2", "C3", "C4"], hops=hops)
    comp = Comparison("C1", "C4", "2b", ["C1", "C2", "C3", "C4"], {}, [], [], literature=path)
    assert evidence_text(comp) == (
        'C1-C2: TREATS \u00d71,200, NEG_TREATS \u00d73, CAUSES \u00d72 and 1 more \u2014 "A treats B." (PMID 1002, 2020); '
        'C3-C4: ISA \u00d71 \u2014 "(no text)" (PMID 7)'
    )
