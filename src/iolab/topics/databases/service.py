"""One database service as a process of its own: ``open_service`` starts it from Python, ``main`` is its entry.

``python -m iolab.topics.databases.service NAME --url URL --sql SQL [--size N]`` serves one variant
(:mod:`~iolab.topics.databases.variants`) over HTTP (:mod:`~iolab.topics.databases.protocol`) on a
uvloop event loop (Node.js's libuv, in Python) until Ctrl-C or SIGTERM. ``open_service`` runs that
command as a child process that dies with the ``with`` block, as the lab's other servers do.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterator

from iolab.kit import procs, sockets
from iolab.kit.procs import START_SECONDS
from iolab.servers import Server
from iolab.topics.databases.postgres import Database
from iolab.topics.databases.protocol import serve_service
from iolab.topics.databases.variants import POOL_OPEN_SECONDS, POOL_SIZE, SERVICES, service_name

MODULE = "iolab.topics.databases.service"  # what ``python -m`` runs


def main(argv: list[str] | None = None) -> int:
    """``python -m iolab.topics.databases.service NAME --url URL --sql SQL``: serve until Ctrl-C or SIGTERM."""
    import uvloop

    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description="Serve one of source 002's services over HTTP.")
    parser.add_argument("name", choices=list(SERVICES))
    parser.add_argument("--url", required=True, help="the database, e.g. postgresql://postgres@/postgres?host=/tmp/x")
    parser.add_argument("--sql", required=True, help="the query every request runs")
    parser.add_argument("--size", type=int, default=POOL_SIZE, help=f"connections in the pool / threads (default {POOL_SIZE})")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error("--size must be at least 1")
    service = SERVICES[args.name](args.url, args.sql, args.size)
    with sockets.open_listener(args.port) as listener:
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
    name = service_name(which)
    before = len(db.backends())
    argv = procs.python_argv("-m", MODULE, name, "--url", db.url, "--sql", sql, "--size", str(size))
    try:
        with procs.open_process(argv) as process:
            match = process.wait_for_line(sockets.LISTENING_PATTERN, timeout=START_SECONDS + POOL_OPEN_SECONDS)
            yield Server(name, int(match[1]), process)
    finally:
        db.wait_backends(before)


if __name__ == "__main__":
    sys.exit(main())
