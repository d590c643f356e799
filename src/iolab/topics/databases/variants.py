"""Source 002's six ways to serve a query, and two more: each a small class that gets a body from PostgreSQL.

Every service is the same program (:mod:`~iolab.topics.databases.protocol` serves it over HTTP,
:mod:`~iolab.topics.databases.service` runs it as a process); the classes here are what differs: how
``body()`` talks to the database, as the source's six scripts do:

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
Every body is encoded by :func:`iolab.topics.databases.queries.encode`, so all variants answer the
same bytes. ``SERVICES`` (by name) and ``VARIANTS`` (by the source's number) are the table of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import ClassVar

import psycopg
import psycopg_pool

from iolab.topics.databases.queries import encode, encode_row

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
    streams: ClassVar[bool] = False  # it has a ``stream(write)`` that writes the body as rows arrive

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


def service_name(which: int | str) -> str:
    """The service's name for a variant number of source 002 or a name; ValueError if neither."""
    if isinstance(which, int) or str(which).isdigit():
        if int(which) not in VARIANTS:
            raise ValueError(f"variant {which}: source 002 has variants 1 to 6")
        return VARIANTS[int(which)].name
    if which not in SERVICES:
        raise ValueError(f"unknown service {which!r}; the services are: {', '.join(SERVICES)}")
    return str(which)
