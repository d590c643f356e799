"""Step 2: generators as coroutines. ``yield`` says what the code waits for; ``send`` resumes it with the answer.

A generator is a function that can stop in the middle (at ``yield``) and be resumed later, its local
variables intact. ``gen.send(value)`` resumes it and makes ``value`` the result of the ``yield``
expression. So a generator can hand its caller a request ("wake me when this socket is readable")
and get the answer back, with no callback in sight: the state that step 1 kept in closures stays in
ordinary local variables.

:func:`run_blocking` is the simplest driver: it answers each request by waiting for that one socket.
It runs one coroutine at a time, so it gains nothing yet; step 4's Task and loop drive many.
"""

from __future__ import annotations

import selectors
import socket
from collections.abc import Generator
from typing import Any

READ_BYTES = 64 * 1024

# What a coroutine of this step yields: ("readable" | "writable", socket).
Request = tuple[str, socket.socket]


def running_total() -> Generator[float, float, None]:
    """The smallest coroutine: each ``send(x)`` adds ``x`` and gets the running total back."""
    total = 0.0
    while True:
        total += yield total


def fetch(address: tuple[str, int], request: bytes) -> Generator[Request, None, bytes]:
    """Connect to ``address``, send ``request``, read until the server closes; the answer, as the return value."""
    sock = socket.socket()
    sock.setblocking(False)
    try:
        sock.connect_ex(address)
        unsent = memoryview(request)
        while unsent:
            yield ("writable", sock)  # connected (a failed connect makes send raise)
            unsent = unsent[sock.send(unsent) :]
        chunks = []
        while True:
            yield ("readable", sock)
            data = sock.recv(READ_BYTES)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
    finally:
        sock.close()


def run_blocking(coro: Generator[Request, Any, Any], timeout: float = 30.0) -> Any:
    """Drive one coroutine: wait for what it asks, ``send`` it back in; its return value."""
    events = {"readable": selectors.EVENT_READ, "writable": selectors.EVENT_WRITE}
    with selectors.DefaultSelector() as selector:
        try:
            request = coro.send(None)  # start it: run to the first yield
            while True:
                kind, sock = request
                selector.register(sock, events[kind])
                ready = selector.select(timeout)
                selector.unregister(sock)
                if not ready:
                    raise TimeoutError(f"{sock} not {kind} within {timeout:g} s")
                request = coro.send(None)
        except StopIteration as stop:  # a generator's ``return x`` arrives as StopIteration(x)
            return stop.value
