"""A SPOKE query given a deadline is stopped by Neo4j itself when the deadline passes (the path
service's request deadline), instead of running on after the client got its 504."""

from __future__ import annotations

import time

import neo4j
import pytest

from pipeline.compare.spoke import SpokeGraph
from pipeline.store.neo4j import Neo4jSettings, Neo4jTimeout, open_driver

pytestmark = pytest.mark.servers

SLOW = "UNWIND range(1, 2000000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS n"


def test_query_past_its_deadline_is_stopped_by_neo4j(neo4j_uri, neo4j_auth):
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as driver:
        spoke = SpokeGraph(driver, deadline=time.monotonic() + 1.0)
        started = time.monotonic()
        with pytest.raises(Neo4jTimeout):
            spoke._read(SLOW)
        assert time.monotonic() - started < 10
        # Nothing of it is left running on the server.
        running, _, _ = driver.execute_query("SHOW TRANSACTIONS YIELD currentQuery RETURN currentQuery")
        assert not any("range(1, 2000000000)" in (r["currentQuery"] or "") for r in running)


def test_no_query_is_sent_once_the_deadline_has_passed(neo4j_uri, neo4j_auth):
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as driver:
        spoke = SpokeGraph(driver, deadline=time.monotonic() - 1)
        with pytest.raises(Neo4jTimeout):
            spoke._read("RETURN 1 AS one")
        assert spoke.round_trips == 0


def test_the_cli_query_timeout_reaches_every_spoke_query(neo4j_uri, neo4j_auth):
    """The compare command builds its SpokeGraph on a driver from open_driver(settings), with no
    deadline: the settings' query timeout is what stops a query, and the message names it."""
    user, password = neo4j_auth
    settings = Neo4jSettings(uri=neo4j_uri, user=user, password=password, query_timeout_s=1.0)
    with open_driver(settings) as driver:
        spoke = SpokeGraph(driver, where="the test's Neo4j")
        started = time.monotonic()
        with pytest.raises(Neo4jTimeout) as error:
            spoke._read(SLOW)
        assert time.monotonic() - started < 10
        assert "a SPOKE query at the test's Neo4j ran past the Neo4j query timeout (1 s)" in str(error.value)
        assert "neo4j.query_timeout_s" in str(error.value)
        # A deadline sooner than the timeout still wins, and is named as such.
        soon = SpokeGraph(driver, where="the test's Neo4j", deadline=time.monotonic() + 0.5)
        with pytest.raises(Neo4jTimeout, match="ran past its deadline"):
            soon._read(SLOW)
