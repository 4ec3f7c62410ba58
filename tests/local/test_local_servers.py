"""The local MongoDB-wire and Neo4j servers: start, answer, persist, stop, fail clearly."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shlex
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import psutil
import pymongo
import pytest
from bson.binary import Binary
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ClientError, ConstraintError
from pymongo.errors import DuplicateKeyError, OperationFailure

from pipeline.runtime.process import free_port
from services.local import servers
from services.local.servers import REPO_ROOT, MongoServer, Neo4jServer, ServerError, StartupClock, build_jars

pytestmark = pytest.mark.servers


@pytest.fixture
def occupied_port() -> Iterator[int]:
    """A loopback port that something else already listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        yield int(listener.getsockname()[1])


def assert_process_gone(pid: int) -> None:
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# --- build -----------------------------------------------------------------------------------


def test_build_jars_second_call_uses_cache() -> None:
    first = build_jars()
    started = time.monotonic()
    second = build_jars()
    assert time.monotonic() - started < 1.0
    assert first == second
    for jar in second.values():
        assert jar.is_file() and (jar.parent / "lib").is_dir()


def test_failed_build_names_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "sources" / "mongo"
    (broken / "src").mkdir(parents=True)
    (broken / "pom.xml").write_text("<project>not a valid pom</project>\n")
    monkeypatch.setattr(servers, "LOCAL_DIR", tmp_path / "sources")
    monkeypatch.setenv("LITPATH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ServerError, match=r"building the mongo launcher failed .*see .*\.build\.log"):
        servers.build_jar("mongo")
    assert not list((tmp_path / "cache" / "jars").glob("mongo-*/litpath-mongo.jar"))


# --- MongoDB-wire server ---------------------------------------------------------------------


def test_mongo_answers_ping_with_supported_wire_version(mongo_uri: str) -> None:
    with pymongo.MongoClient(mongo_uri, serverSelectionTimeoutMS=5000) as client:
        assert client.admin.command("ping")["ok"] == 1.0
        assert client.admin.command("isMaster")["maxWireVersion"] >= 9


def test_mongo_bulk_upsert_twice_gives_same_count(mongo_uri: str) -> None:
    documents = [{"cui": f"C{i:07d}", "name": f"concept {i}", "vid": i} for i in range(3000)]
    upserts = [pymongo.UpdateOne({"cui": d["cui"]}, {"$set": d}, upsert=True) for d in documents]
    with pymongo.MongoClient(mongo_uri) as client:
        concepts = client["test_local_servers"]["concepts_upsert"]
        concepts.create_index("cui", unique=True)  # as real loads do: upserts match by index
        first = concepts.bulk_write(upserts, ordered=False)
        second = concepts.bulk_write(upserts, ordered=False)
        assert first.upserted_count == 3000
        assert second.upserted_count == 0 and second.matched_count == 3000
        assert concepts.count_documents({}) == 3000


def test_mongo_indexed_find(mongo_uri: str) -> None:
    with pymongo.MongoClient(mongo_uri) as client:
        concepts = client["test_local_servers"]["concepts_indexed"]
        concepts.create_index("cui", unique=True)
        concepts.insert_many([{"cui": f"C{i:07d}", "vid": i} for i in range(2000)])
        assert "cui_1" in concepts.index_information()
        found = concepts.find_one({"cui": "C0001234"}, {"_id": 0})
        assert found == {"cui": "C0001234", "vid": 1234}
        with pytest.raises(DuplicateKeyError):
            concepts.insert_one({"cui": "C0001234", "vid": -1})


def test_mongo_refuses_clients_without_the_password(mongo_server: MongoServer) -> None:
    """Every user of the host reaches 127.0.0.1: without the password nothing but the handshake."""
    with pymongo.MongoClient(mongo_server.public_uri, serverSelectionTimeoutMS=5000) as client:
        assert client.admin.command("ping")["ok"] == 1.0  # the handshake is open, as on MongoDB
        for attempt in (
            lambda: client["litpath"]["evidence"].find_one(),
            lambda: client["litpath"]["evidence"].insert_one({"_id": "forged"}),
            lambda: client.list_database_names(),
        ):
            with pytest.raises(OperationFailure) as refused:
                attempt()
            assert refused.value.code == 13  # Unauthorized
    wrong = mongo_server.public_uri.replace("mongodb://", "mongodb://litpath:wrong@")
    with pymongo.MongoClient(wrong, serverSelectionTimeoutMS=5000) as client:
        with pytest.raises(OperationFailure) as refused:
            client["litpath"]["evidence"].find_one()
        assert refused.value.code == 18  # AuthenticationFailed


# Raw MongoDB wire messages, for what a driver would never send (pymongo speaks OP_MSG only).
OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013


def wire_message(op_code: int, body: bytes, request_id: int = 1) -> bytes:
    return struct.pack("<iiii", 16 + len(body), request_id, 0, op_code) + body


def op_query(namespace: str, command: dict[str, Any]) -> bytes:
    """A legacy OP_QUERY: flags, full collection name, skip, limit -1, the query document."""
    body = (
        struct.pack("<i", 0) + namespace.encode() + b"\0" + struct.pack("<ii", 0, -1) + bson.encode(command)
    )
    return wire_message(OP_QUERY, body)


def op_msg(command: dict[str, Any]) -> bytes:
    """An OP_MSG with no flags and one body section (kind 0)."""
    return wire_message(OP_MSG, struct.pack("<I", 0) + b"\0" + bson.encode(command))


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"the server closed the connection after {len(data)} of {size} bytes")
        data += chunk
    return data


def exchange(sock: socket.socket, message: bytes) -> dict[str, Any]:
    """Send one request and return the first document of the reply (OP_REPLY or OP_MSG)."""
    sock.sendall(message)
    length, _, _, op_code = struct.unpack("<iiii", _receive_exactly(sock, 16))
    body = _receive_exactly(sock, length - 16)
    if op_code == OP_REPLY:  # flags, cursor id, starting from, number returned, then documents
        return bson.decode_all(body[20:])[0]
    assert op_code == OP_MSG and body[4] == 0, f"unexpected reply opcode {op_code}"
    return bson.decode_all(body[5:])[0]


def scram_login(sock: socket.socket, user: str, password: str) -> None:
    """SCRAM-SHA-256 by hand (RFC 5802/7677) on a raw connection, as a driver does it."""
    first_bare = f"n={user},r={base64.b64encode(os.urandom(18)).decode()}"
    started = exchange(sock, op_msg({
        "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(f"n,,{first_bare}".encode()), "$db": "admin",
    }))  # fmt: skip
    assert started["ok"] == 1, started
    server_first = bytes(started["payload"]).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c=biws,r={fields['r']}"  # biws: base64 of "n,,", no channel binding
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    finished = exchange(sock, op_msg({
        "saslContinue": 1, "conversationId": started["conversationId"],
        "payload": Binary(f"{without_proof},p={proof}".encode()), "$db": "admin",
    }))  # fmt: skip
    assert finished["ok"] == 1 and finished["done"], finished


# The review's bypass (R1): a legacy OP_QUERY whose first key is the command the server runs,
# with a `$query: {ping: 1}` further on that the authentication step once read instead.
QUERY_WRAPPED = {
    "find": ("litpath.$cmd", {"find": "builds", "filter": {}, "$query": {"ping": 1}}),
    "insert": ("litpath.$cmd", {"insert": "builds", "documents": [{"_id": "forged"}], "$query": {"ping": 1}}),
    "dropDatabase": ("litpath.$cmd", {"dropDatabase": 1, "$query": {"ping": 1}}),
    "listDatabases": ("admin.$cmd", {"listDatabases": 1, "$query": {"ping": 1}}),
}


@pytest.fixture
def seeded_builds(mongo_server: MongoServer) -> Iterator[pymongo.collection.Collection]:
    """litpath.builds with one known record, seen through an authenticated client."""
    with pymongo.MongoClient(mongo_server.uri, serverSelectionTimeoutMS=5000) as client:
        builds = client["litpath"]["builds"]
        builds.replace_one({"_id": "seeded"}, {"_id": "seeded", "status": "complete"}, upsert=True)
        yield builds
        builds.delete_many({"_id": {"$in": ["seeded", "forged"]}})


@pytest.mark.parametrize("shape", sorted(QUERY_WRAPPED))
def test_mongo_refuses_legacy_commands_wrapped_in_a_ping(
    mongo_server: MongoServer, seeded_builds: pymongo.collection.Collection, shape: str
) -> None:
    namespace, command = QUERY_WRAPPED[shape]
    with socket.create_connection(("127.0.0.1", mongo_server.port), timeout=10) as sock:
        reply = exchange(sock, op_query(namespace, command))
    assert reply["ok"] == 0 and reply["code"] == 13, reply  # Unauthorized
    assert not {"cursor", "databases", "dropped", "n"} & set(reply), reply
    # No effect, as the authenticated user sees it.
    assert list(seeded_builds.find({}, {"_id": 1}).sort("_id")) == [{"_id": "seeded"}]
    assert "litpath" in seeded_builds.database.client.list_database_names()


def test_mongo_refuses_query_wrapped_and_legacy_commands_after_authentication_too(
    mongo_server: MongoServer, seeded_builds: pymongo.collection.Collection
) -> None:
    """The password does not make a `$query` after the first key meaningful, nor OP_QUERY a way
    to run commands: both are refused for every client."""
    with socket.create_connection(("127.0.0.1", mongo_server.port), timeout=10) as sock:
        scram_login(sock, mongo_server.user, mongo_server.password)
        for namespace, command in QUERY_WRAPPED.values():
            reply = exchange(sock, op_query(namespace, command))
            assert reply["ok"] == 0 and reply["code"] == 2 and "$query" in reply["errmsg"], reply
        plain = exchange(sock, op_query("litpath.$cmd", {"find": "builds", "filter": {}}))
        assert plain["ok"] == 0 and plain["code"] == 352, plain  # UnsupportedOpQueryCommand
        found = exchange(sock, op_msg({"find": "builds", "filter": {}, "$db": "litpath"}))
        assert found["ok"] == 1 and [d["_id"] for d in found["cursor"]["firstBatch"]] == ["seeded"]
    assert seeded_builds.count_documents({}) == 1


def test_mongo_answers_the_handshake_without_touching_the_store(
    mongo_server: MongoServer, mongo_uri: str
) -> None:
    """hello and friends are answered before authentication, by the authentication step itself:
    in mongo-java-server even `hello` on a new database name creates that database."""
    names = ("x", "hello_probe_b", "hello_probe_c", "hello_probe_d", "hello_probe_e")
    with socket.create_connection(("127.0.0.1", mongo_server.port), timeout=10) as sock:
        hello = exchange(sock, op_msg({"hello": 1, "$db": "x"}))
        assert hello["ok"] == 1 and hello["isWritablePrimary"] is True and hello["maxWireVersion"] >= 9, hello
        legacy = exchange(
            sock, op_query("hello_probe_b.$cmd", {"isMaster": 1, "saslSupportedMechs": "admin.litpath"})
        )
        assert legacy["ismaster"] is True and legacy["saslSupportedMechs"] == ["SCRAM-SHA-256"], legacy
        wrapped = exchange(
            sock, op_query("hello_probe_c.$cmd", {"$query": {"ismaster": 1}, "$readPreference": {}})
        )
        assert wrapped["ismaster"] is True, wrapped
        assert exchange(sock, op_msg({"ping": 1, "$db": "hello_probe_d"}))["ok"] == 1
        assert exchange(sock, op_msg({"endSessions": [], "$db": "hello_probe_e"}))["ok"] == 1
    with pymongo.MongoClient(mongo_uri, serverSelectionTimeoutMS=5000) as client:
        assert not set(names) & set(client.list_database_names())


def test_mongo_log_of_refused_attempts_stays_bounded(tmp_path: Path) -> None:
    """Any local user can fail to authenticate, or send garbage, in a loop: the log gets a few
    lines and a count per minute, not a line (or a stack trace) per attempt."""
    attempts, garbage = 60, 25
    server = MongoServer(tmp_path / "mongo")
    with server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            for i in range(attempts):
                refused = exchange(sock, op_msg({
                    "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(f"n,,n=nobody,r=r{i}".encode()),
                    "$db": "admin",
                }))  # fmt: skip
                assert refused["code"] == 18  # AuthenticationFailed
        for _ in range(garbage):  # an opcode the server does not know: it closes the connection
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                sock.sendall(wire_message(4242, b"\0" * 8))
                assert sock.recv(1) == b""
    log = server.log_path.read_text()
    burst = 10  # WireServer.LOG_BURST
    assert log.count("authentication refused for a client") == burst
    assert f"{attempts - burst} more refused authentications not logged one by one" in log
    assert log.count("closing the connection of a client") == burst
    assert f"{garbage - burst} more connection errors not logged one by one" in log
    assert "\tat " not in log  # no stack traces
    assert len(log.splitlines()) < 40


def test_credentials_stay_in_the_private_state_folder(
    mongo_server: MongoServer, neo4j_server: Neo4jServer
) -> None:
    for server in (mongo_server, neo4j_server):
        assert server.data_dir.stat().st_mode & 0o777 == 0o700
        assert server.credentials_path.stat().st_mode & 0o777 == 0o600
        assert server.password not in server.log_path.read_text()
        assert server.password not in server.state_path.read_text()
        assert not any(server.password in arg for arg in psutil.Process(server.pid).cmdline())


def test_mongo_data_persists_across_restart(tmp_path: Path) -> None:
    server = MongoServer(tmp_path / "mongo")
    with server:
        first_pid = server.pid
        with pymongo.MongoClient(server.uri) as client:
            client["persist"]["documents"].insert_many(
                [{"_id": i, "title": f"paper {i}"} for i in range(500)]
            )
            client["persist"]["documents"].create_index("title")
    assert first_pid is not None
    assert_process_gone(first_pid)
    assert server.data_file.is_file()
    assert not server.pid_path.exists()

    with server:  # same data file, same port
        with pymongo.MongoClient(server.uri) as client:
            documents = client["persist"]["documents"]
            assert documents.count_documents({}) == 500
            assert documents.find_one({"title": "paper 42"})["_id"] == 42
            assert "title_1" in documents.index_information()


def test_mongo_port_taken_gives_clear_error(tmp_path: Path, occupied_port: int) -> None:
    server = MongoServer(tmp_path / "mongo", port=occupied_port)
    started = time.monotonic()
    with pytest.raises(ServerError, match="exited with status 3") as error:
        server.start(timeout=60)
    assert "cannot listen" in str(error.value)
    assert time.monotonic() - started < 30
    assert not server.running()


# --- Neo4j -----------------------------------------------------------------------------------


def test_neo4j_answers_and_enforces_uniqueness_constraint(neo4j_server: Neo4jServer) -> None:
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        records, _, _ = driver.execute_query("RETURN 1 AS one")
        assert records[0]["one"] == 1
        driver.execute_query(
            "CREATE CONSTRAINT probe_identifier IF NOT EXISTS "
            "FOR (n:LocalServerProbe) REQUIRE n.identifier IS UNIQUE"
        )
        try:
            driver.execute_query("CREATE (:LocalServerProbe {identifier: 'DOID:0080600', name: 'COVID-19'})")
            with pytest.raises(ConstraintError):
                driver.execute_query("CREATE (:LocalServerProbe {identifier: 'DOID:0080600'})")
            names, _, _ = driver.execute_query("SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names")
            assert "probe_identifier" in names[0]["names"]
        finally:
            # The server is shared by the whole session: leave nothing behind for other tests.
            driver.execute_query("MATCH (n:LocalServerProbe) DELETE n")
            driver.execute_query("DROP CONSTRAINT probe_identifier IF EXISTS")


def test_neo4j_refuses_unauthenticated_bolt_and_local_file_reads(neo4j_server: Neo4jServer) -> None:
    """The review's exploit: an unauthenticated Bolt client reading a file through LOAD CSV."""
    for auth in (None, ("neo4j", "neo4j"), ("neo4j", "wrong")):
        with pytest.raises(AuthError):
            with GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver:
                driver.execute_query("RETURN 1")
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        for url in ("file:///etc/hostname", "file:///../../../../etc/hostname"):
            with pytest.raises(ClientError, match="allow_csv_import_from_file_urls"):
                driver.execute_query(f"LOAD CSV FROM '{url}' AS row RETURN row")


def test_neo4j_with_password_persists_across_restart_and_stops_by_pid(tmp_path: Path) -> None:
    server = Neo4jServer(tmp_path / "neo4j", password="not-the-default-1")
    server.start(timeout=180)
    try:
        with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
            driver.execute_query(
                "CREATE CONSTRAINT disease_identifier FOR (d:Disease) REQUIRE d.identifier IS UNIQUE"
            )
            driver.execute_query("CREATE (:Disease {identifier: 'DOID:0080600', name: 'COVID-19'})")
        with pytest.raises(AuthError):
            with GraphDatabase.driver(server.uri, auth=("neo4j", "wrong")) as driver:
                driver.verify_connectivity()
    finally:
        pid = server.pid
        assert server.stop()
    assert pid is not None
    assert_process_gone(pid)
    assert not server.running()

    with server:  # same directory, same port, same password
        with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
            records, _, _ = driver.execute_query(
                "MATCH (d:Disease {identifier: 'DOID:0080600'}) RETURN d.name AS name"
            )
            assert [r["name"] for r in records] == ["COVID-19"]
            with pytest.raises(ConstraintError):
                driver.execute_query("CREATE (:Disease {identifier: 'DOID:0080600'})")


def test_neo4j_port_taken_gives_clear_error(tmp_path: Path, occupied_port: int) -> None:
    server = Neo4jServer(tmp_path / "neo4j", port=occupied_port)
    with pytest.raises(ServerError, match="exited with status 3") as error:
        server.start(timeout=120)
    assert "Address already in use" in str(error.value)
    assert not server.running()


def test_neo4j_credentials_go_only_to_its_own_launcher(neo4j_server: Neo4jServer) -> None:
    """The port check accepts the real launcher's socket (a JVM listens on IPv6 or IPv4) and
    tells it apart from any other process's."""
    assert neo4j_server.client_env()["LITPATH_NEO4J_PASSWORD"] == neo4j_server.password
    assert neo4j_server.port is not None
    assert servers.foreign_listener(neo4j_server.port, os.getpid()) is not None


# Takes a loopback port and records every connection and the first bytes it sends.
SQUATTER = """
import socket, sys
host, record = sys.argv[1], sys.argv[2]
listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
listener.bind((host, 0))
listener.listen(8)
print(listener.getsockname()[1], flush=True)
with open(record, "ab") as out:
    while True:
        connection, _ = listener.accept()
        out.write(b"connected:")
        out.flush()
        connection.settimeout(2)
        try:
            out.write(connection.recv(65536))
        except OSError:
            pass
        out.flush()
        connection.close()
"""


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::"])
def test_neo4j_credentials_are_withheld_from_a_port_squatter(tmp_path: Path, host: str) -> None:
    """The review's R8: the launcher died, another local user took its port. The state folder
    still names a live process running "our jar" (a stale launcher), so only the check of who
    listens on the port stands between the password and the squatter."""
    if host == "::" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    state_root = tmp_path / "state"
    server = Neo4jServer(state_root / "neo4j", password="must-not-leak-42")
    server._save_credentials()
    received = tmp_path / "received"
    received.touch()
    squatter = subprocess.Popen(
        [sys.executable, "-c", SQUATTER, host, str(received)], stdout=subprocess.PIPE, text=True
    )
    launcher = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)", "lib/litpath-neo4j.jar"]
    )
    try:
        assert squatter.stdout is not None
        port = int(squatter.stdout.readline())
        server.pid_file.write(launcher.pid)
        server.state_path.write_text(json.dumps({"pid": launcher.pid, "port": port}) + "\n")
        server.port = server.recorded_port()
        assert server.running()  # the PID file alone would trust it
        refused = rf"127\.0\.0\.1:{port} is held by a process other than pid {launcher.pid}"
        with pytest.raises(ServerError, match=refused):
            server.client_env()
        with pytest.raises(ServerError, match=refused):
            server._answer_query(timeout=5)  # the readiness probe, which logs in
        env = run_cli("env", "--state-root", str(state_root))
        assert env.returncode == 1
        assert "LITPATH_NEO4J_PASSWORD" not in env.stdout and "# neo4j: credentials withheld" in env.stdout
        assert f"127.0.0.1:{port}" in env.stderr and str(launcher.pid) in env.stderr
        assert "must-not-leak-42" not in env.stdout + env.stderr
    finally:
        for process in (squatter, launcher):
            process.kill()
            process.wait()
    assert received.read_bytes() == b""  # no client so much as connected


# --- command line ----------------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.local.servers", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def test_cli_start_daemonizes_is_idempotent_and_stops(tmp_path: Path) -> None:
    data_dir = tmp_path / "state" / "mongo"
    port = free_port()
    first = run_cli("start", "mongo", "--data-dir", str(data_dir), "--port", str(port))
    assert first.returncode == 0, first.stderr
    assert f"mongodb://127.0.0.1:{port}/" in first.stdout
    try:
        # The CLI has exited; the server it started still answers.
        with pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=5000) as client:
            assert client.admin.command("ping")["ok"] == 1.0
        again = run_cli("start", "mongo", "--data-dir", str(data_dir))
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stdout and str(port) in again.stdout
        status = run_cli("status", "--state-root", str(tmp_path / "state"))
        assert "mongo: running" in status.stdout and "neo4j: stopped" in status.stdout
        # `env` hands the credentials over as litpath's variables (what `make run` sources).
        env = run_cli("env", "--state-root", str(tmp_path / "state"))
        assert env.returncode == 0, env.stderr
        exports = dict(
            shlex.split(line.removeprefix("export "))[0].split("=", 1)
            for line in env.stdout.splitlines()
            if line.startswith("export ")
        )
        assert set(exports) == {"LITPATH_MONGO_URI"} and "# neo4j is not running" in env.stdout
        with pymongo.MongoClient(exports["LITPATH_MONGO_URI"], serverSelectionTimeoutMS=5000) as client:
            client["cli"]["probe"].insert_one({"_id": 1})
            assert client["cli"]["probe"].count_documents({}) == 1
        assert exports["LITPATH_MONGO_URI"] not in first.stdout + first.stderr + again.stdout
    finally:
        stopped = run_cli("stop", "mongo", "--data-dir", str(data_dir))
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert "was not running" in run_cli("stop", "mongo", "--data-dir", str(data_dir)).stdout


def test_startup_clock_waits_while_the_log_grows_and_gives_up_when_it_is_silent() -> None:
    """A server opening a large store logs a line now and then for minutes: keep waiting while
    it does; give up after ``stall_s`` of silence, or at the cap however busy the log."""
    clock = StartupClock(stall_s=60, cap_s=600, started=0.0, report_every_s=30)
    assert not clock.expired(100, now=0.0)
    for t, size in ((50.0, 100), (59.0, 180), (110.0, 180), (118.0, 260), (170.0, 260)):
        assert not clock.expired(size, now=t), t  # never 60 s without a new log line
    assert clock.expired(260, now=178.0) and "silent for 60 s" in clock.why()

    busy = StartupClock(stall_s=60, cap_s=600, started=0.0)
    size = 0
    for t in range(0, 600, 30):
        size += 10
        assert not busy.expired(size, now=float(t))
    assert busy.expired(size + 10, now=600.0) and "after 600 s" in busy.why()

    reports = StartupClock(stall_s=60, started=0.0, report_every_s=30)
    due = []
    for t in range(0, 100, 5):
        reports.expired(t, now=float(t))
        due.append(reports.due_report())
    assert sum(due) == 3  # at 30, 60 and 90 s
