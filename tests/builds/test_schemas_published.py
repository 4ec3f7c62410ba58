"""The JSON documents under schemas/ are what the code defines (regenerate: `litpath schemas`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest

from pipeline.builds.schemas_export import SCHEMAS_DIR, rendered_documents, table_json_schema
from pipeline.builds.tables import ALL_TABLES, DOCUMENTS

BIN = Path(sys.executable).parent


def test_published_schemas_are_current() -> None:
    documents = rendered_documents()
    # The table schemas, and the OpenAPI document that services contributes as a plugin.
    assert {path.relative_to(SCHEMAS_DIR).as_posix() for path in documents} == {
        *(f"tables/{name}.json" for name in ALL_TABLES),
        "openapi.json",
    }
    stale = [str(path) for path, text in documents.items() if not path.exists() or path.read_text() != text]
    assert not stale, f"out of date, run `litpath schemas`: {stale}"


def test_the_command_that_regenerates_them_runs() -> None:
    """`litpath schemas`, as the message above says, in a process of its own (where litpath
    leaves pandas out of a command not known to use it); the documents being current, it writes
    the same bytes."""
    before = {path: path.read_bytes() for path in rendered_documents()}
    done = subprocess.run([str(BIN / "litpath"), "schemas"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "schemas are up to date"
    assert {path: path.read_bytes() for path in before} == before


def test_table_schema_accepts_a_real_row_and_refuses_a_wrong_one() -> None:
    schema = table_json_schema("documents", DOCUMENTS)
    row = pa.Table.from_pylist(
        [
            {
                "doc_id": "PMID:1",
                "pmid": 1,
                "doi": None,
                "cord_uid": None,
                "title": "t",
                "abstract": None,
                "year": 2020,
                "source": "pubmed",
                "mesh": ["D000001"],
                "source_file": "f.xml",
            }
        ],
        schema=DOCUMENTS,
    ).to_pylist()[0]
    jsonschema.validate(row, schema)
    bad = dict(row, year="2020")
    with pytest.raises(jsonschema.ValidationError) as refused:
        jsonschema.validate(bad, schema)
    assert list(refused.value.absolute_path) == ["year"], refused.value
    json.dumps(schema)
