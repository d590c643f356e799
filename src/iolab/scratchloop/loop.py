"""Step 7: the whole loop. A ready queue, timers, a selector, and Tasks that run one step at a time.

Each pass of :meth:`EventLoop.run_once`:

1. waits in ``select`` for sockets, but no longer than until the next timer (not at all if some
   callback is already ready);
2. turns every ready socket and every due timer into a done future;
3. runs the callbacks on the ready queue, which resume the tasks waiting on those futures.

Steps 1-6 are all here: the selector (``callbacks.py``), coroutines resumed with ``send``
(``coroutines.py``), the Future (``future.py``), the Task (``task.py``), ``await`` (``nesting.py``)
and the timer heap (``timers.py``). What is new is the *ready queue*: a done future no longer runs
its task's next step inside the callback that set it (step 4), it puts the step on a queue that the
loop runs after ``select``. Tasks therefore run one at a time, in the order they became ready, with
no nesting; the loop has one place to see every task switch, which it records when asked (``trace``).

The socket functions (``sock_recv`` and friends) are what a program calls; each waits for readiness
first and then makes one non-blocking call, like asyncio's ``loop.sock_*`` functions.
"""

from __future__ import annotations

import collections
import errno
import os
import selectors
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from iolab.scratchloop.future import Future
from iolab.scratchloop.timers import TimerHeap

T = TypeVar("T")
READ_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Switch:
    """One step of one task: when it ran, what woke it, what it waits for now (``trace=True``)."""

    task: str
    start_s: float  # seconds since the loop was created
    end_s: float
    woke_by: str  # the label of the future that was done, or "start"
    waits_for: str  # the label of the future it yielded, or "done" / "raised ..."


class Task(Future):
    """A coroutine driven by the loop: each step runs from the ready queue when its future is done."""

    def __init__(self, loop: EventLoop, coro: Coroutine[Any, Any, Any], name: str) -> None:
        super().__init__(name)
        self.loop = loop
        self.coro = coro
        loop.call_soon(self._step, None, "start")

    def _step(self, future: Future | None, woke_by: str) -> None:
        start = time.perf_counter()
        try:
            if future is None:
                yielded = self.coro.send(None)
            else:
                try:
                    value = future.result()
                except Exception as error:  # the wait failed: raise it where the task awaited
                    yielded = self.coro.throw(error)
                else:
                    yielded = self.coro.send(value)
        except StopIteration as stop:
            self.set_result(stop.value)
            waits_for = "done"
        except Exception as error:  # not BaseException: Ctrl-C and SystemExit must stop the loop itself
            self.set_exception(error)
            waits_for = f"raised {type(error).__name__}"
        else:
            if not isinstance(yielded, Future):
                raise TypeError(f"task {self.label!r} yielded {yielded!r}: await a Future, a Task or a loop function")
            yielded.add_done_callback(self._wakeup)
            waits_for = yielded.label
        if self.loop.trace is not None:
            t0 = self.loop.started
            self.loop.trace.append(Switch(self.label, start - t0, time.perf_counter() - t0, woke_by, waits_for))

    def _wakeup(self, future: Future) -> None:
        # Not self._step(...) here: the step waits its turn on the ready queue (step 4 ran it at once).
        self.loop.call_soon(self._step, future, future.label)


class EventLoop:
    """A selector, a timer heap and a ready queue; run coroutines with :meth:`run_until_complete`.

    With ``trace=True`` every task step is recorded as a :class:`Switch` in ``loop.trace``.
    """

    def __init__(self, trace: bool = False) -> None:
        self.selector = selectors.DefaultSelector()
        self.ready: collections.deque[tuple[Callable[..., Any], tuple[Any, ...]]] = collections.deque()
        self.timers = TimerHeap()
        self.trace: list[Switch] | None = [] if trace else None
        self.started = time.perf_counter()
        self._task_names = 0

    # --- scheduling ---------------------------------------------------------------------------

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the next pass of the loop."""
        self.ready.append((fn, args))

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` in ``delay`` seconds."""
        self.timers.push(time.monotonic() + delay, fn, *args)

    def create_task(self, coro: Coroutine[Any, Any, T], name: str | None = None) -> Task:
        """Start driving ``coro``; its Task (await it for the result)."""
        self._task_names += 1
        return Task(self, coro, name or f"task-{self._task_names}")

    def run_once(self, max_wait: float | None = None) -> None:
        """One pass: wait for sockets or the next timer (at most ``max_wait`` s), then run all that became ready."""
        timeout = 0.0 if self.ready else self.timers.timeout(time.monotonic())
        if timeout is None and not self.selector.get_map():
            raise RuntimeError("deadlock: every task waits, and no socket or timer can wake one")
        if max_wait is not None:
            timeout = max_wait if timeout is None else min(timeout, max_wait)
        for key, _ in self.selector.select(timeout):
            self.selector.unregister(key.fileobj)
            key.data.set_result(True)  # the future's callback puts the waiting task on the ready queue
        self.ready.extend(self.timers.pop_due(time.monotonic()))
        # Only what is ready now: callbacks added meanwhile wait for the next pass, after a select,
        # so a task that never waits on a socket cannot starve the others' I/O.
        for _ in range(len(self.ready)):
            fn, args = self.ready.popleft()
            fn(*args)

    def run_until_complete(self, main: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run the loop until ``main`` returns; its return value (TimeoutError after ``timeout`` s)."""
        task = self.create_task(main, "main")
        deadline = None if timeout is None else time.monotonic() + timeout
        while not task.done():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"the loop did not finish within {timeout:g} s")
            self.run_once(left)
        return task.result()

    def close(self) -> None:
        """Release the selector's epoll descriptor."""
        self.selector.close()

    # --- waiting --------------------------------------------------------------------------------

    def wait_readable(self, sock: socket.socket, timeout: float | None = None) -> Future:
        """A future done when ``sock`` is readable (result True) or ``timeout`` s passed (False)."""
        return self._wait(sock, selectors.EVENT_READ, "readable", timeout)

    def wait_writable(self, sock: socket.socket) -> Future:
        """A future done when ``sock`` is writable (or connected)."""
        return self._wait(sock, selectors.EVENT_WRITE, "writable", None)

    def _wait(self, sock: socket.socket, event: int, kind: str, timeout: float | None) -> Future:
        future = Future(f"{kind} fd {sock.fileno()}")
        self.selector.register(sock, event, future)
        if timeout is not None:
            self.call_later(timeout, self._expire, sock, future)
        return future

    def _expire(self, sock: socket.socket, future: Future) -> None:
        if not future.done():
            self.selector.unregister(sock)
            future.set_result(False)

    async def sleep(self, seconds: float) -> None:
        """Let other tasks run for ``seconds``."""
        future = Future(f"sleep {seconds:g} s")
        self.call_later(seconds, future.set_result, None)
        await future

    # --- sockets --------------------------------------------------------------------------------

    async def sock_connect(self, sock: socket.socket, address: tuple[str, int]) -> None:
        """Connect the non-blocking ``sock`` to ``address``."""
        code = sock.connect_ex(address)
        if code == errno.EINPROGRESS:
            await self.wait_writable(sock)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, f"connect to {address[0]}:{address[1]}: {os.strerror(code)}")

    async def sock_recv(self, sock: socket.socket, nbytes: int = READ_BYTES) -> bytes:
        """The next bytes from ``sock``, at most ``nbytes`` (b"" at end of stream)."""
        while True:
            await self.wait_readable(sock)
            try:
                return sock.recv(nbytes)
            except BlockingIOError:  # readiness is a hint, not a promise
                continue

    async def sock_sendall(self, sock: socket.socket, data: bytes) -> None:
        """Send all of ``data``, waiting whenever the kernel's send buffer is full."""
        view = memoryview(data)
        while view:
            try:
                view = view[sock.send(view) :]
            except BlockingIOError:
                pass
            if view:
                await self.wait_writable(sock)

    async def sock_accept(self, sock: socket.socket) -> tuple[socket.socket, Any]:
        """The next connection on the listening ``sock``, non-blocking like it."""
        while True:
            await self.wait_readable(sock)
            try:
                conn, address = sock.accept()
            except BlockingIOError:
                continue
            conn.setblocking(False)
            return conn, address


class Semaphore:
    """At most ``value`` holders at once (``async with sem:``); the others wait in arrival order."""

    def __init__(self, value: int) -> None:
        self.free = value
        self.waiting: collections.deque[Future] = collections.deque()

    async def __aenter__(self) -> None:
        if self.free:
            self.free -= 1
        else:
            turn = Future("semaphore")
            self.waiting.append(turn)
            await turn  # the holder leaving hands its place straight to us

    async def __aexit__(self, *exc_info: object) -> None:
        if self.waiting:
            self.waiting.popleft().set_result(None)
        else:
            self.free += 1


async def gather(*aws: Awaitable[T]) -> list[T]:
    """The results of ``aws`` (tasks or futures), in order, once all are done; the first error raises."""
    return [await aw for aw in aws]


def run(main: Callable[..., Coroutine[Any, Any, T]], *args: Any, timeout: float | None = None) -> T:
    """Run ``main(loop, *args)`` on a new loop, then close the loop; what ``main`` returns (like ``trio.run``)."""
    loop = EventLoop()
    try:
        return loop.run_until_complete(main(loop, *args), timeout)
    finally:
        loop.close()
