"""Dependencies shared by the routers: settings, the service state, the API key, the deadline."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio
from fastapi import Depends, Header, Request

from services.api.errors import RequestTimeout, Unauthorized
from services.api.settings import Settings, get_settings
from services.api.state import ServiceState

T = TypeVar("T")


def get_state(request: Request) -> ServiceState:
    return request.app.state.litpath


def require_api_key(
    settings: Annotated[Settings, Depends(get_settings)],
    x_api_key: Annotated[str | None, Header(alias="X-API-Key")] = None,
) -> None:
    """Off unless ``LITPATH_API_KEY`` is set; then every /v1 route but health needs it."""
    if settings.api_key is None:
        return
    expected = settings.api_key.get_secret_value().encode()
    if x_api_key is None or not secrets.compare_digest(x_api_key.encode(), expected):
        raise Unauthorized("missing or wrong X-API-Key header")


async def run_bounded(settings: Settings, fn: Callable[..., T], *args, **kwargs) -> T:
    """Run blocking work (array reads, path walks, database calls) in a worker thread under the
    request deadline; past it the client gets 504 and the thread's late result is dropped."""
    try:
        with anyio.fail_after(settings.request_timeout_s):
            return await anyio.to_thread.run_sync(
                functools.partial(fn, *args, **kwargs), abandon_on_cancel=True
            )
    except TimeoutError:
        raise RequestTimeout(f"request took longer than {settings.request_timeout_s} s") from None


StateDep = Annotated[ServiceState, Depends(get_state)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
