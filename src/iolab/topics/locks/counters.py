"""What it costs to share a counter: batched, a lock per increment, a queue to one owning thread.

Source 001 benchmarks three ways to add to a counter that threads share (in Rust, on one thread):
add into a local variable and publish the sum once ("batched"), an atomic add per increment, and
a mutex per increment. Python has no atomics, so the three here are batched, a ``threading.Lock``
per increment, and a ``queue.SimpleQueue`` to one thread that owns the counter. Every run is timed
on the wall clock, from a common start line to the last thread's end, and reported per increment:
``ns_per_op`` = wall time / all threads' increments together.

The race the lock prevents is in :mod:`~iolab.topics.locks.races`; a counter shared by processes in
:mod:`~iolab.topics.locks.process_counter`; the same counters in Go in :mod:`~iolab.topics.locks.golocks`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

import pandas as pd

from iolab.topics.locks.harness import RUN_TIMEOUT_S, Shared, run_threads, run_with_owner


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
