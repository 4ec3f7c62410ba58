"""Local MongoDB-wire and Neo4j servers for runs and tests, on 127.0.0.1.

Two small Java launchers live next to this file as Maven projects:

- ``mongo/``: mongo-java-server with its H2 (MVStore) backend, data in one file;
- ``neo4j/``: Neo4j Community embedded, Bolt only, data in a directory.

``build_jars()`` builds them once per source version into
``${LITPATH_CACHE:-~/.cache/litpath}/jars/<name>-<digest>/`` (outside the checkout, so a fresh
clone on the same machine reuses them). What they run is pinned by hash: every dependency jar
Maven resolves must match the project's ``dependencies.sha256`` (after the build and before each
start), the launcher jar must match the SHA-256 recorded when it was built, and no cache folder
may be writable by other users (:func:`verify_launcher`). ``MongoServer`` and ``Neo4jServer``
start a launcher, wait until it answers a real query, and stop it by PID. Each server keeps its
state in its data directory (mode 0700): ``<name>.log`` (launcher output), ``<name>.pid``,
``<name>.json`` (port, URI without credentials) and ``credentials.json`` (mode 0600).

Both servers bind 127.0.0.1, which every user of the host can reach, so both require a password:
Neo4j its own authentication (user ``neo4j``; ``LOAD CSV`` cannot read local files), the
MongoDB-wire server SCRAM-SHA-256 in the launcher (user ``litpath``; mongo-java-server itself has
no authentication). The password is random, generated at the first start of a data directory and
kept in its ``credentials.json``; it reaches the launcher through its environment, never a command
line or a log. ``env`` prints what clients need as litpath's usual variables. Neo4j's Bolt sends
the password as is, so its credentials are handed out (``env``, the readiness probe) only while
the process listening on its port is the launcher recorded in its state folder
(:meth:`LocalServer.verify_listener`): a port taken over after the launcher died gets nothing.

Command line (used by ``make run``)::

    python -m services.local.servers build
    python -m services.local.servers start mongo|neo4j [--data-dir D] [--port P]
    python -m services.local.servers stop mongo|neo4j [--data-dir D]
    python -m services.local.servers status
    python -m services.local.servers env       # export LITPATH_MONGO_URI=... LITPATH_NEO4J_*=...
    python -m services.local.servers prune     # drop cached launchers of older source versions
    python -m services.local.servers lock mongo|neo4j   # record lib/'s SHA-256 after a pom.xml change

Defaults: state under ``<repo>/.local-servers/<name>``, ports 27018 (mongo) and 7688 (neo4j),
overridable with ``LITPATH_MONGO_PORT`` / ``LITPATH_NEO4J_PORT``. Extra JVM options:
``LITPATH_MONGO_JAVA_OPTS`` / ``LITPATH_NEO4J_JAVA_OPTS``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import ClassVar
from urllib.parse import quote

import psutil

from pipeline.runtime.process import LOOPBACK, PidFile, free_port, log_tail, terminate

LOCAL_DIR = Path(__file__).resolve().parent
REPO_ROOT = LOCAL_DIR.parents[1]
DEFAULT_STATE_ROOT = REPO_ROOT / ".local-servers"

# Launcher output that says the server accepts connections (printed once, after binding).
READY_MARKER = "READY litpath-"
LOG_TAIL_LINES = 25
CREDENTIALS_FILE = "credentials.json"


# A server opening this much stored data says so before it starts (mongo-java-server reads its
# whole H2 store as it starts: 4.9 GB, the 10M-predication corpus, took over 3 minutes here).
LARGE_STORE_BYTES = 1 << 30
# However busy its log, a server that has not answered after this long has failed to start.
MAX_START_S = 3600.0
PROGRESS_EVERY_S = 30.0


class ServerError(RuntimeError):
    """A local server could not be built, started or stopped; the message says why."""


class StartupClock:
    """When to give up on a starting server: after ``stall_s`` seconds in which its log did not
    grow, or ``cap_s`` seconds in all. A server opening a large store writes a line now and then
    (database opened, collection by collection) long after any fixed timeout would have fired;
    one that writes nothing is stuck. Times are ``time.monotonic()`` unless ``now`` is given."""

    def __init__(
        self, stall_s: float, cap_s: float = MAX_START_S, started: float | None = None,
        report_every_s: float = PROGRESS_EVERY_S,
    ) -> None:  # fmt: skip
        self.stall_s, self.cap_s, self.report_every_s = stall_s, max(cap_s, stall_s), report_every_s
        self.started = time.monotonic() if started is None else started
        self.last_activity = self.started
        self.next_report = self.started + report_every_s
        self.log_size: int | None = None
        self._now = self.started

    def expired(self, log_size: int, now: float | None = None) -> bool:
        """Record the log's size at ``now``; True once the server has stalled or used up the cap."""
        self._now = time.monotonic() if now is None else now
        if self.log_size is not None and log_size > self.log_size:
            self.last_activity = self._now
        self.log_size = log_size
        return self._now - self.last_activity >= self.stall_s or self._now - self.started >= self.cap_s

    def due_report(self) -> bool:
        """True every ``report_every_s`` seconds (for a "still starting" line)."""
        if self._now < self.next_report:
            return False
        self.next_report = self._now + self.report_every_s
        return True

    def elapsed(self) -> float:
        return self._now - self.started

    def why(self) -> str:
        if self._now - self.started >= self.cap_s:
            return f"still not answering after {self.cap_s:.0f} s"
        return f"its log was silent for {self._now - self.last_activity:.0f} s"


# ---------------------------------------------------------------------------------------------
# Building the launchers


def cache_root() -> Path:
    """Where built launchers are kept: ``${LITPATH_CACHE:-~/.cache/litpath}/jars``."""
    return Path(os.environ.get("LITPATH_CACHE", "~/.cache/litpath")).expanduser() / "jars"


# The launchers run with the database passwords in their environment, so what they run must be
# what this checkout pins: every file Maven puts in lib/ has its SHA-256 in the project's lock
# (checked after each build and before each start), the launcher jar (and Neo4j's class-data
# archive) have theirs recorded in the cache folder at build time (checked before each start), and
# no cache folder on the way may be writable by other users, who could swap the files in between.
DEPENDENCY_LOCK = "dependencies.sha256"
LAUNCHER_RECORD = "launcher.sha256"
_LOCK_HEADER = """\
# SHA-256 of every file Maven copies into the {name} launcher's lib/ (its runtime dependencies,
# as pom.xml pins them). services/local/servers.py checks them after each build and before each
# start, and refuses a launcher whose files differ. After changing pom.xml on purpose, run
#   python -m services.local.servers lock {name}
# and review the diff.
"""
_RECORD_HEADER = "# SHA-256 of this launcher as built; checked before every start (services/local/servers.py).\n"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_checksums(path: Path) -> dict[str, str]:
    """A checksum file (sha256sum's ``<sha256>  <file name>`` lines, ``#`` comments) as
    {file name: sha256}; ServerError naming the file and line when one is malformed."""
    try:
        text = path.read_text()
    except OSError as error:
        raise ServerError(f"cannot read the checksum file {path}: {error.strerror}") from None
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, file = line.partition("  ")
        if not _SHA256.fullmatch(digest) or not file or file != Path(file).name or file in entries:
            raise ServerError(f"{path}:{number}: expected '<sha256>  <file name>' once per file, got {line!r}")
        entries[file] = digest
    return entries


def write_checksums(path: Path, entries: dict[str, str], header: str) -> None:
    """Write a checksum file atomically (a reader sees the old or the new one, whole)."""
    text = header + "".join(f"{entries[file]}  {file}\n" for file in sorted(entries))
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text)
    partial.chmod(0o644)
    partial.replace(path)


def _check_not_writable_by_others(path: Path) -> None:
    """Refuse a file or folder another user could change (owner, or group/world write bits)."""
    try:
        info = path.stat()
    except OSError as error:
        raise ServerError(f"cannot check {path}: {error.strerror}") from None
    if info.st_uid not in (os.getuid(), 0):
        raise ServerError(
            f"{path} belongs to another user (uid {info.st_uid}), who could replace the local servers' launchers, "
            "which run with the database passwords; point LITPATH_CACHE at a folder of your own"
        )
    if info.st_mode & 0o022:
        raise ServerError(
            f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}), who could replace the "
            f"local servers' launchers, which run with the database passwords: chmod go-w {path}"
        )


def _prepare_cache() -> Path:
    """The jars folder, created if needed. ``$LITPATH_CACHE`` and its ``jars/`` must not be
    writable by other users; folders created here are made so whatever the umask."""
    root = cache_root()
    for folder in (root.parent, root):
        try:
            folder.mkdir(parents=True)
        except FileExistsError:
            pass
        else:
            folder.chmod(stat.S_IMODE(folder.stat().st_mode) & ~0o022)
        _check_not_writable_by_others(folder)
    return root


def dependency_lock(name: str) -> Path:
    return LOCAL_DIR / name / DEPENDENCY_LOCK


def verify_dependencies(name: str, lib: Path) -> None:
    """Raise ServerError unless ``lib`` holds exactly the files of ``name``'s lock, each with
    the SHA-256 the lock gives."""
    lock = dependency_lock(name)
    expected = read_checksums(lock)
    try:
        present = {path.name: path for path in lib.iterdir()}
    except OSError as error:
        raise ServerError(f"cannot list the {name} launcher's dependencies in {lib}: {error.strerror}") from None
    problems = [f"{file}: missing" for file in sorted(expected.keys() - present.keys())]
    problems += [f"{file}: not in the lock" for file in sorted(present.keys() - expected.keys())]
    for file in sorted(expected.keys() & present.keys()):
        path = present[file]
        if path.is_symlink() or not path.is_file():
            problems.append(f"{file}: not a plain file")
        elif (actual := sha256_of(path)) != expected[file]:
            problems.append(f"{file}: sha256 {actual}, the lock says {expected[file]}")
    if problems:
        raise ServerError(
            f"the {name} launcher's dependencies in {lib} do not match {lock}:\n"
            + "".join(f"    {problem}\n" for problem in problems)
            + f"If pom.xml changed on purpose, run 'python -m services.local.servers lock {name}' and review "
            "the diff; otherwise these are not the files this checkout pins: do not run them"
        )


def verify_launcher(name: str, jar: Path) -> None:
    """Raise ServerError unless ``jar`` is the launcher as built from this checkout: its folder
    and the cache folders above it are not writable by other users, the jar (and the class-data
    archive, if any) have the SHA-256 recorded at build time, and lib/ matches the lock."""
    folder = jar.parent
    for path in (folder.parent.parent, folder.parent, folder, folder / "lib"):
        _check_not_writable_by_others(path)
    record_path = folder / LAUNCHER_RECORD
    if not record_path.is_file():
        raise ServerError(
            f"{folder} has no {LAUNCHER_RECORD} (built by an older litpath, or not by litpath); "
            f"remove that folder and start again to rebuild it"
        )
    record = read_checksums(record_path)
    archive = class_data_archive(jar)
    if jar.name not in record or (archive.exists() and archive.name not in record):
        unrecorded = jar if jar.name not in record else archive
        raise ServerError(f"{unrecorded} is not recorded in {record_path}; remove {folder} to rebuild it")
    for file, recorded in sorted(record.items()):
        path = folder / file
        if path == archive and not path.exists():
            continue  # optional: recorded just before it is moved into place
        _check_not_writable_by_others(path)
        try:
            actual = sha256_of(path)
        except OSError as error:
            raise ServerError(f"cannot read {path}: {error.strerror}") from None
        if actual != recorded:
            raise ServerError(
                f"{path} has changed since it was built (sha256 {actual}, recorded {recorded} in {record_path}); "
                f"refusing to start it. Remove {folder} to rebuild it from this checkout"
            )
    for path in (folder / "lib").iterdir():
        _check_not_writable_by_others(path)
    verify_dependencies(name, folder / "lib")


def source_digest(project_dir: Path) -> str:
    """sha256 over pom.xml, the dependency lock and every file under src/ (relative names and
    contents)."""
    digest = hashlib.sha256()
    lock = [project_dir / DEPENDENCY_LOCK] if (project_dir / DEPENDENCY_LOCK).is_file() else []
    files = [project_dir / "pom.xml", *lock, *sorted(p for p in (project_dir / "src").rglob("*") if p.is_file())]
    for path in files:
        digest.update(path.relative_to(project_dir).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _launcher_dir(name: str) -> Path:
    project_dir = LOCAL_DIR / name
    return cache_root() / f"{name}-{source_digest(project_dir)[:16]}"


def _jar_name(name: str) -> str:
    return f"litpath-{name}.jar"


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """Serialises builds of one launcher across processes (e.g. parallel test sessions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_jar(name: str) -> Path:
    """Return the launcher jar for ``name`` ("mongo" or "neo4j"), building it if needed.

    The build runs Maven in a scratch copy of the project under the cache, checks lib/ against
    the project's lock, records the jar's SHA-256, then moves the jar, its ``lib/`` and the
    record into place with one rename, so a cache folder is always complete. Whether a cached
    launcher is intact is checked before each start (:func:`verify_launcher`), not here.
    """
    if name not in SERVER_KINDS:
        raise ServerError(f"unknown server {name!r}; expected one of {sorted(SERVER_KINDS)}")
    root = _prepare_cache()
    target = _launcher_dir(name)
    jar = target / _jar_name(name)
    if jar.is_file():
        return jar
    with _exclusive_lock(root / f".{name}.lock"):
        if jar.is_file():  # another process built it while we waited
            return jar
        log_path = target.with_name(target.name + ".build.log")
        print(f"[local-servers] building {name} launcher with Maven (log: {log_path}) ...", flush=True)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f".{name}-build-", dir=root) as scratch:
            project = _maven_package(name, Path(scratch), log_path)
            verify_dependencies(name, project / "target" / "lib")
            staged = Path(scratch) / "out"
            staged.mkdir()
            shutil.copy2(project / "target" / _jar_name(name), staged / _jar_name(name))
            shutil.copytree(project / "target" / "lib", staged / "lib")
            write_checksums(
                staged / LAUNCHER_RECORD, {jar.name: sha256_of(staged / _jar_name(name))}, _RECORD_HEADER
            )
            for path in [staged, *staged.rglob("*")]:  # whatever the umask, only we may change them
                path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o022)
            staged.rename(target)
        if SERVER_KINDS[name].uses_class_data_archive:
            _dump_class_data_archive(name, jar)
        print(
            f"[local-servers] built {name} launcher in {time.monotonic() - started:.1f} s: {jar}", flush=True
        )
    return jar


def _maven_package(name: str, scratch: Path, log_path: Path) -> Path:
    """Run ``mvn package`` on a copy of ``name``'s project in ``scratch``; returns the copy."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServerError("Maven ('mvn') is not on PATH; it is needed once to build the local servers")
    project = scratch / name
    shutil.copytree(LOCAL_DIR / name, project, ignore=shutil.ignore_patterns("target"))
    with open(log_path, "w") as log:
        result = subprocess.run(
            # --strict-checksums: a download that does not match the repository's checksum fails
            # the build (Maven's default only warns); the lock is checked after this.
            [mvn, "-B", "-ntp", "--strict-checksums", "package"],
            cwd=project,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    if result.returncode != 0:
        raise ServerError(
            f"building the {name} launcher failed (mvn exit {result.returncode}); "
            f"see {log_path}:\n{log_tail(log_path, LOG_TAIL_LINES)}"
        )
    return project


def lock_dependencies(name: str) -> Path:
    """Build ``name``'s launcher with Maven in a scratch folder and write the SHA-256 of every
    file of its lib/ to the project's lock (after a deliberate change of pom.xml: review the diff)."""
    root = _prepare_cache()
    with tempfile.TemporaryDirectory(prefix=f".{name}-lock-", dir=root) as scratch:
        project = _maven_package(name, Path(scratch), root / f"{name}-lock.build.log")
        lib = project / "target" / "lib"
        entries = {path.name: sha256_of(path) for path in lib.iterdir()}
    lock = dependency_lock(name)
    write_checksums(lock, entries, _LOCK_HEADER.format(name=name))
    return lock


def _dump_class_data_archive(name: str, jar: Path) -> None:
    """Start the server once from its final jar location and let the JVM archive the classes it
    loaded (-XX:ArchiveClassesAtExit). Later starts map that archive instead of parsing and
    verifying thousands of classes: Neo4j's start-up CPU time drops by about a third. The archive
    is tied to the jar paths and the JVM build; with another JVM it is ignored, never fatal.
    A failure here only costs speed, so it is reported and the build goes on."""
    archive = class_data_archive(jar)
    partial = archive.with_suffix(".jsa.partial")
    print(f"[local-servers] recording a class-data archive for {name} (one start and stop) ...", flush=True)
    with tempfile.TemporaryDirectory(prefix=".cds-", dir=jar.parent) as scratch:
        server = SERVER_KINDS[name](Path(scratch) / "server")
        options = [*server.java_options(jar), f"-XX:ArchiveClassesAtExit={partial}"]
        try:
            server._launch(jar, options, timeout=300)
            server.stop(grace=180)  # the JVM writes the archive as it exits
        except ServerError as error:
            server.stop(grace=5)
            print(f"[local-servers] warning: no class-data archive for {name}: {error}", flush=True)
    if partial.is_file() and not server.last_stop_forced:
        # Recorded before it is moved into place: an archive that is there is always recorded.
        record_path = jar.parent / LAUNCHER_RECORD
        record = read_checksums(record_path)
        record[archive.name] = sha256_of(partial)
        write_checksums(record_path, record, _RECORD_HEADER)
        partial.chmod(0o644)
        partial.rename(archive)
    else:
        partial.unlink(missing_ok=True)  # a killed JVM may have left half an archive


def prune_cache() -> list[Path]:
    """Delete cached launchers of older source versions that no running process uses."""
    current = {_launcher_dir(name).name for name in SERVER_KINDS}
    in_use: set[str] = set()
    for process in psutil.process_iter(["cmdline"]):
        in_use.update(arg for arg in process.info["cmdline"] or () if str(cache_root()) in arg)
    removed: list[Path] = []
    for folder in sorted(cache_root().glob("*-*")):
        if folder.name.startswith("."):  # locks and the scratch folders of builds in progress
            continue
        stale = folder.name.removesuffix(".build.log") not in current
        if not stale or any(str(folder) in arg for arg in in_use):
            continue
        if folder.is_dir():
            shutil.rmtree(folder)
        else:
            folder.unlink()
        removed.append(folder)
    return removed


def build_jars() -> dict[str, Path]:
    """Build (or find in the cache) both launchers; returns {name: jar path}."""
    return {name: build_jar(name) for name in SERVER_KINDS}


# ---------------------------------------------------------------------------------------------
# Running a server


def port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout):
            return True
    except OSError:
        return False


# A server on a fixed loopback port can be impersonated: if its launcher dies, any local user may
# bind the port and wait for a client's password (Bolt basic auth sends it as is). So before a
# client is given a server's credentials, the process listening on the port must be the launcher
# recorded in the server's state folder. Linux: /proc/net/tcp{,6} map a listening socket to its
# inode, /proc/<pid>/fd maps the launcher's open files to socket inodes.
_TCP_LISTEN = "0A"


def _proc_address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp{,6} print it: 32-bit words in hex, each in host byte order."""
    raw = bytes.fromhex(hex_address)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def _reaches_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether a socket bound to ``address`` receives connections made to 127.0.0.1."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_unspecified or address == ipaddress.ip_address(LOOPBACK)


def loopback_listeners(port: int) -> set[int]:
    """Socket inodes of the TCP listeners that take connections to 127.0.0.1:``port``."""
    inodes = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:  # no IPv6 on this host
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == _TCP_LISTEN and int(hex_port, 16) == port and _reaches_loopback(_proc_address(address)):
                inodes.add(int(fields[9]))
    return inodes


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets process ``pid`` holds open (empty when we may not look)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def foreign_listener(port: int, pid: int) -> str | None:
    """None when everything that takes connections to 127.0.0.1:``port`` belongs to process
    ``pid``; otherwise what is wrong, in words."""
    if not Path("/proc/net/tcp").is_file():  # not Linux: psutil's view, which may need privileges
        try:
            listening = {c.pid for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN
                         and c.laddr and c.laddr.port == port}  # fmt: skip
        except psutil.AccessDenied:
            return f"cannot see who listens on {LOOPBACK}:{port} without privileges on this system"
        if not listening:
            return f"nothing listens on {LOOPBACK}:{port}"
        return None if listening == {pid} else f"{LOOPBACK}:{port} is held by a process other than pid {pid}"
    listeners = loopback_listeners(port)
    if not listeners:
        return f"nothing listens on {LOOPBACK}:{port}"
    if listeners - socket_inodes(pid):
        return f"{LOOPBACK}:{port} is held by a process other than pid {pid}"
    return None


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if java is None:
        raise ServerError("Java ('java') is not on PATH; the local servers need Java 17 or newer")
    return java


def _private_dir(path: Path) -> None:
    """Create ``path`` (and parents) and make it readable by its owner only."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)


def class_data_archive(jar: Path) -> Path:
    """Where the JVM class-data (AppCDS) archive for ``jar`` lives (it may not exist)."""
    return jar.parent / "classes.jsa"


class LocalServer:
    """One launcher process with its state in ``data_dir``; see MongoServer and Neo4jServer."""

    name: ClassVar[str]
    default_port: ClassVar[int]
    port_env: ClassVar[str]
    default_java_opts: ClassVar[tuple[str, ...]]
    uses_class_data_archive: ClassVar[bool] = False
    user: ClassVar[str]
    password_env: ClassVar[str]  # how the launcher receives the password

    def __init__(
        self, data_dir: str | os.PathLike[str], port: int | None = None, password: str | None = None
    ) -> None:
        """``password=None``: the one kept in the data directory, generated at its first start."""
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self._password = password
        self._process: subprocess.Popen[bytes] | None = None
        self.last_stop_forced = False  # True when the last stop needed SIGKILL
        # Told what a long start is doing (large store, still starting); the CLI prints it.
        self.on_progress: Callable[[str], None] | None = None

    # -- state files -----------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.data_dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.data_dir / f"{self.name}.pid"

    @property
    def state_path(self) -> Path:
        return self.data_dir / f"{self.name}.json"

    @property
    def credentials_path(self) -> Path:
        return self.data_dir / CREDENTIALS_FILE

    @property
    def password(self) -> str:
        """This server's password: the one given, else the data directory's (generated once)."""
        if self._password is None:
            self._password = self._stored_password() or secrets.token_urlsafe(24)
        return self._password

    @property
    def auth(self) -> tuple[str, str]:
        """(user, password), e.g. the Neo4j driver's ``auth=``."""
        return (self.user, self.password)

    @property
    def uri(self) -> str:
        """What a client connects to (with the credentials where the URI scheme carries them)."""
        return self._uri_for(self._require_port(), with_credentials=True)

    @property
    def public_uri(self) -> str:
        """The URI without credentials: for messages, logs and state files."""
        return self._uri_for(self._require_port(), with_credentials=False)

    def client_env(self) -> dict[str, str]:
        """litpath's variables that point a client at this server, credentials included."""
        raise NotImplementedError

    def _require_port(self) -> int:
        if self.port is None:
            raise ServerError(f"{self.name} server has no port yet; start it first")
        return self.port

    def _stored_password(self) -> str | None:
        try:
            stored = json.loads(self.credentials_path.read_text())
        except (OSError, ValueError):
            return None
        password = stored.get("password") if isinstance(stored, dict) else None
        return password if isinstance(password, str) and password else None

    def _save_credentials(self) -> None:
        """Write credentials.json (0600) in the private (0700) data directory, unless it already
        holds this password."""
        _private_dir(self.data_dir)
        if self._stored_password() == self.password:
            return
        text = json.dumps({"user": self.user, "password": self.password}, indent=2) + "\n"
        tmp = self.credentials_path.with_name(f".{CREDENTIALS_FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(text)
        tmp.replace(self.credentials_path)

    @property
    def pid_file(self) -> PidFile:
        """The launcher's PID file; a PID counts only while it runs this server's jar (PID reuse)."""
        jar = _jar_name(self.name)
        return PidFile(self.pid_path, lambda command: any(arg.endswith(jar) for arg in command))

    @property
    def pid(self) -> int | None:
        """PID of this server's launcher if it is running, else None (stale PID files ignored)."""
        return self.pid_file.live_pid(self._process)

    def running(self) -> bool:
        return self.pid is not None

    def verify_listener(self) -> None:
        """Raise ServerError unless this server's recorded launcher is what listens on its port:
        call before handing a client the credentials (see :func:`foreign_listener`)."""
        port = self._require_port()
        pid = self.pid
        if pid is None:
            raise ServerError(
                f"the {self.name} server of {self.data_dir} is not running (no live launcher in {self.pid_path}); "
                f"not handing out its credentials for {LOOPBACK}:{port}"
            )
        problem = foreign_listener(port, pid)
        if problem is not None:
            raise ServerError(
                f"{problem}, where the {self.name} launcher recorded in {self.pid_path} (pid {pid}) should listen; "
                f"not handing out its credentials. If that launcher died, another program may have taken the "
                f"port: stop it (python -m services.local.servers stop {self.name}) and start it again"
            )

    def recorded_port(self) -> int | None:
        """The port written by the last start, if any."""
        try:
            return int(json.loads(self.state_path.read_text())["port"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- subclass hooks --------------------------------------------------------------------
    def _uri_for(self, port: int, with_credentials: bool) -> str:
        raise NotImplementedError

    def _launcher_args(self, port: int) -> list[str]:
        raise NotImplementedError

    def _launcher_env(self) -> dict[str, str]:
        """The launcher's environment: ours, with this server's password (never on argv)."""
        env = dict(os.environ)
        env[self.password_env] = self.password
        return env

    def _answer_query(self, timeout: float) -> None:
        """Raise unless the server answers a real query within ``timeout`` seconds."""
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------
    def java_options(self, jar: Path) -> list[str]:
        """JVM options: ``LITPATH_<NAME>_JAVA_OPTS`` if set, else the defaults, plus the class-data
        archive built next to the jar (if any), which cuts the JVM's start-up work."""
        extra = os.environ.get(f"LITPATH_{self.name.upper()}_JAVA_OPTS")
        options = shlex.split(extra) if extra else list(self.default_java_opts)
        archive = class_data_archive(jar)
        if archive.is_file():
            options.append(f"-XX:SharedArchiveFile={archive}")
        return options

    def start(self, timeout: float = 120.0) -> LocalServer:
        """Launch the server and return once it answers a query; raise ServerError once its log
        has been silent for ``timeout`` seconds, or after :data:`MAX_START_S` (:class:`StartupClock`)."""
        jar = build_jar(self.name)
        return self._launch(jar, self.java_options(jar), timeout)

    def _launch(self, jar: Path, java_options: list[str], timeout: float) -> LocalServer:
        if self.running():
            raise ServerError(f"{self.name} server already running (pid {self.pid}) for {self.data_dir}")
        verify_launcher(self.name, jar)
        port = self.port if self.port is not None else free_port()
        self._save_credentials()
        command = [_java(), *java_options, "-jar", str(jar), *self._launcher_args(port)]
        started = time.monotonic()
        big = self.stored_bytes()
        if self.on_progress is not None and big >= LARGE_STORE_BYTES:
            self.on_progress(
                f"{self.name}: opening {big / 2**30:.1f} GiB of stored data in {self.data_dir}; "
                "the server reads it as it starts, which takes minutes at this size"
            )
        with open(self.log_path, "ab") as log:
            log_offset = log.tell()
            header = f"=== {time.strftime('%Y-%m-%dT%H:%M:%S%z')} starting: {shlex.join(command)}\n"
            log.write(header.encode())
            log.flush()
            self._process = subprocess.Popen(
                command,
                cwd=self.data_dir,
                env=self._launcher_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # survives the CLI and its terminal's Ctrl-C
            )
        self.port = port
        self.pid_file.write(self._process.pid)
        self.state_path.write_text(
            json.dumps({"pid": self._process.pid, "port": port, "uri": self.public_uri, "jar": str(jar)}, indent=2)
            + "\n"
        )
        try:
            self._wait_ready(log_offset, StartupClock(stall_s=timeout, started=started))
        except ServerError:
            self._terminate(grace=5.0)
            raise
        return self

    def _wait_ready(self, log_offset: int, clock: StartupClock) -> None:
        assert self._process is not None
        last_error = "no answer yet"
        while not clock.expired(self._log_size()):
            exit_code = self._process.poll()
            if exit_code is not None:
                raise ServerError(
                    f"{self.name} server exited with status {exit_code} while starting on port {self.port}; "
                    f"last lines of {self.log_path}:\n{log_tail(self.log_path, LOG_TAIL_LINES)}"
                )
            # Our launcher's READY line first, so a foreign server on the port cannot pass for ours.
            if self._launcher_said_ready(log_offset) and self.port is not None and port_open(self.port):
                try:
                    self._answer_query(timeout=10.0)
                    return
                except Exception as error:  # noqa: BLE001 - any failure means "not ready yet"
                    last_error = f"{type(error).__name__}: {error}"
            if self.on_progress is not None and clock.due_report():
                self.on_progress(
                    f"{self.name}: still starting after {clock.elapsed():.0f} s (log {self.log_path})"
                )
            time.sleep(0.2)
        raise ServerError(
            f"{self.name} server did not become ready on port {self.port} ({last_error}; {clock.why()}); "
            f"last lines of {self.log_path}:\n{log_tail(self.log_path, LOG_TAIL_LINES)}"
        )

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def stored_bytes(self) -> int:
        """Bytes of stored data the server opens as it starts (its data folder, logs excluded)."""
        total = 0
        for path in self.data_dir.rglob("*"):
            if path.is_file() and not path.name.endswith(".log"):
                with contextlib.suppress(OSError):
                    total += path.stat().st_size
        return total

    def _launcher_said_ready(self, log_offset: int) -> bool:
        with open(self.log_path, "rb") as log:
            log.seek(log_offset)
            return READY_MARKER.encode() in log.read()

    def stop(self, grace: float = 30.0) -> bool:
        """Stop the server by PID: SIGTERM, then SIGKILL after ``grace`` seconds.

        Returns True if a running server was stopped, False if none was running.
        """
        was_running = self.running()
        self._terminate(grace)
        return was_running

    def _terminate(self, grace: float) -> None:
        self.last_stop_forced = terminate(self.pid, grace, child=self._process)
        self._process = None
        self.pid_file.remove()
        self.state_path.unlink(missing_ok=True)

    def __enter__(self) -> LocalServer:
        if not self.running():
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(data_dir={str(self.data_dir)!r}, port={self.port})"


class MongoServer(LocalServer):
    """mongo-java-server (H2 backend, data in ``<data_dir>/mongo.mv.db``) on 127.0.0.1, behind
    SCRAM-SHA-256 (user ``litpath``): :attr:`uri` carries the credentials, as PyMongo takes them."""

    name = "mongo"
    default_port = 27018
    port_env = "LITPATH_MONGO_PORT"
    user = "litpath"
    password_env = "LITPATH_MONGO_PASSWORD"
    # mongo-java-server keeps working sets on the Java heap (and ignores secondary indexes, so
    # a count by a field walks the collection). With one document per row (store format 1) 1 GiB
    # ran out at 10M predications, and the heap was a quarter of the machine's memory, up to 16
    # GiB: the 15.2 GB process of the 30M run. Store format 2 keeps hundreds of rows in one
    # document (pipeline/store/buckets.py), so the store holds thousands of documents, not
    # millions: a fixed 2 GiB heap, the stated cap (bench/results/mongo_load.md records the
    # server's peak), within the stages' 8 GiB budget. LITPATH_MONGO_JAVA_OPTS overrides it.
    default_java_opts = ("-Xmx2g", "-XX:+ExitOnOutOfMemoryError")

    @property
    def data_file(self) -> Path:
        return self.data_dir / "mongo.mv.db"

    def _uri_for(self, port: int, with_credentials: bool) -> str:
        if not with_credentials:
            return f"mongodb://{LOOPBACK}:{port}/"
        userinfo = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}"
        return f"mongodb://{userinfo}@{LOOPBACK}:{port}/?authSource=admin"

    def client_env(self) -> dict[str, str]:
        return {"LITPATH_MONGO_URI": self.uri}

    def _launcher_args(self, port: int) -> list[str]:
        return ["--port", str(port), "--data-file", str(self.data_file), "--user", self.user]

    def _answer_query(self, timeout: float) -> None:
        import pymongo

        timeout_ms = int(timeout * 1000)
        with pymongo.MongoClient(
            self.uri,
            serverSelectionTimeoutMS=timeout_ms,
            connectTimeoutMS=timeout_ms,
            socketTimeoutMS=timeout_ms,
        ) as client:
            client.admin.command("ping")
            probe = client["litpath_readiness"]["probe"]
            token = f"{os.getpid()}-{time.time_ns()}"
            probe.replace_one({"_id": "probe"}, {"_id": "probe", "token": token}, upsert=True)
            found = probe.find_one({"_id": "probe"})
            if found is None or found.get("token") != token:
                raise ServerError("write/read round trip returned a different document")
            client.drop_database("litpath_readiness")


class Neo4jServer(LocalServer):
    """Neo4j Community embedded, Bolt on 127.0.0.1, home in ``<data_dir>/home``; user ``neo4j``
    (:attr:`auth`), ``LOAD CSV`` refused local files."""

    name = "neo4j"
    default_port = 7688
    port_env = "LITPATH_NEO4J_PORT"
    password_env = "LITPATH_NEO4J_PASSWORD"
    # C1 only (TieredStopAtLevel=1): Neo4j's start-up CPU time halves on this kind of machine, and
    # the small graphs of local runs and tests never need C2's peak speed. Override for big loads
    # with LITPATH_NEO4J_JAVA_OPTS.
    default_java_opts = ("-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError")
    uses_class_data_archive = True
    user = "neo4j"

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        password: str | None = None,
        page_cache: str = "128m",
    ) -> None:
        super().__init__(data_dir, port, password)
        self.page_cache = page_cache

    def _uri_for(self, port: int, with_credentials: bool) -> str:
        return f"bolt://{LOOPBACK}:{port}"  # Bolt takes the credentials apart (auth)

    def client_env(self) -> dict[str, str]:
        """The variables, once the port is known to be this server's (Bolt sends the password as
        is, so whoever listens there would get it)."""
        self.verify_listener()
        return {"LITPATH_NEO4J_URI": self.uri, "LITPATH_NEO4J_USER": self.user, "LITPATH_NEO4J_PASSWORD": self.password}

    def _launcher_args(self, port: int) -> list[str]:
        return ["--port", str(port), "--data-dir", str(self.data_dir / "home"), "--page-cache", self.page_cache]

    def _answer_query(self, timeout: float) -> None:
        from neo4j import GraphDatabase

        self.verify_listener()
        with GraphDatabase.driver(self.uri, auth=self.auth, connection_timeout=timeout) as driver:
            records, _, _ = driver.execute_query("RETURN 1 AS one")
            if records[0]["one"] != 1:
                raise ServerError("RETURN 1 answered something else")


SERVER_KINDS: dict[str, type[LocalServer]] = {"mongo": MongoServer, "neo4j": Neo4jServer}


# ---------------------------------------------------------------------------------------------
# Command line


def default_data_dir(name: str) -> Path:
    return DEFAULT_STATE_ROOT / name


def default_port(name: str) -> int:
    kind = SERVER_KINDS[name]
    value = os.environ.get(kind.port_env)
    if not value:
        return kind.default_port
    try:
        return int(value)
    except ValueError:
        raise ServerError(f"{kind.port_env}={value!r} is not a port number") from None


def make_server(name: str, data_dir: Path | None = None, port: int | None = None) -> LocalServer:
    """A server of its data directory, with the credentials kept there (never the environment's:
    ``LITPATH_NEO4J_PASSWORD`` may name another server's)."""
    return SERVER_KINDS[name](data_dir or default_data_dir(name), port)


def _cmd_build(_: argparse.Namespace) -> int:
    for name, jar in build_jars().items():
        print(f"{name}: {jar}")
    return 0


def _cmd_lock(args: argparse.Namespace) -> int:
    print(f"wrote {lock_dependencies(args.server)}; review the diff before committing it")
    return 0


def _cmd_prune(_: argparse.Namespace) -> int:
    for path in prune_cache():
        print(f"removed {path}")
    return 0


def _cmd_start(args: argparse.Namespace) -> int:
    server = make_server(args.server, args.data_dir)
    if server.running():
        server.port = server.recorded_port()
        if server._stored_password() is None:
            raise ServerError(
                f"the {args.server} server running from {server.data_dir} (pid {server.pid}) was started without "
                "authentication by an older litpath: stop it (make servers-stop) and start it again"
            )
        print(
            f"{args.server} already running (pid {server.pid}) at {server.public_uri}; data in {server.data_dir}"
        )
        return 0
    server.port = args.port if args.port is not None else default_port(args.server)
    server.on_progress = lambda line: print(line, flush=True)
    started = time.monotonic()
    server.start(timeout=args.timeout)
    print(
        f"{args.server} started (pid {server.pid}) at {server.public_uri} as user {server.user} in "
        f"{time.monotonic() - started:.1f} s; log {server.log_path}; credentials in {server.credentials_path}"
    )
    return 0


def _cmd_stop(args: argparse.Namespace) -> int:
    server = make_server(args.server, args.data_dir)
    pid = server.pid
    if server.stop(grace=args.grace):
        print(f"{args.server} stopped (pid {pid})")
    else:
        print(f"{args.server} was not running (data in {server.data_dir})")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    for name in SERVER_KINDS:
        server = make_server(name, args.state_root / name if args.state_root else None)
        if server.running():
            server.port = server.recorded_port()
            print(f"{name}: running (pid {server.pid}) at {server.public_uri}; data in {server.data_dir}")
        else:
            print(f"{name}: stopped (data in {server.data_dir})")
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    """Print shell exports of the running local servers' URIs and credentials, for
    ``source <(python -m services.local.servers env)``: read from the servers' 0600 files, they
    reach a client's environment without passing through a command line or a file of the user's.
    A server whose port is held by another process than its launcher gets no exports, and the
    status is 1."""
    status = 0
    for name in SERVER_KINDS:
        server = make_server(name, args.state_root / name if args.state_root else None)
        server.port = server.recorded_port()
        if not (server.running() and server.port is not None):
            print(f"# {name} is not running (start it with: python -m services.local.servers start {name})")
        elif server._stored_password() is None:
            print(f"# {name} runs without the credentials file {server.credentials_path}: restart it")
        else:
            try:
                exports = server.client_env()
            except ServerError as error:  # the other server's variables are still good
                print(f"# {name}: credentials withheld (see the error)")
                print(f"error: {error}", file=sys.stderr)
                status = 1
                continue
            for variable, value in exports.items():
                print(f"export {variable}={shlex.quote(value)}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.local.servers", description="Local MongoDB-wire and Neo4j servers."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("build", help="build both launchers (cached)").set_defaults(func=_cmd_build)

    lock = commands.add_parser("lock", help="record the SHA-256 of a launcher's dependencies (after changing its pom.xml)")
    lock.add_argument("server", choices=sorted(SERVER_KINDS))
    lock.set_defaults(func=_cmd_lock)

    commands.add_parser("prune", help="delete cached launchers of older versions not in use").set_defaults(
        func=_cmd_prune
    )

    start = commands.add_parser("start", help="start a server in the background (idempotent)")
    start.add_argument("server", choices=sorted(SERVER_KINDS))
    start.add_argument("--data-dir", type=Path, help="state directory (default .local-servers/<server>)")
    start.add_argument("--port", type=int, help="port (default 27018 / 7688, or LITPATH_*_PORT)")
    start.add_argument(
        "--timeout", type=float, default=180.0,
        help="give up once the server's log has been silent this many seconds while it starts (an hour at most)",
    )  # fmt: skip
    start.set_defaults(func=_cmd_start)

    stop = commands.add_parser("stop", help="stop a server started with 'start'")
    stop.add_argument("server", choices=sorted(SERVER_KINDS))
    stop.add_argument("--data-dir", type=Path, help="state directory (default .local-servers/<server>)")
    stop.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL")
    stop.set_defaults(func=_cmd_stop)

    status = commands.add_parser("status", help="show which servers run")
    status.add_argument(
        "--state-root", type=Path, help="parent of the state directories (default .local-servers)"
    )
    status.set_defaults(func=_cmd_status)

    env = commands.add_parser("env", help="print shell exports of the running servers' URIs and credentials")
    env.add_argument("--state-root", type=Path, help="parent of the state directories (default .local-servers)")
    env.set_defaults(func=_cmd_env)

    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ServerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
