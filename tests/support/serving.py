"""`litpath serve` as a real uvicorn process on a free loopback port, for the tests and benchmarks
that talk to the service over HTTP (tests/api/test_api_server.py, test_api_fuzz.py,
bench/path_service.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from pipeline.runtime.process import free_port, log_tail

REPO = Path(__file__).resolve().parents[2]


class ServiceDidNotStart(RuntimeError):
    """The service exited, or did not answer ``ready_path`` with 200 in time; the message has its log."""


@dataclass(frozen=True)
class RunningService:
    base: str  # http://127.0.0.1:<port>
    process: subprocess.Popen
    log_path: Path


@contextmanager
def running_service(
    results_dir: Path,
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    unset: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    ready_path: str = "/v1/health",
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> Iterator[RunningService]:
    """Run ``python -m services.api.commands`` (`litpath serve`) on ``results_dir`` until the block ends.

    ``env`` is added to this process's environment and ``unset`` removed from it; ``args`` are extra
    command-line options (``--workers 2``). The block starts once ``ready_path`` answers 200 (with
    ``headers``, e.g. the API key); the service is terminated when it ends, killed if it lingers.
    """
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment.update(env or {})
    command = [sys.executable, "-m", "services.api.commands", "--port", str(port),
               "--results-dir", str(results_dir), "--log-level", "warning", *args]  # fmt: skip
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=environment, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_ready(process, f"{base}{ready_path}", dict(headers or {}), log_path, timeout_s)
        yield RunningService(base, process, log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_ready(
    process: subprocess.Popen, url: str, headers: dict[str, str], log_path: Path, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, headers=headers, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise ServiceDidNotStart(f"the service exited ({process.returncode}): {log_tail(log_path, 40)}")
        if time.monotonic() > deadline:
            raise ServiceDidNotStart(f"{url} did not answer 200 in {timeout_s:.0f} s: {log_tail(log_path, 40)}")
        time.sleep(0.2)
