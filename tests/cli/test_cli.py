"""The `litpath` root command (pipeline/cli/__init__.py): sections in its help, --version, logging set up
once by -v/-q, and commands that plugins add through the ``litpath.commands`` entry points."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import pipeline.cli as cli_module
from pipeline import __version__
from pipeline.cli import AREA_COMMANDS, SECTIONS, USES_PANDAS, LitpathGroup, cli, configure_logging


@pytest.fixture(autouse=True)
def _restore_logging():
    """configure_logging changes process-wide state; put it back for the tests after these."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    own = {name: logging.getLogger(name).level for name in cli_module.OWN_LOGGERS}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, own_level in own.items():
        logging.getLogger(name).setLevel(own_level)


def test_help_lists_every_command_once_in_its_section() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for title, names in SECTIONS:
        start = lines.index(f"{title}:")
        listed = []
        for line in lines[start + 1 :]:
            if not line.startswith("  "):
                break
            listed.append(line.split()[0])
        assert listed == list(names), title
    every = [name for _, names in SECTIONS for name in names]
    assert len(every) == len(set(every))
    # Every registered command has a section (the plugin's `serve` included), so none is "Other".
    assert "Other commands:" not in result.output
    assert set(cli.list_commands(click.Context(cli))) == set(every)


def test_version_is_the_package_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"litpath {__version__}\n"


def test_installed_entry_point_prints_the_version() -> None:
    litpath = subprocess.run(
        [sys.executable, "-c", "from pipeline.cli import main; main()", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert litpath.stdout == f"litpath {__version__}\n"


def test_serve_comes_from_the_services_plugin() -> None:
    serve = cli.get_command(click.Context(cli), "serve")
    assert serve is not None
    assert serve.callback.__module__ == "services.api.commands"


def test_a_plugin_that_fails_to_load_is_left_out_with_a_warning(monkeypatch) -> None:
    broken = EntryPoint("broken", "no_such_module:command", cli_module.COMMANDS_GROUP)
    monkeypatch.setattr(cli_module, "entry_points", lambda group: [broken])
    monkeypatch.setattr(cli_module, "cli", LitpathGroup(name="litpath", commands=dict(cli.commands)))
    warning = "command 'broken' (no_such_module:command) left out: No module named 'no_such_module'"

    listed = CliRunner().invoke(cli_module.cli, ["--help"])
    assert listed.exit_code == 0 and warning in listed.stderr
    assert "ingest" in listed.stdout and "broken" not in listed.stdout

    called = CliRunner().invoke(cli_module.cli, ["broken"])
    assert called.exit_code == 2 and warning in called.stderr and "No such command 'broken'" in called.stderr


def test_a_command_imports_its_own_stage_only() -> None:
    """Every workflow rule starts a `litpath` process: `litpath ingest` must not pay for the
    Neo4j driver, the service or the comparison (they are imported when their command runs)."""
    probe = (
        "import sys\n"
        "from pipeline.cli import main\n"
        "sys.argv = ['litpath', 'ingest', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('neo4j', 'fastapi', 'pipeline.compare.commands', 'pandas') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", sorted(set(AREA_COMMANDS) - USES_PANDAS))
def test_a_stage_command_loads_without_pandas(command) -> None:
    """Every stage's command but those of USES_PANDAS loads in its own process with pandas left
    out (0.24 s of each workflow job's start), and says so when pandas is asked for."""
    probe = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"sys.argv = ['litpath', {command!r}, '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('pandas' in sys.modules)\n"
        "try:\n    import pandas\nexcept ModuleNotFoundError:\n    print('refused')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-2:] == ["False", "refused"]


@pytest.mark.parametrize("kind", ["pubmed_xml", "semmeddb_predication", "semmeddb_sentence", "semmeddb_citations",
                                  "semmeddb_entity", "cord19_metadata", "citations_table"])  # fmt: skip
def test_litpath_ingest_runs_without_pandas_and_writes_what_it_writes_with_it(tmp_path, kind) -> None:
    """`litpath ingest` tells pyarrow pandas is not there (pyarrow imported it on its first
    pa.array of a list, 0.3 s of each ingest job, only to ask whether the list was pandas'): in its
    own process pandas stays out, and the tables are those an ingest with pandas imported writes."""
    import pandas  # noqa: F401 - this process has pandas: the reference ingest runs with it
    import pyarrow.parquet as pq

    from pipeline.ingest.run import ingest_file
    from pipeline.ingest.synth import generate_corpus

    manifest = generate_corpus(tmp_path / "corpus", 300, seed=11)
    (entry,) = [e for e in manifest["files"] if e["kind"] == kind][:1]
    source = tmp_path / "corpus" / entry["path"]
    ingest_file(kind, source, tmp_path / "with")
    probe = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"sys.argv = ['litpath', 'ingest', '--kind', {kind!r}, '--input', {str(source)!r}, '--out', {str(tmp_path / 'without')!r}]\n"
        "main()\n"
        "print('pandas' in sys.modules and sys.modules['pandas'] is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
    written = sorted(p.name for p in (tmp_path / "with").glob("*.parquet"))
    assert written and written == sorted(p.name for p in (tmp_path / "without").glob("*.parquet"))
    for name in written:
        assert pq.read_table(tmp_path / "with" / name).equals(pq.read_table(tmp_path / "without" / name)), name


@pytest.mark.parametrize(
    ("command", "user_value", "expected"),
    [("merge", None, "0"), ("merge", "1", "1"), ("build-graph", None, "0"), ("bucket-records", None, "0"),
     ("ingest", None, None)],
)  # fmt: skip
def test_merge_graph_and_groupings_ask_numpy_for_small_pages_unless_the_user_said_otherwise(
    command, user_value, expected
) -> None:
    """numpy reads NUMPY_MADVISE_HUGEPAGE once, when it is imported, which a command's module does
    after the CLI has chosen the command; the ingest keeps numpy's default."""
    probe = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"sys.argv = ['litpath', {command!r}, '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "import os, numpy\n"
        "print(os.environ.get('NUMPY_MADVISE_HUGEPAGE'), os.environ.get('MIMALLOC_ALLOW_THP'),\n"
        "      int(numpy._core.multiarray._set_madvise_hugepage(False)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMPY_MADVISE_HUGEPAGE", "MIMALLOC_ALLOW_THP")}
    if user_value is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = user_value
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    numpy_setting, mimalloc_setting, numpy_state = done.stdout.splitlines()[-1].split()
    assert numpy_setting == str(expected)
    assert mimalloc_setting == ("None" if command == "ingest" else "0")
    assert numpy_state == ("1" if expected in (None, "1") else "0")  # what numpy made of it: 1 = huge pages


@pytest.mark.parametrize(
    ("flags", "own_level", "root_level"),
    [
        ([], logging.INFO, logging.WARNING),
        (["-q"], logging.WARNING, logging.WARNING),
        (["-v"], logging.DEBUG, logging.WARNING),
        (["-vv"], logging.DEBUG, logging.DEBUG),
    ],
)
def test_verbosity_sets_the_log_levels(flags, own_level, root_level) -> None:
    result = CliRunner().invoke(cli, [*flags, "mpi-launcher", "--ranks", "1"])
    assert result.exit_code == 0, result.output
    for name in ("pipeline.store.mongo", "services.api.state", "litpath.api"):
        assert logging.getLogger(name).getEffectiveLevel() == own_level, name
    assert logging.getLogger("neo4j").getEffectiveLevel() == root_level


def test_verbose_and_quiet_together_are_refused() -> None:
    result = CliRunner().invoke(cli, ["-v", "-q", "mpi-launcher", "--ranks", "1"])
    assert result.exit_code == 2
    assert "--verbose and --quiet contradict each other" in result.output


def test_log_records_go_to_stderr_once_however_often_logging_is_configured(capsys) -> None:
    configure_logging(0)
    configure_logging(0)
    log = logging.getLogger("pipeline.test_cli")
    log.debug("not shown")
    log.info("loaded 3 documents")
    err = capsys.readouterr().err
    assert err.count("loaded 3 documents") == 1
    assert " INFO pipeline.test_cli: loaded 3 documents" in err
    assert "not shown" not in err
    configure_logging(-1)
    log.info("quiet now")
    log.warning("still warned")
    err = capsys.readouterr().err
    assert "quiet now" not in err and "WARNING pipeline.test_cli: still warned" in err


# Every option renamed to the one vocabulary (pipeline/cli/options.py): command -> {old: new}.
RENAMED = {
    "ingest": {"--out-dir": "--out"},
    "merge": {"--out-dir": "--out"},
    "write-build-config": {"--out": "--config-out"},
    "build-graph": {"--tables": "--tables-dir"},
    "solve": {"--output": "--distances"},
    "load-mongo": {
        "--uri": "--mongo-uri", "--database": "--mongo-database", "--tables": "--tables-dir",
        "--graph": "--graph-dir", "--out": "--report",
    },
    "compare": {"--build": "--build-dir"},
    "plan-calibrate": {"--out": "--machine-out"},
    "plan-check": {"--json": "--report"},
    "serve": {"--build": "--build-id"},
}  # fmt: skip


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def test_the_renamed_options_are_these() -> None:
    from pipeline.cli.options import RenamedOption

    found = {}
    for name, command in _commands().items():
        for param in command.params:
            if isinstance(param, RenamedOption):
                found.setdefault(name, {}).update({old: param.opts[0] for old in param.old_names})
    assert found == RENAMED


@pytest.mark.parametrize("name", sorted(RENAMED))
def test_help_shows_only_the_new_names(name) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    # The options' lines (two spaces in; their help's continuation lines are further in).
    listed = {line.split()[0].rstrip(",") for line in result.output.splitlines() if re.match(r"  -", line)}
    for old, new in RENAMED[name].items():
        assert new in listed, (name, new)
        assert old not in listed, (name, old)
        assert not re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", result.output), (name, old)


def test_no_command_has_an_old_name_among_its_options() -> None:
    for name, command in _commands().items():
        ctx = click.Context(command, info_name=name)
        own = {opt for param in command.get_params(ctx) for opt in [*param.opts, *param.secondary_opts]}
        assert not own & set(RENAMED.get(name, {})), name


SAMPLE = str(
    Path(__file__).resolve().parents[2] / "config" / "sample" / "citations" / "open_citation_collection.csv"
)


@pytest.mark.parametrize("spelling", [["--out-dir", "{out}"], ["--out-dir={out}"]])
def test_an_old_name_still_works_and_warns_once(tmp_path, spelling) -> None:
    out = tmp_path / "ingested"
    args = ["ingest", "--kind", "citations_table", "--input", SAMPLE, *(s.format(out=out) for s in spelling)]
    result = CliRunner().invoke(cli, args, prog_name="litpath")
    assert result.exit_code == 0, result.output
    assert (out / "counts.json").is_file() and (out / "citations.parquet").is_file()
    warnings = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert warnings == ["litpath ingest: --out-dir is deprecated; use --out"]

    new = CliRunner().invoke(cli, [*args[:5], "--out", str(tmp_path / "again")], prog_name="litpath")
    assert new.exit_code == 0, new.output
    assert "deprecated" not in new.stderr
    counts = [json.loads((folder / "counts.json").read_text()) for folder in (out, tmp_path / "again")]
    for record in counts:
        del record["seconds"]
    assert counts[0] == counts[1] and counts[0]["rows_read"] > 0


@pytest.mark.parametrize(("name", "old"), [(name, old) for name, names in RENAMED.items() for old in names])
def test_every_old_name_gives_its_value_to_the_new_one(name, old, tmp_path) -> None:
    command = _commands()[name]
    (param,) = [p for p in command.params if old in getattr(p, "old_names", ())]
    kind = param.type
    value = str(tmp_path) if isinstance(kind, click.Path) and not kind.file_okay else SAMPLE
    # Resilient parsing: without the command's other required options, and without running it.
    ctx = command.make_context(name, [old, value], resilient_parsing=True)
    given = ctx.params[param.name]
    (given,) = given if param.multiple else (given,)  # `litpath ingest --out`: one per --input
    assert str(given) == value


def test_an_old_and_a_new_name_together_are_refused(tmp_path) -> None:
    args = ["ingest", "--kind", "citations_table", "--input", SAMPLE, "--out", str(tmp_path / "a"),
            "--out-dir", str(tmp_path / "b")]  # fmt: skip
    result = CliRunner().invoke(cli, args, prog_name="litpath")
    assert result.exit_code == 2
    assert "--out and --out-dir are one option: give it once" in result.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_missing_renamed_option_is_named_by_its_new_name() -> None:
    result = CliRunner().invoke(cli, ["finish-build"], prog_name="litpath")
    assert result.exit_code == 2 and "Missing option '--build-dir'" in result.output
    result = CliRunner().invoke(cli, ["compare", "--mapping", SAMPLE], prog_name="litpath")
    assert result.exit_code == 2 and "Missing option '--build-dir'" in result.output


def test_a_domain_error_is_one_line_and_exit_1_with_the_traceback_under_v(tmp_path) -> None:
    """`litpath solve --input <not a graph.bp>`: `litpath: error: ...` naming the file, exit 1; `-v`
    shows the traceback above the same line."""
    folder = tmp_path / "not-a-graph.bp"
    folder.mkdir()
    args = ["solve", "--input", str(folder), "--distances", str(tmp_path / "d.bp")]
    run = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"litpath: error: {folder}: "), run.stderr
    verbose = subprocess.run([sys.executable, "-m", "pipeline.cli", "-v", *args], capture_output=True, text=True,
                             timeout=120)  # fmt: skip
    assert verbose.returncode == 1 and "Traceback (most recent call last)" in verbose.stderr
    assert verbose.stderr.strip().splitlines()[-1] == lines[0]


def test_every_domain_error_is_a_litpath_error() -> None:
    """The errors a user acts on share one base, so that `litpath` prints each as one line."""
    from pipeline.config import ConfigError
    from pipeline.ingest.base import IngestError
    from pipeline.query.sssp import SsspError
    from pipeline.runtime.errors import LitpathError
    from pipeline.runtime.process import ProcessError
    from pipeline.solve.apsp_fw import SolverError
    from pipeline.solve.cluster import ClusterCheckError
    from pipeline.solve.plan.calibrate import CalibrationError
    from pipeline.solve.plan.machine import MachineError
    from pipeline.solve.plan.methods import PlanError
    from pipeline.spoke.dump import DumpError
    from pipeline.store.adios import DistancesCorrupt, GraphCorrupt
    from pipeline.store.mongo import MongoUnavailable

    for error in (ClusterCheckError, ConfigError, IngestError, CalibrationError, MachineError, PlanError,
                  ProcessError, SolverError, DumpError, SsspError, DistancesCorrupt, GraphCorrupt,
                  MongoUnavailable):  # fmt: skip
        assert issubclass(error, LitpathError), error


def _every_command() -> dict[str, click.Command]:
    """Every command under `litpath`, subcommands of its groups included, by its path."""
    found: dict[str, click.Command] = {}

    def walk(path: str, command: click.Command) -> None:
        found[path] = command
        if isinstance(command, click.Group):
            ctx = click.Context(command, info_name=path)
            for name in command.list_commands(ctx):
                walk(f"{path} {name}", command.get_command(ctx, name))

    for name, command in _commands().items():
        walk(name, command)
    return found


def test_every_required_option_is_missing_when_not_given(monkeypatch) -> None:
    # click (8.5) takes an explicit default=None as given: `litpath load-mongo` without a URI ran
    # on to an AttributeError instead of naming --mongo-uri.
    required = [(path, param) for path, command in _every_command().items() for param in command.params
                if isinstance(param, click.Option) and param.required]  # fmt: skip
    assert {path for path, _ in required} >= {"load-mongo", "write-build-config"}
    for path, param in required:
        for envvar in [param.envvar] if isinstance(param.envvar, str) else param.envvar or []:
            monkeypatch.delenv(envvar, raising=False)
        ctx = click.Context(click.Command(path), info_name=path)
        with pytest.raises(click.MissingParameter):
            param.handle_parse_result(ctx, {}, [])


def test_load_mongo_without_a_uri_names_the_option(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("LITPATH_MONGO_URI", raising=False)
    record = tmp_path / "build.yaml"
    record.write_text("{}\n")
    args = ["load-mongo", "--build-id", "b", "--tables-dir", str(tmp_path), "--build-record", str(record)]
    result = CliRunner().invoke(cli, args, prog_name="litpath")
    assert result.exit_code == 2 and "Missing option '--mongo-uri'" in result.output, result.output
    result = CliRunner().invoke(cli, [*args[:1], *args[3:]], env={"LITPATH_MONGO_URI": "mongodb://127.0.0.1:1/"},
                                prog_name="litpath")  # fmt: skip
    assert result.exit_code == 2 and "Missing option '--build-id'" in result.output, result.output
