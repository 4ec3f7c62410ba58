"""Fixtures of the SPOKE tests: data paths, and a Neo4j driver on an emptied graph.

``graph`` empties the session's Neo4j (nodes, relationships and litpath's constraints)
before and after each test that uses it: tests that need SPOKE data load their own.
"""

from __future__ import annotations

from collections.abc import Iterator

import neo4j
import pytest


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_uri: str, neo4j_auth: tuple[str, str]) -> Iterator[neo4j.Driver]:
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    try:
        yield driver
    finally:
        driver.close()


def empty_graph(driver: neo4j.Driver) -> None:
    with driver.session() as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
        for record in list(session.run("SHOW CONSTRAINTS YIELD name RETURN name")):
            if record["name"].startswith("litpath_"):
                session.run(f"DROP CONSTRAINT `{record['name']}` IF EXISTS").consume()


@pytest.fixture
def graph(neo4j_driver: neo4j.Driver) -> Iterator[neo4j.Driver]:
    empty_graph(neo4j_driver)
    yield neo4j_driver
    empty_graph(neo4j_driver)  # leave the shared server as we found it: empty
