"""The service in front of the upstreams: what both models share.

Source 001's service takes requests at a fixed rate and makes one remote call per request, to the
upstreams in turn (round robin: request ``i`` goes to endpoint ``i % E``). Its modelling tool makes
the requests inside the service process, on a schedule, and so does this one: request ``i`` arrives
at ``t0 + i / rate`` whatever the service is doing, and its latency counts from that moment, so
time spent waiting for a free thread is counted, not hidden (an open loop, as in :mod:`iolab.load`).
The two models (:mod:`~iolab.topics.upstreams.sync`, :mod:`~iolab.topics.upstreams.asyncio`, and the async one
again on :mod:`~iolab.topics.upstreams.trio`) differ only in how they wait for the upstream's answer; all
record every request in a :class:`Ledger`. The process that runs one is :mod:`~iolab.topics.upstreams.service_process`.
"""

from __future__ import annotations

import collections
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from iolab.kit import platforms, procfs
from iolab.kit.channel import Spec, send_progress
from iolab.topics.upstreams.spec import Endpoint

NAN = math.nan
OK = "ok"
LATE = "late"  # answered, but after the caller's deadline (late_s): useless to the caller
UNFINISHED = "unfinished"  # no outcome when the run hit its time limit
REJECTED = "rejected"  # the async service's concurrency limit turned it away
# Source 001's tool counts a call of 1 s or more as failed (its TIMEOUT constant, 1,000 ms): with
# a 30 s upstream, the call "times out" after 30 s. The same deadline decides here.
LATE_S = 1.0
# How often the run checks whether it is over, and how often it reads its own RSS.
POLL_S = 0.05
SAMPLE_S = 0.1
PARKED = "PARKED"


@dataclass(frozen=True)
class ServiceSpec(Spec):
    """One run of the service, as the service process gets it (a :class:`~iolab.kit.channel.Spec`)."""

    ENTRY: ClassVar[str] = "iolab.topics.upstreams.service_process"

    model: str  # "sync" or "async"
    rate: float  # requests per second
    num_req: int
    endpoints: tuple[Endpoint, ...]
    ports: tuple[int, ...]
    threads: int = 50  # sync: the pool
    loop: str = "asyncio"  # async: "asyncio", "uvloop" or "trio"
    timeout_s: float | None = None  # the client timeout on each upstream call; None: wait forever
    limit: int | None = None  # async: calls in flight at most, per upstream or per service
    limit_scope: str = "upstream"  # "upstream" (a bulkhead per endpoint) or "service" (one for all)
    late_s: float = LATE_S
    max_seconds: float = 120.0  # the run stops here, finished or not
    stack_kb: int | None = None  # sync: each thread's stack reservation (None: the C library's default)
    park: bool = False  # start the pool or the loop, print PARKED and wait: for memory readings

    def address(self, index: int) -> tuple[str, int]:
        """Where endpoint ``index`` listens."""
        return ("127.0.0.1", self.ports[index])


def classify(kind: str, call_s: float, late_s: float) -> str:
    """The request's outcome: the call's own (ok, refused, timeout...), or ``late`` for a slow ok."""
    return LATE if kind == OK and call_s >= late_s else kind


class Ledger:
    """What happened to every request: when a worker took it up, when it ended, and how.

    Times are seconds since ``t0``, the first request's arrival. Each request is written by the one
    thread or task that handles it, so no lock is needed.
    """

    def __init__(self, num_req: int) -> None:
        self.t0 = 0.0
        self.started = [NAN] * num_req  # its call began (after any wait for a thread)
        self.done = [NAN] * num_req
        self.kind = [UNFINISHED] * num_req

    def start(self, i: int, now: float) -> None:
        """Request ``i``'s call begins now."""
        self.started[i] = now - self.t0

    def finish(self, i: int, kind: str, now: float) -> None:
        """Request ``i`` ended now with outcome ``kind``."""
        self.done[i] = now - self.t0
        self.kind[i] = kind

    def result(self, seconds: float, samples: list[tuple[float, int, int]], cpu_s: float, late_s: float) -> dict[str, Any]:
        """The run's record, JSON-ready (times rounded to microseconds).

        A call still waiting after ``late_s`` at the end is recorded ``late`` (whatever comes now
        comes too late, see :func:`over`) with no end time: it was still hanging.
        """
        for i, started in enumerate(self.started):
            if self.kind[i] == UNFINISHED and seconds - started >= late_s:  # False for NaN
                self.kind[i] = LATE

        def us(values: list[float]) -> list[float | None]:
            return [None if v != v else round(v, 6) for v in values]  # NaN is not JSON

        return {
            "seconds": round(seconds, 6),
            "started": us(self.started),
            "done": us(self.done),
            "kind": self.kind,
            "samples": samples,
            "cpu_s": round(cpu_s, 3),
        }


class Limiter:
    """The async models' calls in flight, per endpoint or for the whole service; ``admit`` says no
    past the limit. No lock: one event loop runs every admit and release."""

    def __init__(self, spec: ServiceSpec) -> None:
        self.limit = spec.limit
        self.per_upstream = spec.limit_scope == "upstream"
        self.busy = collections.Counter[int]()

    def _key(self, e: int) -> int:
        return e if self.per_upstream else -1

    def admit(self, e: int) -> bool:
        if self.limit is not None and self.busy[self._key(e)] >= self.limit:
            return False
        self.busy[self._key(e)] += 1
        return True

    def release(self, e: int) -> None:
        self.busy[self._key(e)] -= 1


class InFlight:
    """The async models' bookkeeping of each request: the ledger, the limit, and the calls still
    waiting (for :meth:`Schedule.done`). One event loop runs it all: no lock."""

    def __init__(self, spec: ServiceSpec, ledger: Ledger) -> None:
        self.ledger = ledger
        self.limiter = Limiter(spec)
        self.late_s = spec.late_s
        self.endpoints = len(spec.ports)
        self.since: dict[int, float] = {}  # request -> when its call began
        self.finished = 0

    async def handle(self, i: int, call: Callable[[int], Awaitable[str]]) -> None:
        """Request ``i``, start to end: ``call(endpoint)`` makes the call (with the loop's own
        timeout) and returns its outcome; it is not made if the limit turns the request away."""
        e = i % self.endpoints
        started = time.perf_counter()
        self.ledger.start(i, started)
        if not self.limiter.admit(e):
            self.ledger.finish(i, REJECTED, started)
            self.finished += 1
            return
        self.since[i] = started
        try:
            kind = await call(e)
        finally:  # also when cancelled, with no outcome to record: the limit's slot is freed
            del self.since[i]
            self.limiter.release(e)
        now = time.perf_counter()
        self.ledger.finish(i, classify(kind, now - started, self.late_s), now)
        self.finished += 1


def over(finished: int, num_req: int, busy_since: Iterable[float], now: float, late_s: float) -> bool:
    """True when every request has an outcome or can no longer get a useful one.

    A call that has lasted ``late_s`` will end ``late`` whatever comes: the run need not wait for
    a 30 s upstream once every other request is done (its thread, of course, still does).
    """
    return finished + sum(1 for since in busy_since if now - since >= late_s) >= num_req


class Monitor:
    """The run's clock-driven chores: a TICK line a second (for progress bars), a memory sample
    (resident KiB and open descriptors) every SAMPLE_S."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.next_tick = t0 + 1.0
        self.next_sample = t0
        self.samples: list[tuple[float, int, int]] = []
        self.pid = os.getpid()
        self.cpu0 = procfs.cpu_seconds()
        self.elsewhere = None  # off Linux (macOS): psutil's view of this process, which asks the kernel its own way
        if platforms.missing("procfs") is not None:
            import psutil  # here: on Linux the service does without it

            self.elsewhere = psutil.Process(self.pid)

    def memory_and_descriptors(self) -> tuple[int, int]:
        """This process's resident memory (KiB) and open descriptors, now."""
        if self.elsewhere is not None:
            return self.elsewhere.memory_info().rss // 1024, self.elsewhere.num_fds()
        return procfs.status(self.pid).vm_rss_kb, len(os.listdir("/proc/self/fd"))

    def poll(self, now: float, finished: int) -> None:
        """Do what is due at ``now``."""
        if now >= self.next_sample:
            self.samples.append((round(now - self.t0, 3), *self.memory_and_descriptors()))
            self.next_sample += SAMPLE_S
        if now >= self.next_tick:
            send_progress(int(now - self.t0), finished)
            self.next_tick += 1.0


class Schedule:
    """The run's clock: request ``i`` arrives at ``t0 + i / rate``; the run ends when :func:`over`
    says so or at ``max_seconds``. Both models drive their loop with it, the sync one sleeping in
    ``time.sleep``, the async one in ``asyncio.sleep``."""

    def __init__(self, spec: ServiceSpec, ledger: Ledger) -> None:
        self.spec = spec
        self.ledger = ledger
        self.t0 = ledger.t0 = time.perf_counter()
        self.end = self.t0 + spec.max_seconds
        self.issued = 0
        self.monitor = Monitor(self.t0)

    def arrivals(self, now: float) -> range:
        """The requests whose arrival time has come since the last call, late or not."""
        due = min(self.spec.num_req, int((now - self.t0) * self.spec.rate) + 1)
        new = range(self.issued, max(self.issued, due))
        self.issued = new.stop
        return new

    def done(self, now: float, finished: int, busy_since: Iterable[float]) -> bool:
        """Do the monitor's chores; True when the run is over (see :func:`over`) or out of time."""
        self.monitor.poll(now, finished)
        spec = self.spec
        return now >= self.end or (self.issued == spec.num_req and over(finished, spec.num_req, busy_since, now, spec.late_s))

    def pause(self) -> float:
        """How long to sleep: until the next arrival, and never more than POLL_S."""
        if self.issued == self.spec.num_req:
            return POLL_S
        return min(max(self.t0 + self.issued / self.spec.rate - time.perf_counter(), 0.0), POLL_S)

    def result(self) -> dict[str, Any]:
        """The ledger's record of the run, now."""
        m = self.monitor
        return self.ledger.result(time.perf_counter() - self.t0, m.samples, procfs.cpu_seconds() - m.cpu0, self.spec.late_s)
