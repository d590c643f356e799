"""Client version 2: the event loop built from scratch (``iolab.scratchloop``), a task per connection.

No lock: tasks switch only at ``await``, and ``TopWords.add`` has none, so no task ever sees another's
half-done update.
"""

from __future__ import annotations

import socket
import time

from iolab import scratchloop
from iolab.kit.sockets import HOST, RECV_BYTES
from iolab.scratchloop.loop import EventLoop, Semaphore, Switch
from iolab.topics.event_loop.counting import CONNECTING, HELLO, TopWords, WordStream


async def _open(loop: EventLoop, port: int, gate: Semaphore) -> tuple[socket.socket, bytes]:
    async with gate:  # see counting.CONNECTING
        sock = socket.socket()
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, (HOST, port))
            await loop.sock_sendall(sock, HELLO)
            return sock, await loop.sock_recv(sock, RECV_BYTES)  # the first word: the server has accepted us
        except BaseException:
            sock.close()
            raise


async def _read_connection(loop: EventLoop, port: int, top: TopWords, gate: Semaphore, connected_at: list[float]) -> None:
    sock, data = await _open(loop, port, gate)
    connected_at.append(time.perf_counter())
    with sock:
        stream = WordStream()
        while data:
            for word in stream.feed(data):
                top.add(word)
            data = await loop.sock_recv(sock, RECV_BYTES)


async def _read_all(loop: EventLoop, port: int, connections: int, top: TopWords, connected_at: list[float]) -> None:
    gate = Semaphore(CONNECTING)
    tasks = [loop.create_task(_read_connection(loop, port, top, gate, connected_at), f"connection {i}")
             for i in range(connections)]
    await scratchloop.gather(*tasks)


def count_words(port: int, connections: int, top: TopWords, connected_at: list[float], timeout: float) -> None:
    """Read every connection to the end on one from-scratch loop, counting into ``top``."""
    scratchloop.run(_read_all, port, connections, top, connected_at, timeout=timeout)


def traced_run(port: int, connections: int, timeout: float = 60.0) -> tuple[TopWords, list[Switch]]:
    """:func:`count_words` on a loop that records its task switches; the counts and the switches."""
    top, loop = TopWords(), EventLoop(trace=True)
    try:
        loop.run_until_complete(_read_all(loop, port, connections, top, []), timeout)
    finally:
        loop.close()
    return top, loop.trace or []
