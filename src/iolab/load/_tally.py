"""What one worker counted: a tally for each second of its run, and the totals that are not per second.

The seconds are the run's timeline (a collapse shows in the second it happened) and also its
totals: the answers of a run are the sum of its seconds' answers, so they are counted once, in
place, by the worker's answer callback (:meth:`iolab.load._run.Run.answer`), which writes these
fields directly because it runs once per request.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from iolab.load.histogram import Histogram


@dataclass(slots=True, eq=False)
class Second:
    """One second of a run: its 2xx answers, its errors, and the latency of its 2xx answers.

    Mutable, unlike most records in the kit: it is counted in place on every answer. ``latency`` is
    the corrected latency in an open loop (from the intended send time), the only one in a closed loop.
    """

    answers: int = 0
    errors: int = 0
    latency: Histogram = field(default_factory=Histogram)

    def to_dict(self) -> dict[str, int | str]:
        """The second as the manager and ``LoadResult.seconds`` read it (``requests``: 2xx answers)."""
        return {"requests": self.answers, "errors": self.errors, "histogram": self.latency.encode()}


class Tally:
    """One worker's counts: a ``Second`` per second of the run, errors by kind, bytes, late answers.

    An answer or error after the last second (the run's tail, after the deadline) is counted in
    the last second.
    """

    __slots__ = ("seconds", "errors", "late", "bytes", "uncorrected", "slip")

    def __init__(self, duration_s: float) -> None:
        self.seconds = [Second() for _ in range(max(1, int(-(-duration_s // 1))))]
        self.errors: collections.Counter[str] = collections.Counter()  # kind -> count
        self.late = 0  # closed loop: 2xx answers after the deadline, left out of the rate
        self.bytes = 0  # response bytes, heads included
        self.uncorrected = Histogram()  # open loop: latency from the actual write
        self.slip = Histogram()  # open loop: actual minus intended send time

    def second_at(self, elapsed_s: float) -> Second:
        """The tally of the second ``elapsed_s`` falls in (the last one past the end)."""
        return self.seconds[min(int(elapsed_s), len(self.seconds) - 1)]

    def error(self, kind: str, elapsed_s: float) -> None:
        """Count one error of ``kind``, ``elapsed_s`` seconds into the run."""
        self.errors[kind] += 1
        self.second_at(elapsed_s).errors += 1

    @property
    def answers(self) -> int:
        """2xx answers inside the window, all seconds together."""
        return sum(second.answers for second in self.seconds)

    @property
    def error_count(self) -> int:
        """Errors of every kind."""
        return sum(self.errors.values())

    def histograms(self, open_loop: bool) -> dict[str, str]:
        """The encoded histograms of a worker's result: ``latency``, and in an open loop also
        ``corrected`` (the seconds' histograms merged) and ``slip``."""
        from_seconds = Histogram.merged([second.latency for second in self.seconds]).encode()
        if not open_loop:
            return {"latency": from_seconds}
        return {"latency": self.uncorrected.encode(), "corrected": from_seconds, "slip": self.slip.encode()}
