"""The server models: one table of them (``MODELS``), and ``open_server`` to run one from Python.

Every model serves the same :class:`iolab.web.app.App` through the same :class:`iolab.web.http.Connection`;
the modules differ only in how they wait:

- ``iterative``: one connection at a time (``iterative.py``);
- ``threaded``: a thread per connection (``threaded.py``);
- ``prefork``: N forked processes blocking in accept() on one socket (``prefork.py``);
- ``asyncio`` and ``uvloop``: one event loop, asyncio Protocols (``asyncio.py``);
- ``trio``: one event loop, a task per connection (``trio.py``);
- ``scratch``: chapter 5's from-scratch loop, a task per connection (``scratchloop.py``);
- ``node``: a Node.js server for comparison (optional: needs ``node``).

Shared parts: ``blocking`` (the connection loop of the three blocking models), ``workers`` (fork
and supervise N processes) and ``limits`` (timeouts and the connection cap, off by default); listening sockets are the kit's (:mod:`iolab.kit.sockets`), and
``python -m iolab serve`` is :mod:`iolab.commands.servers`.
The CLI, the notebooks and the conformance tests all read ``MODELS``.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from iolab.kit import procs
from iolab.kit import netns
from iolab.kit.sockets import BACKLOG, HOST, LISTENING_PATTERN
from iolab.web import julia

# How long a server may take to print its "listening on" line: importing the CLI (pandas) and
# calibrating the Julia set take a few seconds on a busy two-core machine.
START_SECONDS = 30.0


@dataclass(frozen=True)
class Options:
    """How to run a server: what ``python -m iolab serve`` parsed from its command line."""

    model: str
    port: int = 0
    backlog: int = BACKLOG
    workers: int | None = None  # prefork: processes (default: one per core); asyncio/uvloop: one loop per process
    reuseport: bool = False  # prefork: a SO_REUSEPORT socket per worker instead of one shared socket
    offload: bool = False  # asyncio/uvloop: compute Julia sets in a process pool, not in the loop
    # Chapter 12, all off by default (see ``limits``): seconds, and connections per process.
    header_timeout: float | None = None  # a begun request must be complete within this: 408 and close
    keepalive_timeout: float | None = None  # an idle connection is closed after this
    max_connections: int | None = None  # beyond this, a new connection is closed at once
    host: str = HOST  # 127.0.0.1, or (chapter 12) an address of the netlab's server namespace


@dataclass(frozen=True)
class Model:
    """A concurrency model: its name, how it waits, and the module whose ``serve`` runs it."""

    name: str
    waits: str
    module: str  # imported only to run the model: listing models must not load trio and uvloop
    workers: bool = False  # whether --workers applies

    def serve(self, options: Options) -> int:
        """Run this model until SIGTERM or SIGINT; the exit code."""
        return importlib.import_module(self.module).serve(options)


MODELS: dict[str, Model] = {
    model.name: model
    for model in (
        Model("iterative", "in recv() and accept(), one client at a time", "iolab.servers.iterative"),
        Model("threaded", "in recv(), one thread per client", "iolab.servers.threaded"),
        Model("prefork", "in accept() and recv(), N processes", "iolab.servers.prefork", workers=True),
        Model("asyncio", "in epoll, one asyncio event loop", "iolab.servers.asyncio", workers=True),
        Model("uvloop", "in epoll, one uvloop event loop", "iolab.servers.asyncio", workers=True),
        Model("trio", "in epoll, one trio event loop", "iolab.servers.trio"),
        Model("scratch", "in epoll, the event loop built from scratch in chapter 5", "iolab.servers.scratchloop"),
    )
}


@dataclass(frozen=True)
class Server:
    """A running server started by :func:`open_server`."""

    model: str
    port: int
    process: procs.ManagedProcess
    host: str = HOST

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:41234``."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        """The server's (parent) process id."""
        return self.process.pid


def serve_argv(
    model: str, *, workers: int | None = None, backlog: int = BACKLOG, port: int = 0, extra_args: Sequence[str] = (),
    host: str = HOST,
) -> list[str]:
    """The command line of ``python -m iolab serve`` for these settings."""
    if model not in MODELS:
        raise ValueError(f"unknown server model {model!r}; the models are: {', '.join(MODELS)}")
    argv = procs.python_argv("-m", "iolab", "serve", model, "--port", str(port), "--backlog", str(backlog))
    if host != HOST:
        argv += ["--host", host]
    if workers is not None:
        argv += ["--workers", str(workers)]
    return argv + list(extra_args)


@contextlib.contextmanager
def open_server(
    model: str,
    *,
    workers: int | None = None,
    backlog: int = BACKLOG,
    port: int = 0,
    extra_args: Sequence[str] = (),
    host: str = HOST,
    namespace: str | None = None,
) -> Iterator[Server]:
    """Start ``python -m iolab serve MODEL`` and wait until it listens; leaving the block stops it and its workers.

    The server uses this process's Julia calibration (``iolab.web.julia.CALIBRATION_ENV``), so servers
    started here do the same work for the same ``/julia?ms=``. Chapter 12 runs it inside a netlab's
    server namespace: ``open_server(model, host=lab.server_ip, namespace=lab.server_ns)``.
    """
    argv = netns.exec_argv(namespace, serve_argv(model, workers=workers, backlog=backlog, port=port,
                                                 extra_args=extra_args, host=host))
    calibration = {julia.CALIBRATION_ENV: f"{julia.seconds_per_pixel() * 1e9:.1f}"}
    with procs.open_process(argv, env=calibration) as process:
        match = process.wait_for_line(LISTENING_PATTERN, timeout=START_SECONDS)
        yield Server(model, int(match[1]), process, host)


__all__ = ["MODELS", "Model", "Options", "Server", "open_server", "serve_argv"]
