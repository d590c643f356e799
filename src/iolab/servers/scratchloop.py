"""scratch: one thread, the event loop built from scratch in chapter 5, a task per connection.

The code is trio's model (``trio.py``) on ``iolab.scratchloop``: each ``await`` is where the loop may run
another client's task. The loop is plain Python on ``selectors``: no C, no transports, one
``epoll_ctl`` pair per wait, which is what this model costs next to asyncio's.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable

from iolab.kit import sockets
from iolab.scratchloop.loop import EventLoop
from iolab.servers import Options
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


async def serve_connection(loop: EventLoop, sock: socket.socket, app: App) -> None:
    """Answer the requests of one client until it or the protocol closes the connection."""
    conn = Connection()
    with sock:
        try:
            while not conn.closing:
                data = await loop.sock_recv(sock, sockets.RECV_BYTES)
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


async def serve_listener(loop: EventLoop, listener: socket.socket, app: App, ready: Callable[[], None]) -> None:
    """Serve on ``listener`` until SIGTERM or SIGINT (which raise out of the loop), calling ``ready`` once accepting."""
    listener.setblocking(False)
    ready()
    await _accept_forever(loop, listener, app)


async def _accept_forever(loop: EventLoop, listener: socket.socket, app: App) -> None:
    # Like asyncio and the trio model: take every waiting connection each time the socket is readable.
    while True:
        await loop.wait_readable(listener)
        accepted, overloaded = sockets.accept_waiting(listener)
        for sock in accepted:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the other models do
            loop.create_task(serve_connection(loop, sock, app), f"client fd {sock.fileno()}")
        if overloaded:
            await loop.sleep(sockets.OVERLOAD_SECONDS)


def serve(options: Options) -> int:
    """Run the from-scratch loop's server until stopped; the exit code."""
    app = App()
    with sockets.open_listener(options.port, options.backlog) as listener, sockets.stopped_by_signals():
        loop = EventLoop()
        try:
            loop.run_until_complete(serve_listener(loop, listener, app, functools.partial(sockets.announce, listener)))
        finally:
            loop.close()
    return 0
