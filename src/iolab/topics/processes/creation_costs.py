"""What it costs to create a process, a thread and an asyncio task, each run to completion.

Each timer does the smallest complete life cycle of its kind, ``n`` times in a row: fork + exit +
wait; thread start + join; task create + await. The body does nothing, so what is timed is the
creation and the scheduling, which is what a server pays per connection in each model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from collections.abc import Callable, Coroutine

import pandas as pd


def time_forks(n: int) -> float:
    """Seconds for ``n`` rounds of fork(); the child's os._exit(0); the parent's waitpid()."""
    start = time.perf_counter()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return time.perf_counter() - start


def _nothing() -> None:
    pass


def time_threads(n: int) -> float:
    """Seconds for ``n`` rounds of starting a thread that does nothing and joining it."""
    start = time.perf_counter()
    for _ in range(n):
        thread = threading.Thread(target=_nothing)
        thread.start()
        thread.join()
    return time.perf_counter() - start


async def _nothing_async() -> None:
    pass


async def time_tasks(n: int) -> float:
    """Seconds for ``n`` rounds of creating an asyncio task that does nothing and awaiting it."""
    start = time.perf_counter()
    for _ in range(n):
        await asyncio.create_task(_nothing_async())
    return time.perf_counter() - start


def run_coroutine(coro: Coroutine[object, object, float]) -> float:
    """Run ``coro`` to completion on a fresh event loop, even where one is already running.

    A notebook's kernel already runs an event loop in its main thread, and asyncio.run refuses to
    start a second one there; a worker thread has no loop of its own, so it can.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


TIMERS: dict[str, Callable[[int], float]] = {
    "process (fork)": time_forks,
    "thread": time_threads,
    "asyncio task": lambda n: run_coroutine(time_tasks(n)),
}


def creation_costs(counts: dict[str, int], repeats: int = 3) -> pd.DataFrame:
    """Time each kind ``repeats`` times; one row per run: kind, n, seconds, per_s, us_each."""
    rows = []
    for _ in range(repeats):
        for kind, n in counts.items():
            seconds = TIMERS[kind](n)
            rows.append({"kind": kind, "n": n, "seconds": seconds, "per_s": n / seconds, "us_each": seconds / n * 1e6})
    return pd.DataFrame(rows)
