"""The upstreams: every endpoint of a latency spec on 127.0.0.1, all in one asyncio process.

``python -m iolab.topics.upstreams.endpoints '{"latency": "20ms*9,hang"}'`` (an :class:`UpstreamsSpec`,
through :mod:`iolab.kit.channel`) prints ``upstreams listening on 127.0.0.1 ports P1,P2,...`` (one
port per endpoint, in spec order) and serves until SIGTERM or Ctrl-C. An answering endpoint replies ``200 ok`` to every request after its
latency, on a timer: waiting costs the process nothing, so one process on one core serves
thousands of requests in flight. The loop is asyncio's own, not uvloop: libuv keeps timers in whole
milliseconds from a clock read once per loop iteration, so a 20 ms answer could leave up to a
millisecond early, and the service's overhead (its latency minus 20 ms) would come out negative. The faults are what a dependency does when it goes down (see
:mod:`iolab.topics.upstreams.spec`). The HTTP is the lab kit's own (:class:`iolab.web.http.Connection`), so a
malformed request gets its 4xx like from any course server.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from iolab.kit import channel, procs, sockets
from iolab.kit.machine import raise_open_files_limit
from iolab.topics.upstreams.spec import ANSWER, Endpoint, format_spec, parse_spec
from iolab.web.http import Connection, HttpError, Request, Response

READY = "upstreams listening on 127.0.0.1 ports {ports}"
READY_PATTERN = r"upstreams listening on 127\.0\.0\.1 ports ([\d,]+)"
OK = Response(200, b"ok\n")
# SO_LINGER on with a zero timeout: close() then discards the connection with a RST instead of a FIN.
RESET_ON_CLOSE = struct.pack("ii", 1, 0)


class Answering(asyncio.Protocol):
    """An endpoint that answers each request after ``latency_s``."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.conn = Connection()
        self.transport: asyncio.Transport | None = None
        # Answers due, oldest first: every request waits the same latency, so they fire in order.
        self.timers: collections.deque[asyncio.TimerHandle] = collections.deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            requests = self.conn.feed(data)
        except HttpError as error:
            assert self.transport is not None
            self.transport.write(self.conn.respond_error(error))
            self.transport.close()
            return
        loop = asyncio.get_running_loop()
        for request in requests:
            # A timer, not a task per request: the cheapest way to wait, so the upstreams stay fast.
            self.timers.append(loop.call_later(self.latency_s, self._answer, request))

    def _answer(self, request: Request) -> None:
        self.timers.popleft()
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.write(self.conn.respond(request, OK))
        if self.conn.closing:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        for timer in self.timers:
            timer.cancel()


class Resetting(asyncio.Protocol):
    """An endpoint that reads a request and resets the connection instead of answering."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        sock = self.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
        self.transport.abort()


class Hanging(asyncio.Protocol):
    """A black hole: it accepts and reads (so the client's send never blocks), and never answers."""

    def data_received(self, data: bytes) -> None:
        pass


def _protocol(endpoint: Endpoint):
    if endpoint.kind == ANSWER:
        return lambda: Answering(endpoint.latency_s)
    return {"reset": Resetting, "hang": Hanging}[endpoint.kind]


def open_sockets(endpoints: tuple[Endpoint, ...]) -> list[socket.socket]:
    """A socket per endpoint: listening, except for ``refuse``, which is bound but never listens.

    A bound socket that does not listen holds its port (no other program can take it), and the
    kernel answers a connect to it with a RST: ECONNREFUSED, exactly as for a crashed server.
    """
    opened: list[socket.socket] = []
    try:
        for endpoint in endpoints:
            if endpoint.kind == "refuse":
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                opened.append(sock)
                sock.bind((sockets.HOST, 0))
            else:
                opened.append(sockets.open_listener(0))
    except BaseException:
        for sock in opened:
            sock.close()
        raise
    return opened


async def serve_upstreams(endpoints: tuple[Endpoint, ...], listeners: list[socket.socket]) -> None:
    """Serve every endpoint until SIGTERM or SIGINT; prints the ready line once all accept."""
    loop = asyncio.get_running_loop()
    stop = sockets.stop_event()
    servers = [
        await loop.create_server(_protocol(endpoint), sock=sock, backlog=sockets.BACKLOG)
        for endpoint, sock in zip(endpoints, listeners)
        if endpoint.kind != "refuse"
    ]
    ports = ",".join(str(sock.getsockname()[1]) for sock in listeners)
    print(READY.format(ports=ports), flush=True)
    await stop.wait()
    for server in servers:
        server.close()


@dataclass(frozen=True)
class UpstreamsSpec(channel.Spec):
    """The upstreams to serve: a latency spec in source 001's syntax (``20ms*9,hang``), checked and folded when built."""

    ENTRY: ClassVar[str] = "iolab.topics.upstreams.endpoints"

    latency: str

    def __post_init__(self) -> None:
        # The same text as RunSpec.latency, kept short on the command line (one item per run, not per
        # endpoint); parsing it here refuses a bad one in the caller, with the grammar in the message.
        object.__setattr__(self, "latency", format_spec(parse_spec(self.latency)))

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """The endpoints, in spec order."""
        return parse_spec(self.latency)


def run(spec: UpstreamsSpec) -> int:
    """Serve ``spec``'s endpoints in this process until SIGTERM or SIGINT; the exit code."""
    raise_open_files_limit()  # one endpoint may hold thousands of hung calls
    endpoints = spec.endpoints
    listeners = open_sockets(endpoints)
    try:
        asyncio.run(serve_upstreams(endpoints, listeners))
    finally:
        for sock in listeners:
            sock.close()
    return 0


@dataclass(frozen=True)
class Upstreams:
    """Running upstreams (see :func:`open_upstreams`): each endpoint and its port, in spec order."""

    endpoints: tuple[Endpoint, ...]
    ports: tuple[int, ...]
    process: procs.ManagedProcess

    @property
    def spec(self) -> str:
        """The latency spec they serve."""
        return format_spec(self.endpoints)

    def url(self, index: int) -> str:
        """The URL of endpoint ``index``."""
        return f"http://{sockets.HOST}:{self.ports[index]}/"

    @property
    def pid(self) -> int:
        """The upstreams' process id."""
        return self.process.pid


@contextlib.contextmanager
def open_upstreams(spec: str | tuple[Endpoint, ...]) -> Iterator[Upstreams]:
    """Start the upstreams of ``spec`` in their own process; leaving the block stops them."""
    endpoints = parse_spec(spec) if isinstance(spec, str) else tuple(spec)
    with channel.open_child(UpstreamsSpec(format_spec(endpoints))) as child:
        # Not wait_listening: one process listens on a port per endpoint, and says them all in one line.
        match = child.process.wait_for_line(READY_PATTERN, timeout=procs.START_SECONDS)
        ports = tuple(int(p) for p in match[1].split(","))
        yield Upstreams(endpoints, ports, child.process)


if __name__ == "__main__":
    channel.child_main(UpstreamsSpec, run)
