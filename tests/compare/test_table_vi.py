"""Table VI of the paper as a regression test: its own CUIs, its Pubmed paths found as the shortest
literature paths, its SPOKE facts, and every row classified as the paper classifies it
(tests/support/table_vi.py says which facts are the paper's)."""

from __future__ import annotations

import neo4j
import pytest
from support.comparison_world import write_graph
from support.table_vi import COVID, IL6, IL7, LITERATURE_EDGES, MAPPING, ROWS, TNF, write_table_vi_spoke

from pipeline.compare.classify import Comparator
from pipeline.compare.literature import PathFinder
from pipeline.compare.report import spoke_text
from pipeline.compare.spoke import CuiMapping, SpokeGraph
from pipeline.query.graph import open_graph

pytestmark = pytest.mark.servers


@pytest.fixture(scope="module")
def literature(tmp_path_factory):
    """The co-occurrence graph holding Table VI's Pubmed paths (scipy distances)."""
    folder = tmp_path_factory.mktemp("table-vi")
    keys = sorted({c for a, b, _ in LITERATURE_EDGES for c in (a, b)})
    write_graph(
        folder / "cooccurrence", folder / "cooccurrence" / "distances.bp", keys, len(keys), LITERATURE_EDGES
    )
    graph = open_graph(folder, "cooccurrence", build_id="table-vi")
    yield graph
    graph.close()


@pytest.fixture
def spoke(neo4j_uri, neo4j_auth):
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    yield driver
    with driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
    driver.close()


def classify(literature, driver, hops: int = 1):
    mapping = CuiMapping([(cui, label, identifier, "indirect") for cui, label, identifier in MAPPING])
    finder = PathFinder(literature, count_ties=True)
    paths = [finder.path(path[0], path[-1]) for _, path, _ in ROWS]
    return Comparator(mapping, SpokeGraph(driver), hops=hops).compare_paths(paths)


def test_every_row_of_table_vi(literature, spoke):
    write_table_vi_spoke(spoke)
    for (scenario, path, spoke_column), comparison in zip(ROWS, classify(literature, spoke), strict=True):
        if scenario == "4":
            assert not comparison.literature.reachable  # "no path exists in the Pubmed co-occurrence graph"
            assert comparison.cause == "literature-disconnected"
        else:
            assert comparison.concepts == path, scenario  # the paper's Pubmed path is the shortest one
            assert comparison.literature.shortest_paths == 1
        assert comparison.scenario == scenario, (scenario, comparison.notes)
        assert comparison.scenario_strict == scenario  # nothing shorter in this SPOKE: both readings agree
        text = spoke_text(comparison)
        for part in spoke_column:
            assert part in text, (scenario, text)
    # the paper's 3a: one SPOKE walk, the same COVID-19 node between the two hops
    three_a = classify(literature, spoke)[3]
    assert [n["identifier"] for n in three_a.spoke_walk] == ["P13232", "DOID:0080600", "P05231"]
    assert three_a.unmapped == ["G0000159"] and three_a.walk_length == 2 and three_a.spoke_distance == 2


def test_the_shortest_path_reading_demotes_an_exact_match_that_spoke_shortcuts(literature, spoke):
    """The review's example: the literature gives TNF -> COVID-19 -> IL7 and SPOKE also has a direct
    TNF - IL7 edge. Per hop, still an exact match (1); as a shortest SPOKE path, no (2a). The same
    for 3a when SPOKE joins IL7 and IL6 directly (3b)."""
    write_table_vi_spoke(
        spoke, [("P01375", "INTERACTS_PiP", "P13232"), ("P13232", "INTERACTS_PiP", "P05231")]
    )
    by_pair = {(c.source, c.target): c for c in classify(literature, spoke)}
    exact = by_pair[(TNF, IL7)]
    assert (exact.scenario, exact.scenario_strict) == ("1", "2a")
    assert (exact.walk_length, exact.spoke_distance, exact.shortest_in_spoke) == (2, 1, False)
    collapsed = by_pair[(IL7, IL6)]
    assert (collapsed.scenario, collapsed.scenario_strict, collapsed.shortest_in_spoke) == ("3a", "3b", False)
    # the other rows do not move
    assert by_pair[("C0027059", COVID)].scenario_strict == "4"
