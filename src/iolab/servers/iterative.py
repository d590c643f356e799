"""Iterative: one connection at a time, in the main thread; the next client waits in the backlog."""

from __future__ import annotations

import socket

from iolab.kit import sockets
from iolab.servers import Options, blocking
from iolab.servers.limits import NO_LIMITS, Limits
from iolab.web.app import App


def serve_listener(listener: socket.socket, app: App, limits: Limits = NO_LIMITS) -> None:
    """Accept and answer clients one after another, until SIGTERM or SIGINT.

    ``limits.max_connections`` does not apply: one connection at a time is this model's cap.
    """
    with sockets.stopped_by_signals():
        while True:
            sock, _ = listener.accept()
            blocking.serve_connection(sock, app, limits)


def serve(options: Options) -> int:
    """Run the iterative server until stopped; the exit code."""
    return blocking.serve_in_this_process(options, serve_listener)
