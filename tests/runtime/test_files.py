"""pipeline.runtime.files: the atomic write of small records and the cap on a physical line's length."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import pytest

from pipeline.runtime import files
from pipeline.runtime.files import LineLengthCap, line_number_at, write_atomically


class TooLong(Exception):
    def __init__(self, offset: int, cap: int) -> None:
        super().__init__(f"line from byte {offset} longer than {cap}")
        self.offset = offset


def read_all(data: bytes, cap: int, chunk: int) -> bytes:
    """``data`` through a LineLengthCap, read ``chunk`` bytes at a time."""
    stream = LineLengthCap(io.BytesIO(data), lambda offset, limit: TooLong(offset, limit), cap)
    out = b""
    while piece := stream.read(chunk):
        out += piece
    return out


def test_write_atomically_replaces_the_whole_file(tmp_path):
    path = tmp_path / "counts.json"
    path.write_text("old\n")
    write_atomically(path, '{"rows": 3}\n')
    assert path.read_text() == '{"rows": 3}\n'
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["counts.json"]  # no temporary file left


def test_write_atomically_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "machine.yaml"
    path.write_text("complete: old\n")

    def disk_full(_fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(path, "complete: new\n" * 1000)
    assert path.read_text() == "complete: old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["machine.yaml"]


def test_a_killed_writer_leaves_the_old_record_whole(tmp_path):
    """A process SIGKILLed in the middle of writing: the record is the old one, not a truncated
    new one (write_text would leave the first bytes of the new text)."""
    path = tmp_path / "plan.json"
    path.write_text('{"old": true}\n')
    script = textwrap.dedent(
        f"""
        import os, signal
        from pipeline.runtime import files
        real_fsync = os.fsync
        def die(fd):  # the new text is in the temporary file, not yet fsynced nor renamed
            os.kill(os.getpid(), signal.SIGKILL)
        files.os.fsync = die
        files.write_atomically({str(path)!r}, '{{"new": true, "pad": "' + 'x' * 100000 + '"}}\\n')
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), capture_output=True)
    assert done.returncode == -9
    assert path.read_text() == '{"old": true}\n'


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 16])
def test_line_at_the_cap_passes_and_one_byte_more_does_not(chunk):
    cap = 10
    good = b"a" * cap + b"\n" + b"b" * 4 + b"\n" + b"c" * cap  # the last line has no line end
    assert read_all(good, cap, chunk) == good
    bad = b"a" * 4 + b"\n" + b"b" * (cap + 1) + b"\n" + b"c\n"
    with pytest.raises(TooLong) as error:
        read_all(bad, cap, chunk)
    assert error.value.offset == 5  # where the long line starts


@pytest.mark.parametrize("chunk", [1, 5, 1 << 16])
def test_a_line_without_end_is_refused_before_it_is_read_whole(chunk):
    cap = 100
    stream = LineLengthCap(io.BytesIO(b"ok\n" + b"x" * 10_000), lambda o, c: TooLong(o, c), cap)
    read = 0
    with pytest.raises(TooLong) as error:
        while piece := stream.read(chunk):
            read += len(piece)
    assert error.value.offset == 3
    assert read <= 3 + cap + chunk  # stopped within a read of the cap, not at the end of the file


def test_a_long_line_in_the_middle_of_one_big_chunk_is_found():
    """A chunk longer than the cap may hold a whole long line between two line feeds."""
    data = b"a\n" + b"b" * 50 + b"\n" + b"c\n"
    with pytest.raises(TooLong) as error:
        read_all(data, 20, len(data))
    assert error.value.offset == 2


def test_the_default_cap_is_read_when_the_stream_opens(monkeypatch):
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 8)
    with pytest.raises(TooLong):
        LineLengthCap(io.BytesIO(b"123456789\n"), lambda o, c: TooLong(o, c)).read()
    assert files.MAX_LINE_BYTES == 8


def test_line_number_at_counts_the_lines_before_an_offset():
    data = b"one\ntwo\nthree\n"
    assert line_number_at(lambda: io.BytesIO(data), 0) == 1
    assert line_number_at(lambda: io.BytesIO(data), 8) == 3

    def unreadable() -> io.BytesIO:
        raise OSError("gone")

    assert line_number_at(unreadable, 8) is None
