"""Client version 3: asyncio's streams and a TaskGroup, a task per connection."""

from __future__ import annotations

import asyncio
import time

from iolab.kit.sockets import HOST, RECV_BYTES
from iolab.topics.event_loop.counting import CONNECTING, HELLO, TopWords, WordStream


async def _open(port: int, gate: asyncio.Semaphore) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    async with gate:  # see counting.CONNECTING
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            writer.write(HELLO)
            return reader, writer, await reader.read(RECV_BYTES)  # the first word: the server has accepted us
        except BaseException:
            writer.close()
            raise


async def _read_connection(port: int, top: TopWords, gate: asyncio.Semaphore, connected_at: list[float]) -> None:
    reader, writer, data = await _open(port, gate)
    connected_at.append(time.perf_counter())
    try:
        stream = WordStream()
        while data:
            for word in stream.feed(data):
                top.add(word)
            data = await reader.read(RECV_BYTES)
    finally:
        writer.close()


async def _read_all(port: int, connections: int, top: TopWords, connected_at: list[float], timeout: float) -> None:
    gate = asyncio.Semaphore(CONNECTING)
    async with asyncio.timeout(timeout), asyncio.TaskGroup() as group:
        for _ in range(connections):
            group.create_task(_read_connection(port, top, gate, connected_at))


def count_words(port: int, connections: int, top: TopWords, connected_at: list[float], timeout: float) -> None:
    """Read every connection to the end on asyncio's default loop, counting into ``top``."""
    asyncio.run(_read_all(port, connections, top, connected_at, timeout))
