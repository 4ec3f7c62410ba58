"""The `litpath` root command (pipeline/cli.py): sections in its help, --version, logging set up
once by -v/-q, and commands that plugins add through the ``litpath.commands`` entry points."""

from __future__ import annotations

import logging
import subprocess
import sys
from importlib.metadata import EntryPoint

import click
import pytest
from click.testing import CliRunner

import pipeline.cli as cli_module
from pipeline import __version__
from pipeline.cli import SECTIONS, LitpathGroup, cli, configure_logging


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


def test_a_plugin_that_fails_to_load_is_left_out_with_a_warning(monkeypatch, capsys) -> None:
    broken = EntryPoint("broken", "no_such_module:command", cli_module.COMMANDS_GROUP)
    monkeypatch.setattr(cli_module, "entry_points", lambda group: [broken])
    group = LitpathGroup(name="litpath")
    names = group.list_commands(click.Context(group))
    assert "broken" not in names and "ingest" in names
    assert "command 'broken' (no_such_module:command) left out: No module named 'no_such_module'" in (
        capsys.readouterr().err
    )


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
