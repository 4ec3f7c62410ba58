"""The path service's published OpenAPI document, ``schemas/openapi.json``.

``litpath schemas`` (:mod:`pipeline.builds.schemas_export`) writes it through the entry-point group
``litpath.schemas`` (pyproject.toml), so that pipeline publishes it without importing services.
"""

from __future__ import annotations

import json

from services.api.main import create_app
from services.api.settings import Settings


def published_documents() -> dict[str, str]:
    """``{"openapi.json": text}``: the document of a service with default settings (caps, body
    size), whatever ``LITPATH_*`` this shell sets; a running service states its own."""
    document = create_app(Settings.model_construct()).openapi()
    return {"openapi.json": json.dumps(document, indent=2) + "\n"}
