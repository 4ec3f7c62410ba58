"""`make run` with the user's own servers: where LITPATH_MONGO_URI and LITPATH_NEO4J_* point at a
MongoDB and a Neo4j, the build loads into those, says so at its start (credentials redacted),
and the checkout's own local servers are neither started nor written to.

The "user's servers" are this test session's pair (other ports, data folders in the session's
temporary folder); the checkout is a fresh copy of the working tree whose default local servers
would listen on free ports of their own, so that one started by mistake would show.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import yaml
from pymongo import MongoClient
from support.checkout import copy_working_tree, fresh_shell_env

pytestmark = [pytest.mark.workflow, pytest.mark.servers, pytest.mark.mpi, pytest.mark.slow]


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_make_run_loads_into_the_users_servers_and_starts_none(tmp_path, mongo_server, mongo_uri, neo4j_env):
    root = tmp_path / "checkout"
    copy_working_tree(root)
    env = fresh_shell_env()
    env.update(LITPATH_MONGO_URI=mongo_uri, **neo4j_env)
    # The user's data (the sample's files, copied as one's own) and config, into a database of its own.
    shutil.copytree(root / "config" / "sample", root / "data")
    text = (root / "config" / "config.yaml").read_text().replace("config/sample/", "data/")
    config = yaml.safe_load(text)
    config["mongo"]["database"] = "litpath_second_pair"
    (root / "my-config.yaml").write_text(yaml.safe_dump(config))

    done = subprocess.run(["bash", "-c", "make run CONFIG=my-config.yaml"], cwd=root, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1500)  # fmt: skip
    output = done.stdout
    assert done.returncode == 0, output[-6000:]
    mongo_port = mongo_server.port
    assert f"litpath: MongoDB: mongodb://***@127.0.0.1:{mongo_port}/?authSource=admin (yours: $LITPATH_MONGO_URI)" in output
    assert f"litpath: Neo4j: {neo4j_env['LITPATH_NEO4J_URI']} (yours: $LITPATH_NEO4J_URI)" in output
    assert mongo_server.password not in output and neo4j_env["LITPATH_NEO4J_PASSWORD"] not in output

    # The checkout's own pair: never started (no state folder, nothing on their ports).
    assert not (root / ".local-servers").exists()
    assert not listening(int(env["LITPATH_MONGO_PORT"])) and not listening(int(env["LITPATH_NEO4J_PORT"]))

    # The build is in the user's MongoDB, complete, and its SPOKE load went to the user's Neo4j.
    build = (root / "results" / "latest").resolve()
    with MongoClient(mongo_uri, serverSelectionTimeoutMS=5000) as client:
        record = client["litpath_second_pair"]["builds"].find_one({"_id": build.name})
    assert record is not None and record["status"] == "complete", record
    compared = (build / "compare" / "run.json").read_text()
    assert f'"neo4j": "{neo4j_env["LITPATH_NEO4J_URI"]} as ' in compared


def test_servers_external_without_a_server_named_stops_make_run(tmp_path):
    """SERVERS=external never starts a local server: a store the run needs and nobody pointed at
    stops `make run` with one line, before any job."""
    root = tmp_path / "checkout"
    copy_working_tree(root)
    env = fresh_shell_env()
    done = subprocess.run(["bash", "-c", "make run SERVERS=external"], cwd=root, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)  # fmt: skip
    assert done.returncode != 0
    assert ("litpath: error: SERVERS=external, and the run needs MongoDB (mongo.enabled), but neither "
            "$LITPATH_MONGO_URI nor mongo.uri in the config says where it is") in done.stdout  # fmt: skip
    assert not (root / ".local-servers").exists() and not (root / "results").exists()
    assert not Path(root / ".snakemake").exists()
