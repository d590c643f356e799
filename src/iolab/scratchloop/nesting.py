"""Step 5: coroutines that call coroutines, first with ``yield from``, then with ``async def``/``await``.

Source 004's library functions (its Fig. 3) are generators that yield a future and return a value;
user code calls them with ``yield from``, which passes every yielded future straight through to the
Task and hands the inner ``return`` value back as the value of the expression. The Task of step 4
does not change: it still sees only futures.

``await`` is the same mechanism with its own syntax: ``await x`` calls ``x.__await__()`` and
delegates to the iterator it returns, exactly as ``yield from`` does. A Future's ``__await__`` yields
the future itself (see ``future.py``), so ``async def`` functions run on the same Task, unchanged.
Compare :func:`fetch_generator` with :func:`fetch_async`: only the keywords differ.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Generator

from iolab.scratchloop.callbacks import READ_BYTES, CallbackLoop
from iolab.scratchloop.future import Future
from iolab.scratchloop.task import ready


def _check_connected(sock: socket.socket, address: tuple[str, int]) -> None:
    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if code:
        sock.close()
        raise OSError(code, f"connect to {address[0]}:{address[1]}: {os.strerror(code)}")


def _nonblocking_socket(address: tuple[str, int]) -> socket.socket:
    sock = socket.socket()
    sock.setblocking(False)
    code = sock.connect_ex(address)
    if code not in (0, errno.EINPROGRESS):
        sock.close()
        raise OSError(code, f"connect to {address[0]}:{address[1]}: {os.strerror(code)}")
    return sock


# --- generator-based coroutines: yield from ------------------------------------------------------


def connect(loop: CallbackLoop, address: tuple[str, int]) -> Generator[Future, None, socket.socket]:
    """A socket connected to ``address`` (the library's "async connect", source 004 Fig. 3)."""
    sock = _nonblocking_socket(address)
    yield from ready(loop, sock, "writable")
    _check_connected(sock, address)
    return sock


def send(loop: CallbackLoop, sock: socket.socket, data: bytes) -> Generator[Future, None, None]:
    """Send all of ``data``."""
    unsent = memoryview(data)
    while unsent:
        yield from ready(loop, sock, "writable")
        unsent = unsent[sock.send(unsent) :]


def recv(loop: CallbackLoop, sock: socket.socket) -> Generator[Future, None, bytes]:
    """The next bytes ``sock`` receives (b"" at end of stream)."""
    yield from ready(loop, sock, "readable")
    return sock.recv(READ_BYTES)


def fetch_generator(loop: CallbackLoop, address: tuple[str, int], request: bytes) -> Generator[Future, None, bytes]:
    """User code in source 004's style (its Fig. 6): ``yield from`` the library's coroutines."""
    sock = yield from connect(loop, address)
    with sock:
        yield from send(loop, sock, request)
        chunks = []
        while data := (yield from recv(loop, sock)):
            chunks.append(data)
    return b"".join(chunks)


# --- native coroutines: async def and await -------------------------------------------------------


async def connect_async(loop: CallbackLoop, address: tuple[str, int]) -> socket.socket:
    """:func:`connect`, spelled ``async def``/``await``."""
    sock = _nonblocking_socket(address)
    await ready(loop, sock, "writable")
    _check_connected(sock, address)
    return sock


async def send_async(loop: CallbackLoop, sock: socket.socket, data: bytes) -> None:
    """:func:`send`, spelled ``async def``/``await``."""
    unsent = memoryview(data)
    while unsent:
        await ready(loop, sock, "writable")
        unsent = unsent[sock.send(unsent) :]


async def recv_async(loop: CallbackLoop, sock: socket.socket) -> bytes:
    """:func:`recv`, spelled ``async def``/``await``."""
    await ready(loop, sock, "readable")
    return sock.recv(READ_BYTES)


async def fetch_async(loop: CallbackLoop, address: tuple[str, int], request: bytes) -> bytes:
    """:func:`fetch_generator` with ``await`` for ``yield from``: the same Task drives it."""
    sock = await connect_async(loop, address)
    with sock:
        await send_async(loop, sock, request)
        chunks = []
        while data := await recv_async(loop, sock):
            chunks.append(data)
    return b"".join(chunks)
