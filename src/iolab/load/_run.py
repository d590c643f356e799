"""``Run``: one worker's load, driven by callbacks on its event loop, and the record it leaves.

The run is callback-driven, like wrk: a connection slot that gets its answer records it and, in a
closed loop, writes the next request from the same callback, with no task switch in between.
In an open loop a timer walks a fixed schedule of *intended* send times; a request whose time has
come waits for a free connection if there is none, and its latency is counted twice: from the
intended time (corrected: what a user arriving on schedule saw) and from the actual write
(uncorrected: what a closed-loop tool would report). The gap between the two is coordinated omission.

Its state is in small parts, each in its own module: the connection slots (``Slot``), the
``Window`` of time the run issues requests in, in an open loop its ``OpenSchedule``, and the
``Tally`` of what was counted. ``Run.answer`` and ``Run._next`` run once per request: they read
and write those parts' fields directly, without helper calls or new objects, because this is the
hot path of every benchmark in the course.
"""

from __future__ import annotations

import asyncio
from time import perf_counter
from typing import Any

from iolab.kit.channel import send_progress
from iolab.load.client import request_bytes
from iolab.load._schedule import OpenSchedule, Window
from iolab.load._share import Share
from iolab.load._slot import Slot
from iolab.load._tally import Tally

# A refused connect fails in microseconds; without a pause, one slot would log a hundred thousand
# errors a second and starve every other slot of the loop.
CONNECT_BACKOFF_S = 0.01
# How often timeouts are checked: a timeout fires up to this much late, and the check walks
# every slot, so not too often.
SWEEP_S = 0.05


class Run:
    """One worker's run over its connection slots; ``result()`` is its JSON-ready record."""

    __slots__ = (
        "loop", "share", "host", "port", "keepalive", "request", "slots", "window", "schedule", "tally", "done"
    )

    def __init__(self, share: Share, loop: asyncio.AbstractEventLoop) -> None:
        spec = share.spec
        self.loop = loop
        self.share = share
        # Read by every new connection: parsed from the URL once, not per connect.
        self.host, self.port, self.keepalive = spec.host, spec.port, spec.keepalive
        self.request = request_bytes(spec.host, spec.port, spec.target, spec.keepalive)
        self.slots = [Slot(self) for _ in range(share.connections)]
        self.window = Window(spec.duration_s, share.max_requests)
        # None in a closed loop, where a slot sends again as soon as it is free.
        self.schedule: OpenSchedule[Slot] | None = (
            OpenSchedule(share.rate, share.phase_s) if spec.mode == "open" and share.rate else None
        )
        self.tally = Tally(spec.duration_s)
        self.done = asyncio.Event()  # set when the window has closed and nothing is in flight

    def start(self) -> None:
        """Begin: every slot fires (closed loop) or the schedule starts (open loop)."""
        window = self.window
        window.open(perf_counter())
        self.loop.call_later(window.duration_s, self._at_deadline)
        self.loop.call_later(SWEEP_S, self._sweep)
        self.loop.call_later(1.0, self._report, 1)
        if self.schedule is not None:
            self.schedule.start(window.t0, self.slots)
            self._tick()
        else:
            for slot in self.slots:
                self._next(slot)

    def _at_deadline(self) -> None:
        left = self.window.deadline - perf_counter()
        if left > 0:  # libuv timers count whole milliseconds and may fire a little early
            self.loop.call_later(left, self._at_deadline)
            return
        if self.schedule is not None:
            self._tick()  # a timer can fire late: send what was due before the deadline first
        self.window.close()

    def _tick(self) -> None:
        """Open loop: issue every request whose intended time has come, then sleep until the next."""
        schedule, window = self.schedule, self.window
        assert schedule is not None
        now = perf_counter()
        while window.issuing and schedule.next_intended <= now:
            intended = schedule.next_intended
            if intended >= window.deadline or window.attempts >= window.budget:
                window.close(early=intended < window.deadline)
                return
            window.attempts += 1
            # Slip: how late the generator itself got to this request. Waiting for a free
            # connection is not slip; it is the server's delay and goes into corrected latency.
            self.tally.slip.record_seconds(now - intended)
            if schedule.free:
                schedule.free.popleft().fire(intended)
            else:
                schedule.waiting.append(intended)
            schedule.next_intended = schedule.first + window.attempts * schedule.interval
        if window.issuing:
            # libuv timers count whole milliseconds: a gap under 1 ms becomes a 0 ms timer, so at
            # high rates the worker polls between sends. That keeps slip in microseconds, and shows
            # as CPU: at 20,000 req/s one worker reports ~100 % of a core, of which ~20 % is work.
            self.loop.call_later(max(0.0, schedule.next_intended - perf_counter()), self._tick)

    # --- completions (the hot path) -------------------------------------------------------------

    def answer(self, slot: Slot, status: int, size: int) -> None:
        """Record an answer and start the slot's next request."""
        now = perf_counter()
        window, tally = self.window, self.tally
        window.last_answer = now
        slot.busy = False
        tally.bytes += size
        seconds = tally.seconds
        second = seconds[min(int(now - window.t0), len(seconds) - 1)]  # tally.second_at, inlined
        if not 200 <= status < 300:
            tally.errors[f"http_{status}"] += 1
            second.errors += 1
        elif self.schedule is not None:
            second.answers += 1
            slot.served += 1
            second.latency.record_seconds(now - slot.intended)
            tally.uncorrected.record_seconds(now - slot.started)
        elif window.issuing or window.stopped_early or now <= window.deadline:
            second.answers += 1
            slot.served += 1
            second.latency.record_seconds(now - slot.started)
        else:
            # A closed loop's answers that arrive after the deadline were paid for by the window
            # but would inflate its rate by up to connections / duration: like wrk, count only
            # those in the window (their latency is still recorded). An open loop's rate is its
            # schedule's.
            tally.late += 1
            second.latency.record_seconds(now - slot.started)
        self._next(slot)

    def error(self, slot: Slot, kind: str, backoff: bool = False) -> None:
        """Count an error; the slot tries again (after a pause when the connect failed)."""
        self.tally.error(kind, perf_counter() - self.window.t0)
        if backoff:
            # The slot stays busy while it waits: the run is not done before it has tried again.
            self.loop.call_later(CONNECT_BACKOFF_S, self._after_backoff, slot)
        else:
            slot.busy = False
            self._next(slot)

    def _after_backoff(self, slot: Slot) -> None:
        slot.busy = False
        self._next(slot)

    def _next(self, slot: Slot) -> None:
        """Give a free slot its next request: the oldest one waiting, or (closed loop) a new one."""
        window = self.window
        if not window.issuing:
            return
        schedule = self.schedule
        if schedule is not None:
            if schedule.waiting:
                slot.fire(schedule.waiting.popleft())
            else:
                schedule.free.append(slot)
        elif window.attempts < window.budget:
            window.attempts += 1
            slot.fire(0.0)
        else:
            window.close(early=True)

    # --- housekeeping ---------------------------------------------------------------------------

    def _sweep(self) -> None:
        limit = perf_counter() - self.share.spec.timeout_s
        busy = False
        for slot in self.slots:
            if slot.overdue(limit):
                slot.timeout()
            busy = busy or slot.busy
        if not self.window.issuing and not busy:
            self.done.set()
        else:
            self.loop.call_later(SWEEP_S, self._sweep)

    def _report(self, second: int) -> None:
        send_progress(second, self.tally.answers, self.tally.error_count)
        if self.window.issuing:
            next_at = self.window.t0 + second + 1
            self.loop.call_later(max(0.0, next_at - perf_counter()), self._report, second + 1)

    def in_flight(self) -> int:
        """How many slots have a request (or a connect, or a pause before one) in flight."""
        return sum(slot.busy for slot in self.slots)

    def close(self) -> None:
        """Close every connection still open."""
        for slot in self.slots:
            slot.close()

    def result(self) -> dict[str, Any]:
        """This worker's measurements, JSON-ready: the fields :func:`iolab.load.manager.merge` reads."""
        tally, slots, schedule = self.tally, self.slots, self.schedule
        return {
            "duration_s": self.window.measured_s(),
            "requests": tally.answers,
            "late": tally.late,
            "errors": dict(tally.errors),
            "sent": sum(slot.sent for slot in slots),
            "unsent": len(schedule.waiting) if schedule is not None else 0,  # due, never sent
            "bytes_received": tally.bytes,
            "per_connection": [slot.served for slot in slots],
            "histograms": tally.histograms(open_loop=schedule is not None),
            "seconds": [second.to_dict() for second in tally.seconds],
        }
