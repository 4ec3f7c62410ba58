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

Readers yield parsed rows, or a ``Rejection`` naming file, line and reason for a row
that cannot be read; callers decide whether a rejection stops the load.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.spoke.hetionet import Metaedge, label_of_kind

FORMATS = ("hetionet", "csv")

NODE_CSV_COLUMNS = ["label", "identifier", "name"]
EDGE_CSV_COLUMNS = ["source_label", "source_identifier", "type", "target_label", "target_identifier"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Rejection:
    file: str
    line: int
    reason: str
    label: str | None = None  # node label or relationship type, when known

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


class DumpError(ValueError):
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


def open_text(path: str | Path) -> io.TextIOBase:
    """A text handle on a plain or gzip file (UTF-8, universal newlines kept for csv)."""
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _scalar_ok(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and value is not None


def parse_properties(text: str) -> dict[str, Any]:
    """A JSON object of Neo4j-storable values; ValueError with the reason otherwise."""
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
    if not _NAME.match(value):
        raise ValueError(f"{what} {value!r} is not a plain name (letters, digits, underscore)")


# ---------------------------------------------------------------------------------- Hetionet


def _split_hetionet_id(value: str) -> tuple[str, str]:
    kind, sep, identifier = value.partition("::")
    if not sep or not kind or not identifier:
        raise ValueError(f"id {value!r} is not of the form Kind::identifier")
    return kind, identifier


def _tsv_lines(path: str | Path, header: list[str]) -> Iterator[tuple[int, list[str]]]:
    name = str(path)
    with open_text(path) as handle:
        first = handle.readline().rstrip("\r\n")
        if first.split("\t") != header:
            expected = "\t".join(header)
            raise DumpError(Rejection(name, 1, f"expected header {expected!r}, found {first!r}"))
        for number, raw in enumerate(handle, start=2):
            text = raw.rstrip("\r\n")
            if not text:
                continue
            yield number, text.split("\t")


def read_hetionet_nodes(path: str | Path) -> Iterator[NodeRow | Rejection]:
    name = str(path)
    for number, fields in _tsv_lines(path, ["id", "name", "kind"]):
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
    name = str(path)
    with open_text(path) as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise DumpError(Rejection(name, 1, "empty file; expected a header row")) from None
        header = [column.strip() for column in header]
        allowed = required + ["properties"]
        if header[: len(required)] != required or any(column not in allowed for column in header):
            raise DumpError(
                Rejection(
                    name, 1, f"expected header {','.join(required)}[,properties], found {','.join(header)!r}"
                )
            )
        width = len(header)
        try:
            for fields in reader:
                if not fields or fields == [""]:
                    continue
                if len(fields) != width:
                    yield (
                        reader.line_num,
                        {"__error__": f"expected {width} comma-separated fields, found {len(fields)}"},
                    )
                    continue
                yield reader.line_num, dict(zip(header, fields, strict=True))
        except csv.Error as exc:
            raise DumpError(Rejection(name, reader.line_num, f"unreadable CSV ({exc})")) from None


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
            properties = parse_properties(row.get("properties", ""))
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
