"""Load and validate the workflow configuration against ``schemas/config.schema.yaml``.

The schema is the one definition of the configuration: this module fills its defaults
and turns a violation into one message that names the offending key. A partial config (only
the sections a caller has, e.g. ``{"graph": {...}}``) is completed from the same defaults, so
no stage keeps defaults or checks of its own.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from pipeline.errors import LitpathError

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO_ROOT / "schemas" / "config.schema.yaml"


class ConfigError(LitpathError, ValueError):
    """A configuration that does not match the schema; the message names the key."""


@functools.cache
def _schema() -> dict[str, Any]:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def load_schema() -> dict[str, Any]:
    """The config schema (a copy: callers may change it)."""
    return copy.deepcopy(_schema())


def schema_of(key: str) -> dict[str, Any]:
    """The schema of one dotted key, e.g. ``schema_of("ingest.mention_source")["enum"]``."""
    schema = _schema()
    for part in key.split("."):
        try:
            schema = schema["properties"][part]
        except KeyError:
            raise KeyError(f"the config schema has no key {key!r}") from None
    return copy.deepcopy(schema)


def check_setting(key: str, value: Any, source: str = "config") -> Any:
    """``value`` when the schema accepts it for the dotted ``key``, else ConfigError naming the key
    (for a setting that reaches a stage apart from its config file, e.g. a command-line option)."""
    *sections, name = key.split(".")
    nested: dict[str, Any] = {name: value}
    for section in reversed(sections):
        nested = {section: nested}
    validate_config(nested, source)
    return value


def _fill_defaults(instance: Any, schema: dict[str, Any]) -> None:
    """Insert schema defaults for absent object properties, recursively."""
    if not isinstance(instance, dict):
        return
    for name, subschema in schema.get("properties", {}).items():
        if name not in instance and "default" in subschema:
            instance[name] = copy.deepcopy(subschema["default"])
        if name in instance:
            _fill_defaults(instance[name], subschema)


def validate_config(config: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """Return a validated copy of ``config`` with defaults filled in.

    ``config`` may be partial: absent sections and keys get the schema's defaults.
    Raises ConfigError naming the key path, e.g. ``config.yaml: solver.tile: -1 is less
    than the minimum of 1``.
    """
    schema = _schema()
    filled = copy.deepcopy(config) if config else {}
    _fill_defaults(filled, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for error in errors:
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            lines.append(f"{source}: {where}: {error.message}")
        raise ConfigError("\n".join(lines))
    return filled


def load_config(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return validate_config(raw, source=str(path))
