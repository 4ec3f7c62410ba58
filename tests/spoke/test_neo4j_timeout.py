"""The query timeout reaches Neo4j: a load-spoke batch that runs past neo4j.query_timeout_s is
stopped by Neo4j itself, and the command fails with one line naming the setting, given on the
command line or through the environment the workflow sets from the config."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner
from support.data import SPOKE

from pipeline.spoke.commands import load_spoke as load_spoke_command
from pipeline.spoke.load import SpokeLoader

pytestmark = pytest.mark.servers

# Minutes of work for Neo4j, whatever the batch: stands for a server that does not answer in time.
SLOW_BATCH = (
    "UNWIND $rows AS row WITH count(row) AS rows "
    "UNWIND range(1, 2000000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS n"
)


@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_batch_past_the_query_timeout_stops_the_load(graph, neo4j_uri, neo4j_env, monkeypatch, given):
    monkeypatch.setattr(SpokeLoader, "_node_query", lambda self, label, with_properties, create: SLOW_BATCH)
    args = ["--nodes", str(SPOKE / "nodes.tsv"), "--neo4j-uri", neo4j_uri]
    env = dict(neo4j_env)
    if given == "option":
        args += ["--neo4j-query-timeout", "1"]
    else:
        env["LITPATH_NEO4J_QUERY_TIMEOUT_S"] = "1"
    started = time.monotonic()
    result = CliRunner().invoke(load_spoke_command, args, env=env)
    assert time.monotonic() - started < 30
    assert result.exit_code == 1, result.output
    message = result.output.strip()
    assert message.startswith("Error: load-spoke (writing a batch of ")
    assert "ran past the Neo4j query timeout (1 s)" in message
    assert "neo4j.query_timeout_s in the config, $LITPATH_NEO4J_QUERY_TIMEOUT_S or --neo4j-query-timeout" in message
    running, _, _ = graph.execute_query("SHOW TRANSACTIONS YIELD currentQuery RETURN currentQuery")
    assert not any("range(1, 2000000000)" in (r["currentQuery"] or "") for r in running)


def test_a_query_timeout_that_is_not_a_number_is_refused(neo4j_env):
    env = {**neo4j_env, "LITPATH_NEO4J_QUERY_TIMEOUT_S": "ten"}
    result = CliRunner().invoke(load_spoke_command, ["--nodes", str(SPOKE / "nodes.tsv")], env=env)
    assert result.exit_code == 2
    assert "$LITPATH_NEO4J_QUERY_TIMEOUT_S: expected seconds" in result.output
