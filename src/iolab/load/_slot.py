"""``Slot``: one of a worker's connection slots, one request in flight at most.

A slot stands for one client: it owns at most one connection at a time, reconnects when that
connection goes, and counts what it sent and the 2xx answers it got (``never_served`` is the
number of slots whose count stayed 0). What an answer or an error means for the run, and what the
slot sends next, the slot leaves to its owner, the worker's :class:`iolab.load._run.Run`.
:class:`Owner` says what a slot needs from it, so that this module imports nothing from ``_run``
and the import points one way, ``_run`` to ``_slot`` (as :class:`iolab.load.client.Listener` does
for a connection and its slot).

The owner, not the slot, ends a request: ``fire`` sets ``busy``, and only the owner sets it back to
False, in ``answer`` or ``error``. A connect that failed keeps the slot busy through the owner's
back-off pause, so that a run does not count as finished while a slot waits to try again.
"""

from __future__ import annotations

import asyncio
from time import perf_counter
from typing import Protocol

from iolab.load.client import ClientConnection, connect_error_kind


class Owner(Protocol):
    """What a slot needs from the run it belongs to: where and what to send, and whom to tell."""

    loop: asyncio.AbstractEventLoop
    request: bytes  # the bytes of every request
    host: str
    port: int
    keepalive: bool

    def answer(self, slot: Slot, status: int, size: int) -> None:
        """Record an answer; the owner clears ``slot.busy`` and gives the slot its next request."""

    def error(self, slot: Slot, kind: str, backoff: bool = False) -> None:
        """Count an error; the owner clears ``slot.busy`` (after a pause, with ``backoff``)."""


class Slot:
    """One connection slot: at most one request in flight; reconnects when its connection goes."""

    __slots__ = ("run", "conn", "busy", "connecting", "started", "intended", "sent", "served")

    def __init__(self, run: Owner) -> None:
        self.run = run
        self.conn: ClientConnection | None = None
        self.busy = False  # a request is in flight (connecting, written, or backing off); the owner clears it
        self.connecting: asyncio.Task[None] | None = None
        self.started = 0.0  # when the request's latency starts (write, or connect without keep-alive)
        self.intended = 0.0  # open loop: when the schedule wanted it sent
        self.sent = 0  # requests written
        self.served = 0  # 2xx answers inside the window

    def fire(self, intended: float) -> None:
        """Start one request: on the open connection, or after connecting a new one."""
        self.busy = True
        self.intended = intended
        self.started = perf_counter()
        if self.conn is None:
            self.connecting = self.run.loop.create_task(self._connect())
        else:
            # The transport's write itself, not ClientConnection.send: one call less per request on the
            # generator's hot path (a slot's connection always has its transport).
            self.conn.transport.write(self.run.request)  # type: ignore[union-attr]
            self.sent += 1

    async def _connect(self) -> None:
        run = self.run
        try:
            _, conn = await run.loop.create_connection(lambda: ClientConnection(self), run.host, run.port)
        except OSError as exc:
            self.connecting = None
            run.error(self, connect_error_kind(exc), backoff=True)
            return
        self.connecting = None
        if conn.transport is None:  # the server closed it before this task resumed
            run.error(self, "closed")
            return
        self.conn = conn
        if run.keepalive:
            self.started = perf_counter()  # with keep-alive, connecting is setup, not latency
        conn.send(run.request)
        self.sent += 1

    def overdue(self, limit: float) -> bool:
        """Whether a request or connect is in flight since before ``limit`` (a perf_counter time)."""
        return self.busy and self.started < limit and (self.conn is not None or self.connecting is not None)

    def timeout(self) -> None:
        """Give up on the request in flight."""
        if self.connecting is not None:
            self.connecting.cancel()
            self.connecting = None
            kind = "connect_timeout"
        else:
            kind = "timeout"
            self._drop(abort=True)
        self.run.error(self, kind)

    def close(self) -> None:
        """Stop connecting and reset the connection, if any."""
        if self.connecting is not None:
            self.connecting.cancel()
        self._drop(abort=True)

    def _drop(self, abort: bool = False) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close(abort)

    # --- what the connection reports (client.Listener) ---------------------------------------

    def answered(self, conn: ClientConnection, status: int, size: int) -> None:
        if conn is not self.conn or not self.busy:
            return
        if conn.close_after or not self.run.keepalive:
            self._drop()
        self.run.answer(self, status, size)

    def failed(self, conn: ClientConnection, kind: str) -> None:
        if conn is self.conn and self.busy:
            self._drop(abort=True)
            self.run.error(self, kind)

    def lost(self, conn: ClientConnection, exc: Exception | None) -> None:
        if conn is not self.conn:
            return  # a connection this slot already let go of
        self.conn = None
        if self.busy and self.connecting is None:
            kind = "closed" if exc is None else ("reset" if isinstance(exc, ConnectionResetError) else "io_error")
            self.run.error(self, kind)
