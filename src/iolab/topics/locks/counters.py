"""What it costs to share a counter: batched, a lock per increment, a queue to one owning thread.

Source 001 benchmarks three ways to add to a counter that threads share (in Rust, on one thread):
add into a local variable and publish the sum once ("batched"), an atomic add per increment, and
a mutex per increment. Python has no atomics, so the three here are batched, a ``threading.Lock``
per increment, and a ``queue.SimpleQueue`` to one thread that owns the counter. Every run is timed
on the wall clock, from a common start line to the last thread's end, and reported per increment:
``ns_per_op`` = wall time / all threads' increments together.

The same module shows the race the lock prevents (``lost_updates``: with the GIL, ``x += f()`` loses
updates and ``x += 1`` happens not to) and the counter shared by processes
(``value_costs``: a ``multiprocessing.Value``, where there is no GIL to hide a race).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

# Longest a run may take before it is reported as stuck, rather than hanging a notebook cell.
RUN_TIMEOUT_S = 120.0


def cache_dir() -> Path:
    """The kit's folder for build caches and scratch files: ``$XDG_CACHE_HOME/iolab`` (``~/.cache/iolab``).

    Outside the course's repository on purpose: Go's build cache and the slow stream's file must
    not land in the reader's working tree, and the stream must be on a real disk (not tmpfs).
    """
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    folder = Path(base) / "iolab"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


# --- three ways to count, in threads --------------------------------------------------------------


def add_batched(n: int, shared: Shared, lock: threading.Lock) -> None:
    """``n`` increments into a local variable, then one locked add to the shared counter."""
    batch = 0
    for _ in range(n):
        batch += 1
    with lock:
        shared.value += batch


def add_locked(n: int, shared: Shared, lock: threading.Lock) -> None:
    """``n`` increments of the shared counter, each under the lock."""
    for _ in range(n):
        with lock:
            shared.value += 1


def count_batched(threads: int, n: int) -> tuple[float, int]:
    """Seconds and final count: ``threads`` threads of :func:`add_batched`."""
    shared, lock = Shared(), threading.Lock()
    return run_threads(add_batched, threads, n, shared, lock), shared.value


def count_locked(threads: int, n: int) -> tuple[float, int]:
    """Seconds and final count: ``threads`` threads of :func:`add_locked`."""
    shared, lock = Shared(), threading.Lock()
    return run_threads(add_locked, threads, n, shared, lock), shared.value


def count_queued(threads: int, n: int) -> tuple[float, int]:
    """Seconds and final count: ``threads`` threads send ``n`` increments each to an owning thread.

    Only the owner touches the counter, so it needs no lock; the queue does the synchronising.
    The clock stops when the owner has added the last increment, not when the senders are done.
    """
    inbox: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    owned = Shared()

    def own() -> None:
        finished = 0
        while finished < threads:
            item = inbox.get(timeout=RUN_TIMEOUT_S)
            if item is None:  # one sender is done
                finished += 1
            else:
                owned.value += item

    def send(count: int) -> None:
        for _ in range(count):
            inbox.put(1)

    return run_with_owner(own, inbox, send, threads, n), owned.value


STRATEGIES: dict[str, Callable[[int, int], tuple[float, int]]] = {
    "batched": count_batched,
    "lock": count_locked,
    "queue": count_queued,
}


def counter_costs(
    threads: list[int], ops: int, repeats: int = 3, strategies: list[str] | None = None
) -> pd.DataFrame:
    """Each strategy at each thread count, ``ops`` increments in all per run (split evenly).

    One row per run: runtime, strategy, threads, ops, seconds, ns_per_op, correct (the final count
    is the number of increments made), repeat.
    """
    rows = []
    for repeat in range(repeats):
        for strategy in strategies or list(STRATEGIES):
            for n_threads in threads:
                per_thread = ops // n_threads
                seconds, final = STRATEGIES[strategy](n_threads, per_thread)
                total = per_thread * n_threads
                rows.append(
                    {"runtime": "Python threads", "strategy": strategy, "threads": n_threads, "ops": total,
                     "seconds": seconds, "ns_per_op": seconds / total * 1e9, "correct": final == total,
                     "repeat": repeat}
                )
    return pd.DataFrame(rows)


def per_op_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Median ns per increment: a row per runtime and strategy, a column per thread count."""
    table = runs.pivot_table(index=["runtime", "strategy"], columns="threads", values="ns_per_op", aggfunc="median")
    table.columns = [f"{n} thread{'s' if n > 1 else ''} (ns)" for n in table.columns]
    return table


# --- the race a lock prevents ---------------------------------------------------------------------


def _one() -> int:
    return 1


def _plus_one(n: int, shared: Shared, lock: threading.Lock) -> None:
    for _ in range(n):
        shared.value += 1


def _plus_call(n: int, shared: Shared, lock: threading.Lock) -> None:
    # The read of shared.value happens before the call, the write after it, and a function call is
    # one of the points where CPython 3.11 may hand the GIL to another thread: between the two.
    for _ in range(n):
        shared.value += _one()


def _plus_call_locked(n: int, shared: Shared, lock: threading.Lock) -> None:
    for _ in range(n):
        with lock:
            shared.value += _one()


RACES: dict[str, Callable[[int, Shared, threading.Lock], None]] = {
    "x += 1": _plus_one,
    "x += f()": _plus_call,
    "with lock: x += f()": _plus_call_locked,
}


def lost_updates(threads: int, increments: int, repeats: int = 3) -> pd.DataFrame:
    """Each way of adding in :data:`RACES`, ``increments`` per thread, no lock but where named.

    One row per run: code, threads, expected, counted, lost, lost_pct, seconds, repeat. A thread
    can only be interrupted if it runs longer than the GIL's switch interval (5 ms by default,
    ``sys.getswitchinterval()``), so ``increments`` must keep each thread busy for longer than that.
    """
    rows = []
    for repeat in range(repeats):
        for code, body in RACES.items():
            shared = Shared()
            seconds = run_threads(body, threads, increments, shared, threading.Lock())
            expected = threads * increments
            rows.append(
                {"code": code, "threads": threads, "expected": expected, "counted": shared.value,
                 "lost": expected - shared.value, "lost_pct": 100 * (expected - shared.value) / expected,
                 "seconds": seconds, "repeat": repeat}
            )
    return pd.DataFrame(rows)


# --- a counter shared by processes ----------------------------------------------------------------


def _value_batched(value, n: int) -> None:
    batch = 0
    for _ in range(n):
        batch += 1
    with value.get_lock():
        value.value += batch


def _value_locked(value, n: int) -> None:
    # The idiom of the multiprocessing documentation: the Value's own lock around the increment.
    for _ in range(n):
        with value.get_lock():
            value.value += 1


def _value_unlocked(value, n: int) -> None:
    # value.value takes the lock to read and again to write, but not across the two.
    for _ in range(n):
        value.value += 1


VALUE_STRATEGIES: dict[str, Callable[..., None]] = {
    "batched": _value_batched,
    "lock": _value_locked,
    "no lock": _value_unlocked,
}


def value_costs(processes: list[int], ops: int, repeats: int = 3) -> pd.DataFrame:
    """A ``multiprocessing.Value`` incremented by N forked processes at once, per strategy.

    ``ops`` increments in all per run, split evenly. One row per run: runtime, strategy, processes,
    ops, seconds, ns_per_op, lost (increments missing from the final value), repeat.
    """
    from iolab.kit.together import run_together  # forks N children and times them from a common start

    rows = []
    for repeat in range(repeats):
        for strategy, body in VALUE_STRATEGIES.items():
            for n_procs in processes:
                per_process = ops // n_procs
                value = multiprocessing.Value("q", 0)  # shared memory, created before the fork
                wall = run_together(n_procs, functools.partial(body, value, per_process), RUN_TIMEOUT_S).wall_s.iloc[0]
                total = per_process * n_procs
                rows.append(
                    {"runtime": "Python processes", "strategy": strategy, "processes": n_procs, "ops": total,
                     "seconds": wall, "ns_per_op": wall / total * 1e9, "lost": total - value.value, "repeat": repeat}
                )
    return pd.DataFrame(rows)
