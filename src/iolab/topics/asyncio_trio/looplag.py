"""Event-loop lag: how late a task that asked to sleep ``interval`` actually wakes up.

An event loop can only wake a task between two callbacks. If some code runs for 50 ms without an
``await`` (a blocking call, a CPU-bound computation), every other task, and every client of a
server, waits those 50 ms. A *ticker* makes that visible: it sleeps ``interval`` again and again and
records how much later than asked it woke. On an idle loop the lag is the timer's slack (well under
a millisecond); while something blocks, it is that something's duration.

The ticker itself knows no library: it is given the library's ``sleep``, so the same coroutine
runs on asyncio, uvloop and trio. ``open_asyncio_ticker`` and ``open_trio_ticker`` run it beside other work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import trio

INTERVAL_S = 0.002  # short enough to catch a 5 ms stall, long enough that ticking costs little CPU
PERCENTILES = (50, 90, 99)


@dataclass
class LagProbe:
    """What a ticker measured: for each wake-up, when (s since the probe started) and how late (ms)."""

    interval_s: float
    started: float = field(default_factory=time.perf_counter)
    at_s: list[float] = field(default_factory=list)
    lags_ms: list[float] = field(default_factory=list)

    def record(self, due: float, now: float) -> None:
        """Note a wake-up at ``now`` that was due at ``due`` (perf_counter seconds)."""
        self.at_s.append(now - self.started)
        self.lags_ms.append(max(0.0, now - due) * 1000)

    def summary(self) -> dict[str, float]:
        """Wake-ups, p50/p90/p99 and max lag in ms, and the % of time stalled (NaN when nothing was measured)."""
        ordered = sorted(self.lags_ms)
        row: dict[str, float] = {"wakeups": len(ordered)}
        for p in PERCENTILES:
            row[f"lag_p{p}_ms"] = _percentile(ordered, p)
        row["lag_max_ms"] = ordered[-1] if ordered else math.nan
        # The share of the watched time the ticker spent waiting past its due time: how much of the
        # time a tiny task (a request for "/") would have found the loop busy.
        span_s = self.at_s[-1] if self.at_s else math.nan
        row["stalled_pct"] = 100 * sum(ordered) / 1000 / span_s if self.at_s else math.nan
        return row


def _percentile(ordered: list[float], p: float) -> float:
    if not ordered:
        return math.nan
    rank = min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))  # nearest-rank
    return ordered[rank]


async def tick(sleep: Callable[[float], Awaitable[object]], probe: LagProbe) -> None:
    """Sleep ``probe.interval_s`` with ``sleep`` (asyncio's or trio's) forever, recording each wake-up's lag."""
    while True:
        due = time.perf_counter() + probe.interval_s
        await sleep(probe.interval_s)
        probe.record(due, time.perf_counter())


@contextlib.asynccontextmanager
async def open_asyncio_ticker(interval_s: float = INTERVAL_S) -> AsyncIterator[LagProbe]:
    """Tick on the running asyncio loop for the duration of the block; the probe it fills."""
    probe = LagProbe(interval_s)
    ticker = asyncio.get_running_loop().create_task(tick(asyncio.sleep, probe))
    await asyncio.sleep(0)  # the ticker's first step runs now (asyncio is FIFO): it is asleep before the work starts
    try:
        yield probe
        await asyncio.sleep(2 * interval_s)  # let an overdue wake-up be recorded: it is the largest lag
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker


@contextlib.asynccontextmanager
async def open_trio_ticker(interval_s: float = INTERVAL_S) -> AsyncIterator[LagProbe]:
    """Tick in a trio task for the duration of the block; the probe it fills."""
    probe = LagProbe(interval_s)
    async with trio.open_nursery() as nursery:
        # start(), not start_soon(): trio runs a batch of ready tasks in random order, so a ticker
        # started "soon" may take its first step after the work it should watch.
        await nursery.start(_tick_trio, probe)
        yield probe
        await trio.sleep(2 * interval_s)  # let an overdue wake-up be recorded: it is the largest lag
        nursery.cancel_scope.cancel()


async def _tick_trio(probe: LagProbe, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()  # the ticker goes on to its first sleep before its starter runs again
    await tick(trio.sleep, probe)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def capture_slow_callbacks() -> Iterator[list[str]]:
    """Collect the warnings asyncio's debug mode logs ("Executing <Task ...> took 0.2 seconds")."""
    logger = logging.getLogger("asyncio")
    handler = _Collect()
    level = logger.level
    # the warnings must reach the handler even where an imported library raised the root logger's level
    logger.setLevel(min(logging.WARNING, level or logging.WARNING))
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
