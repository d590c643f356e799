"""The race a lock prevents: three ways for threads to add to one counter, and the updates each loses.

A thread can be interrupted only between bytecodes, and CPython 3.11 hands the GIL over only at a few
kinds of them (the start of a call, the jump back at the end of a loop). An update is lost when another
thread's increments land between one thread's read of the counter and its write of the sum: whether
that can happen depends on where those points fall. :func:`lost_updates` counts what each way loses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import pandas as pd

from iolab.topics.locks.harness import Shared, run_threads


def _one() -> int:
    return 1


def _plus_one(n: int, shared: Shared, lock: threading.Lock) -> None:
    for _ in range(n):
        shared.value += 1


def _plus_call(n: int, shared: Shared, lock: threading.Lock) -> None:
    # The read of shared.value happens before the call, the write after it.
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


def lost_updates(threads: int, increments: int, repeats: int = 3, ways: Iterable[str] = tuple(RACES)) -> pd.DataFrame:
    """Each way of adding in ``ways`` (the keys of :data:`RACES`, all by default), ``increments`` per thread, no lock but where named.

    One row per run: code, threads, expected, counted, lost, lost_pct, seconds, repeat. A thread
    can only be interrupted if it runs longer than the GIL's switch interval (5 ms by default,
    ``sys.getswitchinterval()``), so ``increments`` must keep each thread busy for longer than that,
    and longer than a busy machine takes to run the threads released with it: beside two CPU burners,
    4 threads of 100,000 increments at a 10 µs interval lost nothing in 22 of 150 runs (most likely
    each ran alone). The locked way is by far the slowest: leave it out of ``ways`` where only the races matter.
    """
    chosen = {code: RACES[code] for code in ways}  # a misspelt way fails here, before any run
    rows = []
    for repeat in range(repeats):
        for code, body in chosen.items():
            shared = Shared()
            seconds = run_threads(body, threads, increments, shared, threading.Lock())
            expected = threads * increments
            rows.append(
                {"code": code, "threads": threads, "expected": expected, "counted": shared.value,
                 "lost": expected - shared.value, "lost_pct": 100 * (expected - shared.value) / expected,
                 "seconds": seconds, "repeat": repeat}
            )
    return pd.DataFrame(rows)
