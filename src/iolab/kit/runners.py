"""Run an asyncio (or uvloop) or trio program to completion from code that may already run a loop.

A notebook's kernel runs an asyncio loop in its main thread, and ``asyncio.run`` refuses to start a
second one there. Each runner here starts a fresh loop in a worker thread of its own and waits for
it. Interrupting the wait (the notebook's stop button) cancels the program in its thread, so the
cell ends instead of leaving a loop running behind it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from iolab.kit.loops import LOOPS

T = TypeVar("T")
# How long an interrupted runner waits for its program to unwind after cancelling it.
CANCEL_GRACE_S = 10.0


def run_asyncio(main: Callable[..., Awaitable[T]], *args: Any, loop: str = "asyncio", debug: bool = False) -> T:
    """The result of ``main(*args)`` run on a new ``loop`` ("asyncio" or "uvloop") in a thread of its own."""
    if loop not in LOOPS:
        raise ValueError(f"unknown loop {loop!r}; the loops are: {', '.join(LOOPS)}")
    handle: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = queue.SimpleQueue()

    async def program() -> T:
        handle.put((asyncio.get_running_loop(), asyncio.current_task()))  # type: ignore[arg-type]
        return await main(*args)

    def in_thread() -> T:
        with asyncio.Runner(loop_factory=LOOPS[loop], debug=debug) as runner:
            return runner.run(program())

    return _wait(in_thread, lambda: _cancel_asyncio(handle))


def run_trio(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """The result of ``trio.run(main, *args)``, run in a thread of its own."""
    handle: queue.SimpleQueue[tuple[trio.lowlevel.TrioToken, trio.CancelScope]] = queue.SimpleQueue()

    async def program() -> T:
        with trio.CancelScope() as scope:
            handle.put((trio.lowlevel.current_trio_token(), scope))
            return await main(*args)
        raise KeyboardInterrupt("cancelled from the waiting thread")

    return _wait(lambda: trio.run(program), lambda: _cancel_trio(handle))


def _cancel_asyncio(handle: queue.SimpleQueue) -> None:
    with contextlib.suppress(queue.Empty, RuntimeError):  # not started yet, or already finished
        loop, task = handle.get(timeout=CANCEL_GRACE_S)
        loop.call_soon_threadsafe(task.cancel)


def _cancel_trio(handle: queue.SimpleQueue) -> None:
    with contextlib.suppress(queue.Empty, trio.RunFinishedError):
        token, scope = handle.get(timeout=CANCEL_GRACE_S)
        token.run_sync_soon(scope.cancel)


def _wait(in_thread: Callable[[], T], cancel: Callable[[], None]) -> T:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="iolab-loop") as pool:
        future = pool.submit(in_thread)
        try:
            return future.result()
        except KeyboardInterrupt:
            cancel()
            concurrent.futures.wait([future], timeout=CANCEL_GRACE_S)
            raise
