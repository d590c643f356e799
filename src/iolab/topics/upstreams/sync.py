"""The sync service: a fixed pool of threads, each making one blocking call at a time.

This is source 001's ``Executors.newFixedThreadPool(MANY)``: arriving requests wait in one shared
queue; a free thread takes the oldest, calls its upstream and blocks in ``recv`` until the answer
(or the timeout, if there is one). A thread blocked on a slow upstream serves nobody else, so the
pool's throughput is at most ``threads / latency``: the bandwidth law.

Each thread keeps its own keep-alive connection to each upstream, as a thread-local HTTP client
would. The response is framed by the load generator's client
(:class:`iolab.load.client.ClientConnection`), fed from a blocking socket here and from the event loop
in :mod:`iolab.topics.upstreams.asyncio`.
"""

from __future__ import annotations

import queue
import signal
import socket
import threading
import time

from iolab.load.client import ClientConnection, connect_error_kind, request_bytes
from iolab.topics.upstreams.service import NAN, OK, PARKED, Ledger, Schedule, ServiceSpec, classify

RECV_BYTES = 64 * 1024
perf_counter = time.perf_counter


class StatusListener:
    """What the framing client reports about one response (its ``Listener``)."""

    def __init__(self) -> None:
        self.status = 0
        self.failure = ""

    def answered(self, conn: ClientConnection, status: int, size: int) -> None:
        self.status = status

    def failed(self, conn: ClientConnection, kind: str) -> None:
        self.failure = kind

    def lost(self, conn: ClientConnection, exc: Exception | None) -> None:
        pass


class BlockingCaller:
    """One thread's connections to every upstream, and the blocking call."""

    def __init__(self, spec: ServiceSpec) -> None:
        self.spec = spec
        self.requests = [request_bytes(*spec.address(e), "/", True) for e in range(len(spec.ports))]
        self.socks: list[socket.socket | None] = [None] * len(spec.ports)

    def call(self, e: int) -> str:
        """Call endpoint ``e`` once; the outcome (``ok``, ``refused``, ``timeout``, ``reset``...)."""
        timeout = self.spec.timeout_s
        deadline = perf_counter() + timeout if timeout is not None else None
        sock = self.socks[e]
        try:
            if sock is None:
                try:
                    sock = socket.create_connection(self.spec.address(e), timeout=timeout)
                except TimeoutError:
                    return "connect_timeout"
                except OSError as exc:
                    return connect_error_kind(exc)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.socks[e] = sock
            answer = StatusListener()
            framer = ClientConnection(answer)
            sock.sendall(self.requests[e])
            while not answer.status:
                if deadline is not None:
                    sock.settimeout(max(deadline - perf_counter(), 1e-6))
                data = sock.recv(RECV_BYTES)  # the thread sleeps here: the whole cost of blocking I/O
                if not data:
                    raise ConnectionResetError("closed")  # EOF before the answer
                framer.data_received(data)
                if answer.failure:
                    raise ConnectionResetError(answer.failure)
            if framer.close_after:
                self._drop(e)
            return OK if answer.status == 200 else f"http_{answer.status}"
        except TimeoutError:
            self._drop(e)  # an answer may still come: it must not be read as the next one's
            return "timeout"
        except (ConnectionResetError, BrokenPipeError) as exc:
            self._drop(e)
            return "closed" if exc.args == ("closed",) else "reset"

    def close(self) -> None:
        """Close every connection this caller holds."""
        for e in range(len(self.socks)):
            self._drop(e)

    def _drop(self, e: int) -> None:
        sock, self.socks[e] = self.socks[e], None
        if sock is not None:
            sock.close()


def run(spec: ServiceSpec) -> dict | None:
    """Serve ``spec.num_req`` requests at ``spec.rate`` with ``spec.threads`` threads; the ledger's record."""
    if spec.stack_kb:
        threading.stack_size(spec.stack_kb * 1024)
    ledger = Ledger(spec.num_req)
    tasks: queue.SimpleQueue[int] = queue.SimpleQueue()
    busy_since = [NAN] * spec.threads  # thread k's current call began then (NaN: idle)
    finished = [0] * spec.threads  # requests thread k has finished: one writer per slot, no lock
    n_endpoints = len(spec.ports)

    def work(k: int) -> None:
        caller = BlockingCaller(spec)
        while True:
            i = tasks.get()
            started = perf_counter()
            busy_since[k] = started
            ledger.start(i, started)
            kind = caller.call(i % n_endpoints)
            now = perf_counter()
            busy_since[k] = NAN
            ledger.finish(i, classify(kind, now - started, spec.late_s), now)
            finished[k] += 1

    for k in range(spec.threads):
        threading.Thread(target=work, args=(k,), name=f"worker-{k}", daemon=True).start()
    if spec.park:
        print(PARKED, flush=True)
        signal.pause()  # until SIGTERM ends the process
        return None

    schedule = Schedule(spec, ledger)
    while True:
        for i in schedule.arrivals(perf_counter()):
            tasks.put(i)
        if schedule.done(perf_counter(), sum(finished), busy_since):
            return schedule.result()
        time.sleep(schedule.pause())
