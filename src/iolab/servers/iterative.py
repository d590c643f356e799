"""Iterative: one connection at a time, in the main thread; the next client waits in the backlog."""

from __future__ import annotations

import socket

from iolab.kit import sockets
from iolab.servers import Options, blocking
from iolab.web.app import App


def serve_listener(listener: socket.socket, app: App) -> None:
    """Accept and answer clients one after another, until SIGTERM or SIGINT."""
    with sockets.stopped_by_signals():
        while True:
            sock, _ = listener.accept()
            blocking.serve_connection(sock, app)


def serve(options: Options) -> int:
    """Run the iterative server until stopped; the exit code."""
    return blocking.serve_in_this_process(options, serve_listener)
