"""What the build stages may use of this machine: the memory budget and where to spill.

``resources.memory_gib`` in the workflow config (0: the default) bounds the ingest, merge
and graph stages; a stage whose data do not fit works in partitions spilled to disk
(``resources.spill_dir``, default beside its output). The budget is not part of the build
id: the results do not depend on it, only the way they are computed.

A spill folder (:class:`SpillFolder`) removes itself when its stage ends, also on an error, but
not when the stage is killed (SIGKILL, the kernel's OOM killer: what a stage near its memory
budget risks). It records its owner, so that :func:`sweep_stale_spills`, run when a stage
starts, removes the folders whose owner is gone and never one a running stage still uses.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import json
import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import format_bytes

log = logging.getLogger(__name__)

DEFAULT_CAP_BYTES = 8 << 30
# The spill folders the stages make: the graph build's, the merge's, the MongoDB load's evidence.
SPILL_PREFIXES = (".graph-spill-", ".merge-spill-", ".evidence-spill-", ".papers-spill-")
# Inside a spill folder: who made it. Its owner holds an flock on it while the folder is in use.
SPILL_OWNER = "owner.json"


def physical_memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return DEFAULT_CAP_BYTES


def memory_budget_bytes(config: dict[str, Any] | None) -> int:
    """``resources.memory_gib`` in bytes; by default min(8 GiB, half of this machine's memory)."""
    resources = ((config or {}).get("resources") or {}) if isinstance(config, dict) else {}
    gib = float(resources.get("memory_gib") or 0)
    if gib > 0:
        return int(gib * (1 << 30))
    return min(DEFAULT_CAP_BYTES, physical_memory_bytes() // 2)


def resident_bytes() -> int:
    """This process's resident memory now (0 where /proc is missing), less what the C library's
    allocator holds free for the next allocations (:func:`keep_freed_memory`): memory the
    process may still use without growing."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, pages * os.sysconf("SC_PAGE_SIZE") - _malloc_free_bytes())


# glibc's mallopt() parameters (malloc.h) and the largest value it takes (an int).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_INT_MAX = (1 << 31) - 1


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]  # fmt: skip


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (musl, macOS)
        return None


def _malloc_free_bytes() -> int:
    """The free bytes glibc's malloc holds in its arenas (mallinfo2's fordblks; 0 elsewhere)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return 0
    libc.mallinfo2.restype = _MallInfo2  # the CDLL is one (cached): set once, in effect
    return int(libc.mallinfo2().fordblks)


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep the memory a batch stage frees for the stage's next allocations,
    instead of handing it back to the system: no allocation served by a mapping of its own (by
    default a block from 128 kB up is, the threshold rising to at most 32 MB as blocks are freed,
    so numpy's arrays of millions of edges always are, each unmapped when freed) and the heap
    not trimmed. A stage allocates and frees arrays of the same sizes step after step; memory
    handed back must be faulted in and zeroed again.
    On a VM whose host takes freed pages back (this one: 430-480 MiB/s at first touch, against
    8.6 GB/s for memory the process reuses; AMD EPYC) a 10M update rerun's full graph took
    10.1-10.4 s against 11.7-12.5, 3.5 s of system time against 5.0-5.6; its peak RSS was 2.7 GB
    against 2.4 (freed blocks that a larger array does not fit stay resident). Arrow's buffers
    come from its own allocator (mimalloc), untouched. False where the C library is not glibc."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, _INT_MAX))


# Whether this process may keep freed memory once a stage works on the delta: set by the CLI for
# the stages' own processes (pipeline.cli.KEEPS_FREED_MEMORY_ON_THE_DELTA), never in a caller's
# (a test's).
_MAY_KEEP_FREED_MEMORY = False


def allow_keeping_freed_memory() -> None:
    """Let :func:`keep_freed_memory_on_the_delta` take effect in this process (the CLI calls it
    for the stage commands that run in their own process)."""
    global _MAY_KEEP_FREED_MEMORY
    _MAY_KEEP_FREED_MEMORY = True


def keep_freed_memory_on_the_delta() -> bool:
    """:func:`keep_freed_memory`, where allowed, called by the merge once it works on the delta
    (a 10M update rerun's peaked at 1.4-1.5 GB, its rewrites on two threads). A first build's merge, whose partitions are sized to the
    memory budget, keeps the default: at 30M calibrated predications it peaked at 6.4 GB keeping its
    freed memory and 6.6 GB not, in 124 s and 115 s (one run each), no gain. True where set."""
    return keep_freed_memory() if _MAY_KEEP_FREED_MEMORY else False


def room_left(budget_bytes: int, floor_fraction: float = 0.25) -> int:
    """What a stage may still allocate within ``budget_bytes``, given what it already holds.

    A stage that works in partitions sizes them with this, not with the whole budget: what it
    holds for the whole run (per-vertex arrays, the vertex keys, the concept pairs) grows with
    the corpus. Never less than ``floor_fraction`` of the budget, so the partitions stay usable
    when those needs alone come near the budget (the peak then exceeds it, and the caller says so).
    """
    return max(int(floor_fraction * budget_bytes), budget_bytes - resident_bytes())


def spill_parent(config: dict[str, Any] | None, beside: Path) -> Path:
    """Where a stage creates its spill folder: ``resources.spill_dir``, else ``beside``."""
    resources = ((config or {}).get("resources") or {}) if isinstance(config, dict) else {}
    return Path(resources.get("spill_dir") or beside)


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22), or None
    if there is no such process (or no /proc). With the boot id it tells a PID reused by a
    later process from the one that recorded it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # the command name (field 2) may hold spaces and parentheses: split after its last ")"
        return int(stat.rpartition(")")[2].split()[19])
    except (IndexError, ValueError):
        return None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _this_process() -> dict[str, Any]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot_id": _boot_id(), "pid": pid, "start_ticks": _start_ticks(pid)}


class SpillFolder:
    """A temporary folder for a stage's spilled partitions (``mkdtemp``: unique, 0700), removed
    when the stage is done with it, also on errors.

    It holds :data:`SPILL_OWNER`: this process's host, boot id, PID and start time, written
    before anything else, and flock'ed for as long as the folder is in use, so that
    :func:`sweep_stale_spills` can tell the folder of a killed stage from a live one's.
    """

    def __init__(self, parent: Path | None, prefix: str):
        parent = Path(parent) if parent else None
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        self._lock: int | None = None
        try:
            owner = self.path / SPILL_OWNER
            write_atomically(owner, json.dumps(_this_process()) + "\n")
            self._lock = os.open(owner, os.O_RDONLY)
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                # No flock on this file system (some NFS and Lustre mounts): the record alone
                # keeps the sweep away while this process lives.
                if exc.errno not in (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                    raise
        except BaseException:
            self.cleanup()
            raise

    def cleanup(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:  # released after the removal: no sweep sees the folder unlocked
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


_GONE, _LIVE, _UNKNOWN = "gone", "live", "unknown"


def _owner_state(folder: Path) -> tuple[str, str]:
    """(state, why) of ``folder``'s owner. Gone only when its owner record is readable, its
    flock is free, and the record names a process of this host that no longer runs (that PID
    has exited, or is another process's now, or the host rebooted since). Live: the lock is
    held, or the process runs. Unknown, and so kept: no record (a folder being made this
    instant, or one made before owners were recorded), or another host's process, which this
    host cannot see (a shared spill_dir on a cluster whose file system may not share locks)."""
    owner_path = folder / SPILL_OWNER
    try:
        fd = os.open(owner_path, os.O_RDONLY)
    except OSError:
        return _UNKNOWN, "it has no owner record; remove it by hand once no stage runs"
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _LIVE, "its owner holds the lock"
        except OSError:
            pass  # no flock here: the record decides
        try:
            owner = json.loads(os.read(fd, 1 << 16))
            pid, host = int(owner["pid"]), str(owner["host"])
        except (OSError, ValueError, KeyError, TypeError):
            return _UNKNOWN, "its owner record is unreadable; remove it by hand once no stage runs"
        if host != socket.gethostname():
            return _UNKNOWN, f"it was made on host {host}, whose processes this host cannot see"
        who = f"PID {pid} on {host}"
        if owner.get("boot_id") and _boot_id() and owner["boot_id"] != _boot_id():
            return _GONE, f"{who}, before a reboot"
        if not _process_alive(pid):
            return _GONE, f"{who}, which has exited"
        started = _start_ticks(pid)
        if owner.get("start_ticks") is not None and started is not None and started != owner["start_ticks"]:
            return _GONE, f"{who}, which has exited (the PID is another process's now)"
        return _LIVE, f"{who} runs"
    finally:
        os.close(fd)  # drops the lock taken above, if any


def sweep_stale_spills(parent: Path, prefixes: tuple[str, ...] = SPILL_PREFIXES) -> int:
    """Remove the spill folders in ``parent`` left by stages that were killed (their owner is
    gone, see :func:`_owner_state`); log each with the space it freed. Returns the bytes freed.

    A stage calls this when it starts, for each folder it may spill into: a folder of a stage
    still running, here or on another host, is left alone.
    """
    parent = Path(parent)
    try:
        candidates = sorted(p for p in parent.iterdir() if p.name.startswith(prefixes) and p.is_dir())
    except OSError:  # no such folder yet: nothing to sweep
        return 0
    freed = 0
    for folder in candidates:
        state, why = _owner_state(folder)
        if state != _GONE:
            # A live stage's folder is expected; one of unknown owner is worth a line.
            (log.debug if state == _LIVE else log.info)("spill folder %s left in place: %s", folder, why)
            continue
        size = _folder_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
        if folder.exists():
            log.warning("stale spill folder %s (of %s) could not be removed completely", folder, why)
            continue
        freed += size
        log.warning("removed stale spill folder %s of %s: %s freed", folder, why, format_bytes(size))
    return freed




__all__ = [
    "SPILL_OWNER", "SPILL_PREFIXES", "SpillFolder", "allow_keeping_freed_memory", "keep_freed_memory",
    "keep_freed_memory_on_the_delta", "memory_budget_bytes",
    "physical_memory_bytes", "resident_bytes", "room_left", "spill_parent", "sweep_stale_spills",
]  # fmt: skip
