"""Threads released together from a start line, and a thread that owns what the others send it.

The harness of chapter 8's experiments: :func:`run_threads` times N threads doing the same thing from
a common start to the last one's end; :func:`run_with_owner` times N senders feeding one owning thread
through a queue. Both raise a thread's error in the caller, and neither hangs a notebook cell: a run
that takes longer than ``RUN_TIMEOUT_S`` is reported as stuck.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

# Longest a run may take before it is reported as stuck, rather than hanging a notebook cell.
RUN_TIMEOUT_S = 120.0


class Shared:
    """A counter that several threads add to."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


def run_threads(target: Callable[..., object], threads: int, *args: object) -> float:
    """Run ``target(*args)`` in ``threads`` threads released together; seconds until the last ends.

    The threads are created and started before the clock starts, and wait at a barrier, so that
    what is timed is the work, not ``Thread.start``. An exception in a thread is raised here.
    """
    start_line = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def body() -> None:
        try:
            start_line.wait(timeout=RUN_TIMEOUT_S)
        except threading.BrokenBarrierError:  # the run was called off before it started
            return
        try:
            target(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)

    workers = [threading.Thread(target=body, name=f"counter-{i}") for i in range(threads)]
    try:
        for worker in workers:
            worker.start()
        start_line.wait(timeout=RUN_TIMEOUT_S)
    except BaseException:
        start_line.abort()
        raise
    began = time.perf_counter()
    for worker in workers:
        worker.join(RUN_TIMEOUT_S)
        if worker.is_alive():
            raise TimeoutError(f"{worker.name} still running after {RUN_TIMEOUT_S:g} s")
    elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    return elapsed


def run_with_owner(
    own: Callable[[], None], inbox: queue.SimpleQueue, send: Callable[..., None], senders: int, *args: object
) -> float:
    """Run ``own`` in one thread and ``send(*args)`` in ``senders`` threads; seconds until ``own`` ends.

    The owner reads ``inbox`` until it has had one ``None`` per sender; each sender puts its ``None``
    when it ends, even on an error. The owner is started first and waits in ``get()`` without using
    the CPU, so the clock runs from the senders' release (see :func:`run_threads`) until the owner
    has handled the last item, not until the senders are done. An error in any thread is raised here.
    """
    errors: list[BaseException] = []

    def owner_body() -> None:
        try:
            own()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)

    def sender_body(*sender_args: object) -> None:
        try:
            send(*sender_args)
        finally:
            inbox.put(None)

    owner = threading.Thread(target=owner_body, name="owner")
    owner.start()
    try:
        sending = run_threads(sender_body, senders, *args)
    except BaseException:
        for _ in range(senders):  # senders that never started sent no None; extra ones are ignored
            inbox.put(None)
        owner.join(RUN_TIMEOUT_S)
        raise
    drained_from = time.perf_counter()
    owner.join(RUN_TIMEOUT_S)
    if errors:
        raise errors[0]
    return sending + time.perf_counter() - drained_from
