"""The FastAPI application: ``create_app()`` wires settings, lifespan, routers and error handlers."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from services.api.deps import require_api_key
from services.api.errors import register_error_handlers
from services.api.routers import compare, concepts, distance, health, neighbors, paths
from services.api.settings import Settings, get_settings
from services.api.state import close_state, open_state

API_VERSION = "1.0.0"


def create_app(settings: Settings | None = None) -> FastAPI:
    """A new application; ``settings`` (tests, embedding) replaces the environment's settings."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        import anyio

        active = settings or get_settings()
        # Heavy handles, opened once: distance reader, adjacency, vertex and name indexes, DB clients.
        app.state.litpath = await anyio.to_thread.run_sync(open_state, active)
        try:
            yield
        finally:
            close_state(app.state.litpath)

    app = FastAPI(
        title="litpath path service",
        version=API_VERSION,
        description="Shortest literature paths between biomedical concepts and papers, from a litpath build.",
        lifespan=lifespan,
    )
    if settings is not None:
        app.dependency_overrides[get_settings] = lambda: settings
    register_error_handlers(app)
    app.include_router(health.router)
    guarded = [Depends(require_api_key)]
    for router in (concepts.router, distance.router, paths.router, neighbors.router, compare.router):
        app.include_router(router, dependencies=guarded)
    return app
