"""The server models: one table of them (``MODELS``), and ``open_server`` to run one from Python.

Every model serves the same :class:`iolab.web.app.App` through the same :class:`iolab.web.http.Connection`;
the modules differ only in how they wait:

- ``iterative``: one connection at a time (``iterative.py``);
- ``threaded``: a thread per connection (``threaded.py``);
- ``prefork``: N forked processes blocking in accept() on one socket (``prefork.py``);
- ``asyncio`` and ``uvloop``: one event loop, asyncio Protocols (``asyncio.py``);
- ``trio``: one event loop, a task per connection (``trio.py``);
- ``scratch``: chapter 5's from-scratch loop, a task per connection (``scratchloop.py``).

Beside them, and not in ``MODELS``: ``node``, a Node.js server for source 000's comparison
(``open_node_server``; optional: needs ``node``). Shared parts: ``blocking`` (the connection loop of
the three blocking models), ``workers`` (fork and supervise N processes) and ``limits`` (timeouts and
the connection cap, off by default); listening sockets are the kit's (:mod:`iolab.kit.sockets`).

A server runs in a process of its own: ``open_server`` starts ``python -m iolab.servers`` (this
package's ``__main__``) with an :class:`Options` as JSON, and ``run`` serves it. The command line,
``python -m iolab serve`` (:mod:`iolab.commands.servers`), builds the same ``Options`` from its flags
and calls the same ``run``. The command line, the notebooks and the conformance tests all read ``MODELS``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from iolab.kit import channel, procs
from iolab.kit.sockets import BACKLOG, HOST, check_host
from iolab.web import julia


@dataclass(frozen=True)
class Options(channel.Spec):
    """How to run a server: the model and its settings; ``python -m iolab serve`` parses its flags into one.

    Building one checks it (a ValueError names what is wrong), so that a bad setting fails in the
    caller, not in a server process that never says it is listening.
    """

    ENTRY: ClassVar[str] = "iolab.servers"

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

    def __post_init__(self) -> None:
        _check(self)
        object.__setattr__(self, "host", check_host(self.host))  # one spelling of each address


def _check(options: Options) -> None:
    """Raise ValueError if ``options`` name an unknown model or a setting that does not apply to it."""
    if options.model not in MODELS:
        raise ValueError(f"unknown server model {options.model!r}; the models are: {', '.join(MODELS)}")
    model = MODELS[options.model]
    for name in ("backlog", "workers", "max_connections", "header_timeout", "keepalive_timeout"):
        value = getattr(options, name)
        if value is not None and not value > 0:  # also refuses nan
            raise ValueError(f"{name} must be above 0, not {value}")
    if options.workers is not None and not model.workers:
        raise ValueError(f"workers applies to {', '.join(m.name for m in MODELS.values() if m.workers)}, "
                         f"not {model.name}")
    if options.reuseport and model.name != "prefork":
        raise ValueError("reuseport applies to prefork (asyncio/uvloop with workers always use it)")
    if options.offload and model.name not in ("asyncio", "uvloop"):
        raise ValueError("offload applies to asyncio and uvloop")
    if options.max_connections is not None and model.name in ("iterative", "prefork"):
        raise ValueError(f"max_connections does not apply to {model.name}: it serves one connection per process "
                         "(its cap is workers; later clients wait in the backlog)")


@dataclass(frozen=True)
class Model:
    """A concurrency model: its name, how it waits, and the module whose ``serve`` runs it."""

    name: str
    waits: str
    module: str  # imported only to run the model: listing models must not load trio and uvloop
    workers: bool = False  # whether the workers setting applies

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


def run(options: Options) -> int:
    """Run the server ``options`` describe in this process until SIGTERM or SIGINT; the exit code.

    What ``python -m iolab.servers`` and ``python -m iolab serve`` both do.
    """
    from iolab.kit.machine import raise_open_files_limit

    # A server holding thousands of clients should meet its hard limit (ulimit -Hn), a limit the
    # chapters name, not a shell's soft default of often 1,024 that fails accept() with EMFILE.
    # Pre-forked children inherit the raised limit.
    raise_open_files_limit()
    return MODELS[options.model].serve(options)


@dataclass(frozen=True, kw_only=True)
class Server(channel.Listening):
    """A running server started by :func:`open_server`: where it listens (``url``, ``port``, ``pid``, as every
    listening child of the kit), its model and its process."""

    model: str
    process: procs.ManagedProcess

    @classmethod
    def at(cls, listening: channel.Listening, model: str, process: procs.ManagedProcess) -> Server:
        """The server ``process`` of ``model``, listening where ``listening`` says."""
        return cls(port=listening.port, pid=listening.pid, host=listening.host, model=model, process=process)


# The settings open_server takes: every field of Options but the model.
_SETTINGS = tuple(field.name for field in dataclasses.fields(Options) if field.name != "model")


def _options_for(model: str | Options, **settings: Any) -> Options:
    """``Options(model, **settings)``, or ``model`` with ``settings`` replaced; TypeError names an unknown setting."""
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise TypeError(f"unknown server setting{'s' * (len(unknown) > 1)} {', '.join(unknown)}; "
                        f"the settings are: {', '.join(_SETTINGS)}")
    if isinstance(model, Options):
        return dataclasses.replace(model, **settings)
    return Options(model, **settings)


@contextlib.contextmanager
def open_server(model: str | Options, *, namespace: str | None = None, **settings: Any) -> Iterator[Server]:
    """Start a server (``python -m iolab.servers``) and wait until it listens; leaving the block stops it and its workers.

    ``settings`` are those of :class:`Options` (``open_server("prefork", workers=2, header_timeout=1.0)``);
    an unknown one is a TypeError, a setting that does not apply to the model a ValueError. The
    server uses this process's Julia calibration (``iolab.web.julia.CALIBRATION_ENV``), so servers
    started here do the same work for the same ``/julia?ms=``. Chapter 12 runs it inside a netlab's
    server namespace: ``open_server(model, host=lab.server_ip, namespace=lab.server_ns)``.
    """
    options = _options_for(model, **settings)
    calibration = {julia.CALIBRATION_ENV: f"{julia.seconds_per_pixel() * 1e9:.1f}"}
    with channel.open_child(options, namespace=namespace, env=calibration) as child:
        listening = child.wait_listening(procs.START_SECONDS, options.host)
        yield Server.at(listening, options.model, child.process)


__all__ = ["MODELS", "Model", "Options", "Server", "open_server", "run"]
