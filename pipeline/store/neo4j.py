"""Connections to Neo4j (a loaded SPOKE dump, or SPOKE's own server used as it is).

Settings come from arguments, then the environment (``LITPATH_NEO4J_URI``,
``LITPATH_NEO4J_USER``, ``LITPATH_NEO4J_PASSWORD``, ``LITPATH_NEO4J_DATABASE``), then
defaults. The password is never part of a message, a ``repr`` or a log line; URIs are
shown with any ``user:password@`` part redacted (:func:`pipeline.connections.redact_uri`).
:func:`connect` is the one way litpath makes a driver: the CLI commands and the path service.

The graph's naming is configurable for servers that do not follow SPOKE's: by default
each node type is its label, the identifier lives in property ``identifier`` and the
display name in ``name``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import neo4j
from neo4j.exceptions import AuthError, ConfigurationError, Neo4jError, ServiceUnavailable

from pipeline.connections import redact_uri, scrub

ENV_URI = "LITPATH_NEO4J_URI"
ENV_USER = "LITPATH_NEO4J_USER"
ENV_PASSWORD = "LITPATH_NEO4J_PASSWORD"
ENV_DATABASE = "LITPATH_NEO4J_DATABASE"

DEFAULT_URI = "bolt://127.0.0.1:7687"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Neo4jUnavailable(RuntimeError):
    """Neo4j cannot be reached or refuses the credentials; the message is meant for a user."""


class Neo4jTimeout(Neo4jUnavailable):
    """A query ran past the deadline it was given; Neo4j stopped it (transaction timeout)."""


def check_name(name: str, what: str) -> str:
    """A label, relationship type or property key safe to splice into Cypher, or ValueError."""
    if not _NAME.fullmatch(name):  # fullmatch: `$` alone would accept a trailing newline
        raise ValueError(f"{what} {name!r} is not a plain name (letters, digits, underscore)")
    return name


def quote(name: str) -> str:
    """Backtick-quote a checked name for Cypher."""
    return f"`{check_name(name, 'name')}`"


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
    uri: str = DEFAULT_URI
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    database: str | None = None
    naming: GraphNaming = field(default_factory=GraphNaming)

    @classmethod
    def from_env(
        cls,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        naming: GraphNaming | None = None,
        environ: dict[str, str] | None = None,
    ) -> Neo4jSettings:
        """Arguments win over the environment; empty strings count as not given."""
        env = os.environ if environ is None else environ
        return cls(
            uri=uri or env.get(ENV_URI) or DEFAULT_URI,
            user=user or env.get(ENV_USER) or None,
            password=password or env.get(ENV_PASSWORD) or None,
            database=database or env.get(ENV_DATABASE) or None,
            naming=naming or GraphNaming(),
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


def connect(
    settings: Neo4jSettings,
    *,
    verify: bool = True,
    connection_timeout: float | None = None,
    max_transaction_retry_time: float | None = None,
) -> neo4j.Driver:
    """A driver for ``settings``, or Neo4jUnavailable with one clear line.

    With ``verify`` (the commands) the server must answer a query now. Without it (the path
    service, which starts whether Neo4j is up or not and reports it in /v1/ready) only the URI
    is checked. ``connection_timeout`` and ``max_transaction_retry_time`` (seconds) replace the
    driver's defaults when given.
    """
    where = settings.describe()
    options = {
        name: value
        for name, value in (
            ("connection_timeout", connection_timeout),
            ("max_transaction_retry_time", max_transaction_retry_time),
        )
        if value is not None
    }
    try:
        driver = neo4j.GraphDatabase.driver(settings.uri, auth=settings.auth, **options)
    except (ConfigurationError, ValueError) as exc:
        # The driver's message may quote the URI, credentials and all.
        reason = scrub(str(exc), settings.uri)
        raise Neo4jUnavailable(f"Neo4j URI {redact_uri(settings.uri)!r} is not usable: {reason}") from None
    if not verify:
        return driver
    try:
        driver.verify_connectivity()
        # verify_connectivity may succeed before authentication on some servers; a trivial
        # query makes a refused login or an unknown database fail here, not mid-load.
        with driver.session(database=settings.database) as session:
            session.run("RETURN 1").consume()
    except AuthError:
        driver.close()
        raise Neo4jUnavailable(
            f"Neo4j at {where} refused the credentials (set {ENV_USER}/{ENV_PASSWORD} or --neo4j-user/--neo4j-password)"
        ) from None
    except ServiceUnavailable as exc:
        driver.close()
        raise Neo4jUnavailable(f"Neo4j is not reachable at {where}: {_reason(exc)}") from None
    except Neo4jError as exc:
        driver.close()
        raise Neo4jUnavailable(
            f"Neo4j at {where} refused the session: {exc.code}: {_first_line(exc)}"
        ) from None
    except OSError as exc:
        driver.close()
        raise Neo4jUnavailable(f"Neo4j is not reachable at {where}: {exc}") from None
    return driver


@contextmanager
def open_driver(settings: Neo4jSettings) -> Iterator[neo4j.Driver]:
    driver = connect(settings)
    try:
        yield driver
    finally:
        driver.close()


def _reason(exc: BaseException) -> str:
    """The socket-level reason of a driver connection error (``[Errno 111] Connection refused``)."""
    match = re.search(r"\(reason (.+?)\)\s*$", str(exc), re.MULTILINE)
    return match.group(1) if match else _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
