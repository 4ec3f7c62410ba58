"""Bad-input fuzzing of the SPOKE dump readers (``pipeline.spoke.dump``): Hetionet TSV and CSV.

Files of real-format lines (tests/data/spoke), mutated (tests/support/fuzzing.py). Whatever the input,
a reader yields exactly one parsed row or one Rejection (file, line, reason) per data record,
parsed rows hold clean text, plain label and type names, and node properties that cannot
overwrite the node's identifier or name; only a file whose header is not that of its layout
stops it, with a DumpError naming the file and line 1.
"""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.data import SPOKE
from support.fuzzing import FUZZ, joined, mutated_line, mutated_lines, seed_lines

from pipeline.spoke.dump import (
    RESERVED_NODE_PROPERTIES,
    DumpError,
    EdgeRow,
    NodeRow,
    Rejection,
    read_edges,
    read_nodes,
)

pytestmark = pytest.mark.fuzz  # many generated inputs: the full tier only (make test)

NAME_TOKENS = (b"::", b"Gene::", b"Side Effect", b"GiG", b"DaG", b"Bad Label")
JSON_TOKENS = (
    b'"{""identifier"": ""X""}"',
    b'"{""name"": 1}"',
    b'"{""a"": [1, ""b""]}"',
    b'"{""a"": {}}"',
    b'"[1]"',
)


@st.composite
def with_header(draw, fixture: Path, delimiter: bytes, tokens: tuple[bytes, ...]) -> tuple[bytes, bool]:
    data = fixture.read_bytes()
    header = original = data.split(b"\n", 1)[0].rstrip(b"\r")
    if draw(st.integers(0, 9)) == 0:
        header = draw(mutated_line(header, delimiter, tokens))
    body = draw(joined(mutated_lines(seed_lines(data, skip=1), delimiter, tokens, max_lines=10)))
    return header + b"\n" + body, header != original


def items_of(fmt: str, kind: str, data: bytes, header_changed: bool) -> tuple[Path, list, int] | None:
    """(path, items, data records) of a reader run on ``data``; None when it refused the file."""
    with tempfile.TemporaryDirectory(prefix="litpath-fuzz-") as work:
        path = Path(work) / f"{kind}.{'csv' if fmt == 'csv' else 'tsv'}"
        path.write_bytes(data)
        try:
            items = list(read_nodes(path, fmt) if kind == "nodes" else read_edges(path, fmt))
        except DumpError as exc:
            assert header_changed, f"a file with an intact header was refused: {exc}"
            assert exc.rejection.file == str(path) and exc.rejection.line == 1, exc
            return None
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", newline="")
    if fmt == "csv":
        reader = csv.reader(text)
        records = 0
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error:
                fields = ["unreadable"]
            records += bool(fields) and fields != [""]
        records -= 1  # the header
    else:
        records = sum(1 for line in list(text)[1:] if line.rstrip("\r\n"))
    return path, items, records


def check_items(path: Path, items: list, records: int) -> None:
    assert len(items) == records, "a data record was neither read nor rejected"
    lines = [item.line for item in items]
    assert lines == sorted(lines) and all(line >= 2 for line in lines), lines
    for item in items:
        if isinstance(item, Rejection):
            assert item.file == str(path) and item.reason, item
            continue
        assert isinstance(item, NodeRow | EdgeRow)
        texts = [value for value in vars(item).values() if isinstance(value, str)]
        texts += [str(key) for key in item.properties] + [str(v) for v in item.properties.values()]
        for value in texts:
            value.encode("utf-8")  # no byte that was not UTF-8 gets through
        if isinstance(item, NodeRow):
            assert item.label.isidentifier() and item.identifier, item
            assert not set(item.properties) & set(RESERVED_NODE_PROPERTIES), item
        else:
            assert (
                item.rel_type.isidentifier()
                and item.source_label.isidentifier()
                and item.target_label.isidentifier()
            )


@FUZZ
@given(file=with_header(SPOKE / "nodes.tsv", b"\t", NAME_TOKENS))
def test_hetionet_nodes_survive_mutated_lines(file):
    found = items_of("hetionet", "nodes", *file)
    if found:
        check_items(*found)


@FUZZ
@given(file=with_header(SPOKE / "edges.sif", b"\t", NAME_TOKENS))
def test_hetionet_edges_survive_mutated_lines(file):
    found = items_of("hetionet", "edges", *file)
    if found:
        check_items(*found)


@FUZZ
@given(file=with_header(SPOKE / "mapping_nodes.csv", b",", NAME_TOKENS + JSON_TOKENS))
def test_csv_nodes_survive_mutated_lines(file):
    found = items_of("csv", "nodes", *file)
    if found:
        check_items(*found)
