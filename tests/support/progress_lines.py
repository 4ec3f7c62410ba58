"""Progress lines as a test sees them: each report recorded with the stage named at the time,
each line printing at every report on a clock that moves a second each time it is read."""

from __future__ import annotations

import io

from pipeline.runtime.progress import Progress


class TickingClock:
    """A clock that moves one second each time it is read: every report is a second apart."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class RecordedLines:
    """Makes progress lines (called as ``Progress(what, total, unit)`` is, or as a grouping's
    ``progress_for(total, unit)``) and records every report to them: ``reports`` holds
    (stage, done) in order, ``stream`` what they printed."""

    def __init__(self) -> None:
        self.lines: list[Progress] = []
        self.stream = io.StringIO()
        self.reports: list[tuple[str, float]] = []

    def __call__(self, *args, **_kwargs) -> Progress:
        what, total, unit = args if len(args) == 3 else ("litpath test", *args)
        line = Progress(what, total, unit, every_s=0.0, stream=self.stream, clock=TickingClock())
        update = line.update

        def recorded(done: float) -> None:
            self.reports.append((line.stage_name, done))
            update(done)

        line.update = recorded  # type: ignore[method-assign]
        self.lines.append(line)
        return line

    @property
    def done(self) -> list[float]:
        return [value for _, value in self.reports]

    def stages(self) -> list[str]:
        """The stages reports were made in, each once, in their order."""
        seen: list[str] = []
        for stage, _ in self.reports:
            if not seen or seen[-1] != stage:
                seen.append(stage)
        return seen
