"""Neo4j settings and connection errors that need no server (a closed port stands for 'down')."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner
from support.data import SPOKE

from pipeline.config.connections import redact_uri
from pipeline.spoke.commands import build_mapping, load_spoke
from pipeline.store.neo4j import GraphNaming, Neo4jSettings, Neo4jUnavailable, connect

SECRET = "s3cret-Pa55"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket goes


def test_arguments_win_over_environment_and_defaults():
    env = {
        "LITPATH_NEO4J_URI": "bolt://db.example:7687",
        "LITPATH_NEO4J_USER": "reader",
        "LITPATH_NEO4J_PASSWORD": SECRET,
        "LITPATH_NEO4J_DATABASE": "spoke",
    }
    from_env = Neo4jSettings.from_env(environ=env)
    assert (from_env.uri, from_env.user, from_env.password, from_env.database) == (
        "bolt://db.example:7687", "reader", SECRET, "spoke",
    )  # fmt: skip
    assert from_env.auth == ("reader", SECRET)
    given = Neo4jSettings.from_env(uri="bolt://other:1", database="", environ=env)
    assert given.uri == "bolt://other:1" and given.database == "spoke"
    default = Neo4jSettings.from_env(environ={})
    assert (default.uri, default.auth, default.database) == ("bolt://127.0.0.1:7687", None, None)


def test_password_never_shown():
    settings = Neo4jSettings(uri="neo4j://admin:hunter2@db.example:7687", user="admin", password=SECRET)
    for text in (repr(settings), str(settings), settings.describe()):
        assert SECRET not in text and "hunter2" not in text
    assert redact_uri("neo4j://admin:hunter2@db.example:7687/x") == "neo4j://***@db.example:7687/x"


def test_naming_rejects_cypher_injection():
    with pytest.raises(ValueError, match="identifier property"):
        GraphNaming(identifier_property="id}) DETACH DELETE n //")
    assert GraphNaming(labels={"Side Effect": "SideEffect"}).label_of("Side Effect") == "SideEffect"


def test_down_server_gives_one_clear_error():
    settings = Neo4jSettings(uri=f"bolt://127.0.0.1:{closed_port()}", user="neo4j", password=SECRET)
    with pytest.raises(Neo4jUnavailable) as error:
        connect(settings)
    message = str(error.value)
    assert message.startswith("Neo4j is not reachable at bolt://127.0.0.1:")
    assert SECRET not in message and "\n" not in message


def test_cli_reports_down_server_without_traceback(monkeypatch):
    monkeypatch.setenv("LITPATH_NEO4J_PASSWORD", SECRET)
    uri = f"bolt://127.0.0.1:{closed_port()}"
    runner = CliRunner()
    result = runner.invoke(
        load_spoke,
        ["--nodes", str(SPOKE / "nodes.tsv"), "--neo4j-uri", uri, "--neo4j-user", "neo4j"],
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: Neo4j is not reachable at bolt://127.0.0.1:")
    assert "Traceback" not in result.output and SECRET not in result.output
    result = runner.invoke(build_mapping, ["--out", "unused", "--neo4j-uri", uri])
    assert result.exit_code == 1 and "Neo4j is not reachable" in result.output


def test_cli_build_mapping_from_dump(tmp_path):
    from support.data import XREFS

    umls = SPOKE.parent / "umls"
    result = CliRunner().invoke(
        build_mapping,
        [
            "--umls-dir", str(umls), "--do-xrefs", str(XREFS / "allXREFinDO.tsv"),
            "--gene-info", str(XREFS / "Homo_sapiens.gene_info"),
            "--ncit-swissprot", str(XREFS / "NCIt-SwissProt_Mapping.txt"),
            "--unichem", str(XREFS / "src1src2.txt"),
            "--spoke-nodes", str(SPOKE / "mapping_nodes.csv"), "--spoke-format", "csv",
            "--out", str(tmp_path),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # no --concepts: every retired CUI of MRCUI counts (see test_mapping), no GENE: rows
    assert 'rows: 29 {"identity": 3, "direct": 9, "indirect": 17}' in result.output  # MRCUI RO is opt-in
    assert "gene_info: 1 unreadable lines" in result.output
    for name in ("cui_spoke_mapping.parquet", "cui_spoke_mapping.csv", "coverage.md", "mapping_stats.json"):
        assert (tmp_path / name).exists()
