"""What the local servers' launchers may run: the dependencies the lock pins, the jar as built,
from cache folders no other user can write (review R9)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from services.local import servers
from services.local.servers import MongoServer, ServerError

pytestmark = pytest.mark.servers


@pytest.fixture
def copied_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The built mongo launcher, copied into a cache of this test's own (LITPATH_CACHE), where
    it passes the start-up check until the test changes something."""
    built = servers.build_jar("mongo").parent
    monkeypatch.setenv("LITPATH_CACHE", str(tmp_path / "cache"))
    servers._prepare_cache()
    target = servers._launcher_dir("mongo")
    shutil.copytree(built, target, ignore=shutil.ignore_patterns(".*"))
    jar = target / "litpath-mongo.jar"
    servers.verify_launcher("mongo", jar)
    yield jar


def test_copied_launcher_starts(copied_launcher: Path, tmp_path: Path) -> None:
    """The control for the refusals below: the same copy, unchanged, runs."""
    with MongoServer(tmp_path / "mongo") as server:
        assert server.running()
        assert any(arg == str(copied_launcher) for arg in psutil.Process(server.pid).cmdline())


def _append(path: Path) -> None:
    with open(path, "ab") as handle:
        handle.write(b"\0")


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            lambda jar: _append(jar),
            r"litpath-mongo\.jar has changed since it was built \(sha256 [0-9a-f]{64}, recorded",
        ),
        (
            lambda jar: _append(next((jar.parent / "lib").glob("h2-*.jar"))),
            r"h2-[0-9.]+\.jar: sha256 [0-9a-f]{64}, the lock says [0-9a-f]{64}",
        ),
        (lambda jar: (jar.parent / "lib" / "extra.jar").write_bytes(b"PK"), r"extra\.jar: not in the lock"),
        (
            lambda jar: next((jar.parent / "lib").glob("slf4j-api-*.jar")).unlink(),
            r"slf4j-api-[0-9.]+\.jar: missing",
        ),
        (lambda jar: (jar.parent / "launcher.sha256").unlink(), r"has no launcher\.sha256"),
        (lambda jar: (jar.parent / "classes.jsa").write_bytes(b"x"), r"classes\.jsa is not recorded"),
        (lambda jar: jar.parent.chmod(0o777), r"is writable by other users \(mode 0777\).*chmod go-w"),
        (lambda jar: (jar.parent / "lib").chmod(0o775), r"lib is writable by other users \(mode 0775\)"),
    ],
    ids=[
        "jar",
        "dependency",
        "extra-file",
        "missing-file",
        "no-record",
        "unrecorded-archive",
        "folder",
        "lib",
    ],
)
def test_changed_launcher_is_refused_at_start(
    copied_launcher: Path, tmp_path: Path, change: Callable[[Path], object], refusal: str
) -> None:
    change(copied_launcher)
    server = MongoServer(tmp_path / "mongo")
    with pytest.raises(ServerError, match=refusal):
        server.start(timeout=30)
    assert not server.running() and not server.pid_path.exists()
    assert not server.log_path.exists()  # refused before anything was started


def test_dependency_not_matching_the_lock_is_refused_at_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Maven resolves a file other than the one pinned (here: the lock pins another hash)."""
    sources = tmp_path / "sources"
    shutil.copytree(servers.LOCAL_DIR / "mongo", sources / "mongo", ignore=shutil.ignore_patterns("target"))
    lock = sources / "mongo" / servers.DEPENDENCY_LOCK
    lines = lock.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.rstrip().endswith(".jar") and "  h2-" in line)
    pinned = "0" * 64
    lines[at] = pinned + lines[at][64:]
    lock.write_text("".join(lines))
    monkeypatch.setattr(servers, "LOCAL_DIR", sources)
    monkeypatch.setenv("LITPATH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(
        ServerError, match=rf"h2-[0-9.]+\.jar: sha256 [0-9a-f]{{64}}, the lock says {pinned}"
    ) as error:
        servers.build_jar("mongo")
    assert str(lock) in str(error.value)
    assert not list((tmp_path / "cache" / "jars").glob("mongo-*/litpath-mongo.jar"))


@pytest.mark.parametrize(("folder", "mode"), [("", 0o777), ("", 0o775), ("jars", 0o777), ("jars", 0o757)])
def test_cache_folder_writable_by_others_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, mode: int
) -> None:
    cache = tmp_path / "cache"
    (cache / "jars").mkdir(parents=True)
    (cache / folder).chmod(mode)
    monkeypatch.setenv("LITPATH_CACHE", str(cache))
    monkeypatch.setattr(servers.shutil, "which", lambda _: pytest.fail("Maven must not run"))
    with pytest.raises(
        ServerError, match=rf"{cache / folder} is writable by other users \(mode {mode:04o}\)"
    ):
        servers.build_jar("mongo")


def test_cache_folders_created_for_a_build_are_private_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITPATH_CACHE", str(tmp_path / "new" / "cache"))
    previous = os.umask(0o002)
    try:
        root = servers._prepare_cache()
    finally:
        os.umask(previous)
    for folder in (root.parent, root):
        assert folder.stat().st_mode & 0o022 == 0


def test_checksum_files_are_well_formed() -> None:
    """Every line of both locks is a SHA-256 and a plain file name, once."""
    for name in servers.SERVER_KINDS:
        entries = servers.read_checksums(servers.dependency_lock(name))
        assert len(entries) > 5 and all(file.endswith((".jar", ".pom")) for file in entries)
