"""The query set taken from SPOKE (the paper's Neighborhood Explorer set): its order, its limit and
what it records, edge cutoffs, the relationship filter, obsolete nodes, and SPOKE's own conventions
(integer identifiers, nodes with two labels). The graph is written by plain Cypher::

    COVID-19 (DOID:0080600) -ASSOCIATES_DaP-> P1, and -UPREGULATES_DuP-> P1 (two relationships)
    COVID-19 -ASSOCIATES_DaP {confidence: 0.9}-> P2 -INTERACTS_PiP-> P6
    COVID-19 -ASSOCIATES_DaP {confidence: [0.1, 0.3]}-> P3
    COVID-19 -ASSOCIATES_DaP-> P4 (obsolete)     COVID-19 -ASSOCIATES_DaP-> P5 (:Protein:Enzyme)
    COVID-19 -RESEMBLES_DrD-> DOID:2             Gene 7 (an integer) -ASSOCIATES_GaD-> COVID-19
"""

from __future__ import annotations

import neo4j
import pytest

from pipeline.compare.run import neighbourhood_entries
from pipeline.compare.spoke import NEIGHBOURHOOD_ORDER, CuiMapping, EdgeCutoff, RelationshipFilter, SpokeGraph

pytestmark = pytest.mark.servers

GRAPH = """
CREATE (covid:Disease {identifier: 'DOID:0080600', name: 'COVID-19'})
CREATE (d2:Disease {identifier: 'DOID:2', name: 'disease two'})
CREATE (p1:Protein {identifier: 'P1'}) CREATE (p2:Protein {identifier: 'P2'})
CREATE (p3:Protein {identifier: 'P3'}) CREATE (p4:Protein {identifier: 'P4', vestige: true})
CREATE (p5:Protein:Enzyme {identifier: 'P5'}) CREATE (p6:Protein {identifier: 'P6'})
CREATE (g7:Gene {identifier: 7})
CREATE (covid)-[:ASSOCIATES_DaP]->(p1) CREATE (covid)-[:UPREGULATES_DuP]->(p1)
CREATE (covid)-[:ASSOCIATES_DaP {confidence: 0.9}]->(p2) CREATE (p2)-[:INTERACTS_PiP]->(p6)
CREATE (covid)-[:ASSOCIATES_DaP {confidence: [0.1, 0.3]}]->(p3)
CREATE (covid)-[:ASSOCIATES_DaP]->(p4) CREATE (covid)-[:ASSOCIATES_DaP]->(p5)
CREATE (covid)-[:RESEMBLES_DrD]->(d2) CREATE (g7)-[:ASSOCIATES_GaD]->(covid)
"""
MAPPING = CuiMapping(
    [("C5203670", "Disease", "DOID:0080600", "indirect"), ("C0000001", "Protein", "P1", "indirect"),
     ("C0000002", "Protein", "P2", "indirect"), ("C0000003", "Disease", "DOID:2", "indirect"),
     ("C0000005", "Protein", "P5", "indirect"), ("C0000055", "Protein", "P5", "indirect"),
     ("C0000004", "Protein", "P4", "indirect")]
)  # fmt: skip


@pytest.fixture(scope="module")
def hood(neo4j_uri, neo4j_auth):
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    with driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
        session.run(GRAPH).consume()
    try:
        yield driver
    finally:
        with driver.session() as session:
            session.run("MATCH (n) DETACH DELETE n").consume()
        driver.close()


def ids(nodes):
    return [(n["identifier"], n["distance"], n["support"]) for n in nodes]


def test_nodes_in_the_stated_order_with_their_support(hood):
    seed, nodes = SpokeGraph(hood).neighbourhood("DOID:0080600", labels=["Disease", "Protein"])
    assert seed["identifier"] == "DOID:0080600"
    # closest first; then more shortest paths from the seed (P1: two relationships); then label, id.
    # P4 is obsolete; P5 carries two labels and is reported as the Protein asked for.
    assert ids(nodes) == [
        ("DOID:0080600", 0, None), ("P1", 1, 2), ("DOID:2", 1, 1), ("P2", 1, 1), ("P3", 1, 1), ("P5", 1, 1),
    ]  # fmt: skip
    assert [n["label"] for n in nodes] == ["Disease", "Protein", "Disease", "Protein", "Protein", "Protein"]
    _, two = SpokeGraph(hood).neighbourhood("DOID:0080600", hops=2, labels=["Protein"])
    assert ids(two)[-1] == ("P6", 2, 1) and "DOID:0080600" not in [n["identifier"] for n in two]


def test_the_record_counts_what_was_found_kept_and_mapped(hood):
    entries, record = neighbourhood_entries(SpokeGraph(hood), MAPPING, "DOID:0080600", limit=3)
    assert [e.entry for e in entries] == ["DOID:0080600", "P1", "DOID:2"]
    assert (record["nodes_found"], record["nodes_kept"], record["cuis"]) == (6, 3, 3)
    assert record["summary"] == "3 SPOKE nodes → 3 CUIs" and record["order"] == NEIGHBOURHOOD_ORDER
    assert "has 6 nodes; only the first 3 are kept" in record["warning"]
    _, whole = neighbourhood_entries(SpokeGraph(hood), MAPPING, "DOID:0080600")
    assert "warning" not in whole and whole["summary"] == "6 SPOKE nodes → 6 CUIs"  # P5 maps to two CUIs
    assert whole["nodes_without_cui"] == ["P3"]


def test_edge_cutoffs_as_the_neighborhood_explorer(hood):
    """A relationship of a cutoff's type passes when its property (or one value of a list) reaches
    the minimum, and fails when it lacks it; other types always pass."""
    cutoff = EdgeCutoff.parse("ASSOCIATES_DaP.confidence>=0.5")
    _, nodes = SpokeGraph(hood).neighbourhood("DOID:0080600", labels=["Disease", "Protein"], cutoffs=[cutoff])
    # P3 (0.1, 0.3) and P5 (no confidence) fail; P1 stays through UPREGULATES_DuP only
    assert ids(nodes) == [("DOID:0080600", 0, None), ("DOID:2", 1, 1), ("P1", 1, 1), ("P2", 1, 1)]
    listed = EdgeCutoff.parse("ASSOCIATES_DaP.confidence>=0.25")
    _, nodes = SpokeGraph(hood).neighbourhood("DOID:0080600", labels=["Protein"], cutoffs=[listed])
    assert "P3" in [n["identifier"] for n in nodes]  # 0.3, one value of its list
    with pytest.raises(ValueError, match="is not TYPE.property>=number"):
        EdgeCutoff.parse("confidence>0.5")


def test_the_relationship_filter_and_integer_seeds(hood):
    denied = SpokeGraph(hood, relationships=RelationshipFilter(deny=("UPREGULATES_DuP", "RESEMBLES_DrD")))
    _, nodes = denied.neighbourhood("DOID:0080600", labels=["Disease", "Protein"])
    assert ids(nodes)[:2] == [("DOID:0080600", 0, None), ("P1", 1, 1)] and "DOID:2" not in str(nodes)
    allowed = SpokeGraph(hood, relationships=RelationshipFilter(allow=("RESEMBLES_DrD",)))
    assert ids(allowed.neighbourhood("DOID:0080600", labels=["Disease"])[1]) == [
        ("DOID:0080600", 0, None), ("DOID:2", 1, 1)
    ]  # fmt: skip
    seed, nodes = SpokeGraph(hood).neighbourhood("7", seed_label="Gene", labels=["Disease"])
    assert seed["identifier"] == "7" and ids(nodes) == [("DOID:0080600", 1, 1)]
    with pytest.raises(ValueError, match="not both"):
        RelationshipFilter(allow=("A",), deny=("B",))
