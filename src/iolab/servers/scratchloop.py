"""scratch: one thread, the event loop built from scratch in chapter 5, a task per connection.

The code is trio's model (``trio.py``) on ``iolab.scratchloop``: each ``await`` is where the loop may run
another client's task. The loop is plain Python on ``selectors``: no C, no transports, one
``epoll_ctl`` pair per wait, which is what this model costs next to asyncio's. A timeout (chapter
12) needs nothing new from the loop: ``wait_readable`` already takes one (a timer on the heap that
unregisters the socket and wakes the task with False), the same wait the linger uses.
"""

from __future__ import annotations

import functools
import socket
import time
from collections.abc import Callable

from iolab.kit import sockets
from iolab.scratchloop.loop import EventLoop
from iolab.servers import Options
from iolab.servers.limits import NO_LIMITS, ConnectionCap, Limits, ReadClock
from iolab.web.app import App, Compute, Outcome, Wait
from iolab.web.http import Connection, HttpError, Response


async def carry_out(loop: EventLoop, outcome: Outcome) -> Response:
    """The response, after waiting or computing as the effect asks; only ``await`` lets others run."""
    if isinstance(outcome, Wait):
        await loop.sleep(outcome.seconds)
        return outcome.then
    if isinstance(outcome, Compute):
        return outcome.then(outcome.fn(*outcome.args))  # inline: the whole loop waits for it
    return outcome


async def _linger(loop: EventLoop, sock: socket.socket) -> None:
    sock.shutdown(socket.SHUT_WR)
    while await loop.wait_readable(sock, timeout=sockets.LINGER_SECONDS):
        if not sock.recv(sockets.RECV_BYTES):
            return


async def _recv_within(loop: EventLoop, sock: socket.socket, seconds: float | None) -> bytes | None:
    """The next bytes (b"" at end of stream), or None if ``seconds`` passed first (None: wait for ever)."""
    if seconds is None:
        return await loop.sock_recv(sock, sockets.RECV_BYTES)
    deadline = time.monotonic() + seconds
    while await loop.wait_readable(sock, timeout=max(deadline - time.monotonic(), 0.0)):
        try:
            return sock.recv(sockets.RECV_BYTES)
        except BlockingIOError:  # readiness is a hint, not a promise
            continue
    return None


async def serve_connection(loop: EventLoop, sock: socket.socket, app: App, limits: Limits = NO_LIMITS) -> None:
    """Answer the requests of one client until it, the protocol or a timeout of ``limits`` closes the connection."""
    conn = Connection()
    clock = ReadClock(limits)
    with sock:
        try:
            while not conn.closing:
                clock.update(conn)
                data = await _recv_within(loop, sock, clock.left())
                if data is None:
                    if goodbye := clock.expired(conn):
                        await loop.sock_sendall(sock, goodbye)
                        await _linger(loop, sock)
                    return
                if not data:
                    return
                try:
                    requests = conn.feed(data)
                except HttpError as error:
                    await loop.sock_sendall(sock, conn.respond_error(error))
                    await _linger(loop, sock)
                    return
                for request in requests:
                    await loop.sock_sendall(sock, conn.respond(request, await carry_out(loop, app.handle(request))))
                    if conn.closing:
                        break
        except OSError:  # the client left mid-answer: nothing more to tell it
            return


async def _serve_counted(loop: EventLoop, sock: socket.socket, app: App, limits: Limits, cap: ConnectionCap) -> None:
    try:
        await serve_connection(loop, sock, app, limits)
    finally:
        cap.leave()


async def serve_listener(
    loop: EventLoop, listener: socket.socket, app: App, ready: Callable[[], None], limits: Limits = NO_LIMITS
) -> None:
    """Serve on ``listener`` until SIGTERM or SIGINT (which raise out of the loop), calling ``ready`` once accepting."""
    listener.setblocking(False)
    ready()
    await _accept_forever(loop, listener, app, limits)


async def _accept_forever(loop: EventLoop, listener: socket.socket, app: App, limits: Limits) -> None:
    # Like asyncio and the trio model: take every waiting connection each time the socket is readable.
    cap = ConnectionCap(limits.max_connections)
    while True:
        await loop.wait_readable(listener)
        accepted, overloaded = sockets.accept_waiting(listener)
        for sock in accepted:
            if not cap.admit():
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the other models do
            loop.create_task(_serve_counted(loop, sock, app, limits, cap), f"client fd {sock.fileno()}")
        if overloaded:
            await loop.sleep(sockets.OVERLOAD_SECONDS)


def serve(options: Options) -> int:
    """Run the from-scratch loop's server until stopped; the exit code."""
    app = App()
    with sockets.open_listener(options.port, options.backlog, host=options.host) as listener, sockets.stopped_by_signals():
        loop = EventLoop()
        try:
            announce = functools.partial(sockets.announce, listener)
            loop.run_until_complete(serve_listener(loop, listener, app, announce, Limits.from_options(options)))
        finally:
            loop.close()
    return 0
