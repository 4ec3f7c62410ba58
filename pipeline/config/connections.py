"""Where the databases are, and keeping their credentials out of everything litpath writes.

Credentials travel only in the environment: ``LITPATH_MONGO_URI`` (user and password in the
URI), ``LITPATH_NEO4J_URI`` / ``_USER`` / ``_PASSWORD`` / ``_DATABASE`` (and, not a secret, the
Neo4j query timeout, ``LITPATH_NEO4J_QUERY_TIMEOUT_S``). A config may still name the servers
(``mongo.uri``, ``neo4j.uri``/``user``/``database``/``query_timeout_s``): :func:`export_connection_settings`
moves those values into the environment of the workflow's jobs, so they never appear on a
command line (``ps`` shows every user's), in a shell string or in Snakemake's records, and
:func:`redact_config` removes credentials from every copy of the config a build writes (its
``config.yaml``, ``build.json``, the MongoDB ``builds`` record and the logs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

MONGO_URI_ENV = "LITPATH_MONGO_URI"
NEO4J_ENV = {"uri": "LITPATH_NEO4J_URI", "user": "LITPATH_NEO4J_USER", "database": "LITPATH_NEO4J_DATABASE"}
NEO4J_PASSWORD_ENV = "LITPATH_NEO4J_PASSWORD"  # never a config key: the environment only
NEO4J_DEFAULT_URI = "bolt://127.0.0.1:7687"
# Seconds one Neo4j transaction of a litpath command (a SPOKE query of `compare`, a batch of
# `load-spoke`) may run before Neo4j stops it, so that a server that stalls cannot hold a job
# until its walltime. The config schema's neo4j.query_timeout_s default (tests hold the two
# together); 0 there, in the environment or on the command line means no limit.
NEO4J_QUERY_TIMEOUT_S = 600.0
NEO4J_QUERY_TIMEOUT_ENV = "LITPATH_NEO4J_QUERY_TIMEOUT_S"
# How a message names the setting, so that a timed-out command says what to change.
NEO4J_QUERY_TIMEOUT_SETTING = (
    f"neo4j.query_timeout_s in the config, ${NEO4J_QUERY_TIMEOUT_ENV} or --neo4j-query-timeout"
)
REDACTED = "***"
# Keys whose values are secrets wherever they appear in a record.
_SECRET_KEY = re.compile(r"password|passwd|secret|api_?key|token|credential", re.IGNORECASE)


def redact_uri(uri: str) -> str:
    """The URI with any ``user:password@`` replaced by ``***@`` (safe to log and store).

    Everything between ``://`` and the *last* ``@`` counts as credentials: a password may hold
    ``/``, ``?``, ``#`` or ``@`` (unescaped, the URI is invalid, but the text must still not
    leak), so a URI whose query also holds an ``@`` loses more than its credentials, never less.
    """
    scheme, sep, rest = uri.partition("://")
    if not sep or "@" not in rest:
        return uri
    return f"{scheme}://{REDACTED}@{rest.rpartition('@')[2]}"


def uri_secrets(uri: str) -> list[str]:
    """The pieces of a URI's credentials that must not appear in a message (as written and
    percent-decoded): the whole user-info and its password."""
    scheme, sep, rest = uri.partition("://")
    if not sep or "@" not in rest:
        return []
    userinfo = rest.rpartition("@")[0]
    password = userinfo.partition(":")[2]
    pieces = {userinfo, unquote(userinfo), password, unquote(password)}
    return sorted((p for p in pieces if len(p) >= 3), key=len, reverse=True)


def scrub(text: str, uri: str) -> str:
    """``text`` (e.g. a driver's error message about ``uri``) with the URI's credentials removed."""
    for secret in uri_secrets(uri):
        text = text.replace(secret, REDACTED)
    return text


def redact_config(value: Any) -> Any:
    """A copy of a config (or any record) fit to be written: every ``uri`` value without its
    credentials, and every value of a password-, secret-, key- or token-like key replaced."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and _SECRET_KEY.search(key) and item not in (None, ""):
                out[key] = REDACTED
            elif isinstance(key, str) and key.endswith("uri") and isinstance(item, str):
                out[key] = redact_uri(item)
            else:
                out[key] = redact_config(item)
        return out
    if isinstance(value, list):
        return [redact_config(item) for item in value]
    return value


def export_connection_settings(config: Mapping[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    """Put the config's server settings into the environment the workflow's jobs inherit.

    ``mongo.uri`` becomes ``LITPATH_MONGO_URI``; ``neo4j.uri``/``user``/``database`` become
    ``LITPATH_NEO4J_*``. An empty value leaves the variable as it is. ``neo4j.query_timeout_s``
    becomes ``LITPATH_NEO4J_QUERY_TIMEOUT_S`` whenever it is set, 0 (no limit) included.
    Returns the names set.
    """
    env = os.environ if environ is None else environ
    exported = []
    mongo_uri = (config.get("mongo") or {}).get("uri") or ""
    if mongo_uri:
        env[MONGO_URI_ENV] = mongo_uri
        exported.append(MONGO_URI_ENV)
    neo4j = config.get("neo4j") or {}
    for key, variable in NEO4J_ENV.items():
        if neo4j.get(key):
            env[variable] = str(neo4j[key])
            exported.append(variable)
    if neo4j.get("query_timeout_s") is not None:
        env[NEO4J_QUERY_TIMEOUT_ENV] = str(neo4j["query_timeout_s"])
        exported.append(NEO4J_QUERY_TIMEOUT_ENV)
    return exported


def query_timeout(value: float | str, source: str) -> float | None:
    """A query timeout in seconds from ``source`` (a setting's name, for the message): None for
    0 (no limit); ValueError naming ``source`` for anything but a number >= 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source}: expected seconds (a number, 0 for no limit), not {value!r}") from None
    if not seconds >= 0 or seconds == float("inf"):  # `not >=` also refuses NaN
        raise ValueError(f"{source}: expected seconds (a number, 0 for no limit), not {value!r}")
    return seconds or None


# Neo4j's settings: where it is, who connects, and how its graph is spelled. They are plain data,
# here rather than in pipeline.store.neo4j (which connects, and re-exports them) so that the
# commands' shared options (pipeline.cli.options) can build them below every stage.

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(name: str, what: str) -> str:
    """A label, relationship type or property key safe to splice into Cypher, or ValueError."""
    if not _NAME.fullmatch(name):  # fullmatch: `$` alone would accept a trailing newline
        raise ValueError(f"{what} {name!r} is not a plain name (letters, digits, underscore)")
    return name


@dataclass(frozen=True)
class GraphNaming:
    """How SPOKE-style node types and fields are spelled in a Neo4j database."""

    identifier_property: str = "identifier"
    name_property: str = "name"
    # node type -> Neo4j label, for servers whose labels differ from the types (default: same).
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.identifier_property, "identifier property")
        check_name(self.name_property, "name property")
        for label in self.labels.values():
            check_name(label, "label")

    def label_of(self, node_type: str) -> str:
        return check_name(self.labels.get(node_type, node_type), "label")


@dataclass(frozen=True)
class Neo4jSettings:
    uri: str = NEO4J_DEFAULT_URI
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    database: str | None = None
    naming: GraphNaming = field(default_factory=GraphNaming)
    # Seconds each transaction of a command may run (None: no limit); see NEO4J_QUERY_TIMEOUT_S.
    query_timeout_s: float | None = NEO4J_QUERY_TIMEOUT_S

    @classmethod
    def from_env(
        cls,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        naming: GraphNaming | None = None,
        environ: dict[str, str] | None = None,
        query_timeout_s: float | None = None,
    ) -> Neo4jSettings:
        """Arguments win over the environment; empty strings count as not given. A query
        timeout of 0 means no limit; one that is not a number raises ValueError naming it."""
        env = os.environ if environ is None else environ
        if query_timeout_s is not None:
            timeout = query_timeout(query_timeout_s, "--neo4j-query-timeout")
        elif env.get(NEO4J_QUERY_TIMEOUT_ENV):
            timeout = query_timeout(env[NEO4J_QUERY_TIMEOUT_ENV], f"${NEO4J_QUERY_TIMEOUT_ENV}")
        else:
            timeout = NEO4J_QUERY_TIMEOUT_S
        return cls(
            uri=uri or env.get(NEO4J_ENV["uri"]) or NEO4J_DEFAULT_URI,
            user=user or env.get(NEO4J_ENV["user"]) or None,
            password=password or env.get(NEO4J_PASSWORD_ENV) or None,
            database=database or env.get(NEO4J_ENV["database"]) or None,
            naming=naming or GraphNaming(),
            query_timeout_s=timeout,
        )

    @property
    def auth(self) -> tuple[str, str] | None:
        """Basic auth when a user is set; None when the server runs with auth off."""
        if self.user is None:
            return None
        return (self.user, self.password or "")

    def describe(self) -> str:
        """Where we connect, for messages: never the password."""
        who = f" as {self.user}" if self.user else ""
        db = f", database {self.database}" if self.database else ""
        return f"{redact_uri(self.uri)}{who}{db}"

    def __repr__(self) -> str:  # the dataclass repr already hides the password; keep it explicit
        return f"Neo4jSettings({self.describe()})"
