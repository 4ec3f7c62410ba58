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
A stage whose work comes in phases of unlike cost over the same rows counts it in percent
of the whole (:class:`PhasedWork`)::

    litpath bucket-records papers: grouping range 2 of 3, 38.0 %, 18.2 s, ETA 29.7 s

Short runs print nothing but the final line, so test logs stay quiet; the final line
always says how long the stage took.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol, TextIO


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
    if unit == PERCENT:
        return f"{amount:.1f} %"
    return format_bytes(amount) if unit == "bytes" else f"{amount:,.0f} {unit}"


# The unit of a line whose work is counted in percent of the whole (:class:`PhasedWork`): it says
# the share alone, not "41.2 % / 100.0 % (41.2 %)".
PERCENT = "%"


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
        if part and self.unit == PERCENT:  # "writing range 1 of 3, 29.6 %", not "... 3 29.6 %"
            part += ","
        amount = format_amount(self.done, self.unit)
        if self.total is not None:
            share = 100.0 * min(1.0, self.done / self.total)
            amount = f"{share:.1f} %" if self.unit == PERCENT else \
                f"{amount} / {format_amount(self.total, self.unit)} ({share:.1f} %)"  # fmt: skip
        eta = self.eta_seconds(now)
        tail = f", ETA {format_seconds(eta)}" if eta is not None else ""
        return f"{self.what}:{part} {amount}, {format_seconds(elapsed)}{tail}"

    def finish(self, summary: str = "") -> float:
        """Print the final line (how long it took) and return the elapsed seconds."""
        elapsed = self.clock() - self.started
        amount = format_amount(self.done, self.unit) if self.done and self.unit != PERCENT else ""
        text = ", ".join(part for part in (summary, amount, f"done in {format_seconds(elapsed)}") if part)
        self._print(f"{self.what}: {text}")
        return elapsed

    def note(self, text: str) -> None:
        """Print one line now, between the timed ones (something done that the user should see)."""
        self._print(text)

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class Advances(Protocol):
    """What a reader that reports its rows needs of a progress line: :class:`Progress`, or one
    phase of a :class:`PhasedWork` (:meth:`PhasedWork.rows`)."""

    def advance(self, amount: float = 1) -> None: ...

    def stage(self, name: str) -> None: ...


class PhasedWork:
    """A stage's work as phases -- read the rows, group them, write what they grouped, say --
    each phase a share of the whole, told to a progress line in percent.

    The groupings of a first build read the predications once (spilling them into ranges), then
    group a range at a time and write its records: the records written, their old measure, come
    in bursts after each range's grouping, which is most of the time. At 10M calibrated
    predications the papers' line was silent for 14 s and never had an ETA (no total), and the
    evidence line said "ETA 17.8 s" where 2.3 s were left. Counted here, each part of a phase done
    moves the line by its share of the phase's share (the shares measured:
    ``pipeline.store.record_buckets.GROUPING_SHARES``, ``pipeline.graph.build.GRAPH_SHARES``), so
    the line moves from the first batch read and its ETA is the rest at the rate since then."""

    def __init__(self, shares: dict[str, float]) -> None:
        if abs(sum(shares.values()) - 1.0) > 1e-9:
            raise ValueError(f"the phases' shares sum to {sum(shares.values())}, not 1: {shares}")
        self.shares = shares
        self.line: Progress | None = None  # set by whoever prints the line; until then nothing is told
        self._done = dict.fromkeys(shares, 0.0)  # each phase's part done, 0 to 1
        self._lock = threading.Lock()  # phases may run in threads of their own (the merge's lanes)

    @classmethod
    def untold(cls) -> PhasedWork:
        """Work that no line is told of (a caller that prints no progress)."""
        return cls({"read": 0.0, "group": 0.0, "write": 1.0})

    @property
    def percent(self) -> float:
        return min(100.0, 100.0 * sum(self.shares[phase] * done for phase, done in self._done.items()))

    def stage(self, name: str) -> None:
        """Name the part of the work that runs now (shown in the line)."""
        if self.line is not None:
            self.line.stage(name)

    def advance(self, phase: str, done: float, of: float) -> None:
        """``done`` more of the ``of`` parts of ``phase`` (rows, say) are through it."""
        self._set(phase, self._done[phase] + done / max(of, 1))

    def complete(self, phase: str) -> None:
        """``phase`` is through, whatever was told of its parts (none, for a phase of one step)."""
        self._set(phase, 1.0)

    def reach(self, phase: str, fraction: float) -> None:
        """``fraction`` of ``phase`` (0 to 1) is through: for a phase that knows how far it is
        better than it can count its parts (a step that reads its files more than once)."""
        self._set(phase, fraction)

    def rows(self, phase: str, of: int) -> _PhaseRows:
        """``phase`` as a line that a reader of ``of`` rows tells its rows (:class:`Advances`)."""
        return _PhaseRows(self, phase, of)

    def _set(self, phase: str, done: float) -> None:
        with self._lock:  # one percent at a time, so that the line never goes back
            self._done[phase] = min(1.0, max(self._done[phase], done))  # never back, never past the whole
            if self.line is not None:
                self.line.update(self.percent)


class _PhaseRows:
    def __init__(self, work: PhasedWork, phase: str, of: int) -> None:
        self.work, self.phase, self.of = work, phase, of

    def advance(self, amount: float = 1) -> None:
        self.work.advance(self.phase, amount, self.of)

    def stage(self, name: str) -> None:
        self.work.stage(name)


__all__ = ["PERCENT", "Advances", "PhasedWork", "Progress", "format_amount", "format_seconds"]
