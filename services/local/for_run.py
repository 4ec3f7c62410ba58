"""Which MongoDB and Neo4j a ``make run`` uses: the user's own where they point at them, else
local servers this checkout starts.

    source <(python -m services.local.for_run --config CONFIG --servers auto|local|external)

Prints, on stdout, shell ``export`` lines for the local servers it uses (their URIs and
credentials, read from their 0600 files: secrets never pass through a command line), and on
stderr one line per store saying which server the run uses, credentials redacted. On an error
stdout ends with ``return 1``, so that the ``source`` fails and ``make run`` stops.

Per store (MongoDB when ``mongo.enabled``; Neo4j when ``spoke.enabled``):

* ``auto`` (the default): the user's server when its ``LITPATH_*`` variable is set
  (``LITPATH_MONGO_URI``; ``LITPATH_NEO4J_URI``) or the config names it (``mongo.uri``;
  ``neo4j.uri``), used as given, and no local server is started for it; else the local server,
  started if it is not running;
* ``local``: the local servers, whatever the environment says;
* ``external``: never a local server; a store the run needs and nobody pointed at is an error.

A store the run does not use is neither started nor exported.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from pipeline.config import ConfigError, load_config
from pipeline.config.connections import MONGO_URI_ENV, NEO4J_DEFAULT_URI, NEO4J_ENV, redact_uri
from services.local.servers import ServerError, default_port, make_server

MODES = ("auto", "local", "external")
START_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Choice:
    store: str  # "mongo" or "neo4j"
    server: str  # "local", "yours" or "unused"
    where: str  # what to print: the redacted address and where it came from
    exports: dict[str, str]


def _users_server(store: str, config: dict, environ: dict[str, str]) -> str | None:
    """Where the user points ``store``, with the source named; None when nowhere."""
    if store == "mongo":
        if environ.get(MONGO_URI_ENV):
            return f"{redact_uri(environ[MONGO_URI_ENV])} (yours: ${MONGO_URI_ENV})"
        if config["mongo"]["uri"]:
            return f"{redact_uri(config['mongo']['uri'])} (yours: mongo.uri in the config)"
        return None
    if environ.get(NEO4J_ENV["uri"]):
        return f"{redact_uri(environ[NEO4J_ENV['uri']])} (yours: ${NEO4J_ENV['uri']})"
    if config["neo4j"]["uri"]:
        return f"{redact_uri(config['neo4j']['uri'])} (yours: neo4j.uri in the config)"
    return None


def _needed(store: str, config: dict) -> str | None:
    """Why the run needs ``store``, or None when it does not."""
    if store == "mongo":
        return "mongo.enabled" if config["mongo"]["enabled"] else None
    return "spoke.enabled" if config["spoke"]["enabled"] else None


def _local(store: str, state_root: Path | None) -> Choice:
    server = make_server(store, state_root / store if state_root else None)
    if server.running():
        server.port = server.recorded_port()
        how = f"already running, pid {server.pid}"
    else:
        server.port = default_port(store)
        server.on_progress = lambda line: print(line, file=sys.stderr, flush=True)
        server.start(timeout=START_TIMEOUT_S)
        how = f"started, pid {server.pid}"
    return Choice(store, "local", f"{server.public_uri} (local server, {how}; data in {server.data_dir})",
                  server.client_env())  # fmt: skip


def choose(
    config: dict, mode: str, environ: dict[str, str] | None = None, state_root: Path | None = None
) -> list[Choice]:
    """The server of each store for a run of ``config`` in ``mode`` (see the module docstring);
    starts the local servers it chooses. Raises ServerError for a store nobody pointed at in
    ``external`` mode."""
    if mode not in MODES:
        raise ServerError(f"SERVERS={mode!r}: give one of {', '.join(MODES)}")
    environ = dict(os.environ) if environ is None else environ
    choices = []
    for store in ("mongo", "neo4j"):
        reason = _needed(store, config)
        if reason is None:
            off = "mongo.enabled" if store == "mongo" else "spoke.enabled"
            choices.append(Choice(store, "unused", f"not used ({off}: false)", {}))
            continue
        yours = _users_server(store, config, environ)
        if mode == "local" or (mode == "auto" and yours is None):
            choices.append(_local(store, state_root))
        elif yours is not None:
            choices.append(Choice(store, "yours", yours, {}))
        else:
            variable = MONGO_URI_ENV if store == "mongo" else NEO4J_ENV["uri"]
            key = "mongo.uri" if store == "mongo" else "neo4j.uri"
            raise ServerError(
                f"SERVERS=external, and the run needs {'MongoDB' if store == 'mongo' else 'Neo4j'} ({reason}), "
                f"but neither ${variable} nor {key} in the config says where it is"
                + ("" if store == "mongo" else f" (Neo4j's default would be {NEO4J_DEFAULT_URI})")
            )
    return choices


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.local.for_run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=Path("config/config.yaml"), help="the run's config")
    parser.add_argument("--servers", default="auto", help="auto (default), local or external")
    parser.add_argument("--state-root", type=Path, help="parent of the local servers' state (default .local-servers)")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        choices = choose(config, args.servers, state_root=args.state_root)
    except (ServerError, ConfigError, OSError) as error:
        print(f"litpath: error: {error}", file=sys.stderr)
        print("return 1")  # the `source` of this output fails, and `make run` with it
        return 1
    except Exception:  # a check that broke must still stop the run, not let it start unchecked
        traceback.print_exc()
        print(f"litpath: error: the check of {args.config} failed (above)", file=sys.stderr)
        print("return 1")
        return 1
    for choice in choices:
        name = "MongoDB" if choice.store == "mongo" else "Neo4j"
        print(f"litpath: {name}: {choice.where}", file=sys.stderr)
        for variable, value in choice.exports.items():
            print(f"export {variable}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
