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

import yaml

from pipeline.runtime.errors import LitpathError

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "schemas" / "config.schema.yaml"


class ConfigError(LitpathError, ValueError):
    """A configuration that does not match the schema; the message names the key."""


# libyaml's parser where PyYAML has it (its wheels do): the values yaml.safe_load gives, in a
# seventh of the time. A stage's process reads the config schema, its build's config.yaml and
# run_config.yaml: 46 ms of pure-Python parsing against 6 (Intel Xeon), in each of the ~17
# processes of a rerun.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SAFE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, refusing a mapping that holds a key twice: YAML keeps the last value
    without a word, so a second ``pubmed_xml:`` line or ``graph:`` section would silently replace
    the first (every baseline file dropped from a build, a section's keys back to defaults)."""


def _mapping_with_unique_keys(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *defaults``: overriding is its point
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: construct_mapping says so, with its line
            break
        if repeated:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found the key {key!r} a second time", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor("tag:yaml.org,2002:map", _mapping_with_unique_keys)


def read_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, parsed by libyaml where PyYAML has it; a mapping with a key twice
    is refused (yaml.YAMLError naming both lines) instead of keeping the last value."""
    return yaml.load(text, Loader=_Loader)  # a safe loader: plain YAML types only


@functools.cache
def _schema() -> dict[str, Any]:
    return read_yaml(SCHEMA_PATH.read_text())


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


def default_of(key: str) -> Any:
    """The schema's default of one dotted key (``default_of("solver.tile")`` -> 256): the one source
    of each default, which every layer reads instead of keeping a copy."""
    return copy.deepcopy(schema_of(key)["default"])


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


@functools.cache
def _validator_class(jsonschema: Any) -> Any:
    """Draft 2020-12 with "integer" meaning a whole number written as one: JSON Schema takes 8.0
    for an integer, and a ``ranks: 2.0`` or ``ingest_files_per_job: 8.0`` would then pass the
    check and fail deep in a stage (``'float' object cannot be interpreted as an integer``), or
    an ``until_year: 2015.0`` name another build than ``2015``."""
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return jsonschema.validators.extend(base, type_checker=checker)


def validate_config(config: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """Return a validated copy of ``config`` with defaults filled in.

    ``config`` may be partial: absent sections and keys get the schema's defaults.
    Raises ConfigError naming the key path, e.g. ``config.yaml: solver.tile: -1 is less
    than the minimum of 1``.
    """
    # Imported here: every `litpath` process imports this package (the CLI's errors), and
    # jsonschema took 0.12 s of an ingest job's 0.8 s start-up (then one job per input file).
    import jsonschema

    schema = _schema()
    filled = copy.deepcopy(config) if config else {}
    _fill_defaults(filled, schema)
    validator = _validator_class(jsonschema)(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for error in errors:
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            lines.append(f"{source}: {where}: {error.message}")
        raise ConfigError("\n".join(lines))
    return filled


def check_run_settings(config: dict[str, Any], source: str = "config") -> None:
    """The settings of a whole config (validated, defaults filled) that no single key's schema
    can refuse but no run could use: ConfigError naming the keys, before any job starts, instead
    of a stage failing after the ingest and the merge with a message that names its own options."""
    problems = []
    solver = config.get("solver") or {}
    grid, ranks = str(solver.get("grid", "auto")).lower(), solver.get("ranks", 1)
    if "x" in grid:
        rows, cols = (int(part) for part in grid.split("x", 1))
        if rows * cols != ranks:
            problems.append(f"solver.grid: {grid} is a grid of {rows * cols} ranks, but solver.ranks is {ranks}")
    if solver.get("full_graph") == "rows" and not solver.get("row_sources"):
        problems.append("solver.full_graph: rows stores the rows of solver.row_sources, which is empty")
    spoke = config.get("spoke") or {}
    if spoke.get("enabled") and spoke.get("load", True):
        missing = [f"spoke.{key}" for key in ("nodes", "edges") if not spoke.get(key)]
        if missing:
            problems.append(
                f"spoke.load: true loads SPOKE's dump into Neo4j, but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} empty (or set spoke.load: false to use a "
                "SPOKE server as it is)"
            )
    compare = config.get("compare") or {}
    if compare.get("enabled"):
        if not spoke.get("enabled"):
            problems.append("compare.enabled needs spoke.enabled (the comparison uses SPOKE and the mapping)")
        if not compare.get("queries") and not (compare.get("neighbourhood") or {}).get("seed"):
            problems.append(
                "compare.enabled: the comparison needs a query set: compare.queries (a file) "
                "and/or compare.neighbourhood.seed (a SPOKE identifier)"
            )
    if problems:
        raise ConfigError("\n".join(f"{source}: {problem}" for problem in problems))


def expand_home(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with a leading ``~`` expanded in results_dir and every file key
    (:data:`FILE_KEYS`), in place: a path is never taken as a folder named "~" under the working
    directory. The input patterns are expanded where they are matched
    (:func:`pipeline.builds.identity.resolve_inputs`)."""
    import os

    def expanded(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("~"):
            return os.path.expanduser(value)
        return [expanded(v) for v in value] if isinstance(value, list) else value

    if "results_dir" in config:
        config["results_dir"] = expanded(config["results_dir"])
    for key in FILE_KEYS:
        section, name = key.split(".")
        values = config.get(section)
        if isinstance(values, dict) and name in values:
            values[name] = expanded(values[name])
    return config


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A config file's mapping as written (not validated): ConfigError naming the file (and the
    line, for YAML's errors and a key written twice) when it cannot be read as one."""
    path = Path(path)
    try:
        raw = read_yaml(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start:exc.start + 1]!r}); "
                          "save it as UTF-8") from None  # fmt: skip
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return raw


def load_config(path: str | Path) -> dict[str, Any]:
    """A config file validated, with the schema's defaults, its run settings checked
    (:func:`check_run_settings`) and ``~`` expanded (:func:`expand_home`)."""
    config = validate_config(read_config_file(path), source=str(path))
    check_run_settings(config, source=str(path))
    return expand_home(config)


# The bundled sample: its config (what `make run` builds by default) and its files. A config of
# one's own that still names one of these files would mix the synthetic sample into a real build.
SAMPLE_CONFIG = REPO_ROOT / "config" / "config.yaml"
SAMPLE_DIR = REPO_ROOT / "config" / "sample"
# The keys whose values are files (or folders, or glob patterns): every one a build reads.
FILE_KEYS: tuple[str, ...] = (
    "spoke.nodes", "spoke.edges", "spoke.metaedges",
    "mapping.umls_dir", "mapping.do_xrefs", "mapping.gene_info", "mapping.ncit_swissprot",
    "mapping.unichem", "mapping.unichem_structure", "mapping.unichem_reference",
    "mapping.uberon_obo", "mapping.cl_obo",
    "compare.queries", "solver.row_sources",
)  # fmt: skip


def file_settings(config: dict[str, Any], used_only: bool = False) -> list[tuple[str, str]]:
    """``(dotted key, path or pattern)`` of every file a config names: each input pattern
    (``inputs.<kind>``) and each of :data:`FILE_KEYS` that is set, in that order. ``used_only``:
    only those a run of it reads (SPOKE's dump when spoke.load, the mapping sources when
    spoke.enabled, the query set when compare.enabled)."""
    spoke = config.get("spoke") or {}
    used = {
        "spoke": bool(spoke.get("enabled")) and spoke.get("load", True),
        "mapping": bool(spoke.get("enabled")),
        "compare": bool(spoke.get("enabled")) and bool((config.get("compare") or {}).get("enabled")),
        "solver": True,
    }
    found: list[tuple[str, str]] = []
    for kind, patterns in (config.get("inputs") or {}).items():
        found += [(f"inputs.{kind}", str(p)) for p in patterns or []]
    for key in FILE_KEYS:
        section, name = key.split(".")
        if used_only and not used[section]:
            continue
        value = (config.get(section) or {}).get(name)
        values = value if isinstance(value, list) else [value]
        found += [(key, str(v)) for v in values if v]
    return found


def _under(pattern: str, folder: Path, base: Path) -> bool:
    """Whether a path or glob pattern (relative to ``base``) points into ``folder``: its part
    before the first wildcard, resolved (links and ``..`` too)."""
    import glob
    import os

    fixed = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
    if glob.has_magic(pattern) and not fixed.endswith(os.sep):
        fixed = os.path.dirname(fixed)
    where = (base / os.path.expanduser(fixed or ".")).resolve()
    return where == folder or folder in where.parents


def is_bundled_sample(config_files: list[Path | str]) -> bool:
    """Whether a run's config is the bundled sample's: no config file given (the workflow's own
    default), or only ``config/config.yaml`` itself."""
    return all(Path(f).resolve() == SAMPLE_CONFIG for f in config_files)


def refuse_sample_files(config: dict[str, Any], config_files: list[Path | str], base: Path | None = None) -> None:
    """Stop a run whose config is one of the user's own (``config_files``, given on the command
    line) but still names a file of the bundled sample that the run reads: ConfigError naming
    every such key.

    A config of one's own replaces the sample's (keys left out take the schema's defaults, empty
    for every file), so a sample file can only come from a copy of config/config.yaml whose
    lines were not all changed, exactly the mix this refuses.
    """
    if is_bundled_sample(config_files):
        return
    base = Path.cwd() if base is None else base
    sample = SAMPLE_DIR.resolve()
    mixed = [(key, value) for key, value in file_settings(config, used_only=True) if _under(value, sample, base)]
    if mixed:
        names = ", ".join(str(f) for f in config_files)
        listing = "\n".join(f"  {key}: {value}" for key, value in mixed)
        raise ConfigError(
            f"{names}: these settings still name files of the bundled sample ({SAMPLE_DIR}), which would "
            f"enter the build as if they were your data:\n{listing}\n"
            "Point each at your own file, or remove it from your config (a setting left out takes its "
            "default from schemas/config.schema.yaml: no file, and that part of the build is left out)."
        )
