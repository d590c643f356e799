"""asyncio and uvloop: one thread, one event loop, a Protocol object per connection.

The loop waits in epoll for any socket to be ready and calls ``data_received`` with the bytes;
nothing here blocks except the Julia set, computed inline by default: while it runs, every other
client waits (the lesson). ``--offload`` sends it to a process pool instead. uvloop is the same code
on a loop written in C (libuv). ``--workers N`` runs N such processes, each with its own
SO_REUSEPORT socket: "asyncio per core".

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
import typing
from collections.abc import Callable

from iolab.kit import sockets
from iolab.kit.loops import LOOPS
from iolab.servers import Options, workers
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

    def __init__(self, app: App, pool: concurrent.futures.Executor | None) -> None:
        self.app = app
        self.pool = pool
        self.conn = Connection()
        self.transport: asyncio.Transport
        self.pending: collections.deque[Request | HttpError] = collections.deque()
        self.effect: asyncio.Task[None] | None = None  # a strong reference: the loop keeps only weak ones

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)  # uvloop's is not a subclass

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
                self.effect = asyncio.get_running_loop().create_task(self._answer_later(item, outcome))
                return

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
    listener: socket.socket, app: App, pool: concurrent.futures.Executor | None, backlog: int, ready: Callable[[], None]
) -> None:
    """Serve the app on ``listener`` until SIGTERM or SIGINT, calling ``ready`` once accepting."""
    await serve_protocol(listener, lambda: HttpProtocol(app, pool), backlog, ready)


def _run(listener: socket.socket, app: App, options: Options, ready: Callable[[], None]) -> None:
    with _open_pool(options.offload) or contextlib.nullcontext() as pool:
        with asyncio.Runner(loop_factory=LOOPS[options.model]) as runner:
            runner.run(serve_listener(listener, app, pool, options.backlog, ready))


def _serve_own(listeners: list[socket.socket], index: int, app: App, options: Options, ready: Callable[[], None]) -> None:
    _run(sockets.keep_only(listeners, index), app, options, ready)


def serve(options: Options) -> int:
    """Run the asyncio (or uvloop) server until stopped, in ``options.workers`` processes if given; the exit code."""
    app = App()
    if options.workers:
        listeners = sockets.open_listeners(options.workers, options.port, options.backlog)
        jobs = [functools.partial(_serve_own, listeners, i, app, options) for i in range(options.workers)]
        return workers.serve_workers(jobs, listeners)
    with sockets.open_listener(options.port, options.backlog) as listener:
        _run(listener, app, options, ready=functools.partial(sockets.announce, listener))
    return 0
