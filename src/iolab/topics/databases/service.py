"""One database service as a process of its own: ``open_service`` starts it from Python, ``run`` is its body.

``python -m iolab.topics.databases.service SPEC_JSON`` (a :class:`DbServiceSpec`, through
:mod:`iolab.kit.channel`) serves one variant (:mod:`~iolab.topics.databases.variants`) over HTTP
(:mod:`~iolab.topics.databases.protocol`) on a uvloop event loop (Node.js's libuv, in Python) until
Ctrl-C or SIGTERM. ``open_service`` runs it as a child process that dies with the ``with`` block, as
the lab's other servers do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from iolab.kit import channel, sockets
from iolab.kit.procs import START_SECONDS
from iolab.servers import Server
from iolab.topics.databases.postgres import Database
from iolab.topics.databases.protocol import serve_service
from iolab.topics.databases.variants import POOL_OPEN_SECONDS, POOL_SIZE, SERVICES, service_name


@dataclass(frozen=True)
class DbServiceSpec(channel.Spec):
    """One service to run: its name (``SERVICES``), the database's URL, the query every request runs, its pool size."""

    ENTRY: ClassVar[str] = "iolab.topics.databases.service"

    name: str
    url: str  # e.g. postgresql://postgres@/postgres?host=/tmp/x
    sql: str
    size: int = POOL_SIZE  # connections in the pool / threads
    port: int = 0

    def __post_init__(self) -> None:
        if self.name not in SERVICES:  # here, in the caller, rather than in a child that never listens
            raise ValueError(f"unknown service {self.name!r}; the services are: {', '.join(SERVICES)}")
        if self.size < 1:
            raise ValueError(f"a service needs a pool of at least 1 connection, not {self.size}")


def run(spec: DbServiceSpec) -> int:
    """Serve ``spec`` in this process until Ctrl-C or SIGTERM; the exit code."""
    import uvloop

    service = SERVICES[spec.name](spec.url, spec.sql, spec.size)
    with sockets.open_listener(spec.port) as listener:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(serve_service(service, listener, lambda: sockets.announce(listener)))
    return 0


@contextlib.contextmanager
def open_service(db: Database, which: int | str, sql: str, size: int = POOL_SIZE) -> Iterator[Server]:
    """Run service ``which`` (a variant number or a name) against ``db``; leaving the block stops it.

    It is a :class:`iolab.servers.Server` like the lab's other servers (``.url``, ``.port``, ``.pid``),
    whose ``model`` is the service's name.

    After the service stops, this waits until the database has closed the backends of its
    connections too, so that the next measurement starts from a quiet server.
    """
    spec = DbServiceSpec(service_name(which), db.url, sql, size)
    before = len(db.backends())
    try:
        with channel.open_child(spec) as child:
            listening = child.wait_listening(START_SECONDS + POOL_OPEN_SECONDS)
            yield Server.at(listening, spec.name, child.process)
    finally:
        db.wait_backends(before)


if __name__ == "__main__":
    channel.child_main(DbServiceSpec, run)
