"""Thread per connection: the main thread accepts, a new thread answers each client."""

from __future__ import annotations

import socket
import threading

from iolab.kit import sockets
from iolab.servers import Options, blocking
from iolab.servers.limits import NO_LIMITS, ConnectionCap, Limits
from iolab.web.app import App


def _serve_counted(sock: socket.socket, app: App, limits: Limits, cap: ConnectionCap) -> None:
    try:
        blocking.serve_connection(sock, app, limits)
    finally:
        cap.leave()


def serve_listener(listener: socket.socket, app: App, limits: Limits = NO_LIMITS) -> None:
    """Accept clients and start a thread for each, until SIGTERM or SIGINT."""
    cap = ConnectionCap(limits.max_connections)
    with sockets.stopped_by_signals():
        while True:
            sock, _ = listener.accept()
            if not cap.admit():
                sock.close()
                continue
            # Daemon threads: a stopping server does not wait for idle keep-alive clients to leave.
            threading.Thread(target=_serve_counted, args=(sock, app, limits, cap), daemon=True).start()


def serve(options: Options) -> int:
    """Run the thread-per-connection server until stopped; the exit code."""
    return blocking.serve_in_this_process(options, serve_listener)
