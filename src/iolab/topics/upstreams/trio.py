"""The async service on trio: a task per request in one nursery, calls that wait without a thread.

The same service as :mod:`iolab.topics.upstreams.asyncio`, with the same ledger, schedule, limit and
framing client; what differs is how trio says it. The calls are tasks of one nursery, so none can
outlive the run: when the run is over, cancelling the nursery ends every call still hanging on a
black hole, and each closes its own socket on the way out. The timeout is a cancel scope
(``trio.move_on_after``) around the call, and the call reads its answer with ``receive_some`` in a
loop, as the sync model reads with ``recv``; only, here the wait is an ``await``.
"""

from __future__ import annotations

import math
import socket
import time

import trio

from iolab.load.client import ClientConnection, connect_error_kind, request_bytes
from iolab.topics.upstreams.service import OK, PARKED, InFlight, Ledger, Schedule, ServiceSpec
from iolab.topics.upstreams.sync import RECV_BYTES, StatusListener

perf_counter = time.perf_counter


class TrioCaller:
    """Idle connections per upstream, reused; a new one whenever none is idle."""

    def __init__(self, spec: ServiceSpec) -> None:
        self.spec = spec
        self.requests = [request_bytes(*spec.address(e), "/", True) for e in range(len(spec.ports))]
        self.idle: list[list[trio.SocketStream]] = [[] for _ in spec.ports]

    async def _connect(self, e: int) -> trio.SocketStream:
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            await sock.connect(self.spec.address(e))
        except BaseException:
            sock.close()
            raise
        return trio.SocketStream(sock)  # sets TCP_NODELAY

    async def call(self, e: int) -> str:
        """Call endpoint ``e`` once; the outcome (``ok``, ``refused``, ``reset``...)."""
        idle = self.idle[e]
        stream = idle.pop() if idle else None
        if stream is None:
            try:
                stream = await self._connect(e)
            except OSError as exc:
                return connect_error_kind(exc)
        answer = StatusListener()
        framer = ClientConnection(answer)
        keep = False
        try:
            await stream.send_all(self.requests[e])
            while not answer.status:
                data = await stream.receive_some(RECV_BYTES)  # the task sleeps here; the others run
                if not data:
                    return "closed"  # EOF before the answer
                framer.data_received(data)
                if answer.failure:
                    return "reset"
            keep = not framer.close_after
        except trio.BrokenResourceError:
            return "reset"
        finally:
            # Closed on every other way out, cancellation included (the timeout, the end of the run):
            # an answer may yet come, and must not be read as the next call's.
            if keep:
                idle.append(stream)
            else:
                stream.socket.close()
        return OK if answer.status == 200 else f"http_{answer.status}"


async def serve(spec: ServiceSpec) -> dict | None:
    """Serve ``spec.num_req`` requests at ``spec.rate`` in one nursery; the ledger's record."""
    if spec.park:
        print(PARKED, flush=True)
        await trio.sleep_forever()  # until SIGTERM ends the process
    ledger = Ledger(spec.num_req)
    caller = TrioCaller(spec)
    calls = InFlight(spec, ledger)
    timeout = math.inf if spec.timeout_s is None else spec.timeout_s

    async def call(e: int) -> str:
        with trio.move_on_after(timeout):
            return await caller.call(e)
        return "timeout"  # reached only when the scope cancelled the call

    schedule = Schedule(spec, ledger)
    async with trio.open_nursery() as nursery:
        while True:
            for i in schedule.arrivals(perf_counter()):
                nursery.start_soon(calls.handle, i, call)
            if schedule.done(perf_counter(), calls.finished, calls.since.values()):
                result = schedule.result()
                nursery.cancel_scope.cancel()  # the calls still hanging end here, not with the process
                break
            await trio.sleep(schedule.pause())
    return result


def run(spec: ServiceSpec) -> dict | None:
    """Run :func:`serve` under ``trio.run``."""
    return trio.run(serve, spec)
