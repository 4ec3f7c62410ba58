"""The service's worker pools (services/api/pools.py): bounded threads that free their search
memory on themselves once idle."""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient
from support.build_fixture import make_build

from services.api.main import create_app
from services.api.pools import WorkerPool
from services.api.settings import Settings


def _wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_pool_runs_jobs_on_at_most_size_threads_and_returns_results_and_errors():
    pool = WorkerPool(2, "test")
    gate = threading.Event()
    names = set()

    def job(i):
        names.add(threading.current_thread().name)
        gate.wait(5)
        if i == 3:
            raise ValueError("three")
        return i * i

    futures = [pool.submit(job, i) for i in range(6)]
    gate.set()
    assert [f.result(5) for f in futures if f is not futures[3]] == [0, 1, 4, 16, 25]
    with pytest.raises(ValueError, match="three"):
        futures[3].result(5)
    assert len(names) == 2
    pool.shutdown()


def test_idle_worker_releases_on_its_own_thread_once_per_idle_spell():
    released = []
    pool = WorkerPool(1, "test", idle_s=0.05, on_idle=lambda: released.append(threading.get_ident()))
    worker = pool.submit(threading.get_ident).result(5)
    assert _wait_for(lambda: released == [worker])  # the thread that searched frees its own memory
    time.sleep(0.2)
    assert released == [worker]  # once, not every idle_s
    pool.submit(lambda: None).result(5)
    assert _wait_for(lambda: len(released) == 2)
    pool.shutdown()


def test_worker_that_ran_nothing_releases_nothing_and_zero_releases_after_every_job():
    released = []
    pool = WorkerPool(1, "test", idle_s=0.01, on_idle=lambda: released.append(1))
    time.sleep(0.1)
    assert released == []  # no thread yet, and none idles before its first job
    pool.shutdown()

    each = WorkerPool(1, "test", idle_s=0, on_idle=lambda: released.append(1))
    for _ in range(3):
        each.submit(lambda: None).result(5)
    assert _wait_for(lambda: len(released) == 3)
    each.shutdown()


def test_a_failing_release_does_not_stop_the_worker():
    def fail():
        raise RuntimeError("release failed")

    pool = WorkerPool(1, "test", idle_s=0, on_idle=fail)
    assert pool.submit(lambda: 1).result(5) == 1
    assert pool.submit(lambda: 2).result(5) == 2
    pool.shutdown()


def test_shutdown_cancels_queued_work():
    pool = WorkerPool(1, "test")
    gate = threading.Event()
    running = pool.submit(gate.wait, 5)
    queued = pool.submit(lambda: "ran")
    assert _wait_for(lambda: running.running())
    pool.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert running.result(5) is True and queued.cancelled()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)


def test_service_compute_threads_release_search_memory_when_idle(tmp_path, monkeypatch):
    """The service wires its compute pool to the library's release: after an on-demand path
    (a search that leaves a workspace in the pool), the idle thread frees the workspaces unused
    as long as it was idle."""
    from pipeline.query import sssp

    calls = []
    monkeypatch.setattr(
        sssp, "release_idle_workspaces", lambda idle_s: calls.append((threading.current_thread().name, idle_s))
    )
    build = make_build(tmp_path, n_concepts=20, n_abstracts=10, distances=None)
    settings = Settings(results_dir=build.results_dir, workspace_idle_s=0.05)
    with TestClient(create_app(settings)) as client:
        body = client.get("/v1/path", params={"source": "C0000001", "target": "C0000002"}).json()
        assert body["distances"] == "on-demand"
        assert _wait_for(lambda: calls)
        assert calls[0][0].startswith("litpath-compute") and calls[0][1] == 0.05
