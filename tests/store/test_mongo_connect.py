"""connect()'s clients and PyMongo's join of its monitor threads at exit: dropped once every client
the process opened is closed (a stopped monitor sleeps out a half-second step before it exits, so
the join cost each closed-client process about 0.5 s), kept while one is open. No server needed:
the clients point at a port nothing listens on, and nothing is sent."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pymongo.synchronous import monitor

from pipeline.store import mongo

NOWHERE = "mongodb://127.0.0.1:9/"


@pytest.fixture
def unregistered(monkeypatch):
    calls = []
    monkeypatch.setattr(mongo.atexit, "unregister", calls.append)
    monkeypatch.setattr(mongo, "_CLIENTS", mongo.weakref.WeakValueDictionary())
    return calls


def test_the_join_is_dropped_when_every_client_is_closed(unregistered):
    # two clients of one server: PyMongo's clients compare equal by their servers
    first, second = mongo.connect(NOWHERE, timeout_ms=50), mongo.connect(NOWHERE, timeout_ms=50)
    first.close()
    mongo._no_join_of_closed_clients_monitors()
    assert unregistered == []  # the second is still open: PyMongo stops and joins its monitors
    with second:  # closed on leaving, as litpath's commands close theirs
        pass
    mongo._no_join_of_closed_clients_monitors()
    assert unregistered == [monitor._shutdown_resources]


SCRIPT = """
import atexit, sys
from pymongo.synchronous import monitor
from pipeline.store import mongo
original = monitor._shutdown_resources
def joined():
    open(sys.argv[1], "w").write("joined")
    original()
atexit.unregister(original)
monitor._shutdown_resources = joined  # PyMongo's handler, as registered when it is imported
atexit.register(joined)
client = mongo.connect("mongodb://127.0.0.1:9/", timeout_ms=50)
if sys.argv[2] == "close":
    client.close()
"""


@pytest.mark.parametrize("close", [True, False])
def test_a_process_exits_without_the_join_only_once_its_clients_are_closed(tmp_path, close):
    """In a process of its own, as at the end of a `litpath` command: connect() registers its
    handler after PyMongo's, so that it runs first and can drop PyMongo's."""
    marker = tmp_path / "joined"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(marker), "close" if close else "open"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert marker.exists() is not close
