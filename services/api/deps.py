"""Dependencies shared by the routers: settings, the service state, the API key, the deadline."""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio
from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader

from pipeline.query import sssp
from services.api.errors import RequestTimeout, Unauthorized
from services.api.settings import Settings, get_settings
from services.api.state import ServiceState

T = TypeVar("T")

api_key_header = APIKeyHeader(
    name="X-API-Key",
    scheme_name="ApiKey",
    description="Required on every /v1 route but /v1/health when the service runs with LITPATH_API_KEY set",
    auto_error=False,
)


def get_state(request: Request) -> ServiceState:
    return request.app.state.litpath


def require_api_key(
    settings: Annotated[Settings, Depends(get_settings)],
    x_api_key: Annotated[str | None, Security(api_key_header)] = None,
) -> None:
    """Off unless ``LITPATH_API_KEY`` is set; then every /v1 route but health needs it."""
    if settings.api_key is None:
        return
    expected = settings.api_key.get_secret_value().encode()
    if x_api_key is None or not secrets.compare_digest(x_api_key.encode(), expected):
        raise Unauthorized("missing or wrong X-API-Key header")


async def run_bounded(state: ServiceState, fn: Callable[..., T], *args, pool: str = "compute", **kwargs) -> T:
    """Run blocking work (array reads, path walks, searches, database calls) in one of the
    service's bounded thread pools (``state.pools``), under the request deadline.

    Past the deadline the client gets 504. Work still queued then is dropped without running.
    Work already running cannot be interrupted from outside (a Python thread cannot be
    stopped), so it stops by itself: every on-demand search in it (pipeline.query.sssp) runs under
    the request's deadline and ends there, freeing the pool thread for the next request; other
    work takes :func:`deadline_of` as an argument (batches check it between pairs, Neo4j
    queries get it as their transaction timeout). A flood of slow requests therefore queues and
    times out instead of starting ever more threads.
    """
    timeout = state.settings.request_timeout_s
    deadline = time.monotonic() + timeout
    work = asyncio.get_running_loop().run_in_executor(
        state.pools[pool], functools.partial(_searching_until, deadline, fn, *args, **kwargs)
    )
    try:
        with anyio.fail_after(timeout):
            return await work
    except sssp.DeadlineExceeded:  # the search gave up at the deadline, a moment before the wait
        raise RequestTimeout(f"request took longer than {timeout} s") from None
    except TimeoutError:
        work.cancel()  # still queued: never runs
        raise RequestTimeout(f"request took longer than {timeout} s") from None


def _searching_until(deadline: float, fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` on a worker thread, its graph searches stopping at ``deadline``."""
    with sssp.search_deadline(deadline):
        return fn(*args, **kwargs)


def deadline_of(settings: Settings) -> float:
    """The ``time.monotonic()`` by which a request starting now must be answered."""
    return time.monotonic() + settings.request_timeout_s


StateDep = Annotated[ServiceState, Depends(get_state)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
