"""The options that several ``litpath`` commands share, defined once so that their names cannot drift.

One vocabulary for every command (docs/design.md §2, "Command-line options"):

=====================  ======================================================================
``--out DIR``          the folder the command writes into
``--build-dir DIR``    a build folder it reads (``results/builds/<id>`` or ``results/latest``)
``--build-id ID``      a build's id (the hash that names its folder)
``--results-dir DIR``  the results root (``builds/`` and ``latest``)
``--<what>-dir DIR``   another folder it reads: ``--tables-dir``, ``--graph-dir``, ``--umls-dir``
``--config FILE``      a configuration file it reads
``--input FILE``       its one input file (`litpath ingest`: repeated, each with its ``--out``)
``--<what> FILE``      a single file it writes, named for what it holds: ``--report`` (the JSON
                       record of what the command did), ``--summary``, ``--plan``,
                       ``--distances``, ``--heatmap``
``--<what>-out PATH``  a file or folder of a kind the command also reads, or a second output
                       beside ``--out``: ``--config-out``, ``--machine-out``, ``--cooccurrence-out``
``--neo4j-*``          SPOKE's Neo4j (:func:`neo4j_options`); ``--mongo-*`` the MongoDB store
=====================  ======================================================================

A renamed option keeps its earlier spellings for a release (:class:`RenamedOption`): hidden from
``--help``, they still work and print one line on stderr saying which name to use instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from pipeline.config.connections import (
    MONGO_URI_ENV,
    NEO4J_PASSWORD_ENV,
    NEO4J_QUERY_TIMEOUT_ENV,
    NEO4J_QUERY_TIMEOUT_S,
    GraphNaming,
    Neo4jSettings,
)

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class RenamedOption(click.Option):
    """An option whose earlier spellings (``old_names``) are still accepted, deprecated.

    The old names are not among the option's own (``opts``), so ``--help``, usage errors and
    shell completion show the new name only; they are registered with the parser under a key
    of their own, which :meth:`handle_parse_result` moves to the option's, warning once.
    """

    def __init__(self, param_decls: Sequence[str], old_names: Sequence[str] = (), **attrs: Any) -> None:
        super().__init__(param_decls, **attrs)
        if self.is_flag or self.count:
            raise TypeError(f"{self.opts[0]}: RenamedOption is for options that take a value")
        self.old_names = tuple(old_names)

    def _old_key(self, old: str) -> str:
        return f"{self.name}\0{old}"  # a parser key no parameter has

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        action = "append" if self.multiple else "store"
        for old in self.old_names:
            parser.add_option(obj=self, opts=[old], dest=self._old_key(old), action=action, nargs=self.nargs)

    def handle_parse_result(
        self, ctx: click.Context, opts: Mapping[str, Any], args: list[str]
    ) -> tuple[Any, list[str]]:
        used = [old for old in self.old_names if self._old_key(old) in opts]
        if used:
            new = self.opts[0]
            if self.name in opts or len(used) > 1:
                raise click.UsageError(f"{' and '.join([new, *used])} are one option: give it once", ctx)
            opts = {**opts, self.name: opts[self._old_key(used[0])]}
            if not ctx.resilient_parsing:
                click.echo(f"{ctx.command_path}: {used[0]} is deprecated; use {new}", err=True)
        return super().handle_parse_result(ctx, opts, args)


def option(*param_decls: str, old: Sequence[str] = (), **attrs: Any) -> Decorator:
    """``click.option``; with ``old``, those earlier spellings still work, deprecated (:class:`RenamedOption`)."""
    if old:
        return click.option(*param_decls, cls=RenamedOption, old_names=tuple(old), **attrs)
    return click.option(*param_decls, **attrs)


def _no_default_when(required: bool) -> dict[str, Any]:
    """``default=None`` for an optional option, nothing for a required one: click (8.5) takes an
    explicit ``default=None`` as a value given, so a required option declared with it was never
    missing (``litpath load-mongo`` without a URI failed deep inside instead of naming the option)."""
    return {} if required else {"default": None}


def out_option(help: str, *, old: Sequence[str] = (), multiple: bool = False) -> Decorator:
    """``--out DIR`` (``out_dir``, a Path): the folder the command writes into (``multiple``: a
    tuple of them, one per ``--input``)."""
    return option(
        "--out",
        "out_dir",
        old=old,
        required=True,
        multiple=multiple,
        type=click.Path(file_okay=False, path_type=Path),
        help=help,
    )


def build_dir_option(help: str, *, old: Sequence[str] = ()) -> Decorator:
    """``--build-dir DIR`` (``build_dir``, a Path): a build folder the command reads."""
    return option(
        "--build-dir", "build_dir", old=old, required=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path), help=help,
    )  # fmt: skip


def build_id_option(
    help: str, *, name: str = "build_id", required: bool = False, old: Sequence[str] = ()
) -> Decorator:
    """``--build-id ID``: a build's id."""
    return option("--build-id", name, old=old, required=required, **_no_default_when(required), help=help)


def results_dir_option(help: str) -> Decorator:
    """``--results-dir DIR`` (``results_dir``): the results root, its ``builds/`` and ``latest``."""
    return option("--results-dir", "results_dir", default=None, type=click.Path(file_okay=False), help=help)


def config_option(help: str, *, required: bool = False, default: str | None = None) -> Decorator:
    """``--config FILE`` (``config_path``, a Path): a configuration file the command reads."""
    return option(
        "--config", "config_path", required=required, show_default=default is not None,
        **({"default": default} if default is not None else _no_default_when(required)),
        type=click.Path(exists=True, dir_okay=False, path_type=Path), help=help,
    )  # fmt: skip


def input_option(help: str, *, exists: bool = False, dir_okay: bool = False, multiple: bool = False) -> Decorator:
    """``--input FILE`` (``input_path``, a Path): the command's one input file (``dir_okay``: an
    ADIOS2 BP file, which is a folder on disk; ``multiple``: a tuple of files, for `litpath
    ingest`, each paired with the ``--out`` at its position)."""
    return option(
        "--input", "input_path", required=True, multiple=multiple,
        type=click.Path(exists=exists, dir_okay=dir_okay, path_type=Path), help=help,
    )  # fmt: skip


def tables_dir_option(help: str) -> Decorator:
    """``--tables-dir DIR`` (``tables_dir``, a Path): a build's Parquet tables; formerly ``--tables``."""
    return option(
        "--tables-dir", "tables_dir", old=("--tables",), required=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path), help=help,
    )  # fmt: skip


def report_option(help: str, *, old: Sequence[str] = ()) -> Decorator:
    """``--report FILE`` (``report_path``, a Path or None): the JSON record of what the command did."""
    return option(
        "--report", "report_path", old=old, type=click.Path(dir_okay=False, path_type=Path), help=help
    )


def mongo_uri_option(help: str, *, required: bool = False, old: Sequence[str] = ()) -> Decorator:
    """``--mongo-uri URI`` (``mongo_uri``); required, it falls back to $LITPATH_MONGO_URI itself."""
    return option(
        "--mongo-uri", "mongo_uri", old=old, required=required, **_no_default_when(required),
        envvar=MONGO_URI_ENV if required else None, help=help,
    )  # fmt: skip


def mongo_database_option(*, old: Sequence[str] = ()) -> Decorator:
    """``--mongo-database NAME`` (``mongo_database``): the MongoDB database of litpath's collections."""
    return option("--mongo-database", "mongo_database", old=old, default="litpath", show_default=True)


def neo4j_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--neo4j-uri/user/password/database/query-timeout and the graph's property names, passed to
    the command as ``neo4j`` (:class:`~pipeline.config.connections.Neo4jSettings`); the environment fills
    the gaps."""

    @click.option("--neo4j-uri", help="Bolt URI (default $LITPATH_NEO4J_URI, else bolt://127.0.0.1:7687)")
    @click.option("--neo4j-user", help="User (default $LITPATH_NEO4J_USER; none = server with auth off)")
    @click.option(
        "--neo4j-password",
        help=f"Password (prefer ${NEO4J_PASSWORD_ENV}: a command-line password is visible to other users)",
    )
    @click.option(
        "--neo4j-database", help="Database (default $LITPATH_NEO4J_DATABASE, else the server's default)"
    )
    @click.option(
        "--neo4j-query-timeout",
        type=click.FloatRange(min=0),
        help=(
            "Seconds one query or load batch may run before Neo4j stops it; 0: no limit "
            f"(default ${NEO4J_QUERY_TIMEOUT_ENV}, else {NEO4J_QUERY_TIMEOUT_S:g})"
        ),
    )
    @click.option("--identifier-property", default="identifier", show_default=True)
    @click.option("--name-property", default="name", show_default=True)
    @functools.wraps(command)
    def wrapper(
        *args: Any,
        neo4j_uri: str | None,
        neo4j_user: str | None,
        neo4j_password: str | None,
        neo4j_database: str | None,
        neo4j_query_timeout: float | None,
        identifier_property: str,
        name_property: str,
        **kwargs: Any,
    ) -> Any:
        try:
            naming = GraphNaming(identifier_property=identifier_property, name_property=name_property)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        try:
            settings = Neo4jSettings.from_env(
                neo4j_uri, neo4j_user, neo4j_password, neo4j_database, naming,
                query_timeout_s=neo4j_query_timeout,
            )  # fmt: skip
        except ValueError as exc:  # $LITPATH_NEO4J_QUERY_TIMEOUT_S is not a number
            raise click.BadParameter(str(exc), param_hint="--neo4j-query-timeout") from None
        return command(*args, neo4j=settings, **kwargs)

    return wrapper
