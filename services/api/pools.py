"""The service's worker pools: a fixed number of threads that give back their search memory
when they have been idle a while.

Why not :class:`concurrent.futures.ThreadPoolExecutor`: the shortest-path library keeps each
thread's search workspaces (O(n) bytes, see :mod:`pipeline.query.sssp`) in thread-local storage, so
only the thread itself can free them, and an executor's threads never run anything of their own
between jobs. Here a thread that has waited ``idle_s`` without work calls ``on_idle`` once, on
itself, then waits on. Releasing after every job instead would make every on-demand query pay
the O(n) allocation again (tens of ms at millions of vertices, more than the query itself).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future

log = logging.getLogger("litpath.api")


class WorkerPool(Executor):
    """Up to ``size`` threads running submitted calls first come, first served; threads start
    when work first needs them.

    ``on_idle`` (None: never) runs on a worker that has had no work for ``idle_s`` seconds
    since its last job, once per idle spell; ``idle_s == 0`` runs it after every job. The
    threads are daemons: a search still running when the process exits does not hold it up.
    """

    def __init__(
        self, size: int, name: str, *, idle_s: float | None = None, on_idle: Callable[[], None] | None = None
    ):
        if size < 1:
            raise ValueError(f"a pool needs at least one thread, got {size}")
        if idle_s is not None and idle_s < 0:
            raise ValueError(f"idle_s must be >= 0, got {idle_s}")
        self.size, self.name = size, name
        self._idle_s = idle_s if on_idle is not None else None
        self._on_idle = on_idle
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._waiting = threading.Semaphore(0)  # one count per thread waiting for work
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            if self._shutdown:
                raise RuntimeError(f"pool {self.name} is shut down")
            future: Future = Future()
            self._queue.put((future, fn, args, kwargs))
            # A waiting thread takes it; else another thread, up to the size.
            if not self._waiting.acquire(blocking=False) and len(self._threads) < self.size:
                thread = threading.Thread(
                    target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            threads = list(self._threads)
            for _ in threads:
                self._queue.put(None)  # one stop per thread, after the work already queued
        if wait:
            for thread in threads:
                thread.join()

    def _work(self) -> None:
        used = False  # ran a job since on_idle last ran
        while True:
            timeout = self._idle_s if used and self._idle_s else None
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                self._idle()
                used = False
                continue
            if item is None:
                return
            future, fn, args, kwargs = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 -- the caller gets it through the future
                    future.set_exception(exc)
                    del exc
                else:
                    future.set_result(result)
                    del result
                used = True
            del future, fn, args, kwargs  # nothing of a finished job is kept while waiting
            if used and self._idle_s == 0:
                self._idle()
                used = False
            self._waiting.release()

    def _idle(self) -> None:
        try:
            self._on_idle()  # type: ignore[misc]
        except Exception:  # noqa: BLE001 -- a failed release must not stop the worker
            log.exception("pool %s: releasing an idle worker's memory failed", self.name)
