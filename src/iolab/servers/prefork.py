"""Pre-fork: N processes forked at start, each an iterative server on one shared listening socket.

All workers block in accept() on the socket they inherited; the kernel gives each new connection
to one of them. With ``--reuseport`` each worker has a socket of its own on the same port instead,
and the kernel spreads connections over the sockets by a hash of the client's address and port.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable

from iolab.kit import sockets
from iolab.servers import Options, iterative, workers
from iolab.servers.limits import Limits
from iolab.web.app import App


def serve(options: Options) -> int:
    """Run the pre-fork server until stopped; the exit code."""
    app = App()  # before the fork: calibrated once, shared copy-on-write by every worker
    count = options.workers or os.cpu_count() or 1
    limits = Limits.from_options(options)
    if options.reuseport:
        listeners = sockets.open_listeners(count, options.port, options.backlog, options.host)
        jobs = [functools.partial(_serve_own, listeners, i, app, limits) for i in range(count)]
    else:
        listeners = [sockets.open_listener(options.port, options.backlog, host=options.host)]
        jobs = [functools.partial(_serve_shared, listeners[0], app, limits)] * count
    try:
        return workers.serve_workers(jobs, listeners)
    finally:
        for listener in listeners:
            listener.close()


def _serve_shared(listener: socket.socket, app: App, limits: Limits, ready: Callable[[], None]) -> None:
    ready()  # the socket listens already: the kernel queues connections until accept()
    iterative.serve_listener(listener, app, limits)


def _serve_own(listeners: list[socket.socket], index: int, app: App, limits: Limits, ready: Callable[[], None]) -> None:
    listener = sockets.keep_only(listeners, index)
    ready()
    iterative.serve_listener(listener, app, limits)
