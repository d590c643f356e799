"""How every database service speaks HTTP: one asyncio Protocol per client, on one event loop.

The bytes are the course's sans-I/O HTTP (:mod:`iolab.web.http`) and the listening, the stop
signals and ``create_server`` are the kit's asyncio server's (:func:`iolab.servers.asyncio.serve_protocol`).
The protocol class is not that server's ``HttpProtocol``: that one answers the lab's
:class:`~iolab.web.app.App`, whose effects (sleep, compute) it carries out one task per effect. Here
every answer awaits the database and may stream its body in chunks, so one task per connection
answers the requests in order.

Responses carry ``X-Worker: 0`` rather than the pid, so that all variants answer byte-identical
responses (the source checked its "Total transferred" was the same for all six).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import psycopg

from iolab.kit import sockets
from iolab.servers.asyncio import serve_protocol
from iolab.topics.databases.variants import Service
from iolab.web.app import METHOD_NOT_ALLOWED, NOT_FOUND
from iolab.web.http import Connection, HttpError, Request, Response, chunk

JSON = "application/json"


class ServiceProtocol(asyncio.Protocol):
    """One client connection: requests are answered one after another, in order, by a task."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.conn = Connection(worker=0)
        self.inbox: asyncio.Queue[Request | HttpError] = asyncio.Queue()
        self.transport: asyncio.Transport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.task = asyncio.get_running_loop().create_task(self._answer_in_order())

    def data_received(self, data: bytes) -> None:
        try:
            items: list[Request | HttpError] = list(self.conn.feed(data))
        except HttpError as error:
            items = [error]
        for item in items:
            self.inbox.put_nowait(item)

    def connection_lost(self, exc: Exception | None) -> None:
        self.task.cancel()

    async def _answer_in_order(self) -> None:
        while not self.transport.is_closing():
            item = await self.inbox.get()
            if isinstance(item, HttpError):
                self.transport.write(self.conn.respond_error(item))
                # See sockets.LINGER_SECONDS: half-close, and close later, so the 4xx is not lost to a RST.
                self.transport.write_eof()
                asyncio.get_running_loop().call_later(sockets.LINGER_SECONDS, self.transport.close)
                return
            await self._answer(item)
            if self.conn.closing or not item.keep_alive:
                self.transport.close()
                return

    async def _answer(self, request: Request) -> None:
        if request.method != "GET":
            self.transport.write(self.conn.respond(request, METHOD_NOT_ALLOWED))
        elif request.path != "/":
            self.transport.write(self.conn.respond(request, NOT_FOUND))
        elif self.service.streams and request.version == "1.1":
            self.transport.write(self.conn.respond_chunked_head(request, JSON))
            try:
                await self.service.stream(lambda data: self.transport.write(chunk(data)))  # type: ignore[attr-defined]
                self.transport.write(chunk(b""))
            except psycopg.Error:
                self.transport.close()  # mid-body, the only way left to say "failed" is to hang up
        else:
            try:
                response = Response(200, await self.service.body(), JSON)
            except psycopg.Error as exc:
                response = Response(500, f"500 database error: {exc}\n".encode(), close=True)
            self.transport.write(self.conn.respond(request, response))


async def serve_service(service: Service, listener: socket.socket, ready: Callable[[], None]) -> None:
    """Open ``service`` and serve it on ``listener`` until SIGTERM or SIGINT; close it after."""
    stop = sockets.stop_event()  # before open(): a SIGTERM while the pool fills still ends in close()
    await service.open()
    try:
        await serve_protocol(listener, lambda: ServiceProtocol(service), sockets.BACKLOG, ready, stop)
    finally:
        await service.close()
