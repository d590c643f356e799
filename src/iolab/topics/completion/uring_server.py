"""The completion server: one thread, one io_uring, and no system call per request of its own.

A readiness loop asks "which sockets have bytes?" and then fetches them, a ``recv`` per socket.
Here the program asks once, per connection, for *all* its bytes as they come (a multishot receive),
and the kernel answers with completions: "connection 7 got 27 bytes, in buffer 12". The program
reads the completions from a ring in shared memory, queues its answers (sends) on the other ring,
and makes one system call, ``io_uring_enter``, to hand over every queued send and sleep until the
next completion, whatever the number of connections that had something to say meanwhile.

- Accepting is one multishot accept: one submission, a completion per new connection.
- Receiving needs buffers the kernel can pick from when bytes arrive (*provided buffers*, a group
  of :data:`BUFFERS` buffers); the program gives each back once it has read it, the older way, one
  submission per buffer (its completion skipped unless it fails): a provided-buffer *ring*, where
  giving a buffer back is a store into shared memory, cannot be set up through the binding
  (``io_uring_setup_buf_ring`` refuses its error out-parameter from Python).
- Sending is one submission per answer; its completion says how much went.

With ``sqpoll``, a kernel thread polls the submission ring (``IORING_SETUP_SQPOLL``) and submits
what the program queues. This loop still calls ``io_uring_submit_and_wait`` on every turn, and
liburing enters the kernel whenever it is asked to wait, so SQPOLL saves this server no system
call: it moves the submission work to the poller's thread, which may run on the CPUs its program may
use (so, on a kernel with the 2024 change that makes it inherit them, where the chapter places the server:
``server_load.measure(placed=True)``). The thread costs CPU while it polls (it counts in the process's CPU time), and goes on polling
for a second after the last submission (the kernel's default idle time; the binding's parameters
are read-only, so the chapter keeps the default).

The binding (PyPI's ``liburing``) holds Python's lock while it waits in the kernel: fine for a
server that has its own process, as this one does.
"""

from __future__ import annotations

import errno
import os
import socket
import time

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
        self.flags = _setup(liburing, self.ring, sqpoll)
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
        """Give buffer ``bid`` (back) to the kernel's group; only a failure makes a completion."""
        sqe = self._sqe(PROVIDE)
        self.u.io_uring_prep_provide_buffers(sqe, self.buffers[bid], 1, GROUP, bid)
        sqe.flags |= self.u.IOSQE_CQE_SKIP_SUCCESS  # Linux 5.17: no completion to reap for a buffer given back

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


def _setup(uring, ring, sqpoll: bool) -> int:  # type: ignore[no-untyped-def]
    """Set ``ring`` up with the flags fio 3.33 and later use, where the kernel takes them; the flags used.

    DEFER_TASKRUN (Linux 6.1, which needs SINGLE_ISSUER, 6.0) lets the kernel finish completions in our
    own ``io_uring_enter`` instead of interrupting the thread; COOP_TASKRUN (5.19) stops it interrupting
    the thread for them otherwise. Beside SQPOLL the kernel refuses both taskrun flags (EINVAL): its
    polling thread runs that work. An older kernel refuses what it lacks: each refusal drops flags,
    down to none.
    """
    u = uring
    tries = ([u.IORING_SETUP_SQPOLL | u.IORING_SETUP_SINGLE_ISSUER, u.IORING_SETUP_SQPOLL] if sqpoll else
             [u.IORING_SETUP_COOP_TASKRUN | u.IORING_SETUP_SINGLE_ISSUER | u.IORING_SETUP_DEFER_TASKRUN,
              u.IORING_SETUP_COOP_TASKRUN, 0])
    for i, flags in enumerate(tries):
        try:
            u.io_uring_queue_init(ENTRIES, ring, flags)
            return int(flags)
        except OSError as exc:
            if exc.errno != errno.EINVAL or i == len(tries) - 1:
                raise
    raise AssertionError("unreachable: the last try raises or returns")


def serve(listener: socket.socket, counts: Counts, sqpoll: bool = False) -> None:
    """Serve on ``listener`` until SIGTERM or SIGINT, counting in ``counts``."""
    support.require("sockets")
    # As the epoll server does per connection; here the listener's setting, which every accepted
    # socket inherits (Linux), so that no call per connection is needed: the ring accepts them.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
        # Family, type and protocol given: socket(fileno=) asks the kernel for each one missing
        # (getsockopt); CPython 3.11 still makes one getsockname, which the count below includes.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, fileno=conn.fd)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # the client is gone already
            pass
        sock.close()
        if self.counts.calls is not None:
            self.counts.calls += 3  # getsockname (see above), shutdown, close


def provide_cost_us(buffers: int = BUFFERS, rounds: int = 20) -> float:
    """Microseconds to give one buffer back the older way (prepare its submission, the kernel takes it).

    What the server pays per request for a binding without buffer rings: a ring would take the
    buffer back with a store into shared memory, no submission. Measured on a ring of its own,
    ``rounds`` times ``buffers`` buffers handed over a group at a time.
    """
    support.require("sockets")
    import liburing as uring

    ring, pool = uring.Ring(), [bytearray(BUFFER_BYTES) for _ in range(buffers)]
    _setup(uring, ring, sqpoll=False)
    try:
        start = time.perf_counter_ns()
        for _ in range(rounds):
            for bid in range(buffers):
                sqe = uring.io_uring_get_sqe(ring)
                uring.io_uring_prep_provide_buffers(sqe, pool[bid], 1, GROUP, bid)
                sqe.flags |= uring.IOSQE_CQE_SKIP_SUCCESS
            uring.io_uring_submit_and_wait(ring, 0)
        spent_ns = time.perf_counter_ns() - start
        if (failed := uring.io_uring_cq_ready(ring)) > 0:  # only a failure makes a completion
            raise RuntimeError(f"{failed} of {rounds * buffers} buffers were refused by the kernel")
        return spent_ns / 1000 / (rounds * buffers)
    finally:
        uring.io_uring_queue_exit(ring)
