"""Client version 4: trio's streams and a nursery, a task per connection."""

from __future__ import annotations

import time

import trio

from iolab.kit.sockets import HOST, RECV_BYTES
from iolab.topics.event_loop.counting import CONNECTING, HELLO, TopWords, WordStream


async def _open(port: int, gate: trio.Semaphore) -> tuple[trio.SocketStream, bytes]:
    async with gate:  # see counting.CONNECTING
        stream = await trio.open_tcp_stream(HOST, port)
        try:
            await stream.send_all(HELLO)
            return stream, await stream.receive_some(RECV_BYTES)  # the first word: the server has accepted us
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise


async def _read_connection(port: int, top: TopWords, gate: trio.Semaphore, connected_at: list[float]) -> None:
    stream, data = await _open(port, gate)
    connected_at.append(time.perf_counter())
    async with stream:
        words = WordStream()
        while data:
            for word in words.feed(data):
                top.add(word)
            data = await stream.receive_some(RECV_BYTES)


async def _read_all(port: int, connections: int, top: TopWords, connected_at: list[float], timeout: float) -> None:
    gate = trio.Semaphore(CONNECTING)
    with trio.fail_after(timeout):
        async with trio.open_nursery() as nursery:
            for _ in range(connections):
                nursery.start_soon(_read_connection, port, top, gate, connected_at)


def count_words(port: int, connections: int, top: TopWords, connected_at: list[float], timeout: float) -> None:
    """Read every connection to the end on trio, counting into ``top``."""
    trio.run(_read_all, port, connections, top, connected_at, timeout)
