"""Fixtures of the comparison tests: the world of tests/support/comparison_world.py loaded into
the session's Neo4j, and a results folder holding its build, mapping and query set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest
from support.comparison_world import (
    MAPPING_ROWS,
    QUERY,
    empty_graph,
    mapping_folder,
    write_build,
    write_spoke_dump,
)

from pipeline.spoke.load import load_spoke
from pipeline.spoke.mapping.build import _to_table, write_mapping


@pytest.fixture(scope="module")
def spoke_driver(
    neo4j_uri: str, neo4j_auth: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[neo4j.Driver]:
    """The session's Neo4j emptied and loaded with the SPOKE graph above (with the project's loader)."""
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    empty_graph(driver)
    nodes, edges = write_spoke_dump(tmp_path_factory.mktemp("spoke-dump"))
    report = load_spoke(driver, nodes, edges, "csv")
    assert report.verified, report.problems
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results/ with the build, its mapping (where build-mapping writes it) and the query file."""
    root = tmp_path_factory.mktemp("results")
    write_build(root)
    write_mapping(_to_table(MAPPING_ROWS), mapping_folder(root).path)
    (root / "queries.txt").write_text("# test query set\n" + "\n".join(QUERY) + "\n")
    return root
