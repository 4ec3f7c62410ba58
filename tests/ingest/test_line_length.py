"""A physical line longer than pipeline.runtime.files.MAX_LINE_BYTES stops a line-based reader with an
IngestError naming the file, the line and the byte where it starts, plain or gzip, instead of
being buffered whole (a dump without line ends would exhaust memory). The cap is patched small
here; the lines of the real fixtures stay under it and read as before."""

from __future__ import annotations

import gzip

import pytest
from support.data import DATA

from pipeline.ingest.base import IngestError
from pipeline.ingest.run import ingest_file
from pipeline.runtime import files

CAP = 4096

READERS = [
    pytest.param("semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv", {}, id="predication-blocks"),
    pytest.param(
        "semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv", {"block_path": False},
        id="predication-records",
    ),
    pytest.param("semmeddb_sentence", DATA / "semmeddb" / "SENTENCE.csv", {}, id="sentence"),
    pytest.param("cord19_metadata", DATA / "cord19" / "metadata.csv", {}, id="cord19"),
]  # fmt: skip


def with_long_line(fixture, tmp_path, compress: bool, line_end: bool):
    """The fixture with a line of CAP + 1 bytes after its third line; (path, the long line's
    byte offset in the uncompressed text)."""
    lines = fixture.read_bytes().splitlines(keepends=True)
    head = b"".join(lines[:3])
    data = head + b"x" * (CAP + 1) + (b"\n" + b"".join(lines[3:]) if line_end else b"")
    path = tmp_path / (fixture.name + (".gz" if compress else ""))
    path.write_bytes(gzip.compress(data) if compress else data)
    return path, len(head)


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("line_end", [True, False], ids=["then-more-lines", "to-the-end"])
@pytest.mark.parametrize(("kind", "fixture", "options"), READERS)
def test_a_line_past_the_cap_stops_the_file(tmp_path, monkeypatch, kind, fixture, options, compress, line_end):
    monkeypatch.setattr(files, "MAX_LINE_BYTES", CAP)
    path, offset = with_long_line(fixture, tmp_path, compress, line_end)
    with pytest.raises(IngestError) as error:
        ingest_file(kind, path, tmp_path / "out", **options)
    message = str(error.value)
    data = " of the decompressed data" if compress else ""
    assert message.startswith(f"{path}: line 4 (from byte {offset:,}{data}) runs past {CAP:,} bytes")
    assert "MAX_LINE_BYTES" in message
    assert not (tmp_path / "out" / "counts.json").exists()


@pytest.mark.parametrize(("kind", "fixture", "options"), READERS)
def test_lines_up_to_the_cap_read_as_before(tmp_path, monkeypatch, kind, fixture, options):
    longest = max(len(line) for line in fixture.read_bytes().splitlines())
    reference = ingest_file(kind, fixture, tmp_path / "reference", **options)
    monkeypatch.setattr(files, "MAX_LINE_BYTES", longest)  # exactly the longest line: still fine
    capped = ingest_file(kind, fixture, tmp_path / "capped", **options)
    assert capped.to_dict() | {"seconds": 0} == reference.to_dict() | {"seconds": 0}
