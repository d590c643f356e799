"""The readiness server: one thread, ``epoll``, and a ``recv`` and a ``send`` per request.

This is the loop under every readiness-based event loop in the course (asyncio, uvloop, trio, the
scratch loop), with nothing else: ``epoll_wait`` says which sockets have bytes, and the program then
asks for them with ``recv`` and answers with ``send``. Per request that is two system calls, plus a
share of one ``epoll_wait`` (one wait reports every socket that became ready meanwhile). Every call
is counted in :class:`~iolab.topics.completion.tiny_http.Counts`, so the count ``strace`` makes can be
checked against the program's own.
"""

from __future__ import annotations

import select
import socket

from iolab.kit import sockets
from iolab.topics.completion.tiny_http import Counts, answer


class _Client:
    __slots__ = ("sock", "pending", "outbox", "writing")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = bytearray()  # the start of a request not complete yet
        self.outbox = b""  # what the socket did not take yet (rare: answers are small)
        self.writing = False  # whether epoll also watches for room to send the rest


def serve(listener: socket.socket, counts: Counts) -> None:
    """Serve on ``listener`` until SIGTERM or SIGINT (which raise out of the wait), counting in ``counts``."""
    assert counts.calls is not None and counts.waits is not None
    listener.setblocking(False)
    clients: dict[int, _Client] = {}
    with select.epoll() as epoll:
        epoll.register(listener.fileno(), select.EPOLLIN)
        while True:
            events = epoll.poll()
            counts.calls += 1
            counts.waits += 1
            for fd, mask in events:
                if fd == listener.fileno():
                    _accept(listener, epoll, clients, counts)
                elif mask & select.EPOLLOUT:
                    _flush(clients[fd], epoll, clients, counts)
                else:
                    _receive(clients[fd], epoll, clients, counts)


def _accept(listener: socket.socket, epoll: select.epoll, clients: dict[int, _Client], counts: Counts) -> None:
    accepted, _ = sockets.accept_waiting(listener)
    counts.calls += len(accepted) + 1  # the accept that found the queue empty ends the batch
    for sock in accepted:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        clients[sock.fileno()] = _Client(sock)
        epoll.register(sock.fileno(), select.EPOLLIN)
        # getsockname (CPython's socket() asks it of every accepted descriptor), setblocking (one ioctl
        # FIONBIO on Linux), setsockopt, epoll_ctl
        counts.calls += 4
        counts.connections += 1


def _receive(client: _Client, epoll: select.epoll, clients: dict[int, _Client], counts: Counts) -> None:
    try:
        data = client.sock.recv(sockets.RECV_BYTES)
    except BlockingIOError:
        data = None  # readiness is a hint, not a promise
    except OSError:
        data = b""
    counts.calls += 1
    if data is None:
        return
    if not data:
        _close(client, epoll, clients, counts)
        return
    client.pending += data
    reply = answer(client.pending)
    counts.requests += reply.requests
    client.outbox += reply.data
    _flush(client, epoll, clients, counts)
    if reply.close and client.sock.fileno() in clients:  # 400: what was owed is sent (or dropped), then close
        _close(client, epoll, clients, counts)


def _flush(client: _Client, epoll: select.epoll, clients: dict[int, _Client], counts: Counts) -> None:
    """Send what the client is owed; watch for EPOLLOUT while the socket takes only part of it."""
    if client.outbox:
        try:
            sent = client.sock.send(client.outbox)
        except BlockingIOError:
            sent = 0
        except OSError:  # the client left mid-answer
            _close(client, epoll, clients, counts)
            return
        counts.calls += 1
        client.outbox = client.outbox[sent:]
    if bool(client.outbox) != client.writing:
        client.writing = bool(client.outbox)
        epoll.modify(client.sock.fileno(), select.EPOLLIN | (select.EPOLLOUT if client.writing else 0))
        counts.calls += 1


def _close(client: _Client, epoll: select.epoll, clients: dict[int, _Client], counts: Counts) -> None:
    fd = client.sock.fileno()
    epoll.unregister(fd)
    client.sock.close()
    del clients[fd]
    counts.calls += 2
