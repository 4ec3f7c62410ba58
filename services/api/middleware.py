"""ASGI middleware that answers before any routing, parsing or authentication: the request-body
cap and the Host allow-list. Both answer in the one error shape (services/api/errors.py)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.api.errors import error_response


class BodyTooLarge(HTTPException):
    """Raised while the body is read; FastAPI re-raises HTTPExceptions from the body reader, so
    the registered handler answers it (413) instead of a parse error."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes")


class BodySizeLimit:
    """Refuse a request whose body exceeds ``max_bytes``: at once from its Content-Length (the body
    is never read), else as the bytes arrive (a chunked body stops being read at the limit).

    FastAPI reads a whole JSON body into memory and parses it before the dependencies run, the
    API-key check included, so without this an unauthenticated client could make the service
    buffer and parse a body of any size.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, limited_receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413,
            "payload_too_large",
            f"request body larger than {self.max_bytes} bytes",
            {"max_body_bytes": self.max_bytes},
        )
        await response(scope, receive, send)


class HostAllowList:
    """Answer only requests whose Host header names this service (port ignored).

    A service on 127.0.0.1 is reachable from a browser on the same machine through DNS
    rebinding: a page of another site, resolved to 127.0.0.1, sends its own name as Host.
    """

    def __init__(self, app: ASGIApp, hosts: list[str]) -> None:
        self.app = app
        self.hosts = {host.lower().strip("[]") for host in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _host_name(Headers(scope=scope).get("host", ""))
        if host in self.hosts:
            await self.app(scope, receive, send)
            return
        response = error_response(
            400, "invalid_host", "the Host header names no address of this service", None
        )
        await response(scope, receive, send)


def _host_name(header: str) -> str:
    """``example.org`` of ``example.org:8000``; ``::1`` of ``[::1]:8000``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header
