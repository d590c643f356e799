"""When a worker sends: the window its run issues requests in, and the open loop's schedule.

Both loops issue requests inside a ``Window``: from the start until the deadline, or until the
worker's request budget (``--requests``, split over the workers) is spent. A closed loop sends
whenever a connection is free; an open loop sends on an ``OpenSchedule`` of intended times.
"""

from __future__ import annotations

import collections
import sys
from typing import Generic, TypeVar

# What sends a due request: the run's connection slots. The schedule only holds them in order, so it
# need not know what they are.
T = TypeVar("T")


class Window:
    """When a run issues requests: from ``open()`` until its deadline or its ``budget``th attempt.

    ``attempts`` counts the requests started, answered or not. A run whose budget runs out before
    the deadline is *stopped early*: its measured window ends with its last answer instead.
    """

    __slots__ = ("duration_s", "budget", "attempts", "t0", "deadline", "issuing", "stopped_early", "last_answer")

    def __init__(self, duration_s: float, budget: int | None) -> None:
        self.duration_s = duration_s
        self.budget = budget if budget is not None else sys.maxsize
        self.attempts = 0
        self.t0 = self.deadline = self.last_answer = 0.0  # perf_counter() times
        self.issuing = False
        self.stopped_early = False

    def open(self, now: float) -> None:
        """Start issuing at ``now``."""
        self.t0 = now
        self.deadline = now + self.duration_s
        self.issuing = True

    def close(self, early: bool = False) -> None:
        """No new requests from now on (those in flight may finish); ``early``: the budget ran out."""
        if self.issuing:
            self.issuing = False
            self.stopped_early = early

    def measured_s(self) -> float:
        """The window's length: the duration asked for, or up to the last answer if stopped early."""
        return (self.last_answer - self.t0) if self.stopped_early else self.duration_s


class OpenSchedule(Generic[T]):
    """The open loop's schedule: when each request is due, and which connection sends it.

    Request n is due at ``first + n * interval`` (:meth:`iolab.load._run.Run._tick` computes it
    there, once per request): from the first, not by adding ``interval`` n times, so that rounding
    cannot make the rate drift over a long run. A due request
    goes to the connection that has been free longest (rotating through the whole pool is what lets
    ``never_served`` expose a connection the server does not answer); when none is free, its
    intended time waits in ``waiting`` for the next connection freed. So at most one of ``free``
    and ``waiting`` holds anything.
    """

    __slots__ = ("phase_s", "interval", "first", "next_intended", "free", "waiting")

    def __init__(self, rate: float, phase_s: float) -> None:
        self.phase_s = phase_s  # offset of this worker's schedule, so that the workers' interleave
        self.interval = 1.0 / rate
        self.first = self.next_intended = 0.0
        self.free: collections.deque[T] = collections.deque()  # free connections, longest free first
        self.waiting: collections.deque[float] = collections.deque()  # intended times, oldest first

    def start(self, t0: float, slots: list[T]) -> None:
        """Begin at ``t0`` (plus this worker's phase) with every slot free."""
        self.first = self.next_intended = t0 + self.phase_s
        self.free.extend(slots)
