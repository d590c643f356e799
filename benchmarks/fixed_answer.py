"""The ceiling of a Python server on uvloop: the kit's event loop and protocol, but no HTTP layer.

    .venv/bin/python benchmarks/fixed_answer.py     # prints "listening on http://127.0.0.1:PORT"

It answers every request head (a blank line) with the bytes the kit's uvloop server sends for the
tiny route, without parsing, routing or encoding anything. ``limits.py`` runs it beside the kit's
uvloop server and nginx: the distance from this server to nginx is at most what uvloop and one
Python callback per read cost (at most: wrk, on one core, may be the limit of both); the distance
from the kit's server to this one is what the kit's HTTP layer (``iolab.web``: httptools' callbacks,
the Request, the route, the answer's bytes) costs. Not a
server to use: it answers anything, even garbage, and only works for clients that wait for each
answer before sending the next request (wrk, the kit's generator).
"""

from __future__ import annotations

import asyncio
import functools
import typing

from iolab.kit import sockets
from iolab.kit.loops import LOOPS
from iolab.servers.asyncio import serve_protocol
from iolab.web.app import TINY
from iolab.web.http import Connection, Request

# What the kit's server answers to "GET / HTTP/1.1", X-Worker header included: the same bytes on the wire.
ANSWER = Connection().respond(Request("GET", "/"), TINY)


class FixedAnswer(asyncio.Protocol):
    """One connection: an answer per request head received, nothing else."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        # wrk's requests arrive whole, one per read; a head split across two reads at its blank
        # line would go unanswered here: a ceiling to measure, not a server.
        for _ in range(data.count(b"\r\n\r\n")):
            self.transport.write(ANSWER)


def main() -> None:
    with sockets.open_listener() as listener, asyncio.Runner(loop_factory=LOOPS["uvloop"]) as runner:
        ready = functools.partial(sockets.announce, listener)
        runner.run(serve_protocol(listener, FixedAnswer, sockets.BACKLOG, ready))


if __name__ == "__main__":
    main()
