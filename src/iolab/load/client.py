"""The client end of one HTTP/1.1 connection: write a GET, frame the answer by Content-Length.

An ``asyncio.Protocol`` and not streams: a protocol's ``data_received`` is a plain callback, with no
task switch and no buffer copy per read, and this client spends most of its time there. The parser
handles only what the course's servers (and nginx) send: a status line, headers, and a body sized by
Content-Length; one request in flight per connection, never pipelined.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import struct
from typing import Protocol

# A response head larger than this is not one of ours: stop rather than buffer without bound.
MAX_HEAD_BYTES = 64 * 1024


def request_bytes(host: str, port: int, target: str, keepalive: bool) -> bytes:
    """The bytes of one GET request, sent unchanged for every request of a run."""
    close = b"" if keepalive else b"Connection: close\r\n"
    return b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n" % (target.encode(), host.encode(), port, close)


def connect_error_kind(exc: OSError) -> str:
    """The error kind of a failed connect: refused, connect_timeout, or connect_<errno name>."""
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, TimeoutError):
        return "connect_timeout"
    return "connect_" + errno.errorcode.get(exc.errno or 0, type(exc).__name__).lower()


class Listener(Protocol):
    """What a connection tells its owner: an answer framed, a broken answer, the connection gone."""

    def answered(self, conn: ClientConnection, status: int, size: int) -> None: ...

    def failed(self, conn: ClientConnection, kind: str) -> None: ...

    def lost(self, conn: ClientConnection, exc: Exception | None) -> None: ...


class ClientConnection(asyncio.Protocol):
    """One client connection; reports each complete response to its ``listener``."""

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.need = -1  # total bytes of the response being read, once its head is parsed
        self.status = 0
        self.close_after = False  # the server said "Connection: close"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not an asyncio.Transport subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Without it, Nagle's algorithm can hold a small request back waiting for an ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, data: bytes) -> None:
        """Write one request."""
        assert self.transport is not None
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self.need < 0 and not self.buffer:
            # The usual read: it begins a response and holds all of it (the course's answers are
            # small). Framed where it lies, without a copy into the buffer and out again; with the
            # bounded finds of _parse_head, framing one of nginx's answers went from 1.0 to 0.8 us
            # of pure Python on the course machine (issue 18).
            if not self._parse_head(data):
                if self.need < 0:  # an incomplete head: wait for the rest
                    self.buffer += data
                return
            if len(data) >= self.need:
                size, self.need = self.need, -1
                self.listener.answered(self, self.status, size)
                return
        buffer = self.buffer
        buffer += data
        if self.need < 0 and not self._parse_head(buffer):
            return
        if len(buffer) >= self.need:
            size, self.need = self.need, -1
            buffer.clear()  # one request in flight: nothing after the body belongs to us
            self.listener.answered(self, self.status, size)

    def _parse_head(self, data: bytes | bytearray) -> bool:
        """Read status, Content-Length and Connection from a complete head in ``data`` (which begins
        the response); False if incomplete or broken (``failed`` was called for a broken one)."""
        end = data.find(b"\r\n\r\n")
        if end < 0:
            if len(data) > MAX_HEAD_BYTES:
                self.listener.failed(self, "bad_response")
            return False
        # Every find stops at the end of the head: the body is never searched, nor copied.
        start = data.find(b"\r\nContent-Length:", 0, end)  # as nginx and the course's servers spell it
        head = data
        if start < 0:
            head = data[:end].lower()
            start = head.find(b"\r\ncontent-length:")
        line_end = head.find(b"\r\n", start + 2, end)
        try:
            self.status = int(data[9:12])  # b"HTTP/1.1 200 OK"
            length = int(head[start + 17 : line_end if line_end > 0 else end]) if start >= 0 else -1
        except ValueError:
            length = -1
        if length < 0:
            self.listener.failed(self, "bad_response")
            return False
        # "Connection"/"connection", "close"/"Close": the spellings servers use, without lower()
        # on every response.
        self.close_after = data.find(b"onnection: close", 0, end) >= 0 or data.find(b"onnection: Close", 0, end) >= 0
        self.need = end + 4 + length
        return True

    def reset(self) -> None:
        """Forget any partial response."""
        self.buffer.clear()
        self.need = -1

    def close(self, abort: bool = False) -> None:
        """Close the connection; ``abort`` drops unsent data and resets it at once."""
        if self.transport is not None:
            if abort:
                sock = self.transport.get_extra_info("socket")
                if sock is not None:
                    # Linger 0: the kernel answers with a reset and keeps no TIME_WAIT entry.
                    # Without it, each run of thousands of connections would pin as many local
                    # ports for a minute, and the next run's connects would crawl through a port
                    # range (28,232 ports by default) that is mostly taken.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.transport.abort()
            else:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.listener.lost(self, exc)
