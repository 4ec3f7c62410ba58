"""The path service's OpenAPI contract, fuzzed: schemathesis against a real uvicorn (`litpath serve`)
serving a test build, every check on, positive and negative data, a fixed seed and a bounded
number of examples per operation.

The served build has a comparison report and a CUI -> SPOKE mapping of some of its concepts onto a
small SPOKE graph in the session's Neo4j (with its password), so every operation, the comparisons
included, answers for real. The service runs once with an API key, which the ``ignored_auth`` check
verifies is enforced, and once without, when the document must not claim a key it does not check.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from neo4j import GraphDatabase
from support.build_fixture import make_build
from support.serving import ServiceDidNotStart, running_service

from pipeline.builds.layout import BuildLayout

REPO = Path(__file__).resolve().parents[3]
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
API_KEY = "fuzz-key-0123"
SEED = 20240615
MAX_EXAMPLES = 100  # per operation and phase

pytestmark = [pytest.mark.servers, pytest.mark.fuzz, pytest.mark.timeout(900)]

# A small SPOKE: (label, identifier) nodes joined in a chain, and the build's concepts mapped onto them.
SPOKE_NODES = [("Disease", "FUZZ:D1"), ("Protein", "FUZZ:P1"), ("Protein", "FUZZ:P2"), ("Disease", "FUZZ:D2")]
MAPPED = {f"C{i:07d}": SPOKE_NODES[(i // 2) % len(SPOKE_NODES)] for i in range(0, 24, 2)}


@pytest.fixture(scope="module")
def served_build(tmp_path_factory, neo4j_server):
    build = make_build(tmp_path_factory.mktemp("fuzz-results"), n_concepts=40, n_abstracts=24, seed=11)
    mapping = pa.table(
        {
            "cui": list(MAPPED),
            "spoke_label": [label for label, _ in MAPPED.values()],
            "spoke_identifier": [identifier for _, identifier in MAPPED.values()],
            "method": ["fixture"] * len(MAPPED),
        }
    )
    BuildLayout(build.build_dir).mapping.path.mkdir()
    pq.write_table(mapping, BuildLayout(build.build_dir).mapping.table)
    (build.build_dir / "compare").mkdir()
    (build.build_dir / "compare" / "report.html").write_text(
        "<!doctype html><title>report</title><p>fixture</p>\n"
    )
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        for (label_a, id_a), (label_b, id_b) in zip(SPOKE_NODES, SPOKE_NODES[1:], strict=False):
            driver.execute_query(
                f"MERGE (a:{label_a} {{identifier: $a}}) SET a.name = $a "
                f"MERGE (b:{label_b} {{identifier: $b}}) SET b.name = $b MERGE (a)-[:FUZZ_LINK]->(b)",
                a=id_a, b=id_b,
            )  # fmt: skip
    yield build
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:  # the server is shared
        driver.execute_query("MATCH (n) WHERE n.identifier STARTS WITH 'FUZZ:' DETACH DELETE n")


@pytest.fixture(scope="module", params=[API_KEY, None], ids=["key", "no-key"])
def service(request, served_build, neo4j_env, tmp_path_factory):
    key = request.param
    log_path = tmp_path_factory.mktemp("fuzz-log") / "serve.log"
    env = {**neo4j_env, "LITPATH_API_KEY": key or "", "LITPATH_MONGO_URI": ""}
    headers = {"X-API-Key": key} if key else {}
    try:
        with running_service(
            served_build.results_dir, log_path, env=env, ready_path="/v1/ready", headers=headers
        ) as running:
            yield running.base, log_path, key
    except ServiceDidNotStart as exc:
        pytest.fail(str(exc))


def test_openapi_contract_holds_under_fuzzing(service, tmp_path):
    base, log_path, key = service
    command = [
        str(SCHEMATHESIS), "run", f"{base}/openapi.json",
        "--checks", "all", "--mode", "all",
        "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED),
        "--workers", "1", "--generation-database", "none",
        *(["--header", f"X-API-Key: {key}"] if key else []),
        "--request-timeout", "30", "--no-color",
        "--report", "junit", "--report-dir", str(tmp_path / "report"),
    ]  # fmt: skip
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
        SCHEMATHESIS_HOOKS="schemathesis_hooks",
    )
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=840, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{output[-12000:]}\n--- service log ---\n{log_path.read_text()[-3000:]}"
    print(output[-2500:])  # the summary: phases, cases generated, seed (shown with -s)
