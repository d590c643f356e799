"""Timeouts and the connection cap, decided in one place for every model, without I/O.

Each model waits in its own way (a socket timeout, an asyncio timer, a trio cancel scope, the
scratch loop's timed wait), but *how long* it may wait, and what the client is told when the time is
up, are decided here: :class:`ReadClock` per connection, :class:`ConnectionCap` per process.

The two timeouts are the two ways a client can hold a connection while asking nothing to finish:

- the keep-alive (idle) timeout: no byte of a next request has come since the connection opened or
  the previous response left. The connection is closed without a word: the client asked nothing.
- the header timeout: a request has begun (its first byte came) and is not complete yet: slowloris.
  It is answered 408 and the connection closed. The clock starts at the first byte, so a client
  that sends nothing at all is idle, and the keep-alive timeout is what ends it.

There is no separate body timeout: no route reads a body and :mod:`iolab.web.http` refuses one over
64 KiB, so "complete" means head *and* body, and the header timeout covers both.

All are off by default (None): the chapters before 12 run servers without them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from iolab.servers import Options
from iolab.web.http import Connection, HttpError


@dataclass(frozen=True)
class Limits:
    """A server's timeouts (seconds) and connection cap; None: none."""

    header_s: float | None = None
    keepalive_s: float | None = None
    max_connections: int | None = None

    @classmethod
    def from_options(cls, options: Options) -> Limits:
        """The limits ``python -m iolab serve`` was given."""
        return cls(options.header_timeout, options.keepalive_timeout, options.max_connections)

    @property
    def timed(self) -> bool:
        """Whether any timeout applies (if not, the models wait exactly as before chapter 12)."""
        return self.header_s is not None or self.keepalive_s is not None


NO_LIMITS = Limits()


class ReadClock:
    """One connection's deadline for its next bytes; call :meth:`update` each time before waiting for them."""

    __slots__ = ("limits", "since", "_phase")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.since = time.monotonic()  # when the current phase (idle, or receiving request N) began
        self._phase = (0, False)

    def update(self, conn: Connection) -> None:
        """Start the clock again if, since the last call, a request completed or a new one began.

        Called after the answers were sent, so an idle phase counts from the previous response.
        """
        phase = (conn.begun, conn.receiving)
        if phase != self._phase:
            self._phase = phase
            self.since = time.monotonic()

    def deadline(self) -> float | None:
        """The ``time.monotonic()`` by which the next bytes must come (None: no deadline)."""
        limit = self.limits.header_s if self._phase[1] else self.limits.keepalive_s
        return None if limit is None else self.since + limit

    def left(self) -> float | None:
        """Seconds the next read may wait (None: for ever; 0 or less: the time is up)."""
        deadline = self.deadline()
        return None if deadline is None else deadline - time.monotonic()

    def expired(self, conn: Connection) -> bytes:
        """What to send when the wait ran out, before closing: a 408 if part of a request came, else nothing."""
        if not self._phase[1]:
            return b""
        return conn.respond_error(HttpError(408, f"request not complete within {self.limits.header_s:g} s"))


class ConnectionCap:
    """At most ``limit`` connections at once in this process (None: no cap).

    Beyond the cap a new connection is accepted and closed at once, not answered 503 (uvicorn's
    ``--limit-concurrency`` answers 503). A 503 would need the request read first, or a linger so that
    the kernel's reset does not overtake it: for a slowloris client the first never ends, and both
    hold a descriptor and a thread, task or timer per refused client, the very resources the cap is
    there to protect. A close costs one accept() and one close(); the client sees its connection end
    (EOF or reset) at once, and may retry.

    The blocking models that run one connection per process (iterative, pre-fork) have no use for
    it: their cap is the number of processes, and later clients wait in the backlog, as with
    gunicorn's sync workers, which ignore ``worker_connections``.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.count = 0
        self._lock = threading.Lock()  # the threaded model admits in one thread and leaves in others

    def admit(self) -> bool:
        """Count a new connection in, if there is room; False: close it at once."""
        with self._lock:
            if self.limit is not None and self.count >= self.limit:
                return False
            self.count += 1
            return True

    def leave(self) -> None:
        """Count an admitted connection out."""
        with self._lock:
            self.count -= 1
