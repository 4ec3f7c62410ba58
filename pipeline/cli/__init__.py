"""The `litpath` command line: one tool whose sub-commands the workflow rules call.

The root group lists its commands by section (run stages, planning, service, plumbing),
configures logging once (``-v``/``-q``), and hosts plugins: another distribution adds commands
through the entry-point group ``litpath.commands`` (declared in its pyproject.toml). That is how
``services`` contributes ``litpath serve`` without ``pipeline`` ever importing ``services``.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from importlib.metadata import EntryPoint, entry_points

import click

from pipeline import __version__
from pipeline.config import ConfigError
from pipeline.runtime.errors import LitpathError

COMMANDS_GROUP = "litpath.commands"

# How `litpath --help` groups the commands, each section in the order a user meets them.
# A plugin command not named here is listed under "Other commands".
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Run stages (what the workflow's rules call, in order)",
        (
            "ingest",
            "write-build-config",
            "merge",
            "build-graph",
            "solve",
            "bucket-records",
            "load-mongo",
            "load-spoke",
            "build-mapping",
            "query-set",
            "compare",
            "finish-build",
        ),
    ),
    ("Planning", ("plan", "plan-calibrate", "plan-check", "check-cluster")),
    ("Service", ("serve",)),
    ("Validation and exports", ("validate-slice", "export")),
    ("Plumbing", ("schemas", "synth", "describe", "builds", "mpi-launcher")),
)

# Loggers that -v/-q govern: the packages' own (logging.getLogger(__name__)) and the service's
# named ones (litpath.api, litpath.evidence). Other libraries stay at warnings unless -vv.
OWN_LOGGERS = ("pipeline", "services", "litpath")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# -v/-q as given to the root group; main() prints a domain error's traceback only when > 0.
_verbosity = 0


class _CurrentStderr(logging.StreamHandler):
    """A handler that writes to ``sys.stderr`` as it is when a record is emitted, not as it was
    when logging was configured: click's test runner swaps stderr for each invocation."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure_logging(verbosity: int) -> None:
    """One stderr handler on the root logger. ``verbosity`` -1 (``-q``): warnings and errors;
    0: litpath's info; 1 (``-v``): litpath's debug; 2 (``-vv``): every library's debug.
    Progress lines (:mod:`pipeline.runtime.progress`) are not log records and always print."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _CurrentStderr)]:
        root.removeHandler(handler)
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter(LOG_FORMAT, "%Y-%m-%d %H:%M:%S"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
    level = {-1: logging.WARNING, 0: logging.INFO}.get(verbosity, logging.DEBUG)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(level)


# Allocator settings of a command's process, set just before its module (and so numpy and
# pyarrow, which read them once, when they load) is imported; a value the user set wins.
# Both libraries ask the kernel for transparent huge pages for large arrays. On the virtual
# machines measured here (AMD EPYC, 2 cores, 24 GiB) the first touch of a huge page costs
# about 2.3 s per GiB against 0.4 s for small pages, and its cost varies with the host's
# state. The merge and the graph build allocate and free many arrays of tens of millions of
# rows: on small pages the merge went 7.9 -> 6.1 s at 10M predications (medians of 3) and
# 42.5 -> 35.7 s at 30M; the in-memory graph build at 10M took 13.7-15.7 s against 12.3-18.0 s
# on huge pages (medians 15.4 and 17.9 of 4). The partitioned graph build at 30M was slower on
# small pages (98.8 and 102.1 s against 81.8 and 94.9 s): a trade for a steadier build, noted
# in bench/results/ingest_graph.md. The groupings of the MongoDB records too (Intel Xeon, 2 cores,
# alternate runs on one 10M build): the first build's papers 35.3 and 36.5 s against 43.4 and
# 43.9 s on huge pages, of which 9.5-10.6 s of system time against 18.4-18.9; its evidence 25.7
# and 26.0 s against 29.5 and 29.7; an update rerun's evidence 6.9-7.0 s against 7.4-8.5 (four
# each). The ingest was within 3 % either way (one PREDICATION file, eight PubMed files) and
# keeps the default.
SMALL_PAGES = {"NUMPY_MADVISE_HUGEPAGE": "0", "MIMALLOC_ALLOW_THP": "0"}
COMMAND_ENVIRONMENT: dict[str, dict[str, str]] = {
    "merge": SMALL_PAGES, "build-graph": SMALL_PAGES, "bucket-records": SMALL_PAGES,
}  # fmt: skip
# The commands whose process keeps the memory it frees (pipeline.runtime.resources.
# keep_freed_memory): the two that allocate and free the largest arrays step after step. The graph
# build always (at 30M calibrated predications the first build's peaked at 6.4 GB keeping it,
# against 6.2 GB in the run before the setting); the merge only once it works on the delta
# (KEEPS_FREED_MEMORY_ON_THE_DELTA; pipeline.runtime.resources.keep_freed_memory_on_the_delta
# says why not a first build's). Not the groupings: the 10M first
# build's papers grouping peaked at 5.3 GB keeping it against 4.6 GB not (2 s faster).
KEEPS_FREED_MEMORY = frozenset({"build-graph"})
KEEPS_FREED_MEMORY_ON_THE_DELTA = frozenset({"merge"})

# The commands whose process uses pandas: the mapping's (its coverage tables), and `schemas`,
# whose OpenAPI document comes from the path service, whose concept search is a pandas Series
# (services/api/state.py; without it here `litpath schemas` failed at that import). The others'
# processes tell pyarrow there is none, so that it does not import it: pyarrow.dataset imports it
# when it loads, and a first pa.array of a Python list only to ask whether the list is a pandas
# object (0.2-0.4 s here). The workflow starts a process per rule: the store's commands load in
# 0.36 s against 0.60 (AMD EPYC), for each of the ~17 jobs of a rerun (a citation rerun's jobs
# total ~37 s on its two cores), and one `litpath ingest` per few input files (41 at 30M
# predications, resources.ingest_files_per_job). Only in litpath's own process (main()), never in
# a caller's.
USES_PANDAS = frozenset({"build-mapping", "schemas"})
_own_process = False  # set by main(): this process is the `litpath` command's alone


class _PandasLeftOut:
    """An import finder that answers ``import pandas`` with ModuleNotFoundError. (A None in
    sys.modules would not do: pyarrow's compiled import takes it as the module.)"""

    @staticmethod
    def find_spec(name: str, path=None, target=None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (left out of this litpath process)", name=name)
        return None

# Where each sub-command that lives next to its stage's code is defined ("module:attribute", the
# shape of an entry point). A command's module is imported only when the command is used (or
# `--help` lists them all): each workflow rule starts a `litpath` process, and importing every
# stage's dependencies (Neo4j's driver, pandas, ...) for every one of them cost ~0.7 s each.
AREA_COMMANDS: dict[str, str] = {
    "ingest": "pipeline.ingest.commands:ingest",
    "write-build-config": "pipeline.builds.record:write_build_config_command",
    "finish-build": "pipeline.builds.commands:finish_build",
    "solve": "pipeline.solve.commands:solve",
    "describe": "pipeline.query.describe:describe",
    "schemas": "pipeline.builds.commands:schemas",
    "merge": "pipeline.merge.commands:merge",
    "build-graph": "pipeline.graph.commands:build_graph_command",
    "bucket-records": "pipeline.store.commands:bucket_records_command",
    "load-mongo": "pipeline.store.commands:load_mongo_command",
    "builds": "pipeline.store.commands:builds",
    "load-spoke": "pipeline.spoke.commands:load_spoke",
    "build-mapping": "pipeline.spoke.commands:build_mapping",
    "query-set": "pipeline.compare.commands:query_set_command",
    "compare": "pipeline.compare.commands:compare",
    "plan": "pipeline.solve.plan.commands:plan_command",
    "plan-calibrate": "pipeline.solve.plan.commands:calibrate_command",
    "plan-check": "pipeline.solve.plan.commands:check_command",
    "check-cluster": "pipeline.solve.cluster:check_cluster_command",
    "mpi-launcher": "pipeline.solve.cluster:mpi_launcher_command",
    "synth": "pipeline.ingest.commands:synth",
    "validate-slice": "pipeline.validate.commands:validate_slice_command",
    "export": "pipeline.export.commands:export_command",
}


def _load_object(reference: str):
    """The object a "module:attribute" reference names."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


class LitpathGroup(click.Group):
    """The root group: its own commands, the stages' (:data:`AREA_COMMANDS`) and the plugins'
    (entry-point group ``litpath.commands``), each loaded on first use; its help lists them by
    :data:`SECTIONS`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plugins: dict[str, EntryPoint] | None = None

    def _plugin_entries(self) -> dict[str, EntryPoint]:
        if self._plugins is None:
            self._plugins = {
                entry.name: entry
                for entry in entry_points(group=COMMANDS_GROUP)
                if entry.name not in self.commands and entry.name not in AREA_COMMANDS
            }
        return self._plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *AREA_COMMANDS, *self._plugin_entries()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name in AREA_COMMANDS:
            for name, value in COMMAND_ENVIRONMENT.get(cmd_name, {}).items():
                os.environ.setdefault(name, value)
            if _own_process and cmd_name not in USES_PANDAS and "pandas" not in sys.modules:
                sys.meta_path.insert(0, _PandasLeftOut)  # pyarrow takes the ImportError as "no pandas"
            if _own_process and cmd_name in KEEPS_FREED_MEMORY | KEEPS_FREED_MEMORY_ON_THE_DELTA:
                # its own process, not a caller's
                from pipeline.runtime.resources import allow_keeping_freed_memory, keep_freed_memory

                if cmd_name in KEEPS_FREED_MEMORY:
                    keep_freed_memory()
                else:
                    allow_keeping_freed_memory()
            command = _load_object(AREA_COMMANDS[cmd_name])
        elif cmd_name in self._plugin_entries():
            entry = self._plugin_entries()[cmd_name]
            try:
                command = entry.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the CLI down
                click.echo(
                    f"litpath: warning: command {cmd_name!r} ({entry.value}) left out: {exc}", err=True
                )
                return None
        else:
            return None
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        commands = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                commands[name] = command
        if not commands:
            return
        longest = max(len(name) for name in commands)
        width = formatter.width - 6 - longest
        listed: set[str] = set()
        sections = [*SECTIONS, ("Other commands", tuple(sorted(commands)))]
        for title, names in sections:
            shown = [name for name in names if name in commands and name not in listed]
            listed.update(shown)
            # Padded to the longest name, so that every section's descriptions line up.
            rows = [(name.ljust(longest), commands[name].get_short_help_str(width)) for name in shown]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


@click.group(cls=LitpathGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="litpath", message="%(prog)s %(version)s")
@click.option(
    "-v", "--verbose", count=True, help="More log detail: -v litpath's debug lines, -vv every library's."
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Log warnings and errors only (progress lines still print)."
)
def cli(verbose: int, quiet: bool) -> None:
    """litpath: literature knowledge graph -> all-pairs shortest paths -> SPOKE comparison."""
    global _verbosity
    if verbose and quiet:
        raise click.UsageError("--verbose and --quiet contradict each other; give one")
    _verbosity = -1 if quiet else verbose
    configure_logging(_verbosity)


def main() -> None:
    """The ``litpath`` entry point: a domain error (:class:`~pipeline.runtime.errors.LitpathError`, a
    missing or unreadable file) is one line, ``litpath: error: ...``, and its exit status (1; 2
    for a configuration or a file that is not there); ``-v`` adds its traceback."""
    global _own_process
    _own_process = True
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (LitpathError, FileNotFoundError, PermissionError) as exc:
        if _verbosity > 0:
            import traceback

            traceback.print_exc()
        click.echo(f"litpath: error: {exc}", err=True)
        sys.exit(2 if isinstance(exc, (ConfigError, FileNotFoundError, PermissionError)) else exc.exit_code)
