"""Step 1: callbacks on a selector. The loop waits for *any* socket to be ready and calls its callback.

This is the engine every later step keeps: ``selectors`` (epoll on Linux) tells which registered
descriptors can be read or written without blocking, and the loop calls the function registered for
each. The price shows in :func:`fetch`: every wait splits the code into another callback, and
the state that a blocking program keeps in local variables must live in closures ("callback hell").
:func:`fetch` is 500 Lines' crawler fetch, for any server that answers a request and closes: the kit's
HTTP servers (``GET / HTTP/1.0``) or the word server of this chapter (``hello``).
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections.abc import Callable

READ_BYTES = 64 * 1024


class CallbackLoop:
    """A selector plus the callback registered for each descriptor; :meth:`run` calls the ready ones."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()

    def add_reader(self, sock: socket.socket, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time ``sock`` is readable, until :meth:`remove`."""
        self.selector.register(sock, selectors.EVENT_READ, callback)

    def add_writer(self, sock: socket.socket, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time ``sock`` is writable, until :meth:`remove`."""
        self.selector.register(sock, selectors.EVENT_WRITE, callback)

    def remove(self, sock: socket.socket) -> None:
        """Stop watching ``sock``."""
        self.selector.unregister(sock)

    def run(self, until: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait for ready sockets and call their callbacks until ``until()`` is true (TimeoutError after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the callbacks did not finish within {timeout:g} s")
            for key, _ in self.selector.select(left):
                key.data()

    def close(self) -> None:
        """Release the selector (its epoll descriptor)."""
        self.selector.close()


def fetch(loop: CallbackLoop, address: tuple[str, int], request: bytes, on_done: Callable[[bytes], None]) -> None:
    """Connect to ``address``, send ``request``, read until the server closes, then call ``on_done(answer)``.

    Three waits, three nested callbacks: connected (writable), sent, data or end of stream.
    """
    sock = socket.socket()
    sock.setblocking(False)
    chunks: list[bytes] = []
    unsent = memoryview(request)
    code = sock.connect_ex(address)  # non-blocking: EINPROGRESS now, writable once connected
    if code not in (0, errno.EINPROGRESS):
        raise OSError(code, f"connect to {address}: {errno.errorcode.get(code, code)}")

    def on_writable() -> None:
        nonlocal unsent
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            loop.remove(sock)
            sock.close()
            raise OSError(code, f"connect to {address} failed")
        unsent = unsent[sock.send(unsent) :]
        if not unsent:  # all sent: from now on, wait for the answer
            loop.remove(sock)
            loop.add_reader(sock, on_readable)

    def on_readable() -> None:
        data = sock.recv(READ_BYTES)
        if data:
            chunks.append(data)
            return
        loop.remove(sock)
        sock.close()
        on_done(b"".join(chunks))

    loop.add_writer(sock, on_writable)
