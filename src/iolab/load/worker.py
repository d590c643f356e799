"""One load-generating process: its share of the connections, or of the rate, on one uvloop loop.

``python -m iolab.load.worker SHARE_JSON`` prints ``READY``, waits for SIGUSR1 (so that all workers
start together), runs, prints ``TICK second answers errors`` once a second and finally
``RESULT {json}``. The manager (:mod:`iolab.load.manager`) starts the workers and merges results.

The run is callback-driven, like wrk: a connection slot that gets its answer records it and, in a
closed loop, writes the next request from the same callback, with no task switch in between.
In an open loop a timer walks a fixed schedule of *intended* send times; a request whose time has
come waits for a free connection if there is none, and its latency is counted twice: from the
intended time (corrected: what a user arriving on schedule saw) and from the actual write
(uncorrected: what a closed-loop tool would report). The gap between the two is coordinated omission.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import json
import resource
import signal
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from iolab.load.client import Connection, request_bytes
from iolab.load.histogram import Histogram
from iolab.load.model import LoadSpec
from iolab.kit.machine import raise_open_files_limit

# How long a worker waits for the manager's start signal before giving up on it.
START_TIMEOUT_S = 30.0
# A refused connect fails in microseconds; without a pause, one slot would log a hundred thousand
# errors a second and starve every other slot of the loop.
CONNECT_BACKOFF_S = 0.01
# How often timeouts are checked: a timeout fires up to this much late, and the check walks
# every slot, so not too often.
SWEEP_S = 0.05
# Descriptors a worker needs besides its sockets (stdio, the loop's epoll and signal pipes...).
SPARE_FDS = 32

perf_counter = time.perf_counter


@dataclass(frozen=True)
class Share:
    """One worker's part of a run: its slots, its rate and where its schedule starts."""

    spec: LoadSpec
    index: int
    connections: int
    rate: float | None  # open loop: this worker's requests per second
    phase_s: float  # open loop: offset of its first send, so that the workers' schedules interleave
    max_requests: int | None

    def to_json(self) -> str:
        """The share as one JSON argument."""
        return json.dumps(asdict(self) | {"spec": self.spec.to_dict()})

    @classmethod
    def from_json(cls, text: str) -> Share:
        """The share ``to_json`` wrote."""
        d = json.loads(text)
        return cls(**(d | {"spec": LoadSpec.from_dict(d["spec"])}))


def connect_error_kind(exc: OSError) -> str:
    """The error kind of a failed connect: refused, connect_timeout, or connect_<errno name>."""
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, TimeoutError):
        return "connect_timeout"
    return "connect_" + errno.errorcode.get(exc.errno or 0, type(exc).__name__).lower()


class Slot:
    """One connection slot: at most one request in flight; reconnects when its connection goes."""

    __slots__ = ("run", "conn", "busy", "connecting", "started", "intended", "served")

    def __init__(self, run: Run) -> None:
        self.run = run
        self.conn: Connection | None = None
        self.busy = False  # a request is in flight (connecting, written, or backing off)
        self.connecting: asyncio.Task[None] | None = None
        self.started = 0.0  # when the request's latency starts (write, or connect without keep-alive)
        self.intended = 0.0  # open loop: when the schedule wanted it sent
        self.served = 0  # 2xx answers on this slot

    def fire(self, intended: float) -> None:
        """Start one request: on the open connection, or after connecting a new one."""
        self.busy = True
        self.intended = intended
        self.started = perf_counter()
        if self.conn is None:
            self.connecting = self.run.loop.create_task(self._connect())
        else:
            self.conn.send(self.run.request)
            self.run.sent += 1

    async def _connect(self) -> None:
        run = self.run
        try:
            _, conn = await run.loop.create_connection(lambda: Connection(self), run.host, run.port)
        except OSError as exc:
            self.connecting = None
            run.error(self, connect_error_kind(exc), backoff=True)
            return
        self.connecting = None
        if conn.transport is None:  # the server closed it before this task resumed
            run.error(self, "closed")
            return
        self.conn = conn
        if run.keepalive:
            self.started = perf_counter()  # with keep-alive, connecting is setup, not latency
        conn.send(run.request)
        run.sent += 1

    def timeout(self) -> None:
        """Give up on the request in flight."""
        if self.connecting is not None:
            self.connecting.cancel()
            self.connecting = None
            kind = "connect_timeout"
        else:
            kind = "timeout"
            self._drop(abort=True)
        self.run.error(self, kind)

    def _drop(self, abort: bool = False) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close(abort)

    # --- what the connection reports (client.Listener) ---------------------------------------

    def answered(self, conn: Connection, status: int, size: int) -> None:
        if conn is not self.conn or not self.busy:
            return
        if conn.close_after or not self.run.keepalive:
            self._drop()
        self.run.answer(self, status, size)

    def failed(self, conn: Connection, kind: str) -> None:
        if conn is self.conn and self.busy:
            self._drop(abort=True)
            self.run.error(self, kind)

    def lost(self, conn: Connection, exc: Exception | None) -> None:
        if conn is not self.conn:
            return  # a connection this slot already let go of
        self.conn = None
        if self.busy and self.connecting is None:
            kind = "closed" if exc is None else ("reset" if isinstance(exc, ConnectionResetError) else "io_error")
            self.run.error(self, kind)


class Run:
    """The state of one worker's run; ``result()`` is its JSON-ready record."""

    def __init__(self, share: Share, loop: asyncio.AbstractEventLoop) -> None:
        spec = share.spec
        self.loop = loop
        self.spec = spec
        self.share = share
        self.host, self.port, self.keepalive = spec.host, spec.port, spec.keepalive
        self.request = request_bytes(spec.host, spec.port, spec.target, spec.keepalive)
        self.open_loop = spec.mode == "open"
        self.slots = [Slot(self) for _ in range(share.connections)]
        # Free connections, longest idle first: rotating through the whole pool is what lets
        # never_served expose a connection the server does not answer.
        self.free: collections.deque[Slot] = collections.deque()
        self.waiting: collections.deque[float] = collections.deque()  # intended times, oldest first
        self.errors: collections.Counter[str] = collections.Counter()
        self.requests = self.sent = self.attempts = self.bytes = self.backing_off = self.late = 0
        # Per second: [2xx answers, errors, histogram]; the histogram is the corrected latency in
        # open loop, the only one in closed loop. Totals are merged from them at the end.
        n = max(1, int(-(-spec.duration_s // 1)))
        self.seconds: list[list[Any]] = [[0, 0, Histogram()] for _ in range(n)]
        self.latency = Histogram()  # open loop: uncorrected, from the actual write
        self.slip = Histogram()
        self.issuing = False
        self.done = asyncio.Event()
        self.t0 = self.deadline = self.last_answer = 0.0
        self.stopped_early = False
        self.interval = 1.0 / share.rate if share.rate else 0.0
        self.budget = share.max_requests if share.max_requests is not None else sys.maxsize

    def start(self) -> None:
        """Begin: every slot fires (closed loop) or the schedule starts (open loop)."""
        self.t0 = perf_counter()
        self.deadline = self.t0 + self.spec.duration_s
        self.issuing = True
        self.loop.call_later(self.spec.duration_s, self._at_deadline)
        self.loop.call_later(SWEEP_S, self._sweep)
        self.loop.call_later(1.0, self._report, 1)
        if self.open_loop:
            self.free.extend(self.slots)
            self.next_intended = self.t0 + self.share.phase_s
            self._tick()
        else:
            for slot in self.slots:
                self._next(slot)

    def _at_deadline(self) -> None:
        left = self.deadline - perf_counter()
        if left > 0:  # libuv timers count whole milliseconds and may fire a little early
            self.loop.call_later(left, self._at_deadline)
            return
        if self.open_loop:
            self._tick()  # a timer can fire late: send what was due before the deadline first
        self.stop_issuing()

    def stop_issuing(self, early: bool = False) -> None:
        """No new requests from now on; those in flight may finish. ``early``: max_requests reached."""
        if self.issuing:
            self.issuing = False
            self.stopped_early = early

    # --- open loop schedule ---------------------------------------------------------------------

    def _tick(self) -> None:
        now = perf_counter()
        while self.issuing and self.next_intended <= now:
            intended = self.next_intended
            if intended >= self.deadline or self.attempts >= self.budget:
                self.stop_issuing(early=intended < self.deadline)
                return
            self.attempts += 1
            # Slip: how late the generator itself got to this request. Waiting for a free
            # connection is not slip; it is the server's delay and goes into corrected latency.
            self.slip.record_seconds(now - intended)
            if self.free:
                self.free.popleft().fire(intended)
            else:
                self.waiting.append(intended)
            self.next_intended = self.t0 + self.share.phase_s + self.attempts * self.interval
        if self.issuing:
            # libuv timers count whole milliseconds: a gap under 1 ms becomes a 0 ms timer, so at
            # high rates the worker polls between sends. That keeps slip in microseconds, and shows
            # as CPU: at 20,000 req/s one worker reports ~100 % of a core, of which ~20 % is work.
            self.loop.call_later(max(0.0, self.next_intended - perf_counter()), self._tick)

    # --- completions ----------------------------------------------------------------------------

    def answer(self, slot: Slot, status: int, size: int) -> None:
        """Record an answer and start the slot's next request."""
        now = self.last_answer = perf_counter()
        slot.busy = False
        self.bytes += size
        second = self.seconds[min(int(now - self.t0), len(self.seconds) - 1)]
        # A closed loop's answers that arrive after the deadline were paid for by the window but
        # would inflate its rate by up to connections / duration: like wrk, count only those in
        # the window (their latency is still recorded). An open loop's rate is its schedule's.
        late = not self.open_loop and not self.issuing and not self.stopped_early and now > self.deadline
        if 200 <= status < 300 and late:
            self.late += 1
            second[2].record_seconds(now - slot.started)
        elif 200 <= status < 300:
            self.requests += 1
            slot.served += 1
            second[0] += 1
            if self.open_loop:
                second[2].record_seconds(now - slot.intended)
                self.latency.record_seconds(now - slot.started)
            else:
                second[2].record_seconds(now - slot.started)
        else:
            self.errors[f"http_{status}"] += 1
            second[1] += 1
        self._next(slot)

    def error(self, slot: Slot, kind: str, backoff: bool = False) -> None:
        """Count an error; the slot tries again (after a pause when the connect failed)."""
        self.errors[kind] += 1
        self.seconds[min(int(perf_counter() - self.t0), len(self.seconds) - 1)][1] += 1
        if backoff:
            self.backing_off += 1
            self.loop.call_later(CONNECT_BACKOFF_S, self._after_backoff, slot)
        else:
            slot.busy = False
            self._next(slot)

    def _after_backoff(self, slot: Slot) -> None:
        self.backing_off -= 1
        slot.busy = False
        self._next(slot)

    def _next(self, slot: Slot) -> None:
        if not self.issuing:
            return
        if self.open_loop:
            if self.waiting:
                slot.fire(self.waiting.popleft())
            else:
                self.free.append(slot)
        elif self.attempts < self.budget:
            self.attempts += 1
            slot.fire(0.0)
        else:
            self.stop_issuing(early=True)

    # --- housekeeping ---------------------------------------------------------------------------

    def _sweep(self) -> None:
        limit = perf_counter() - self.spec.timeout_s
        busy = False
        for slot in self.slots:
            if slot.busy and slot.started < limit and (slot.conn is not None or slot.connecting is not None):
                slot.timeout()
            busy = busy or slot.busy
        if not self.issuing and not busy and not self.backing_off:
            self.done.set()
        else:
            self.loop.call_later(SWEEP_S, self._sweep)

    def _report(self, second: int) -> None:
        print(f"TICK {second} {self.requests} {sum(self.errors.values())}", flush=True)
        if self.issuing:
            self.loop.call_later(max(0.0, self.t0 + second + 1 - perf_counter()), self._report, second + 1)

    def close(self) -> None:
        """Close every connection still open."""
        for slot in self.slots:
            if slot.connecting is not None:
                slot.connecting.cancel()
            slot._drop(abort=True)

    def result(self) -> dict[str, Any]:
        """This worker's measurements, JSON-ready."""
        seconds = [{"requests": r, "errors": e, "histogram": h.encode()} for r, e, h in self.seconds]
        per_second = Histogram.merged([h for _, _, h in self.seconds])
        histograms = {"latency": per_second.encode()}
        if self.open_loop:
            histograms = {"latency": self.latency.encode(), "corrected": per_second.encode(), "slip": self.slip.encode()}
        return {
            # Stopped early by max_requests: the window ends with the last answer, not the deadline.
            "duration_s": (self.last_answer - self.t0) if self.stopped_early else self.spec.duration_s,
            "requests": self.requests,
            "late": self.late,
            "errors": dict(self.errors),
            "sent": self.sent,
            "unsent": len(self.waiting),
            "bytes_received": self.bytes,
            "per_connection": [slot.served for slot in self.slots],
            "histograms": histograms,
            "seconds": seconds,
        }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_share(share: Share) -> dict[str, Any]:
    """Wait for SIGUSR1, run ``share`` and return its result (CPU seconds included)."""
    loop = asyncio.get_running_loop()
    go = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, go.set)
    print("READY", flush=True)
    await asyncio.wait_for(go.wait(), START_TIMEOUT_S)
    run = Run(share, loop)
    cpu = _cpu_seconds()
    run.start()
    spec = share.spec
    try:
        # The sweeper ends every request within its timeout; the margin only guards against a bug.
        await asyncio.wait_for(run.done.wait(), spec.duration_s + spec.timeout_s + 5.0)
    except TimeoutError:
        run.errors["unfinished"] += sum(slot.busy for slot in run.slots)
    finally:
        run.close()
    return run.result() | {"cpu_s": _cpu_seconds() - cpu}


def main(argv: list[str]) -> int:
    """Run the share given as JSON in ``argv[1]``; print its result as one ``RESULT`` line."""
    import uvloop

    share = Share.from_json(argv[1])
    # The manager has already checked that the hard limit suffices.
    raise_open_files_limit(share.connections + SPARE_FDS)
    result = uvloop.run(run_share(share))
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
