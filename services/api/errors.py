"""Domain errors and the one JSON error shape: ``{"error": {"code", "message", "detail"}}``."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pymongo.errors import PyMongoError
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.api.models import ErrorOut

log = logging.getLogger("litpath.api")

# What each status means on this service, for the OpenAPI document: every error has the one shape.
STATUS_MEANINGS = {
    400: "The Host header names no address of this service (LITPATH_ALLOWED_HOSTS)",
    401: "Missing or wrong X-API-Key header (only when LITPATH_API_KEY is set)",
    404: "Unknown concept, document or report in the served build",
    413: "Request body larger than LITPATH_MAX_BODY_BYTES (refused before it is read; on any route)",
    422: "Malformed request: a parameter or body field out of its type, pattern or bounds, "
    "or a body that is not JSON",
    500: "Internal error (a bug; the service log has the trace)",
    503: "The build, one of its graphs or a database (MongoDB, the SPOKE Neo4j) is unavailable",
    504: "The request ran past LITPATH_REQUEST_TIMEOUT_S",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these statuses, each in the one error shape."""
    return {status: {"model": ErrorOut, "description": STATUS_MEANINGS[status]} for status in statuses}


class ApiError(Exception):
    """An error with an HTTP status, a stable machine code and a human message."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, detail: Any = None):
        super().__init__(message)
        self.message = message
        self.detail = detail


class UnknownKey(ApiError):
    status, code = 404, "unknown_key"

    def __init__(self, key: str, what: str = "concept or document"):
        super().__init__(f"unknown {what} {key!r} in this build", {"key": key})


class UnknownSemanticTypeError(ApiError):
    """A type filter names a semantic type no concept of the served build carries: like an unknown
    key, the request is well formed and names something this build does not have."""

    status, code = 404, "unknown_semantic_type"


class InvalidRequest(ApiError):
    status, code = 422, "invalid_request"


class BuildUnavailable(ApiError):
    """No build loaded, or one whose distances do not belong to its graph (stale)."""

    status, code = 503, "build_unavailable"


class PathInconsistent(ApiError):
    """The distances and the graph disagree for this pair: never return a wrong path."""

    status, code = 503, "distances_inconsistent"


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


class RequestTimeout(ApiError):
    status, code = 504, "timeout"


class NotReady(ApiError):
    """/v1/ready: the build, one of its graphs or a database is not usable; the detail has the checks."""

    status, code = 503, "not_ready"


class SpokeUnavailable(ApiError):
    """No SPOKE comparison possible: no Neo4j configured or reachable, or no CUI -> SPOKE mapping."""

    status, code = 503, "spoke_unavailable"


class NoReport(ApiError):
    """The served build has no comparison report."""

    status, code = 404, "no_report"


# Absolute POSIX paths in a message: quoted (OSError quotes its file name, which may hold
# spaces), or bare from a "/" at the start of a word; the last name (file or folder) is kept.
_QUOTED_PATH = re.compile(r"""(['"])/(?:[^'"]*/)?([^'"/]+)/?\1""")
_BARE_PATH = re.compile(r"""(?<![\w.~/-])/(?:[^\s/'"():,;]+/)*([^\s/'"():,;]+)/?""")


def client_safe(message: str) -> str:
    """``message`` with every absolute path cut to its last name (``/srv/results/builds/b1/graph/graph.bp``
    -> ``graph.bp``): the reason stays readable, where the server keeps its files does not reach the
    client. Log the original."""
    message = _QUOTED_PATH.sub(lambda match: f"{match.group(1)}{match.group(2)}{match.group(1)}", message)
    return _BARE_PATH.sub(lambda match: match.group(1), message)


def error_body(code: str, message: str, detail: Any = None) -> dict:
    return {"error": {"code": code, "message": message, "detail": jsonable_encoder(detail)}}


def error_response(status: int, code: str, message: str, detail: Any = None, headers=None) -> JSONResponse:
    return JSONResponse(error_body(code, message, detail), status_code=status, headers=headers)


def register_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "X-API-Key"} if exc.status == 401 else None
        return error_response(exc.status, exc.code, exc.message, exc.detail, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {
                "field": ".".join(str(p) for p in err.get("loc", ())),
                "message": err.get("msg"),
                "type": err.get("type"),
            }
            for err in exc.errors()
        ]
        fields = ", ".join(p["field"] for p in problems)
        return error_response(422, "invalid_request", f"malformed request: {fields}", problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # FastAPI's answer to a body it cannot decode (not UTF-8, say): a malformed request,
            # reported like every other one.
            return error_response(422, "invalid_request", f"malformed request body: {exc.detail}", None)
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        return error_response(exc.status_code, code, str(exc.detail), None, getattr(exc, "headers", None))

    @app.exception_handler(PyMongoError)
    async def _mongo_unavailable(request: Request, exc: PyMongoError) -> JSONResponse:
        # The evidence store failed under a query: say which dependency, not where it lives.
        log.warning("MongoDB error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        message = f"the evidence store (MongoDB) is unavailable: {type(exc).__name__}; try again later"
        return error_response(503, "dependency_unavailable", message, {"dependency": "mongodb"})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "internal error; see the service log", None)
