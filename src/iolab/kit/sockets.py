"""What every server model does the same way: open the listening socket, say so, stop on a signal."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import signal
import socket
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

HOST = "127.0.0.1"  # loopback only: a lab server must not be reachable from the network
# Chapter 12's netlab: a private range that exists only inside the lab's own two network namespaces.
# A server may listen there (--host), and nowhere else but the loopback.
LAB_NETWORK = ipaddress.ip_network("10.77.0.0/24")
# The accept queue (backlog). 1,000 clients connecting at once must not overflow it: past the queue
# the kernel drops SYNs, the client retries after 1 s, and the lost second looks like server
# latency. Python's default, min(128, SOMAXCONN), is far too small for the course's experiments;
# the kernel still caps the value at net.core.somaxconn (4096 on recent kernels).
BACKLOG = 1024
# One read takes a whole pipelined burst in one call; asyncio's streams read 64 KiB too.
RECV_BYTES = 64 * 1024
# After an error response, how long to read and drop what the client still sends before closing.
# Closing a socket with unread bytes makes the kernel send RST, and the RST can reach the client
# before the 4xx does: it would see "connection reset" instead of the reason (nginx's
# lingering_close does the same).
LINGER_SECONDS = 1.0
LISTENING = "listening on http://{host}:{port}"
LISTENING_PATTERN = r"listening on http://(?:127\.0\.0\.1|10\.77\.0\.\d{1,3}):(\d+)"  # group 1: the port
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# accept() errors that mean "out of file descriptors or memory, for now" (trio's own list): an
# event-loop server waits a little and goes on, rather than end with every connection it holds.
ACCEPT_OVERLOAD = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
OVERLOAD_SECONDS = 0.1


class Stop(BaseException):
    """Raised in the main thread by SIGTERM or SIGINT: leave the serving loop and clean up.

    A BaseException, like KeyboardInterrupt, so that no ``except Exception`` swallows it.
    """


def accept_waiting(listener: socket.socket) -> tuple[list[socket.socket], bool]:
    """Every connection waiting on the non-blocking ``listener``, and whether accept() ran out of
    descriptors or memory (then the caller should wait ``OVERLOAD_SECONDS`` before the next try).

    Taking them all at once, as asyncio does, matters when a thousand clients connect together: a
    loop that takes one per pass makes the last one wait for a thousand passes.
    """
    accepted = []
    while True:
        try:
            sock, _ = listener.accept()
        except BlockingIOError:
            return accepted, False
        except OSError as exc:
            if exc.errno not in ACCEPT_OVERLOAD:
                raise
            print(f"accept failed ({os.strerror(exc.errno)}); retrying in {OVERLOAD_SECONDS} s", flush=True)
            return accepted, True
        accepted.append(sock)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, for a program that cannot be given port 0 (nginx,
    PostgreSQL). Another process may take it before the program binds it: a small race, accepted."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def check_host(host: str) -> str:
    """``host`` if a lab server may listen there (the loopback, or the netlab's range); else ValueError."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"--host {host!r}: give an IPv4 address, 127.0.0.1 or one in {LAB_NETWORK}") from None
    if str(address) != HOST and address not in LAB_NETWORK:
        raise ValueError(f"--host {host}: a lab server listens on {HOST}, or inside a netlab namespace on an "
                         f"address in {LAB_NETWORK}; nowhere a real network could reach it")
    return str(address)


def open_listener(port: int = 0, backlog: int = BACKLOG, reuseport: bool = False, host: str = HOST) -> socket.socket:
    """A TCP socket listening on ``host``:``port`` (0: the kernel picks a free port); see :func:`check_host`."""
    host = check_host(host)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # A restarted server can bind its port at once instead of waiting out TIME_WAIT (60 s).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuseport:
            # Several sockets on one port; the kernel spreads new connections over them by a hash.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"port {port} is taken by another process; use --port 0 to get a free one") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise OSError(exc.errno, f"{host} is not an address of this network namespace; run the server inside "
                                     "the netlab's server namespace (python -m iolab netlab status names it)") from None
        raise
    return sock


def open_listeners(count: int, port: int = 0, backlog: int = BACKLOG, host: str = HOST) -> list[socket.socket]:
    """``count`` SO_REUSEPORT sockets listening on one port: one per worker, each with its own queue.

    The parent opens them all before forking, so the port is known and listening before the
    "listening on" line, and no client can arrive before a worker's socket exists.
    """
    first = open_listener(port, backlog, reuseport=True, host=host)
    port = first.getsockname()[1]
    return [first, *(open_listener(port, backlog, reuseport=True, host=host) for _ in range(count - 1))]


def keep_only(listeners: list[socket.socket], index: int) -> socket.socket:
    """Close every listener but ``listeners[index]`` in this (child) process; that one.

    A child holding a sibling's socket would keep it alive after the sibling dies, and the kernel
    would go on queueing connections there that nobody accepts.
    """
    for i, other in enumerate(listeners):
        if i != index:
            other.close()
    return listeners[index]


def announce(sock: socket.socket) -> None:
    """Print the "listening on" line that open_server (and a reader) waits for, flushed."""
    host, port = sock.getsockname()[:2]
    print(LISTENING.format(host=host, port=port), flush=True)


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop(signal.Signals(signum).name)


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise :class:`Stop` in the main thread; Stop ends the block.

    A blocking accept() or recv() in the main thread is interrupted by the signal, so the sync
    models stop even when no client comes.
    """
    previous = {sig: signal.signal(sig, _raise_stop) for sig in STOP_SIGNALS}
    try:
        yield
    except Stop:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.stdout.flush()


def stop_event() -> asyncio.Event:
    """An event that SIGTERM or SIGINT sets, on the running loop: the loop's way to hear "stop"."""
    import asyncio  # here: the blocking servers import this module and need no event loop

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    return stop
