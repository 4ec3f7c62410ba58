"""The ingest readers' registry: one place that lists the input kinds, in step with the config
schema, and every kind's tables known to the ingest."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pipeline.ingest import registry
from pipeline.ingest.base import SCHEMAS, Reader
from pipeline.ingest.registry import KINDS, READERS, reader_for

CONFIG_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


def test_kinds_are_the_config_schema_inputs():
    inputs = yaml.safe_load(CONFIG_SCHEMA.read_text())["properties"]["inputs"]["properties"]
    # Same kinds in the same order: the schema lists them as the readers declare them.
    assert list(inputs) == list(KINDS)


def test_every_declared_reader_is_registered_once():
    declared = [reader for module in registry.SOURCES for reader in module.READERS]
    assert [reader.kind for reader in declared] == list(KINDS)
    assert all(READERS[reader.kind] is reader for reader in declared)


@pytest.mark.parametrize("kind", KINDS)
def test_reader_produces_known_tables(kind):
    reader = reader_for(kind)
    assert isinstance(reader, Reader) and reader.kind == kind and callable(reader.read)
    assert reader.produces and set(reader.produces) <= set(SCHEMAS)
    assert "quarantine" not in reader.produces  # every kind has one; IngestRun adds it


def test_a_kind_declared_twice_is_refused():
    twice = SimpleNamespace(__name__="twice", READERS=(READERS["cord19_metadata"],) * 2)
    with pytest.raises(RuntimeError, match="declared twice"):
        registry._collect((twice,))


def test_unknown_kind_names_the_known_ones():
    with pytest.raises(
        ValueError, match="unknown ingest kind 'nope'; expected one of semmeddb_predication, "
    ):
        reader_for("nope")
