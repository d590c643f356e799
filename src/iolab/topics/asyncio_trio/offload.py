"""CPU-bound work beside an event loop: inline, in a thread, or in a process pool.

Each strategy runs the same batch of Julia-set jobs (``julia.py``, pure Python) as concurrent tasks,
while a ticker (``looplag``) measures how late the loop wakes, and the batch's CPU time (this process's
and the pool's processes') says how many cores it used. The strategies:

- inline: the task calls the job itself, with no ``await`` inside;
- a thread: ``asyncio.to_thread`` or ``trio.to_thread.run_sync`` runs the job in a worker thread of
  the same process, and the task awaits it;
- a process pool: ``loop.run_in_executor`` sends the job to a worker process of a
  ``ProcessPoolExecutor`` (``open_pool``), and the task awaits its result.

How each one shares the loop's thread and the cores is the notebook's prediction: measure it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import signal
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import pandas as pd
import psutil
import trio

from iolab.kit import platforms, procfs, runners
from iolab.topics.asyncio_trio import looplag
from iolab.web import julia

Job = Callable[[], bytes]


async def inline(job: Job, pool: concurrent.futures.Executor | None) -> None:
    """Run ``job`` right here: no await inside, so the loop runs nothing else until it returns."""
    job()


async def asyncio_to_thread(job: Job, pool: concurrent.futures.Executor | None) -> None:
    """Run ``job`` in asyncio's default thread pool and wait for it."""
    await asyncio.to_thread(job)


async def in_process_pool(job: Job, pool: concurrent.futures.Executor | None) -> None:
    """Run ``job`` in another process of ``pool`` and wait for it."""
    await asyncio.get_running_loop().run_in_executor(pool, job)


async def trio_to_thread(job: Job, pool: concurrent.futures.Executor | None) -> None:
    """Run ``job`` in a trio worker thread and wait for it."""
    await trio.to_thread.run_sync(job)


@dataclass(frozen=True)
class Strategy:
    """A way to run a CPU-bound job from an event loop: the library, and the coroutine awaiting one job."""

    name: str
    library: str  # "asyncio" or "trio"
    run_one: Callable[[Job, concurrent.futures.Executor | None], Coroutine[Any, Any, None]]


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("asyncio inline", "asyncio", inline),
        Strategy("asyncio.to_thread", "asyncio", asyncio_to_thread),
        Strategy("process pool", "asyncio", in_process_pool),
        Strategy("trio inline", "trio", inline),
        Strategy("trio.to_thread", "trio", trio_to_thread),
    )
}


def _ignore_sigint() -> None:
    # The notebook's interrupt reaches the pool's processes too; the pool is shut down by its owner.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


async def _asyncio_batch(strategy: Strategy, job: Job, jobs: int, pool: concurrent.futures.Executor | None) -> tuple[looplag.LagProbe, float]:
    async with looplag.open_asyncio_ticker() as probe:
        start = time.perf_counter()
        async with asyncio.TaskGroup() as tasks:
            for _ in range(jobs):
                tasks.create_task(strategy.run_one(job, pool))
        seconds = time.perf_counter() - start
    return probe, seconds


async def _trio_batch(strategy: Strategy, job: Job, jobs: int, pool: concurrent.futures.Executor | None) -> tuple[looplag.LagProbe, float]:
    async with looplag.open_trio_ticker() as probe:
        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(jobs):
                nursery.start_soon(strategy.run_one, job, pool)
        seconds = time.perf_counter() - start
    return probe, seconds


@dataclass(frozen=True)
class Batch:
    """One batch of jobs run by one strategy: what the ticker saw, and how long the batch took."""

    strategy: str
    job_ms: float
    jobs: int
    probe: looplag.LagProbe
    seconds: float
    cpu_s: float  # CPU time of this process (all its threads) and of the pool's processes during the batch
    # CPU time of this process alone: where the jobs ran. Unlike a lag, a neighbour on the cores cannot move it.
    own_cpu_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        """One row: strategy, jobs, seconds, jobs/s, cores used (CPU s per s) and the lag summary."""
        return {"strategy": self.strategy, "job_ms": self.job_ms, "jobs": self.jobs, "seconds": self.seconds,
                "jobs_per_s": self.jobs / self.seconds, "cores_used": self.cpu_s / self.seconds,
                **self.probe.summary()}


def _process_cpu_seconds(pid: int) -> float:
    # From /proc on Linux; elsewhere (macOS) from psutil, which asks the kernel its own way (this process alone).
    if platforms.missing("procfs") is None:
        return procfs.cpu_seconds(pid)
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _cpu_seconds(pool: concurrent.futures.Executor | None) -> float:
    """CPU time so far of this process and of ``pool``'s worker processes, if it has any."""
    # ProcessPoolExecutor keeps its workers in _processes (pid -> Process); a thread pool has none.
    pids = [os.getpid(), *(getattr(pool, "_processes", None) or {})]
    return sum(_process_cpu_seconds(pid) for pid in pids if procfs.exists(pid))


def measure(
    strategy: str | Strategy, job_ms: float, jobs: int, pool: concurrent.futures.Executor | None = None
) -> Batch:
    """Run ``jobs`` Julia-set jobs of ``job_ms`` each, started together, by ``strategy``, with a ticker.

    ``strategy`` is a name in ``STRATEGIES`` or a Strategy of your own. Strategies that use ``pool``
    need one (see :func:`open_pool`): starting processes is not what is measured.
    """
    if isinstance(strategy, str):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; the strategies are: {', '.join(STRATEGIES)}")
        strategy = STRATEGIES[strategy]
    if strategy.run_one is in_process_pool and pool is None:
        raise ValueError("the 'process pool' strategy needs a pool: pass pool=open_pool() (a with block)")
    job = functools.partial(julia.julia, *julia.size_for_ms(job_ms))
    cpu_before, own_before = _cpu_seconds(pool), _process_cpu_seconds(os.getpid())
    if strategy.library == "trio":
        probe, seconds = runners.run_trio(_trio_batch, strategy, job, jobs, pool)
    else:
        probe, seconds = runners.run_asyncio(_asyncio_batch, strategy, job, jobs, pool)
    return Batch(strategy.name, job_ms, jobs, probe, seconds, _cpu_seconds(pool) - cpu_before,
                 _process_cpu_seconds(os.getpid()) - own_before)


def open_pool(workers: int | None = None) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool with ``workers`` processes (default: one per core), started now; use it in a ``with``."""
    count = workers or os.cpu_count() or 1
    pool = concurrent.futures.ProcessPoolExecutor(count, initializer=_ignore_sigint)
    list(pool.map(int, range(count)))  # fork the workers now, before anything is timed
    return pool


def compare(
    strategies: list[str], job_ms: float, jobs: int, repeats: int = 1, progress: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every strategy ``repeats`` times: (one summary row per run, one row per ticker wake-up)."""
    from tqdm.auto import tqdm

    summaries, wakeups = [], []
    with open_pool() as pool:
        runs = [(repeat, name) for repeat in range(repeats) for name in strategies]
        for repeat, name in tqdm(runs, disable=not progress, leave=False):
            batch = measure(name, job_ms, jobs, pool)
            summaries.append(batch.summary() | {"repeat": repeat})
            wakeups.append(pd.DataFrame({"strategy": name, "repeat": repeat, "at_s": batch.probe.at_s,
                                         "lag_ms": batch.probe.lags_ms}))
    return pd.DataFrame(summaries), pd.concat(wakeups, ignore_index=True)
