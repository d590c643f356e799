"""Step 4: a Task steps a coroutine each time the future it waits on is done.

The coroutine yields a :class:`~iolab.scratchloop.future.Future`; the Task adds its own ``_wakeup`` to
that future's callbacks and returns. When a selector callback sets the future's result, ``_wakeup``
sends the result back into the coroutine, which runs to its next ``yield``. This is source 004's
Task (its Fig. 4), with two repairs: a Task is itself a Future (so other code can wait for it and
get its return value or its exception), and an exception in the wait is thrown into the coroutine,
where a ``try`` can catch it, instead of lost.

Here a callback runs the next step *at once*, inside the callback that set the result: a chain of
ready futures is a chain of nested calls. Step 7 puts steps on a ready queue instead.
"""

from __future__ import annotations

import socket
from collections.abc import Coroutine, Generator
from typing import Any

from iolab.scratchloop.callbacks import READ_BYTES, CallbackLoop
from iolab.scratchloop.future import Future


class Task(Future):
    """Drive ``coro`` from now on: run it to its first wait, resume it whenever that wait is over."""

    def __init__(self, coro: Generator[Future, Any, Any] | Coroutine[Future, Any, Any], name: str = "") -> None:
        super().__init__(name or getattr(coro, "__name__", "task"))
        self.coro = coro
        self._step(None, None)

    def _step(self, value: Any, exc: BaseException | None) -> None:
        try:
            future = self.coro.send(value) if exc is None else self.coro.throw(exc)
        except StopIteration as stop:
            self.set_result(stop.value)
            return
        except Exception as error:  # the coroutine failed: whoever waits for the Task gets the error
            self.set_exception(error)
            return
        if not isinstance(future, Future):
            self.coro.close()
            self.set_exception(TypeError(f"task {self.label!r} yielded {future!r}; it may only wait on a Future"))
            return
        future.add_done_callback(self._wakeup)

    def _wakeup(self, future: Future) -> None:
        try:
            value = future.result()
        except Exception as error:
            self._step(None, error)
        else:
            self._step(value, None)


def ready(loop: CallbackLoop, sock: socket.socket, kind: str) -> Future:
    """A future that is done when ``sock`` is ``"readable"`` or ``"writable"``."""
    future = Future(f"{kind} fd {sock.fileno()}")

    def on_ready() -> None:
        loop.remove(sock)
        future.set_result(None)

    (loop.add_reader if kind == "readable" else loop.add_writer)(sock, on_ready)
    return future


def fetch(loop: CallbackLoop, address: tuple[str, int], request: bytes) -> Generator[Future, None, bytes]:
    """Step 2's fetch, now yielding futures: a Task can drive many of these on one loop."""
    sock = socket.socket()
    sock.setblocking(False)
    try:
        sock.connect_ex(address)
        unsent = memoryview(request)
        while unsent:
            yield ready(loop, sock, "writable")
            unsent = unsent[sock.send(unsent) :]
        chunks = []
        while True:
            yield ready(loop, sock, "readable")
            data = sock.recv(READ_BYTES)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
    finally:
        sock.close()
