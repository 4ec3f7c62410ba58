"""The one formatter of sizes and durations, the one way a short child process runs, and the one
MongoDB connect."""

from __future__ import annotations

import sys

import pytest

from pipeline.runtime.process import CommandFailed, run_command
from pipeline.runtime.progress import format_bytes, format_seconds


@pytest.mark.parametrize("seconds,text", [
    (0.04, "0.0 s"), (59.9, "59.9 s"), (119.9, "119.9 s"), (120, "2.0 min"), (7199, "120.0 min"),
    (7200, "2.0 h"), (3 * 86400, "3.0 d"), (400 * 86400, "1.1 y"), (float("inf"), "inf"),
])  # fmt: skip
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("count,text", [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1.0 KiB"), (5 << 20, "5.0 MiB"), (3 << 30, "3.0 GiB"),
    (2 << 40, "2.0 TiB"), (1 << 50, "1.0 PiB"),
])  # fmt: skip
def test_format_bytes(count, text):
    assert format_bytes(count) == text


def test_run_command_names_what_failed_and_how():
    ok = run_command([sys.executable, "-c", "print('hi')"], what="a greeting")
    assert ok.stdout == "hi\n"
    with pytest.raises(CommandFailed, match=r"a script failed \(exit 3\): .*\nline 2\nline 3$") as failed:
        run_command([sys.executable, "-c", "import sys; print('line 1\\nline 2\\nline 3', file=sys.stderr); sys.exit(3)"],
                    what="a script", tail=2)  # fmt: skip
    assert failed.value.returncode == 3
    with pytest.raises(CommandFailed, match=r"a nap: .* did not finish within 0 s"):
        run_command([sys.executable, "-c", "import time; time.sleep(5)"], what="a nap", timeout=0.2)
    with pytest.raises(CommandFailed, match=r"a tool: 'no-such-program-here' not found"):
        run_command(["no-such-program-here"], what="a tool")
    unchecked = run_command([sys.executable, "-c", "raise SystemExit(4)"], what="x", check=False)
    assert unchecked.returncode == 4


def test_mongo_connect_bounds_every_wait():
    from pipeline.store.mongo import connect

    client = connect("mongodb://127.0.0.1:1/", timeout_ms=1234, app="litpath-test")
    try:
        options = client.options
        assert options.server_selection_timeout == 1.234
        assert options.pool_options.connect_timeout == 1.234 and options.pool_options.socket_timeout == 1.234
        assert options.pool_options.metadata["application"]["name"] == "litpath-test"
    finally:
        client.close()
