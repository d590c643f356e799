"""The completion server: one thread, one io_uring, and no system call per request of its own.

A readiness loop asks "which sockets have bytes?" and then fetches them, a ``recv`` per socket.
Here the program asks once, per connection, for *all* its bytes as they come (a multishot receive),
and the kernel answers with completions: "connection 7 got 27 bytes, in buffer 12". The program
reads the completions from a ring in shared memory, queues its answers (sends) on the other ring,
and makes one system call, ``io_uring_enter``, to hand over every queued send and sleep until the
next completion, whatever the number of connections that had something to say meanwhile.

- Accepting is one multishot accept: one submission, a completion per new connection.
- Receiving needs buffers the kernel can pick from when bytes arrive (*provided buffers*, a group
  of :data:`BUFFERS` buffers); the program gives each back once it has read it.
- Sending is one submission per answer; its completion says how much went.

With ``sqpoll``, a kernel thread polls the submission ring (``IORING_SETUP_SQPOLL``) and submits
what the program queues. This loop still calls ``io_uring_submit_and_wait`` on every turn, and
liburing enters the kernel whenever it is asked to wait, so SQPOLL saves this server no system
call: it moves the submission work to the poller's thread (on whichever core the scheduler gives
it). The thread costs CPU while it polls (it counts in the process's CPU time), and goes on polling
for a second after the last submission (the kernel's default idle time; the binding's parameters
are read-only, so the chapter keeps the default).

The binding (PyPI's ``liburing``) holds Python's lock while it waits in the kernel: fine for a
server that has its own process, as this one does.
"""

from __future__ import annotations

import errno
import os
import socket

from iolab.topics.completion import support
from iolab.topics.completion.tiny_http import Counts, answer

ENTRIES = 4096  # submission slots; completions get twice as many
BUFFERS = 1024  # provided receive buffers (more than the connections that send at the same moment)
BUFFER_BYTES = 4096  # a request head is a few dozen bytes; a longer one arrives in pieces
GROUP = 1  # the buffer group's id

# What a completion is for, in the low bits of its user_data; the connection's id above them. An id,
# not the descriptor: a closed connection's descriptor number is soon another's, and a completion
# of the old one may still be on its way.
ACCEPT, RECV, SEND, PROVIDE = range(4)


class _Connection:
    __slots__ = ("fd", "pending", "sending", "closing")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = bytearray()  # the start of a request not complete yet
        self.sending: list[bytes] = []  # answers the kernel is sending: kept alive until it is done
        self.closing = False  # answered 400: close once the answer has gone


class _Ring:
    """The binding's ring, with the few operations the server submits."""

    def __init__(self, sqpoll: bool, counts: Counts) -> None:
        import liburing  # only here: the module imports without the binding

        self.u, self.counts = liburing, counts
        self.ring, self.cqe = liburing.Ring(), liburing.Cqe()
        liburing.io_uring_queue_init(ENTRIES, self.ring, liburing.IORING_SETUP_SQPOLL if sqpoll else 0)
        self.buffers = [bytearray(BUFFER_BYTES) for _ in range(BUFFERS)]

    def _sqe(self, tag: int, cid: int = 0):  # type: ignore[no-untyped-def]
        sqe = self.u.io_uring_get_sqe(self.ring)
        if sqe is None:  # the submission ring is full: hand it over and take a fresh slot
            self.u.io_uring_submit(self.ring)
            if self.counts.calls is not None:
                self.counts.calls += 1
            sqe = self.u.io_uring_get_sqe(self.ring)
        sqe.user_data = cid << 2 | tag
        return sqe

    def provide(self, bid: int) -> None:
        """Give buffer ``bid`` (back) to the kernel's group."""
        self.u.io_uring_prep_provide_buffers(self._sqe(PROVIDE), self.buffers[bid], 1, GROUP, bid)

    def accept(self, listener: int) -> None:
        self.u.io_uring_prep_multishot_accept(self._sqe(ACCEPT), listener)

    def receive(self, cid: int, conn: _Connection) -> None:
        sqe = self._sqe(RECV, cid)
        self.u.io_uring_prep_recv_multishot(sqe, conn.fd, None, 0)
        sqe.flags |= self.u.IOSQE_BUFFER_SELECT
        self.u.io_uring_sqe_set_buf_group(sqe, GROUP)

    def send(self, cid: int, conn: _Connection, data: bytes) -> None:
        conn.sending.append(data)
        self.u.io_uring_prep_send(self._sqe(SEND, cid), conn.fd, data, 0)

    def close(self) -> None:
        self.u.io_uring_queue_exit(self.ring)


def serve(listener: socket.socket, counts: Counts, sqpoll: bool = False) -> None:
    """Serve on ``listener`` until SIGTERM or SIGINT, counting in ``counts``."""
    support.require("sockets")
    ring = _Ring(sqpoll, counts)
    server = _Server(ring, listener.fileno(), counts)
    if sqpoll:
        counts.calls = counts.waits = None  # whether a submission enters the kernel is the kernel thread's business
    try:
        for bid in range(BUFFERS):
            ring.provide(bid)
        ring.accept(listener.fileno())
        while True:
            try:
                ring.u.io_uring_submit_and_wait(ring.ring, 1)
            except InterruptedError:  # a signal: its handler (Stop) runs when we are back in Python
                continue
            if counts.calls is not None and counts.waits is not None:
                counts.calls += 1
                counts.waits += 1
            taken = 0
            for _ in ring.u.CqeIter(ring.ring, ring.cqe):
                server.complete(ring.cqe[0])
                taken += 1
            ring.u.io_uring_cq_advance(ring.ring, taken)
    finally:
        ring.close()  # ends every request in flight
        for conn in server.connections.values():
            os.close(conn.fd)


class _Server:
    """The connections, and what each kind of completion means for them."""

    def __init__(self, ring: _Ring, listener: int, counts: Counts) -> None:
        self.ring, self.listener, self.counts = ring, listener, counts
        self.connections: dict[int, _Connection] = {}
        self.next_id = 1

    def complete(self, entry) -> None:  # type: ignore[no-untyped-def]
        """Act on one completion."""
        tag, cid, flags = entry.user_data & 3, entry.user_data >> 2, entry.flags
        more = bool(flags & self.ring.u.IORING_CQE_F_MORE)  # a multishot request stays armed
        try:
            res = entry.res  # the binding raises OSError for a negative result
        except OSError as error:
            res = -(error.errno or errno.EIO)
        if tag == ACCEPT:
            self._accepted(res, more)
        elif (conn := self.connections.get(cid)) is None or tag == PROVIDE:
            return  # a buffer given back, or the last word of a connection already closed
        elif tag == SEND:
            self._sent(cid, conn, res)
        else:
            self._received(cid, conn, res, flags, more)

    def _accepted(self, fd: int, more: bool) -> None:
        if fd >= 0:
            cid, self.next_id = self.next_id, self.next_id + 1
            self.connections[cid] = conn = _Connection(fd)
            self.counts.connections += 1
            self.ring.receive(cid, conn)
        if not more:  # the kernel ended the multishot accept (out of descriptors...): ask again
            self.ring.accept(self.listener)

    def _sent(self, cid: int, conn: _Connection, res: int) -> None:
        # io_uring does not order two sends on one socket unless they are linked: taking the oldest is
        # right while a connection has one answer in flight at a time, as the course's clients do (each waits
        # for its answer); a client that pipelines requests would need the sends linked.
        data = conn.sending.pop(0)
        if 0 <= res < len(data):  # the socket took only part of it: send the rest
            self.ring.send(cid, conn, data[res:])
        elif conn.closing and not conn.sending:
            self._close(cid, conn)

    def _received(self, cid: int, conn: _Connection, res: int, flags: int, more: bool) -> None:
        if res == -errno.ENOBUFS:  # every buffer was in use: they come back as we read them; re-arm
            self.ring.receive(cid, conn)
            return
        if res <= 0:  # end of stream, or an error: the connection is over
            self._close(cid, conn)
            return
        bid = flags >> self.ring.u.IORING_CQE_BUFFER_SHIFT
        conn.pending += self.ring.buffers[bid][:res]
        self.ring.provide(bid)
        if conn.closing:
            return
        reply = answer(conn.pending)
        self.counts.requests += reply.requests
        if reply.data:
            self.ring.send(cid, conn, reply.data)
        conn.closing = reply.close
        if not more:
            self.ring.receive(cid, conn)

    def _close(self, cid: int, conn: _Connection) -> None:
        # A request in flight holds the socket open: close() alone would leave an armed receive
        # waiting for ever. shutdown() ends it (its last completion finds no connection: dropped).
        del self.connections[cid]
        # Family and type given: socket(fileno=) alone asks the kernel for them (getsockname, getsockopt),
        # calls the count below would not include.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, fileno=conn.fd)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # the client is gone already
            pass
        sock.close()
        if self.counts.calls is not None:
            self.counts.calls += 2
