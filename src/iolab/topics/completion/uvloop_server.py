"""The course's fastest readiness loop: uvloop (libuv, in C) with an asyncio Protocol per connection.

The same tiny answer as the other two servers; the waiting, reading and writing happen inside libuv,
where Python cannot count the system calls: ``strace`` does.
"""

from __future__ import annotations

import asyncio
import socket

from iolab.kit import sockets
from iolab.topics.completion.tiny_http import Counts, answer


class _Answer(asyncio.Protocol):
    def __init__(self, counts: Counts) -> None:
        self.counts = counts
        self.pending = bytearray()
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport: not asyncio's class
        self.counts.connections += 1

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.pending += data
        reply = answer(self.pending)
        self.counts.requests += reply.requests
        self.transport.write(reply.data)
        if reply.close:
            self.transport.close()


async def _serve(listener: socket.socket, counts: Counts) -> None:
    loop = asyncio.get_running_loop()
    stop = sockets.stop_event()
    server = await loop.create_server(lambda: _Answer(counts), sock=listener)
    async with server:
        await stop.wait()


def serve(listener: socket.socket, counts: Counts) -> None:
    """Serve on ``listener`` on a uvloop loop until SIGTERM or SIGINT, counting requests in ``counts``."""
    import uvloop  # here: the other servers of this topic do not need it

    counts.calls = counts.waits = None
    uvloop.run(_serve(listener, counts))
