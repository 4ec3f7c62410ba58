"""The ETA of progress lines (pipeline.runtime.progress), on a clock the test moves: the
remaining work at the rate since work was first reported, so that a stage which prepares
before it streams (a rerun's grouping of the changed records, then the reused rest) is not
forecast at the rate of its preparation."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from pipeline.runtime.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def progress(total: float | None, every_s: float = 5.0) -> tuple[Progress, Clock, io.StringIO]:
    clock, stream = Clock(), io.StringIO()
    return Progress("litpath test", total, "rows", every_s=every_s, stream=stream, clock=clock), clock, stream


@pytest.mark.parametrize("rate", [3.0, 250.0, 1e6])
def test_a_steady_stream_is_forecast_at_its_rate(rate):
    line, clock, _ = progress(total=100 * rate)
    for second in range(1, 41):
        clock.now = float(second)
        line.update(rate * second)
    assert line.eta_seconds() == pytest.approx(60.0)


@pytest.mark.parametrize("prepare_s", [0.5, 9.0, 300.0])
def test_a_stage_that_prepares_first_is_forecast_at_its_streaming_rate(prepare_s):
    """Work first reported after ``prepare_s`` of preparation, then 1,000 rows a second: the
    ETA is what is left at that rate, however long the preparation took."""
    line, clock, _ = progress(total=100_000)
    clock.now = prepare_s
    line.update(0)  # a stage may report zero first: not yet work
    for step in range(1, 21):
        clock.now = prepare_s + step
        line.update(1_000 * step)
    assert line.eta_seconds() == pytest.approx(80.0)


def test_no_eta_before_a_rate_is_known():
    line, clock, stream = progress(total=1_000, every_s=1.0)
    assert line.eta_seconds() is None
    clock.now = 9.2
    line.update(58)  # the first report: work done, but no rate since it
    assert line.eta_seconds() is None
    assert "ETA" not in stream.getvalue() and "58 rows / 1,000 rows (5.8 %), 9.2 s" in stream.getvalue()
    clock.now = 10.2
    line.update(158)
    assert line.eta_seconds() == pytest.approx(8.42)
    assert stream.getvalue().splitlines()[-1].endswith("ETA 8.4 s")


def test_no_eta_without_a_total_and_none_below_zero():
    line, clock, _ = progress(total=None)
    for second in (1, 2, 3):
        clock.now = float(second)
        line.update(10 * second)
    assert line.eta_seconds() is None
    done, clock, _ = progress(total=10)
    for second, rows in ((1, 5), (2, 12)):  # more than the total: nothing left, not a negative time
        clock.now = float(second)
        done.update(rows)
    assert done.eta_seconds() == 0.0


def test_lines_are_printed_at_most_every_interval_and_the_last_says_how_long():
    line, clock, stream = progress(total=1_000, every_s=5.0)
    for tenth in range(1, 121):
        clock.now = tenth / 10
        line.update(tenth * 5)
    assert len(stream.getvalue().splitlines()) == 2  # at 5 s and at 10 s
    line.finish("600 rows")
    assert stream.getvalue().splitlines()[-1] == "litpath test: 600 rows, 600 rows, done in 12.0 s"


def test_threads_reporting_to_one_line_are_each_counted_once():
    """The merge's rewrites report from their own threads to the merge's line: no report lost."""
    line, _, _ = progress(total=None, every_s=0.0)  # a line at each report: the most work under the lock
    threads = [threading.Thread(target=lambda: [line.advance(3) for _ in range(2_000)]) for _ in range(8)]
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two steps: a read and its write apart
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    assert line.done == 8 * 2_000 * 3
