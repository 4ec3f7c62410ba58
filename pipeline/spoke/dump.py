"""Readers of SPOKE-style dump files: the Hetionet release layout and litpath's simple CSV layout.

Hetionet layout (``hetnet/tsv/`` of a Hetionet release; ``.gz`` accepted):

* nodes TSV with header ``id  name  kind``; ids are ``Kind::identifier``
  (``Gene::3569``, ``Side Effect::C0003469``);
* edges ``.sif``/TSV with header ``source  metaedge  target``; the metaedge is an
  abbreviation (``DaG``) resolved through the metagraph (see ``pipeline.spoke.hetionet``).

CSV layout (comma-separated, RFC 4180 quoting, header row required):

* ``nodes.csv``: ``label,identifier,name[,properties]``;
* ``edges.csv``: ``source_label,source_identifier,type,target_label,target_identifier[,properties]``;

``properties`` is an optional JSON object of scalar or list-of-scalar values (nulls dropped).
A node's properties may not hold ``identifier`` or ``name``: the loader merges the node on its
identifier and sets its name from those columns, so such a key would rename the node afterwards
(or break the uniqueness constraint half-way through a load); the row is rejected instead.

Readers yield parsed rows, or a ``Rejection`` naming file, line and reason for a row
that cannot be read (bytes that are not UTF-8 included); callers decide whether a rejection
stops the load. Only a file whose header is not that of its layout stops a reader.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.runtime.errors import LitpathError
from pipeline.runtime.files import LineLengthCap, line_number_at
from pipeline.spoke.hetionet import Metaedge, label_of_kind

FORMATS = ("hetionet", "csv")

NODE_CSV_COLUMNS = ["label", "identifier", "name"]
EDGE_CSV_COLUMNS = ["source_label", "source_identifier", "type", "target_label", "target_identifier"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Node properties the row's own columns set (see the module docstring).
RESERVED_NODE_PROPERTIES = ("identifier", "name")


@dataclass(frozen=True)
class Rejection:
    file: str
    line: int
    reason: str
    label: str | None = None  # node label or relationship type, when known

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


class DumpError(LitpathError, ValueError):
    """A dump row that stops the load; the message names file and line."""

    def __init__(self, rejection: Rejection, more: int = 0):
        self.rejection = rejection
        self.more = more
        suffix = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
        super().__init__(f"{rejection}{suffix}")


@dataclass
class NodeRow:
    label: str
    identifier: str
    name: str | None
    line: int
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class EdgeRow:
    source_label: str
    source_identifier: str
    rel_type: str
    target_label: str
    target_identifier: str
    line: int
    properties: dict[str, Any] = field(default_factory=dict)


def _open_binary(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115 - the caller closes it


def open_text(path: str | Path, errors: str = "strict") -> io.TextIOBase:
    """A text handle on a plain or gzip file (UTF-8, universal newlines kept for csv).

    ``errors="surrogateescape"`` keeps bytes that are not UTF-8 as lone surrogates, so that a
    reader can reject the line that holds them (see :func:`undecodable`) instead of failing
    the whole file. A physical line longer than :data:`pipeline.runtime.files.MAX_LINE_BYTES` stops
    the file with a DumpError naming its line and byte, instead of being buffered whole."""
    path = Path(path)

    def too_long(offset: int, max_line_bytes: int) -> DumpError:
        line = line_number_at(lambda: _open_binary(path), offset)
        start = f"byte {offset:,}" + (" of the decompressed data" if path.suffix == ".gz" else "")
        reason = (
            f"the line from {start} runs past {max_line_bytes:,} bytes without a line end, the most a "
            "line may hold (pipeline.runtime.files.MAX_LINE_BYTES); the file is damaged or not a dump"
        )
        return DumpError(Rejection(str(path), line or 0, reason))

    capped = io.BufferedReader(LineLengthCap(_open_binary(path), too_long), buffer_size=1 << 20)
    return io.TextIOWrapper(capped, encoding="utf-8", errors=errors, newline="")


_SURROGATE = re.compile("[\udc80-\udcff]")


def undecodable(*texts: str) -> bool:
    """Whether text read with ``errors="surrogateescape"`` held bytes that are not UTF-8."""
    return any(not text.isascii() and _SURROGATE.search(text) for text in texts)  # isascii: O(1)


def _scalar_ok(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and value is not None


def parse_properties(text: str, reserved: Iterable[str] = ()) -> dict[str, Any]:
    """A JSON object of Neo4j-storable values without any ``reserved`` key; ValueError with
    the reason otherwise."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"properties are not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError("properties must be a JSON object")
    clean: dict[str, Any] = {}
    for key, item in value.items():
        if key in reserved:
            raise ValueError(f"property {key!r} is reserved: the {key} column sets it")
        if item is None:
            continue
        if isinstance(item, list):
            kinds = {type(x) for x in item}
            if not all(_scalar_ok(x) for x in item) or len(kinds) > 1:
                raise ValueError(f"property {key!r}: lists must hold values of one scalar type")
        elif not _scalar_ok(item):
            raise ValueError(f"property {key!r}: nested objects cannot be stored in Neo4j")
        clean[key] = item
    return clean


def _check_name(value: str, what: str) -> None:
    if not _NAME.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a plain name (letters, digits, underscore)")


# ---------------------------------------------------------------------------------- Hetionet


def _split_hetionet_id(value: str) -> tuple[str, str]:
    kind, sep, identifier = value.partition("::")
    if not sep or not kind or not identifier:
        raise ValueError(f"id {value!r} is not of the form Kind::identifier")
    return kind, identifier


NOT_UTF8 = "bytes that are not valid UTF-8"


def _tsv_lines(path: str | Path, header: list[str]) -> Iterator[tuple[int, list[str] | None]]:
    """(line, fields) of each non-empty line after the header; fields None for a line that
    holds bytes that are not UTF-8."""
    name = str(path)
    with open_text(path, errors="surrogateescape") as handle:
        first = handle.readline().rstrip("\r\n")
        if first.split("\t") != header:
            expected = "\t".join(header)
            found = first.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise DumpError(Rejection(name, 1, f"expected header {expected!r}, found {found!r}"))
        for number, raw in enumerate(handle, start=2):
            text = raw.rstrip("\r\n")
            if not text:
                continue
            yield number, None if undecodable(text) else text.split("\t")


def read_hetionet_nodes(path: str | Path) -> Iterator[NodeRow | Rejection]:
    name = str(path)
    for number, fields in _tsv_lines(path, ["id", "name", "kind"]):
        if fields is None:
            yield Rejection(name, number, NOT_UTF8)
            continue
        if len(fields) != 3:
            yield Rejection(
                name, number, f"expected 3 tab-separated fields (id, name, kind), found {len(fields)}"
            )
            continue
        node_id, node_name, kind = fields
        try:
            id_kind, identifier = _split_hetionet_id(node_id)
            if id_kind != kind:
                raise ValueError(f"id kind {id_kind!r} differs from kind column {kind!r}")
            label = label_of_kind(kind)
            _check_name(label, "kind")
        except ValueError as exc:
            yield Rejection(name, number, str(exc))
            continue
        yield NodeRow(label, identifier, node_name or None, number)


def read_hetionet_edges(path: str | Path, metaedges: dict[str, Metaedge]) -> Iterator[EdgeRow | Rejection]:
    name = str(path)
    for number, fields in _tsv_lines(path, ["source", "metaedge", "target"]):
        if fields is None:
            yield Rejection(name, number, NOT_UTF8)
            continue
        if len(fields) != 3:
            yield Rejection(
                name,
                number,
                f"expected 3 tab-separated fields (source, metaedge, target), found {len(fields)}",
            )
            continue
        source, abbreviation, target = fields
        metaedge = metaedges.get(abbreviation)
        if metaedge is None:
            yield Rejection(name, number, f"unknown metaedge {abbreviation!r}")
            continue
        try:
            source_kind, source_identifier = _split_hetionet_id(source)
            target_kind, target_identifier = _split_hetionet_id(target)
        except ValueError as exc:
            yield Rejection(name, number, str(exc), metaedge.rel_type)
            continue
        if (source_kind, target_kind) != (metaedge.source_kind, metaedge.target_kind):
            yield Rejection(
                name, number,
                f"metaedge {abbreviation} joins {metaedge.source_kind} to {metaedge.target_kind}, "
                f"not {source_kind} to {target_kind}",
                metaedge.rel_type,
            )  # fmt: skip
            continue
        yield EdgeRow(
            metaedge.source_label, source_identifier, metaedge.rel_type,
            metaedge.target_label, target_identifier, number,
        )  # fmt: skip


# ---------------------------------------------------------------------------------------- CSV


def _csv_rows(path: str | Path, required: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row by column) of each record after the header; a row that cannot be used comes
    as ``{"__error__": reason}``."""
    name = str(path)
    with open_text(path, errors="surrogateescape") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise DumpError(Rejection(name, 1, "empty file; expected a header row")) from None
        except csv.Error as exc:
            raise DumpError(Rejection(name, 1, f"unreadable CSV header ({exc})")) from None
        header = [
            column.strip().encode("utf-8", "surrogateescape").decode("utf-8", "replace") for column in header
        ]
        allowed = required + ["properties"]
        if header[: len(required)] != required or any(column not in allowed for column in header):
            raise DumpError(
                Rejection(
                    name, 1, f"expected header {','.join(required)}[,properties], found {','.join(header)!r}"
                )
            )
        width = len(header)
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:  # a field beyond the csv module's size limit; reading goes on
                yield reader.line_num, {"__error__": f"unreadable CSV ({exc})"}
                continue
            if not fields or fields == [""]:
                continue
            if len(fields) != width:
                yield (
                    reader.line_num,
                    {"__error__": f"expected {width} comma-separated fields, found {len(fields)}"},
                )
                continue
            if undecodable(*fields):
                yield reader.line_num, {"__error__": NOT_UTF8}
                continue
            yield reader.line_num, dict(zip(header, fields, strict=True))


def read_csv_nodes(path: str | Path) -> Iterator[NodeRow | Rejection]:
    name = str(path)
    for number, row in _csv_rows(path, NODE_CSV_COLUMNS):
        if "__error__" in row:
            yield Rejection(name, number, row["__error__"])
            continue
        label, identifier = row["label"].strip(), row["identifier"].strip()
        try:
            _check_name(label, "label")
            if not identifier:
                raise ValueError("empty identifier")
            properties = parse_properties(row.get("properties", ""), RESERVED_NODE_PROPERTIES)
        except ValueError as exc:
            yield Rejection(name, number, str(exc), label or None)
            continue
        yield NodeRow(label, identifier, row["name"] or None, number, properties)


def read_csv_edges(path: str | Path) -> Iterator[EdgeRow | Rejection]:
    name = str(path)
    for number, row in _csv_rows(path, EDGE_CSV_COLUMNS):
        if "__error__" in row:
            yield Rejection(name, number, row["__error__"])
            continue
        rel_type = row["type"].strip()
        try:
            _check_name(rel_type, "relationship type")
            source_label, target_label = row["source_label"].strip(), row["target_label"].strip()
            _check_name(source_label, "source label")
            _check_name(target_label, "target label")
            source_identifier = row["source_identifier"].strip()
            target_identifier = row["target_identifier"].strip()
            if not source_identifier or not target_identifier:
                raise ValueError("empty source or target identifier")
            properties = parse_properties(row.get("properties", ""))
        except ValueError as exc:
            yield Rejection(name, number, str(exc), rel_type or None)
            continue
        yield EdgeRow(
            source_label, source_identifier, rel_type, target_label, target_identifier, number, properties
        )


def read_nodes(path: str | Path, fmt: str) -> Iterator[NodeRow | Rejection]:
    if fmt == "hetionet":
        return read_hetionet_nodes(path)
    if fmt == "csv":
        return read_csv_nodes(path)
    raise ValueError(f"unknown dump format {fmt!r}; expected one of {', '.join(FORMATS)}")


def read_edges(
    path: str | Path, fmt: str, metaedges: dict[str, Metaedge] | None = None
) -> Iterator[EdgeRow | Rejection]:
    if fmt == "hetionet":
        from pipeline.spoke.hetionet import hetionet_v1_metaedges

        return read_hetionet_edges(path, metaedges if metaedges is not None else hetionet_v1_metaedges())
    if fmt == "csv":
        return read_csv_edges(path)
    raise ValueError(f"unknown dump format {fmt!r}; expected one of {', '.join(FORMATS)}")
