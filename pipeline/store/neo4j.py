"""Connections to Neo4j (a loaded SPOKE dump, or SPOKE's own server used as it is).

Settings come from arguments, then the environment (``LITPATH_NEO4J_URI``,
``LITPATH_NEO4J_USER``, ``LITPATH_NEO4J_PASSWORD``, ``LITPATH_NEO4J_DATABASE``), then
defaults. The password is never part of a message, a ``repr`` or a log line; URIs are
shown with any ``user:password@`` part redacted (:func:`pipeline.config.connections.redact_uri`).
:func:`connect` is the one way litpath makes a driver: the CLI commands and the path service.

The graph's naming is configurable for servers that do not follow SPOKE's: by default
each node type is its label, the identifier lives in property ``identifier`` and the
display name in ``name``.

A driver made by :func:`connect` carries its settings' query timeout
(:attr:`Neo4jSettings.query_timeout_s`, :func:`query_timeout_of`): every transaction litpath
runs on it (a SPOKE query of ``compare``, a batch of ``load-spoke``, the mapping's node reads)
asks Neo4j to stop it past that many seconds, so the commands only pass the driver on.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import neo4j
from neo4j.exceptions import AuthError, ConfigurationError, Neo4jError, ServiceUnavailable

from pipeline.config.connections import (
    NEO4J_DEFAULT_URI,
    NEO4J_ENV,
    NEO4J_PASSWORD_ENV,
    NEO4J_QUERY_TIMEOUT_SETTING,
    GraphNaming,
    Neo4jSettings,
    check_name,
    redact_uri,
    scrub,
)

# The settings live in pipeline.config.connections (the command-line options build them without
# importing the driver); these names stay here for the modules that import them from this one.
ENV_URI = NEO4J_ENV["uri"]
ENV_USER = NEO4J_ENV["user"]
ENV_PASSWORD = NEO4J_PASSWORD_ENV
ENV_DATABASE = NEO4J_ENV["database"]
DEFAULT_URI = NEO4J_DEFAULT_URI

__all__ = [
    "DEFAULT_URI", "ENV_DATABASE", "ENV_PASSWORD", "ENV_URI", "ENV_USER", "GraphNaming", "Neo4jSettings",
    "Neo4jTimeout", "Neo4jUnavailable", "check_name", "connect", "is_timeout", "open_driver", "query_timeout_of",
    "quote", "timeout_error",
]  # fmt: skip


class Neo4jUnavailable(RuntimeError):
    """Neo4j cannot be reached or refuses the credentials; the message is meant for a user."""


class Neo4jTimeout(Neo4jUnavailable):
    """A query ran past the deadline it was given; Neo4j stopped it (transaction timeout)."""


# The query timeout of each driver connect() made (weak keys: forgotten with the driver).
_QUERY_TIMEOUTS: weakref.WeakKeyDictionary[neo4j.Driver, float | None] = weakref.WeakKeyDictionary()


def query_timeout_of(driver: neo4j.Driver) -> float | None:
    """Seconds a transaction on ``driver`` may run: its settings' ``query_timeout_s`` if
    :func:`connect` made it, else None (no limit: a driver made elsewhere, as in tests)."""
    try:
        return _QUERY_TIMEOUTS.get(driver)
    except TypeError:  # not a driver at all (a stand-in that cannot be weakly referenced)
        return None


def is_timeout(exc: Neo4jError) -> bool:
    """Whether Neo4j stopped a transaction for running past its timeout."""
    return "TransactionTimedOut" in str(exc.code or "")


def timeout_error(what: str, seconds: float | None) -> Neo4jTimeout:
    """The error of ``what`` (a query, a batch) stopped after ``seconds``: it names the setting."""
    limit = f"{seconds:g} s" if seconds is not None else "its limit"
    return Neo4jTimeout(
        f"{what} ran past the Neo4j query timeout ({limit}) and Neo4j stopped it; if the server is "
        f"only slow, raise {NEO4J_QUERY_TIMEOUT_SETTING} (0: no limit)"
    )


def quote(name: str) -> str:
    """Backtick-quote a checked name for Cypher."""
    return f"`{check_name(name, 'name')}`"


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
    _QUERY_TIMEOUTS[driver] = settings.query_timeout_s
    if not verify:
        return driver
    try:
        driver.verify_connectivity()
        # verify_connectivity may succeed before authentication on some servers; a trivial
        # query makes a refused login or an unknown database fail here, not mid-load.
        with driver.session(database=settings.database) as session:
            session.run(neo4j.Query("RETURN 1", timeout=settings.query_timeout_s)).consume()
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
