"""Spill folders: a stage's folder outlives a SIGKILL, and the next stage's sweep removes it,
but never the folder of a stage that still runs (here or on another host)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.spills import stale_spill_folder

from pipeline.runtime import resources
from pipeline.runtime.resources import SPILL_OWNER, SpillFolder, sweep_stale_spills

# A stage in another process: makes a spill folder, fills it, says where it is, then waits
# (to be killed, or to exit cleanly when its stdin closes).
STAGE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pipeline.runtime.resources import SpillFolder
    with SpillFolder(Path(sys.argv[1]), ".graph-spill-") as folder:
        (folder / "part-0000.bin").write_bytes(b"x" * 300_000)
        print(folder, flush=True)
        sys.stdin.read()
    """
)


def start_stage(parent: Path) -> tuple[subprocess.Popen, Path]:
    stage = subprocess.Popen(
        [sys.executable, "-c", STAGE, str(parent)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    folder = Path(stage.stdout.readline().strip())
    assert folder.is_dir(), "the stage did not make its spill folder"
    return stage, folder


def test_the_folder_of_a_killed_stage_is_swept_and_logged(tmp_path, caplog):
    stage, folder = start_stage(tmp_path)
    os.kill(stage.pid, signal.SIGKILL)
    stage.wait()
    assert folder.is_dir()  # what a SIGKILL leaves: no cleanup ran
    with caplog.at_level(logging.WARNING, logger="pipeline.runtime.resources"):
        freed = sweep_stale_spills(tmp_path)
    assert not folder.exists()
    assert freed >= 300_000
    assert any(str(folder) in r.message and "KiB freed" in r.message for r in caplog.records)


def test_the_folder_of_a_live_stage_is_kept_until_it_ends(tmp_path):
    stage, folder = start_stage(tmp_path)
    try:
        assert sweep_stale_spills(tmp_path) == 0
        assert (folder / "part-0000.bin").exists()
    finally:
        stage.stdin.close()
        stage.wait()
    assert not folder.exists()  # the stage removed its own folder on the way out


def test_a_live_owner_without_a_lock_keeps_its_folder(tmp_path):
    """Where flock is not shared (some NFS and Lustre mounts), the owner record alone protects
    a live stage: its PID runs with the start time recorded."""
    folder = tmp_path / ".merge-spill-nolock"
    folder.mkdir()
    me = resources._this_process()  # this test's own process: alive, and holding no lock on it
    (folder / SPILL_OWNER).write_text(json.dumps(me))
    assert sweep_stale_spills(tmp_path) == 0
    assert folder.exists()


def test_a_reused_pid_does_not_keep_a_dead_owners_folder(tmp_path):
    folder = tmp_path / ".evidence-spill-reused"
    folder.mkdir()
    (folder / "part-0000.parquet").write_bytes(b"y" * 1000)
    me = resources._this_process()
    # Same host, boot and PID as a live process, but another start time: that owner is gone.
    (folder / SPILL_OWNER).write_text(json.dumps({**me, "start_ticks": me["start_ticks"] - 1}))
    assert sweep_stale_spills(tmp_path) >= 1000
    assert not folder.exists()


def test_folders_of_unknown_owners_are_left_alone(tmp_path):
    no_record = tmp_path / ".graph-spill-legacy"
    no_record.mkdir()
    other_host = tmp_path / ".graph-spill-elsewhere"
    other_host.mkdir()
    (other_host / SPILL_OWNER).write_text(
        json.dumps({"host": socket.gethostname() + "-other", "boot_id": None, "pid": 1, "start_ticks": 1})
    )
    not_a_spill = tmp_path / "graph"
    not_a_spill.mkdir()
    assert sweep_stale_spills(tmp_path) == 0
    assert no_record.exists() and other_host.exists() and not_a_spill.exists()


def test_a_spill_folder_records_and_locks_its_owner(tmp_path):
    with SpillFolder(tmp_path / "spill", ".merge-spill-") as folder:
        owner = json.loads((folder / SPILL_OWNER).read_text())
        assert (owner["pid"], owner["host"]) == (os.getpid(), socket.gethostname())
        assert sweep_stale_spills(tmp_path / "spill") == 0 and folder.exists()
    assert not folder.exists()


def test_sweeping_a_missing_folder_does_nothing(tmp_path):
    assert sweep_stale_spills(tmp_path / "absent") == 0


@pytest.mark.parametrize("prefix", resources.SPILL_PREFIXES)
def test_every_stage_prefix_is_swept(tmp_path, prefix):
    folder = stale_spill_folder(tmp_path, prefix)
    assert sweep_stale_spills(tmp_path) >= 1000
    assert not folder.exists()


def test_a_stage_keeps_freed_memory_and_counts_it_as_room(tmp_path):
    """keep_freed_memory: a freed 400 MB array stays in the process (its pages resident, reused by
    the next array of that size without growing), and resident_bytes() leaves it out. In a
    child process: the setting lasts for the process."""
    script = textwrap.dedent(
        """
        import json, numpy as np
        from pipeline.runtime.resources import keep_freed_memory, resident_bytes, _malloc_free_bytes
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * 4096
        kept = keep_freed_memory()
        a = np.ones(50_000_000); held = rss(); del a
        after_free, counted, free = rss(), resident_bytes(), _malloc_free_bytes()
        b = np.ones(50_000_000); again = rss()
        print(json.dumps({"kept": kept, "held": held, "after_free": after_free, "counted": counted,
                          "free": free, "again": again}))
        """
    )
    out = json.loads(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout)
    assert out["kept"]
    array = 400_000_000
    assert out["after_free"] > out["held"] - array // 10  # the pages stayed
    assert out["free"] >= array  # malloc holds them free
    assert out["counted"] < out["held"] - array * 9 // 10  # and they count as room
    assert out["again"] < out["held"] + array // 10  # the next array took them: no growth


def test_without_keep_freed_memory_a_large_array_goes_back_to_the_system():
    """The default the setting changes (a large block mapped on its own and unmapped when freed),
    so that the test above tests the setting, not the default."""
    script = textwrap.dedent(
        """
        import numpy as np
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * 4096
        a = np.ones(50_000_000); held = rss(); del a
        print(held - rss())
        """
    )
    returned = int(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout)
    assert returned > 300_000_000


def test_freed_memory_is_kept_on_the_delta_only_where_the_cli_allowed_it():
    """keep_freed_memory_on_the_delta: nothing in a process the CLI did not allow it (a caller's,
    a test's), the setting once allowed. In a child process: the setting lasts for the process."""
    script = textwrap.dedent(
        """
        import numpy as np
        from pipeline.runtime.resources import allow_keeping_freed_memory, keep_freed_memory_on_the_delta
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * 4096
        def returned():
            a = np.ones(50_000_000); held = rss(); del a
            return held - rss()
        before = keep_freed_memory_on_the_delta(), returned()
        allow_keeping_freed_memory()
        after = keep_freed_memory_on_the_delta(), returned()
        print(*before, *after)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout.split()
    kept_before, returned_before, kept_after, returned_after = out[0] == "True", int(out[1]), out[2] == "True", int(out[3])
    assert not kept_before and returned_before > 300_000_000
    assert kept_after and returned_after < 40_000_000
