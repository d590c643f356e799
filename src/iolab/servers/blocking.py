"""The connection loop of the blocking models (iterative, threaded, pre-fork): recv, answer, repeat.

The three models share this loop and differ only in who runs it: the main thread, a thread per
connection, or one of N forked processes. Waiting is a blocking call: ``recv``, ``sendall``,
``time.sleep``; the Julia set is computed right here.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from iolab.kit import sockets
from iolab.servers import Options
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


def serve_connection(sock: socket.socket, app: App) -> None:
    """Answer the requests of one client until it or the protocol closes the connection."""
    conn = Connection()
    with sock:
        try:
            # Responses leave in one send each; without this, a keep-alive response could wait
            # for the client's delayed ACK of the previous one (Nagle's algorithm).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while not conn.closing:
                data = sock.recv(sockets.RECV_BYTES)
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


def serve_in_this_process(options: Options, serve_listener: Callable[[socket.socket, App], None]) -> int:
    """Listen, announce, and run ``serve_listener`` in this process until stopped; the exit code."""
    app = App()
    with sockets.open_listener(options.port, options.backlog) as listener:
        sockets.announce(listener)
        serve_listener(listener, app)
    return 0
