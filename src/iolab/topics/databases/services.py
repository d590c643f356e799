"""Source 002's six ways to serve a query over HTTP, and two more, each a small class on one event loop.

Every service is the same program: one uvloop event loop (Node.js's libuv, in Python), the course's
sans-I/O HTTP protocol (:mod:`iolab.web.http`), and one ``Service`` whose ``body()`` fetches the rows and
encodes them with :func:`iolab.topics.databases.queries.encode`. They differ only in how they talk to PostgreSQL,
as the source's six scripts do:

1. ``sync-connect``: a blocking connect + query per request, inside the loop (``connectSync``);
2. ``async-connect``: the same with the async driver: other clients go on while one waits;
3. ``sync-shared``: one connection opened at start, blocking queries inside the loop;
4. ``async-shared``: one async connection, requests queued for it (an ``asyncio.Lock``);
5. ``async-pool``: a pool of N (5) async connections;
6. ``async-pool-prepared``: the pool, each statement prepared once per connection.

Beyond the source: ``sync-threads`` (blocking queries in a pool of N threads, each holding a
connection: how WSGI servers talk to databases) and ``async-pool-stream`` (the pool, rows written
to the client as they arrive, chunked, instead of after the last one).

The driver is psycopg 3 for all, so only the architecture changes. Statements are never prepared
except in variant 6: psycopg would otherwise prepare a query on its fifth run on a connection.
Responses carry ``X-Worker: 0`` rather than the pid, so that all variants answer byte-identical
responses (the source checked its "Total transferred" was the same for all six).

``python -m iolab.topics.databases.services NAME --url URL --sql SQL [--size N]`` runs one; ``open_service``
runs one from Python as a child process that dies with the ``with`` block.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import socket
import sys
from collections.abc import Callable, Iterator
from typing import ClassVar

import psycopg
import psycopg_pool

from iolab.kit import procs
from iolab.web.app import METHOD_NOT_ALLOWED, NOT_FOUND
from iolab.topics.databases.postgres import Database
from iolab.topics.databases.queries import encode, encode_row
from iolab.web.http import Connection, HttpError, Request, Response
from iolab.servers import Server, START_SECONDS
from iolab.kit import sockets

JSON = "application/json"
POOL_SIZE = 5  # the source's MaxConns
# Streamed rows leave in chunks of about this size: one write per row would cost a system call and
# a chunk header for every 60 bytes.
STREAM_CHUNK_BYTES = 16 * 1024
# Rows fetched per round from the server while streaming (libpq 17's chunked mode; 1 would make a
# result object per row).
STREAM_ROWS = 500
# How long a service waits at start for its pool to hold all its connections.
POOL_OPEN_SECONDS = 30.0


async def fetch(conn: psycopg.AsyncConnection, sql: str, prepare: bool) -> bytes:
    """The rows of ``sql`` on ``conn``, as the JSON body."""
    cur = await conn.execute(sql, prepare=prepare)
    return encode([c.name for c in cur.description or ()], await cur.fetchall())


def fetch_blocking(conn: psycopg.Connection, sql: str, prepare: bool) -> bytes:
    """The rows of ``sql`` on ``conn``, as the JSON body, blocking the calling thread."""
    cur = conn.execute(sql, prepare=prepare)
    return encode([c.name for c in cur.description or ()], cur.fetchall())


class Service:
    """How one service gets a body from the database; subclasses override what differs."""

    name: ClassVar[str]
    variant: ClassVar[int | None] = None  # its number in source 002, if it is one of the six
    label: ClassVar[str]
    blocking: ClassVar[bool] = False  # its database calls block the event loop
    prepare: ClassVar[bool] = False
    streams: ClassVar[bool] = False

    def __init__(self, url: str, sql: str, size: int = POOL_SIZE) -> None:
        self.url = url
        self.sql = sql
        self.size = size

    async def open(self) -> None:
        """Open what lives as long as the service (connections, pools, threads)."""

    async def close(self) -> None:
        """Close what ``open`` opened."""

    async def body(self) -> bytes:
        """The response body for one request."""
        raise NotImplementedError


class SyncConnect(Service):
    name, variant, label, blocking = "sync-connect", 1, "sync, new connection per request", True

    async def body(self) -> bytes:
        # Blocking calls on the loop's only thread: while this runs, no other client is served.
        with psycopg.connect(self.url, autocommit=True) as conn:
            return fetch_blocking(conn, self.sql, self.prepare)


class AsyncConnect(Service):
    name, variant, label = "async-connect", 2, "async, new connection per request"

    async def body(self) -> bytes:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            return await fetch(conn, self.sql, self.prepare)


class SyncShared(Service):
    name, variant, label, blocking = "sync-shared", 3, "sync, one shared connection", True

    async def open(self) -> None:
        self.conn = psycopg.connect(self.url, autocommit=True)

    async def close(self) -> None:
        self.conn.close()

    async def body(self) -> bytes:
        return fetch_blocking(self.conn, self.sql, self.prepare)


class AsyncShared(Service):
    name, variant, label = "async-shared", 4, "async, one shared connection behind a queue"

    async def open(self) -> None:
        self.conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        self.turn = asyncio.Lock()  # waiters queue in arrival order, like the source's `next` array

    async def close(self) -> None:
        await self.conn.close()

    async def body(self) -> bytes:
        async with self.turn:
            return await fetch(self.conn, self.sql, self.prepare)


class AsyncPool(Service):
    name, variant, label = "async-pool", 5, "async, pool of 5 connections"

    async def open(self) -> None:
        self.pool = psycopg_pool.AsyncConnectionPool(
            self.url, min_size=self.size, max_size=self.size, open=False, kwargs={"autocommit": True}
        )
        await self.pool.open(wait=True, timeout=POOL_OPEN_SECONDS)

    async def close(self) -> None:
        await self.pool.close()

    async def body(self) -> bytes:
        async with self.pool.connection() as conn:
            return await fetch(conn, self.sql, self.prepare)


class AsyncPoolPrepared(AsyncPool):
    name, variant, label, prepare = "async-pool-prepared", 6, "async pool of prepared statements", True


class SyncThreads(Service):
    name, label, blocking = "sync-threads", "sync, N threads with a connection each", False

    async def open(self) -> None:
        self.pool = psycopg_pool.ConnectionPool(
            self.url, min_size=self.size, max_size=self.size, open=False, kwargs={"autocommit": True}
        )
        self.pool.open(wait=True, timeout=POOL_OPEN_SECONDS)
        self.threads = concurrent.futures.ThreadPoolExecutor(self.size, thread_name_prefix="db")

    async def close(self) -> None:
        self.threads.shutdown(wait=True, cancel_futures=True)
        self.pool.close()

    def _answer_blocking(self) -> bytes:
        with self.pool.connection() as conn:
            return fetch_blocking(conn, self.sql, self.prepare)

    async def body(self) -> bytes:
        # The loop only hands the request to a thread; the wait happens there, one thread per query.
        return await asyncio.get_running_loop().run_in_executor(self.threads, self._answer_blocking)


class AsyncPoolStream(AsyncPool):
    name, variant, label, streams = "async-pool-stream", None, "async pool, rows streamed as they arrive", True

    async def stream(self, write: Callable[[bytes], None]) -> None:
        """Write the body in pieces as rows arrive: the same bytes ``body()`` returns."""
        async with self.pool.connection() as conn, conn.cursor() as cur:
            pending, size, columns = [b"["], 1, None
            async for row in cur.stream(self.sql, size=STREAM_ROWS):
                if columns is None:
                    columns = [c.name for c in cur.description or ()]
                else:
                    pending.append(b",")
                pending.append(encode_row(columns, row))
                size += len(pending[-1]) + 1
                if size >= STREAM_CHUNK_BYTES:
                    write(b"".join(pending))
                    pending, size = [], 0
            pending.append(b"]")
            write(b"".join(pending))

    async def body(self) -> bytes:
        parts: list[bytes] = []
        await self.stream(parts.append)
        return b"".join(parts)


SERVICES: dict[str, type[Service]] = {
    cls.name: cls
    for cls in (SyncConnect, AsyncConnect, SyncShared, AsyncShared, AsyncPool, AsyncPoolPrepared,
                SyncThreads, AsyncPoolStream)  # fmt: skip
}
VARIANTS: dict[int, type[Service]] = {cls.variant: cls for cls in SERVICES.values() if cls.variant is not None}


# --- HTTP -------------------------------------------------------------------------------------------


def chunked_head(keep_alive: bool) -> bytes:
    """The head of a 200 response whose body follows in chunks (its length is not known yet)."""
    connection = b"keep-alive" if keep_alive else b"close"
    return (b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: %s\r\nX-Worker: 0\r\n\r\n") % (JSON.encode(), connection)  # fmt: skip


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (an empty one ends the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


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
            self.transport.write(chunked_head(request.keep_alive))
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
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in sockets.STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    await service.open()
    try:
        server = await loop.create_server(lambda: ServiceProtocol(service), sock=listener, backlog=sockets.BACKLOG)
        ready()
        await stop.wait()
        server.close()
    finally:
        await service.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m iolab.topics.databases.services NAME --url URL --sql SQL``: serve until Ctrl-C or SIGTERM."""
    import uvloop

    parser = argparse.ArgumentParser(prog="python -m iolab.topics.databases.services", description=__doc__.split("\n")[0])
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


# --- from Python ------------------------------------------------------------------------------------


def service_name(which: int | str) -> str:
    """The service's name for a variant number of source 002 or a name; ValueError if neither."""
    if isinstance(which, int) or str(which).isdigit():
        if int(which) not in VARIANTS:
            raise ValueError(f"variant {which}: source 002 has variants 1 to 6")
        return VARIANTS[int(which)].name
    if which not in SERVICES:
        raise ValueError(f"unknown service {which!r}; the services are: {', '.join(SERVICES)}")
    return str(which)


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
    argv = procs.python_argv("-m", "iolab.topics.databases.services", name, "--url", db.url, "--sql", sql, "--size", str(size))
    try:
        with procs.open_process(argv) as process:
            match = process.wait_for_line(sockets.LISTENING_PATTERN, timeout=START_SECONDS + POOL_OPEN_SECONDS)
            yield Server(name, int(match[1]), process)
    finally:
        db.wait_backends(before)


if __name__ == "__main__":
    sys.exit(main())
