"""A Neo4j with auth on: wrong credentials give one clear error, right ones connect; never the password."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from support.data import SPOKE

from pipeline.spoke.commands import load_spoke
from pipeline.store.neo4j import Neo4jSettings, Neo4jUnavailable, connect
from services.local.servers import Neo4jServer

pytestmark = pytest.mark.servers

PASSWORD = "right-Pa55word"
WRONG = "wrong-Pa55word"


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jServer]:
    server = Neo4jServer(tmp_path_factory.mktemp("neo4j-auth"), password=PASSWORD)
    server.start(timeout=180.0)
    try:
        yield server
    finally:
        server.stop()


def test_wrong_password_is_refused_clearly(auth_server):
    settings = Neo4jSettings(uri=auth_server.uri, user="neo4j", password=WRONG)
    with pytest.raises(Neo4jUnavailable) as error:
        connect(settings)
    message = str(error.value)
    assert message.startswith(f"Neo4j at {auth_server.uri} as neo4j refused the credentials")
    assert WRONG not in message and PASSWORD not in message


def test_no_credentials_against_auth_server_is_refused(auth_server):
    with pytest.raises(Neo4jUnavailable, match="refused the credentials"):
        connect(Neo4jSettings(uri=auth_server.uri))


def test_right_password_from_environment_connects(auth_server, monkeypatch):
    monkeypatch.setenv("LITPATH_NEO4J_PASSWORD", PASSWORD)
    monkeypatch.setenv("LITPATH_NEO4J_USER", "neo4j")
    driver = connect(Neo4jSettings.from_env(uri=auth_server.uri))
    try:
        records, _, _ = driver.execute_query("RETURN 1 AS one")
    finally:
        driver.close()
    assert [record["one"] for record in records] == [1]


def test_cli_refused_credentials_without_traceback(auth_server, monkeypatch):
    monkeypatch.setenv("LITPATH_NEO4J_PASSWORD", WRONG)
    args = ["--nodes", str(SPOKE / "nodes.tsv"), "--neo4j-uri", auth_server.uri, "--neo4j-user", "neo4j"]
    result = CliRunner().invoke(load_spoke, args)
    assert result.exit_code == 1
    assert result.output.startswith("Error: Neo4j at ") and "refused the credentials" in result.output
    assert "Traceback" not in result.output and WRONG not in result.output
