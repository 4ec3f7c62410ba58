"""Credentials stay out of what litpath writes: URI redaction, message scrubbing, config
redaction, and the config's server settings moved into the environment."""

from __future__ import annotations

import pytest

from pipeline.config import schema_of
from pipeline.config.connections import (
    NEO4J_QUERY_TIMEOUT_S,
    export_connection_settings,
    redact_config,
    redact_uri,
    scrub,
)
from pipeline.store.neo4j import Neo4jSettings


@pytest.mark.parametrize(
    "uri, expected",
    [
        ("mongodb://user:s3cret@db.example:27017/x", "mongodb://***@db.example:27017/x"),
        ("mongodb://127.0.0.1:27017", "mongodb://127.0.0.1:27017"),
        # the review's gaps: a password holding '/', '#', '?' or '@' (unescaped: invalid, still secret)
        ("mongodb://u:pa/ss@h:1/db", "mongodb://***@h:1/db"),
        ("mongodb://u:p#w?d@h/?authSource=admin&tls=true", "mongodb://***@h/?authSource=admin&tls=true"),
        ("mongodb://u:p@ss@h1,h2/", "mongodb://***@h1,h2/"),
        ("mongodb+srv://u:p;w&x@cluster.example/", "mongodb+srv://***@cluster.example/"),
    ],
)
def test_redact_uri_removes_every_credential(uri: str, expected: str) -> None:
    assert redact_uri(uri) == expected
    # Neo4j messages redact with the same function (there is one redact_uri).
    assert Neo4jSettings(uri=uri).describe() == expected


def test_scrub_removes_password_fragments_from_driver_messages() -> None:
    uri = "mongodb://user:pa%2Fss;word@h/"
    message = "Port must be an integer between 0 and 65535: 'pa/ss;word' (from user:pa%2Fss;word)"
    scrubbed = scrub(message, uri)
    assert "pa/ss;word" not in scrubbed and "pa%2Fss;word" not in scrubbed and "***" in scrubbed


def test_redact_config_keeps_everything_but_credentials() -> None:
    config = {
        "mongo": {"enabled": True, "uri": "mongodb://u:pw@h/?a=1&b=2", "database": "litpath"},
        "neo4j": {"uri": "bolt://h:7687", "user": "reader", "database": ""},
        "extra": [{"api_key": "k", "token": ""}, {"password": "x", "note": "kept"}],
        "graph": {"min_support": 2},
    }
    redacted = redact_config(config)
    assert redacted["mongo"] == {"enabled": True, "uri": "mongodb://***@h/?a=1&b=2", "database": "litpath"}
    assert redacted["neo4j"] == config["neo4j"]
    assert redacted["extra"] == [{"api_key": "***", "token": ""}, {"password": "***", "note": "kept"}]
    assert redacted["graph"] == {"min_support": 2}
    assert config["mongo"]["uri"] == "mongodb://u:pw@h/?a=1&b=2"  # the original is left alone


def test_config_server_settings_go_to_the_environment() -> None:
    env = {"LITPATH_MONGO_URI": "mongodb://from-env/", "LITPATH_NEO4J_USER": "env-user"}
    config = {
        "mongo": {"uri": "mongodb://u:p@cfg/"},
        "neo4j": {"uri": "bolt://cfg:7687", "user": "", "database": "spoke"},
    }
    exported = export_connection_settings(config, env)
    assert env == {
        "LITPATH_MONGO_URI": "mongodb://u:p@cfg/",
        "LITPATH_NEO4J_URI": "bolt://cfg:7687",
        "LITPATH_NEO4J_USER": "env-user",  # empty in the config: the environment's stays
        "LITPATH_NEO4J_DATABASE": "spoke",
    }
    assert exported == ["LITPATH_MONGO_URI", "LITPATH_NEO4J_URI", "LITPATH_NEO4J_DATABASE"]


def test_query_timeout_goes_to_the_environment_zero_included() -> None:
    env: dict[str, str] = {}
    exported = export_connection_settings({"neo4j": {"uri": "", "query_timeout_s": 0}}, env)
    assert env == {"LITPATH_NEO4J_QUERY_TIMEOUT_S": "0"} and exported == ["LITPATH_NEO4J_QUERY_TIMEOUT_S"]
    env = {}
    export_connection_settings({"neo4j": {"query_timeout_s": 42.5}}, env)
    assert env == {"LITPATH_NEO4J_QUERY_TIMEOUT_S": "42.5"}


def test_query_timeout_from_argument_environment_or_default() -> None:
    env = {"LITPATH_NEO4J_QUERY_TIMEOUT_S": "30"}
    assert Neo4jSettings.from_env(environ=env).query_timeout_s == 30.0
    assert Neo4jSettings.from_env(environ=env, query_timeout_s=5).query_timeout_s == 5.0
    assert Neo4jSettings.from_env(environ={}).query_timeout_s == NEO4J_QUERY_TIMEOUT_S
    assert Neo4jSettings.from_env(environ={"LITPATH_NEO4J_QUERY_TIMEOUT_S": "0"}).query_timeout_s is None
    for bad in ("ten", "-1", "nan", "inf"):
        with pytest.raises(ValueError, match=r"\$LITPATH_NEO4J_QUERY_TIMEOUT_S: expected seconds"):
            Neo4jSettings.from_env(environ={"LITPATH_NEO4J_QUERY_TIMEOUT_S": bad})


def test_query_timeout_default_is_the_config_schemas() -> None:
    assert schema_of("neo4j.query_timeout_s")["default"] == NEO4J_QUERY_TIMEOUT_S
