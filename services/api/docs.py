"""The interactive API documentation at /docs, served whole by the service: no internet needed.

FastAPI's own /docs page loads Swagger UI's script and style from a CDN, so it stays blank on
a machine without internet. Here the page loads them from ``/docs-assets/``, which serves the
files the ``fastapi-swagger`` package ships (Swagger UI 5, which reads the OpenAPI 3.1
document FastAPI writes). Like ``/openapi.json``, these routes need no API key: they describe
the API and serve none of its data.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

DOCS_URL = "/docs"
ASSETS_URL = "/docs-assets"
# Only these files of the package are served (it also holds its Python modules).
ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")


def assets_dir() -> Path:
    return Path(str(files("fastapi_swagger.resources")))


def add_docs(app: FastAPI) -> None:
    """Serve Swagger UI at :data:`DOCS_URL` from local files (the app needs ``docs_url=None``)."""
    folder = assets_dir()
    missing = [name for name in ASSETS if not (folder / name).is_file()]
    if missing:  # a package upgrade that renamed its files: fail at start, not on a blank page
        raise FileNotFoundError(f"Swagger UI files {missing} not found in {folder}")

    @app.get(f"{ASSETS_URL}/{{name}}", include_in_schema=False)
    async def docs_asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise StarletteHTTPException(404, f"no documentation file {name!r}")
        return FileResponse(folder / name)

    @app.get(DOCS_URL, include_in_schema=False)
    async def docs_page() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=str(app.openapi_url),
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=app.swagger_ui_oauth2_redirect_url,
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
            # No badge from the online validator: the page makes no request beyond this service.
            swagger_ui_parameters={"validatorUrl": None},
        )

    if app.swagger_ui_oauth2_redirect_url:

        @app.get(app.swagger_ui_oauth2_redirect_url, include_in_schema=False)
        async def docs_oauth2_redirect() -> HTMLResponse:
            return get_swagger_ui_oauth2_redirect_html()
