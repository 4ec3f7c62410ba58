"""The FastAPI application: ``create_app()`` wires settings, lifespan, routers and error handlers."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from services.api import API_VERSION
from services.api.deps import require_api_key
from services.api.docs import add_docs
from services.api.errors import register_error_handlers
from services.api.middleware import BodySizeLimit, HostAllowList
from services.api.routers import compare, concepts, distance, health, neighbors, paths
from services.api.settings import Settings, get_settings
from services.api.state import close_state, open_state


def create_app(settings: Settings | None = None) -> FastAPI:
    """A new application; ``settings`` (tests, embedding) replaces the environment's settings."""
    active = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        import anyio

        # Heavy handles, opened once: distance reader, adjacency, vertex and name indexes, DB
        # clients, the worker pools.
        app.state.litpath = await anyio.to_thread.run_sync(open_state, active)
        try:
            yield
        finally:
            close_state(app.state.litpath)

    app = FastAPI(
        title="litpath path service",
        version=API_VERSION,
        description=(
            "Shortest literature paths between biomedical concepts and papers, from a litpath build. "
            'Every error has one shape, `{"error": {"code", "message", "detail"}}`. Request bodies '
            f"are refused (413) beyond LITPATH_MAX_BODY_BYTES ({active.max_body_bytes} bytes here) before "
            "they are read; every request runs under LITPATH_REQUEST_TIMEOUT_S "
            f"({active.request_timeout_s:g} s here, 504 past it)."
        ),
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        # /docs from local files (services/api/docs.py): FastAPI's own pages load from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    add_docs(app)
    if settings is not None:
        app.dependency_overrides[get_settings] = lambda: settings
    register_error_handlers(app)
    app.include_router(health.router)
    guarded = [Depends(require_api_key)]
    for router in (concepts.router, distance.router, paths.router, neighbors.router, compare.router):
        app.include_router(router, dependencies=guarded)
    # Outermost last: the Host check, then the body cap, both before routing and authentication.
    app.add_middleware(BodySizeLimit, max_bytes=active.max_body_bytes)
    hosts = [h.strip() for h in active.allowed_hosts.split(",") if h.strip()]
    if hosts and "*" not in hosts:
        app.add_middleware(HostAllowList, hosts=hosts)
    app.openapi = lambda: _openapi(app, active)  # type: ignore[method-assign]
    return app


def operation_id(route: APIRoute) -> str:
    """A route's OpenAPI operationId: the name of its handler (``get_path``, ``post_paths``).

    FastAPI's default joins the name, the path and the method (``get_path_v1_path_get``), so a
    generated client's method names change whenever a prefix does. A handler's name is part of
    the published contract: tests/api/test_api_operation_ids.py pins every operationId, and renaming a
    handler breaks that test on purpose."""
    return route.name


# Bounds the routes check against settings at run time, by (path, method, parameter): the
# document states the configured value, so a client (or a fuzzer) knows what is accepted.
_RUNTIME_BOUNDS = {
    ("/v1/concepts", "get", "limit"): "page_cap",
    ("/v1/neighbors/{key}", "get", "k"): "page_cap",
    ("/v1/path", "get", "k"): "max_alternatives",
}


def _openapi(app: FastAPI, settings: Settings) -> dict[str, Any]:
    if app.openapi_schema is None:
        document = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version=app.openapi_version,
            description=app.description,
            routes=app.routes,
        )
        for (path, method, name), setting in _RUNTIME_BOUNDS.items():
            for parameter in document["paths"][path][method]["parameters"]:
                if parameter["name"] == name:
                    parameter["schema"]["maximum"] = getattr(settings, setting)
        pairs = document["components"]["schemas"]["PathsIn"]["properties"]["pairs"]
        pairs["maxItems"] = settings.batch_cap
        if settings.api_key is None:
            # No key configured: the routes take the header but do not need it. OpenAPI's empty
            # requirement says so; a document requiring a key this service never checks would
            # be a false contract (and a client would be right to refuse an unchecked key).
            for operations in document["paths"].values():
                for operation in operations.values():
                    if operation.get("security"):
                        operation["security"] = [*operation["security"], {}]
        # FastAPI files a route's error models under the route's own media type (text/html for
        # the report); errors are JSON everywhere.
        for operations in document["paths"].values():
            for operation in operations.values():
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if int(status) >= 400 and "text/html" in content and "application/json" not in content:
                        content["application/json"] = content.pop("text/html")
        app.openapi_schema = document
    return app.openapi_schema
