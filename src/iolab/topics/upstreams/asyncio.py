"""The async service: one event loop, a task per request, calls that wait without a thread.

A request is a task; its call writes the request and awaits a future that the connection's
protocol resolves when the answer is framed. While it waits, the task holds a socket and a few
objects, not a thread, so a slow upstream delays its own requests and nobody else's. Nothing
bounds how many wait, though: ``limit`` does, and what it does past the limit is the choice
made here: turn the request away at once (``rejected``), the cheapest answer to give under
overload. ``limit_scope="upstream"`` keeps one such count per endpoint (a bulkhead),
``"service"`` one for the whole service.

Mirrors :mod:`iolab.topics.upstreams.sync`: same ledger, same schedule, same framing client; only the
waiting differs. ``loop="uvloop"`` runs the same code on uvloop; :mod:`iolab.topics.upstreams.trio` is
the same service written for trio.
"""

from __future__ import annotations

import asyncio
import collections
import time

from iolab.load.client import ClientConnection, connect_error_kind, request_bytes
from iolab.topics.upstreams.service import OK, PARKED, InFlight, Ledger, Schedule, ServiceSpec

perf_counter = time.perf_counter


class Line:
    """One pooled connection to one upstream; resolves the pending call's future (a ``Listener``)."""

    def __init__(self) -> None:
        self.conn = ClientConnection(self)
        self.future: asyncio.Future[int | str] | None = None

    def _resolve(self, value: int | str) -> None:
        if self.future is not None and not self.future.done():
            self.future.set_result(value)

    def answered(self, conn: ClientConnection, status: int, size: int) -> None:
        self._resolve(status)

    def failed(self, conn: ClientConnection, kind: str) -> None:
        self._resolve("reset")

    def lost(self, conn: ClientConnection, exc: Exception | None) -> None:
        self._resolve("closed" if exc is None else "reset")

    @property
    def usable(self) -> bool:
        return self.conn.transport is not None and not self.conn.close_after


class AsyncCaller:
    """Idle connections per upstream, reused; a new one whenever none is idle."""

    def __init__(self, spec: ServiceSpec) -> None:
        self.spec = spec
        self.requests = [request_bytes(*spec.address(e), "/", True) for e in range(len(spec.ports))]
        self.idle: list[collections.deque[Line]] = [collections.deque() for _ in spec.ports]

    async def call(self, e: int) -> str:
        """Call endpoint ``e`` once; the outcome (``ok``, ``refused``, ``reset``...)."""
        idle = self.idle[e]
        while idle and not idle[-1].usable:
            idle.pop()
        line = idle.pop() if idle else None
        try:
            if line is None:
                line = Line()
                try:
                    await asyncio.get_running_loop().create_connection(lambda: line.conn, *self.spec.address(e))
                except OSError as exc:
                    return connect_error_kind(exc)
            line.future = asyncio.get_running_loop().create_future()
            line.conn.send(self.requests[e])
            result = await line.future  # the task sleeps here; the loop serves every other request
        except BaseException:  # cancelled by the timeout: the connection may yet get the answer
            if line is not None:
                line.conn.close(abort=True)
            raise
        if isinstance(result, str):
            line.conn.close(abort=True)
            return result
        if line.usable:
            idle.append(line)
        return OK if result == 200 else f"http_{result}"


async def serve(spec: ServiceSpec) -> dict | None:
    """Serve ``spec.num_req`` requests at ``spec.rate`` on this loop; the ledger's record."""
    if spec.park:
        print(PARKED, flush=True)
        await asyncio.Event().wait()  # until SIGTERM ends the process
    ledger = Ledger(spec.num_req)
    caller = AsyncCaller(spec)
    calls = InFlight(spec, ledger)
    tasks: set[asyncio.Task[None]] = set()  # strong references: the loop keeps only weak ones

    async def call(e: int) -> str:
        try:
            async with asyncio.timeout(spec.timeout_s):  # None: no timeout
                return await caller.call(e)
        except TimeoutError:
            return "timeout"

    schedule = Schedule(spec, ledger)
    while True:
        for i in schedule.arrivals(perf_counter()):
            task = asyncio.create_task(calls.handle(i, call))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if schedule.done(perf_counter(), calls.finished, calls.since.values()):
            return schedule.result()
        await asyncio.sleep(schedule.pause())


def run(spec: ServiceSpec) -> dict | None:
    """Run :func:`serve` on a fresh loop of the kind ``spec.loop`` names."""
    factory = None
    if spec.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    # Not closed on purpose: closing would cancel every call still hanging, one by one; the
    # process ends right after (serve.finish_process), and the kernel closes their sockets.
    return asyncio.Runner(loop_factory=factory).run(serve(spec))
