"""Thread per connection: the main thread accepts, a new thread answers each client."""

from __future__ import annotations

import socket
import threading

from iolab.kit import sockets
from iolab.servers import Options, blocking
from iolab.web.app import App


def serve_listener(listener: socket.socket, app: App) -> None:
    """Accept clients and start a thread for each, until SIGTERM or SIGINT."""
    with sockets.stopped_by_signals():
        while True:
            sock, _ = listener.accept()
            # Daemon threads: a stopping server does not wait for idle keep-alive clients to leave.
            threading.Thread(target=blocking.serve_connection, args=(sock, app), daemon=True).start()


def serve(options: Options) -> int:
    """Run the thread-per-connection server until stopped; the exit code."""
    return blocking.serve_in_this_process(options, serve_listener)
