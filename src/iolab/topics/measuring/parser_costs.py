"""What HTTP parsing costs per request: h11 (pure Python) against httptools (llhttp, in C).

The servers' protocol (:mod:`iolab.web.http`) uses httptools. This module holds the measurement behind
that choice, so the book can show it run on the reader's machine: one request parsed and its
response encoded, in a loop, by each library, with nothing else around it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import h11

from iolab.web import http

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: iolab\r\nAccept: */*\r\n\r\n"


def h11_cycle() -> Callable[[], None]:
    """One request parsed and a 13-byte response encoded by h11, as a repeatable call."""
    conn = h11.Connection(h11.SERVER)

    def cycle() -> None:
        conn.receive_data(REQUEST)
        conn.next_event(), conn.next_event()  # the Request, then its EndOfMessage
        conn.send(h11.Response(status_code=200, headers=[("Content-Length", "13")]))
        conn.send(h11.Data(data=b"hello, world\n"))
        conn.send(h11.EndOfMessage())
        conn.start_next_cycle()

    return cycle


def httptools_cycle() -> Callable[[], None]:
    """The same through :class:`iolab.web.http.Connection` (httptools inside)."""
    conn = http.Connection()
    response = http.Response(200, b"hello, world\n")

    def cycle() -> None:
        for request in conn.feed(REQUEST):
            conn.respond(request, response)

    return cycle


def per_request_us(cycle: Callable[[], None], requests: int = 2000) -> float:
    """Microseconds per call of ``cycle``, over ``requests`` calls."""
    start = time.perf_counter()
    for _ in range(requests):
        cycle()
    return (time.perf_counter() - start) / requests * 1e6


def compare(requests: int = 2000, repeats: int = 5) -> dict[str, list[float]]:
    """Microseconds per request, ``repeats`` measurements for each parser: ``{"h11": [...], "httptools": [...]}``."""
    cycles = {"h11": h11_cycle(), "httptools": httptools_cycle()}
    return {name: [per_request_us(cycle, requests) for _ in range(repeats)] for name, cycle in cycles.items()}
