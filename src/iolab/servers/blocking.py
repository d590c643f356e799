"""The connection loop of the blocking models (iterative, threaded, pre-fork): recv, answer, repeat.

The three models share this loop and differ only in who runs it: the main thread, a thread per
connection, or one of N forked processes. Waiting is a blocking call: ``recv``, ``sendall``,
``time.sleep``; the Julia set is computed right here. A timeout (chapter 12) is a socket timeout on
the ``recv``: the kernel's wait itself ends, and ``recv`` raises instead of returning bytes.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from iolab.kit import sockets
from iolab.servers import Options
from iolab.servers.limits import NO_LIMITS, Limits, ReadClock
from iolab.web.app import App, Compute, Outcome, Wait
from iolab.web.http import Connection, HttpError, Response


def carry_out(outcome: Outcome) -> Response:
    """The response, after waiting or computing as the effect asks, blocking this thread."""
    if isinstance(outcome, Wait):
        time.sleep(outcome.seconds)
        return outcome.then
    if isinstance(outcome, Compute):
        return outcome.then(outcome.fn(*outcome.args))
    return outcome


def _linger(sock: socket.socket) -> None:
    sock.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + sockets.LINGER_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        if not sock.recv(sockets.RECV_BYTES):
            return


def _recv_within(sock: socket.socket, seconds: float | None) -> bytes | None:
    """The next bytes (b"" at end of stream), or None if ``seconds`` passed first (None: wait for ever)."""
    if seconds is None:
        return sock.recv(sockets.RECV_BYTES)
    if seconds <= 0:
        return None
    sock.settimeout(seconds)
    try:
        return sock.recv(sockets.RECV_BYTES)
    except TimeoutError:
        return None
    finally:
        # The sendall of the answer must not inherit it: Python's timeout bounds a whole sendall,
        # and a large answer to a slow reader would be cut off.
        sock.settimeout(None)


def serve_connection(sock: socket.socket, app: App, limits: Limits = NO_LIMITS) -> None:
    """Answer the requests of one client until it, the protocol or a timeout of ``limits`` closes the connection."""
    conn = Connection()
    clock = ReadClock(limits)
    with sock:
        try:
            # Responses leave in one send each; without this, a keep-alive response could wait
            # for the client's delayed ACK of the previous one (Nagle's algorithm).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while not conn.closing:
                clock.update(conn)
                data = _recv_within(sock, clock.left())
                if data is None:
                    if goodbye := clock.expired(conn):
                        sock.sendall(goodbye)
                        _linger(sock)
                    return
                if not data:
                    return
                try:
                    requests = conn.feed(data)
                except HttpError as error:
                    sock.sendall(conn.respond_error(error))
                    _linger(sock)
                    return
                for request in requests:
                    sock.sendall(conn.respond(request, carry_out(app.handle(request))))
                    if conn.closing:
                        break
        except OSError:  # the client left mid-answer, or lingered too long: nothing more to tell it
            return


def serve_in_this_process(options: Options, serve_listener: Callable[[socket.socket, App, Limits], None]) -> int:
    """Listen, announce, and run ``serve_listener`` in this process until stopped; the exit code."""
    app = App()
    with sockets.open_listener(options.port, options.backlog, host=options.host) as listener:
        sockets.announce(listener)
        serve_listener(listener, app, Limits.from_options(options))
    return 0
