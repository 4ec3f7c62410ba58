"""litpath's HTTP path service: shortest literature paths between concepts, from a build's artifacts.

``create_app()`` in :mod:`services.api.main` builds the FastAPI application; ``litpath serve``
(:mod:`services.api.commands`) runs it under uvicorn on 127.0.0.1.

``API_VERSION``, the version the OpenAPI document and ``/v1/health`` state, is litpath's own.
"""

from pipeline import __version__ as API_VERSION

__all__ = ["API_VERSION"]
