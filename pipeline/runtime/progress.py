"""Progress lines with an ETA for the long stages (ingest, merge, graph, loads).

A stage that knows how much work it has (rows in Parquet metadata, bytes of an input
file, documents to load) reports what it has done; :class:`Progress` turns that into a
line on stderr at most every ``every_s`` seconds::

    litpath build-graph: concept_concept 4,194,304 / 10,000,000 rows (41.9 %), 12.3 s, ETA 17.0 s

The ETA is the remaining work at the average rate since the stage first reported work:
honest for the streaming stages here, whose rate is steady, and for those that prepare
before they stream. A rerun's evidence grouping spent 9 s regrouping the changed pairs
before its first 58k rows of 2.1M, then wrote the reused rest in 1.5 s; timed from the
start, its line said "ETA 5.4 min". Until a second report there is no rate, and no ETA.
Short runs print nothing but the final line, so test logs stay quiet; the final line
always says how long the stage took.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO


def format_seconds(seconds: float) -> str:
    """A duration for people, the one formatter of every progress line, plan and message:
    seconds below 2 minutes, then minutes, hours, days and years, one decimal."""
    if not math.isfinite(seconds):
        return "inf"
    for limit, scale, unit in ((120, 1, "s"), (7200, 60, "min"), (2 * 86400, 3600, "h"), (365 * 86400, 86400, "d")):
        if seconds < limit:
            return f"{seconds / scale:.1f} {unit}"
    return f"{seconds / (365 * 86400):.1f} y"


def format_bytes(count: float) -> str:
    """A size for people in binary units (B, KiB ... PiB), one decimal: the one formatter of sizes."""
    for scale, unit in ((1 << 50, "PiB"), (1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,.0f} B"


def format_amount(amount: float, unit: str) -> str:
    return format_bytes(amount) if unit == "bytes" else f"{amount:,.0f} {unit}"


class Progress:
    """Counts work done against a known (or unknown) total and prints an ETA now and then.

    ``what`` names the command (``litpath ingest``); :meth:`stage` names the part running now.
    Threads may report to one line: each report is counted once, under a lock.
    """

    def __init__(
        self,
        what: str,
        total: float | None = None,
        unit: str = "rows",
        *,
        every_s: float = 5.0,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.what = what
        self.total = total if total and total > 0 else None
        self.unit = unit
        self.every_s = every_s
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.done = 0.0
        self.stage_name = ""
        self.started = clock()
        self._last_print = self.started
        # when work was first reported, and how much: the rate is measured from there
        self._first_report: tuple[float, float] | None = None
        self._lock = threading.Lock()

    def stage(self, name: str) -> None:
        """Name the part of the work that runs now (shown in the lines)."""
        self.stage_name = name

    def advance(self, amount: float = 1) -> None:
        with self._lock:
            self._update(self.done + amount)

    def update(self, done: float) -> None:
        with self._lock:
            self._update(done)

    def _update(self, done: float) -> None:
        self.done = float(done)
        now = self.clock()
        if self._first_report is None and self.done > 0:
            self._first_report = (now, self.done)
        if now - self._last_print >= self.every_s:
            self._last_print = now
            self._print(self.line(now))

    def eta_seconds(self, now: float | None = None) -> float | None:
        """Seconds left at the average rate since work was first reported; None without a
        total, or before any work was reported after the first."""
        now = self.clock() if now is None else now
        if self.total is None or self._first_report is None:
            return None
        first_at, first_done = self._first_report
        if self.done <= first_done or now <= first_at:
            return None
        return max(0.0, (self.total - self.done) * (now - first_at) / (self.done - first_done))

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = now - self.started
        part = f" {self.stage_name}" if self.stage_name else ""
        amount = format_amount(self.done, self.unit)
        if self.total is not None:
            share = 100.0 * min(1.0, self.done / self.total)
            amount = f"{amount} / {format_amount(self.total, self.unit)} ({share:.1f} %)"
        eta = self.eta_seconds(now)
        tail = f", ETA {format_seconds(eta)}" if eta is not None else ""
        return f"{self.what}:{part} {amount}, {format_seconds(elapsed)}{tail}"

    def finish(self, summary: str = "") -> float:
        """Print the final line (how long it took) and return the elapsed seconds."""
        elapsed = self.clock() - self.started
        amount = format_amount(self.done, self.unit) if self.done else ""
        text = ", ".join(part for part in (summary, amount, f"done in {format_seconds(elapsed)}") if part)
        self._print(f"{self.what}: {text}")
        return elapsed

    def note(self, text: str) -> None:
        """Print one line now, between the timed ones (something done that the user should see)."""
        self._print(text)

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


__all__ = ["Progress", "format_amount", "format_seconds"]
