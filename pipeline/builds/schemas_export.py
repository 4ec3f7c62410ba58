"""Publish the project's contracts as JSON under ``schemas/`` for readers outside Python.

``schemas/tables/<table>.json`` describe the Parquet tables of :mod:`pipeline.builds.tables` (JSON
Schema of one row). Other distributions publish theirs through the entry-point group
``litpath.schemas``: each entry is a function returning ``{name under schemas/: text}``; the
path service's ``openapi.json`` comes that way (``services/api/openapi.py``).
``litpath schemas`` rewrites them all; a test fails when they fall out of step with the code.
"""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.builds.tables import ALL_TABLES
from pipeline.config import REPO_ROOT
from pipeline.runtime.files import write_atomically

SCHEMAS_DIR = REPO_ROOT / "schemas"
DOCUMENTS_GROUP = "litpath.schemas"


def _json_type(arrow_type: pa.DataType) -> dict[str, Any]:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return {"type": "string"}
    if pa.types.is_integer(arrow_type):
        return {"type": "integer", "x-arrow-type": str(arrow_type)}
    if pa.types.is_floating(arrow_type):
        return {"type": "number", "x-arrow-type": str(arrow_type)}
    if pa.types.is_boolean(arrow_type):
        return {"type": "boolean"}
    if pa.types.is_list(arrow_type):
        return {"type": "array", "items": _json_type(arrow_type.value_type)}
    raise TypeError(f"no JSON Schema mapping for Arrow type {arrow_type}")


def table_json_schema(name: str, schema: pa.Schema) -> dict[str, Any]:
    """JSON Schema of one row of table ``name``; nullable columns also accept null."""
    properties = {}
    for field in schema:
        column = _json_type(field.type)
        if field.nullable:
            column = {"anyOf": [column, {"type": "null"}]}
        properties[field.name] = column
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"litpath {name} table (one row)",
        "description": f"Generated from pipeline/builds/tables.py ({name.upper()}); do not edit by hand.",
        "type": "object",
        "properties": properties,
        "required": [f.name for f in schema if not f.nullable],
        "additionalProperties": False,
    }


def rendered_documents() -> dict[Path, str]:
    """Every published document, path -> text, as the code defines them now. A plugin that
    fails to load fails this too: a document left out would go stale unnoticed."""
    documents = {
        SCHEMAS_DIR / "tables" / f"{name}.json": json.dumps(table_json_schema(name, schema), indent=2) + "\n"
        for name, schema in ALL_TABLES.items()
    }
    for entry in sorted(entry_points(group=DOCUMENTS_GROUP), key=lambda e: e.name):
        for name, text in entry.load()().items():
            path = SCHEMAS_DIR / name
            if path in documents:
                raise ValueError(f"{entry.value} publishes {name}, which another document already is")
            documents[path] = text
    return documents


def write_documents() -> list[Path]:
    written = []
    for path, text in rendered_documents().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            write_atomically(path, text)
            written.append(path)
    return written
