"""trio: one thread, one event loop, a task per connection reading a stream.

The code reads like the blocking connection loop (``blocking.py``) with ``await`` in front of each
wait: that is trio's design. Every ``await`` is where the loop may run another client's task; the
Julia set, computed inline, has none, so while it runs every other client waits. A timeout
(chapter 12) is a cancel scope around the read (``trio.move_on_after``): when it expires, trio
cancels the ``await`` itself, and the code after the ``with`` finds out.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable

import trio

from iolab.kit import sockets
from iolab.servers import Options
from iolab.servers.limits import NO_LIMITS, ConnectionCap, Limits, ReadClock
from iolab.web.app import App, Compute, Outcome, Wait
from iolab.web.http import Connection, HttpError, Response


async def carry_out(outcome: Outcome) -> Response:
    """The response, after waiting or computing as the effect asks; only ``await`` lets others run."""
    if isinstance(outcome, Wait):
        await trio.sleep(outcome.seconds)
        return outcome.then
    if isinstance(outcome, Compute):
        return outcome.then(outcome.fn(*outcome.args))  # inline: the whole loop waits for it
    return outcome


async def _linger(stream: trio.SocketStream) -> None:
    await stream.send_eof()
    with trio.move_on_after(sockets.LINGER_SECONDS):
        while await stream.receive_some(sockets.RECV_BYTES):
            pass


async def _receive_within(stream: trio.SocketStream, seconds: float | None) -> bytes | None:
    """The next bytes (b"" at end of stream), or None if ``seconds`` passed first (None: wait for ever)."""
    if seconds is None:
        return await stream.receive_some(sockets.RECV_BYTES)
    with trio.move_on_after(max(seconds, 0.0)):
        return await stream.receive_some(sockets.RECV_BYTES)
    return None  # reached only when the scope cancelled the receive


async def serve_connection(stream: trio.SocketStream, app: App, limits: Limits = NO_LIMITS) -> None:
    """Answer the requests of one client until it, the protocol or a timeout of ``limits`` closes the connection."""
    conn = Connection()
    clock = ReadClock(limits)
    async with stream:
        try:
            while not conn.closing:
                clock.update(conn)
                data = await _receive_within(stream, clock.left())
                if data is None:
                    if goodbye := clock.expired(conn):
                        await stream.send_all(goodbye)
                        await _linger(stream)
                    return
                if not data:
                    return
                try:
                    requests = conn.feed(data)
                except HttpError as error:
                    await stream.send_all(conn.respond_error(error))
                    await _linger(stream)
                    return
                for request in requests:
                    await stream.send_all(conn.respond(request, await carry_out(app.handle(request))))
                    if conn.closing:
                        break
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client left mid-answer: nothing more to tell it


async def _serve_counted(stream: trio.SocketStream, app: App, limits: Limits, cap: ConnectionCap) -> None:
    try:
        await serve_connection(stream, app, limits)
    finally:
        cap.leave()


async def serve_listener(listener: socket.socket, app: App, ready: Callable[[], None], limits: Limits = NO_LIMITS) -> None:
    """Serve on ``listener`` until SIGTERM or SIGINT, calling ``ready`` once accepting."""
    listener.setblocking(False)
    with trio.open_signal_receiver(*sockets.STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_accept_forever, listener, app, limits, nursery)
            ready()
            async for _ in signals:
                nursery.cancel_scope.cancel()  # stop accepting and end every connection's task
                break


async def _accept_forever(listener: socket.socket, app: App, limits: Limits, nursery: trio.Nursery) -> None:
    # Not trio.serve_listeners: its accept() takes one connection per pass of the scheduler, and
    # a pass runs every ready task, so when 1,000 clients connect at once the last waits seconds
    # to be accepted. Like asyncio, take every waiting connection when the socket is readable.
    cap = ConnectionCap(limits.max_connections)
    while True:
        await trio.lowlevel.wait_readable(listener)
        accepted, overloaded = sockets.accept_waiting(listener)
        for sock in accepted:
            if not cap.admit():
                sock.close()
                continue
            # trio.SocketStream sets TCP_NODELAY, as the other models do.
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
            nursery.start_soon(_serve_counted, stream, app, limits, cap)
        if overloaded:
            await trio.sleep(sockets.OVERLOAD_SECONDS)


def serve(options: Options) -> int:
    """Run the trio server until stopped; the exit code."""
    app = App()
    with sockets.open_listener(options.port, options.backlog, host=options.host) as listener:
        trio.run(serve_listener, listener, app, functools.partial(sockets.announce, listener), Limits.from_options(options))
    return 0
