"""asyncio and uvloop: one thread, one event loop, a Protocol object per connection.

The loop waits in epoll for any socket to be ready and calls ``data_received`` with the bytes;
nothing here blocks except the Julia set, computed inline by default: while it runs, every other
client waits (the lesson). ``--offload`` sends it to a process pool instead. uvloop is the same code
on a loop written in C (libuv). ``--workers N`` runs N such processes, each with its own
SO_REUSEPORT socket: "asyncio per core".

A timeout (chapter 12) is a timer on the loop (``call_later``), armed whenever the protocol starts
waiting for bytes and cancelled when they come: nothing waits *in* a read here, so nothing can time
out there; the timer closes the transport.

Protocols, not streams: measured on the tiny route, streams took about 1.7x the CPU per request
(a StreamReader, a StreamWriter and a task per connection, and two awaits per request).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import os
import signal
import socket
import sys
import time
import typing
from collections.abc import Callable

from iolab.kit import sockets
from iolab.kit.loops import LOOPS
from iolab.servers import Options, workers
from iolab.servers.limits import NO_LIMITS, ConnectionCap, Limits, ReadClock
from iolab.web.app import App, Compute, Outcome, Wait
from iolab.web.http import Connection, HttpError, Request, Response


async def carry_out(outcome: Outcome, pool: concurrent.futures.Executor | None) -> Response:
    """The response, after waiting or computing as the effect asks; only ``await`` lets others run."""
    if isinstance(outcome, Wait):
        await asyncio.sleep(outcome.seconds)
        return outcome.then
    if isinstance(outcome, Compute):
        if pool is None:
            return outcome.then(outcome.fn(*outcome.args))  # inline: the whole loop waits for it
        loop = asyncio.get_running_loop()
        return outcome.then(await loop.run_in_executor(pool, outcome.fn, *outcome.args))
    return outcome


class HttpProtocol(asyncio.Protocol):
    """One connection. Plain responses are written at once; an effect runs as a task, and the
    requests behind it (pipelined) wait their turn, so that answers leave in request order."""

    def __init__(
        self, app: App, pool: concurrent.futures.Executor | None, limits: Limits = NO_LIMITS, cap: ConnectionCap | None = None
    ) -> None:
        self.app = app
        self.pool = pool
        self.conn = Connection()
        self.transport: asyncio.Transport
        self.pending: collections.deque[Request | HttpError] = collections.deque()
        self.effect: asyncio.Task[None] | None = None  # a strong reference: the loop keeps only weak ones
        self.cap = cap  # None once the connection is refused or counted out
        # Only with timeouts: without them no clock is read and no timer set, as before chapter 12.
        self.clock = ReadClock(limits) if limits.timed else None
        self.timer: asyncio.TimerHandle | None = None
        self.timer_deadline: float | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        if self.cap is not None and not self.cap.admit():
            self.cap = None
            self.transport.close()
            return
        self._wait_for_bytes()

    def data_received(self, data: bytes) -> None:
        try:
            self.pending.extend(self.conn.feed(data))
        except HttpError as error:
            self.pending.append(error)
        if self.effect is None:
            self._answer_pending()

    def _answer_pending(self) -> None:
        while self.pending and not self.transport.is_closing():
            item = self.pending.popleft()
            if isinstance(item, HttpError):
                self.transport.write(self.conn.respond_error(item))
                self._linger()
                return
            outcome = self.app.handle(item)
            if isinstance(outcome, Response):
                self._send(item, outcome)
            else:
                # Stop reading until the effect is done: pipelined requests wait in the kernel's
                # buffer, not in this process's memory.
                self.transport.pause_reading()
                self._stop_timer()  # not reading: no read to time out until the effect is done
                self.effect = asyncio.get_running_loop().create_task(self._answer_later(item, outcome))
                return
        if self.clock is not None:  # tested here, not in the call: this runs once per request
            self._wait_for_bytes()

    # --- timeouts: a timer per connection, re-armed only when the deadline moves -------------------

    def _wait_for_bytes(self) -> None:
        if self.clock is None or self.transport.is_closing():
            return
        self.clock.update(self.conn)
        deadline = self.clock.deadline()
        if deadline == self.timer_deadline:
            return  # most reads of a trickled head: the deadline counts from its first byte
        self._stop_timer()
        if deadline is not None:
            self.timer = asyncio.get_running_loop().call_later(deadline - time.monotonic(), self._timed_out)
            self.timer_deadline = deadline

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = self.timer_deadline = None

    def _timed_out(self) -> None:
        self.timer = self.timer_deadline = None
        if self.effect is not None or self.transport.is_closing() or self.clock is None:
            return
        if goodbye := self.clock.expired(self.conn):
            self.transport.write(goodbye)
            self._linger()
        else:
            self.transport.close()

    async def _answer_later(self, request: Request, outcome: Outcome) -> None:
        try:
            response = await carry_out(outcome, self.pool)
        except Exception as error:  # e.g. BrokenProcessPool, a pool worker was killed: answer, do not hang
            print(f"error while answering {request.target}: {error!r}", file=sys.stderr, flush=True)
            response = None
        self.effect = None
        if self.transport.is_closing():
            return
        if response is None:
            self.transport.write(self.conn.respond_error(HttpError(500, "Internal Server Error")))
            self._linger()
            return
        self._send(request, response)
        if not self.conn.closing:
            self.transport.resume_reading()
            self._answer_pending()

    def _send(self, request: Request, response: Response) -> None:
        self.transport.write(self.conn.respond(request, response))
        if self.conn.closing:
            self.transport.close()

    def _linger(self) -> None:
        # See sockets.LINGER_SECONDS: half-close, drop what still comes, close on EOF or timeout.
        self.transport.write_eof()
        asyncio.get_running_loop().call_later(sockets.LINGER_SECONDS, self.transport.close)

    def pause_writing(self) -> None:
        self.transport.pause_reading()  # a client that does not read its answers gets no more

    def resume_writing(self) -> None:
        if self.effect is None:
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.effect is not None:
            self.effect.cancel()
        self._stop_timer()
        if self.cap is not None:
            self.cap.leave()


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; the server shuts the pool down itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _open_pool(offload: bool) -> concurrent.futures.ProcessPoolExecutor | None:
    if not offload:
        return None
    pool = concurrent.futures.ProcessPoolExecutor(os.cpu_count(), initializer=_ignore_sigint)
    # With fork, the first submit forks every worker: do it now, before an event loop (and
    # uvloop's threads) exist, so that no worker starts as a copy of a running loop.
    pool.submit(int).result()
    return pool


async def serve_protocol(
    listener: socket.socket,
    protocol_factory: Callable[[], asyncio.Protocol],
    backlog: int,
    ready: Callable[[], None],
    stop: asyncio.Event | None = None,
) -> None:
    """Serve a ``protocol_factory()`` per connection on ``listener`` until ``stop`` is set (by default
    until SIGTERM or SIGINT), calling ``ready`` once accepting."""
    if stop is None:
        stop = sockets.stop_event()
    loop = asyncio.get_running_loop()
    # create_server calls listen() again: pass the backlog, or asyncio's default of 100 applies.
    server = await loop.create_server(protocol_factory, sock=listener, backlog=backlog)
    ready()
    await stop.wait()
    server.close()  # stop accepting; open keep-alive connections end with the process


async def serve_listener(
    listener: socket.socket,
    app: App,
    pool: concurrent.futures.Executor | None,
    backlog: int,
    ready: Callable[[], None],
    limits: Limits = NO_LIMITS,
) -> None:
    """Serve the app on ``listener`` until SIGTERM or SIGINT, calling ``ready`` once accepting."""
    cap = ConnectionCap(limits.max_connections) if limits.max_connections is not None else None
    await serve_protocol(listener, lambda: HttpProtocol(app, pool, limits, cap), backlog, ready)


def _run(listener: socket.socket, app: App, options: Options, ready: Callable[[], None]) -> None:
    with _open_pool(options.offload) or contextlib.nullcontext() as pool:
        with asyncio.Runner(loop_factory=LOOPS[options.model]) as runner:
            runner.run(serve_listener(listener, app, pool, options.backlog, ready, Limits.from_options(options)))


def _serve_own(listeners: list[socket.socket], index: int, app: App, options: Options, ready: Callable[[], None]) -> None:
    _run(sockets.keep_only(listeners, index), app, options, ready)


def serve(options: Options) -> int:
    """Run the asyncio (or uvloop) server until stopped, in ``options.workers`` processes if given; the exit code."""
    app = App()
    if options.workers:
        listeners = sockets.open_listeners(options.workers, options.port, options.backlog, options.host)
        jobs = [functools.partial(_serve_own, listeners, i, app, options) for i in range(options.workers)]
        return workers.serve_workers(jobs, listeners)
    with sockets.open_listener(options.port, options.backlog, host=options.host) as listener:
        _run(listener, app, options, ready=functools.partial(sockets.announce, listener))
    return 0
