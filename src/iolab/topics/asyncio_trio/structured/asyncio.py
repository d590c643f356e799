"""The service in asyncio: tasks in a ``TaskGroup``, ``asyncio.timeout``, a bounded ``asyncio.Queue``.

Read it beside ``trio.py`` (``shared.diff`` prints the difference). One function has no trio twin:
``gather_unstructured``, the pre-3.11 idiom (``asyncio.gather``), which the notebook sets beside the task group.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from iolab.kit import runners
from iolab.topics.asyncio_trio.structured.shared import Job, Log, Sample, UpstreamError, with_queue_times

T = TypeVar("T")


async def call(job: Job, log: Log) -> str:
    """Wait for the upstream ``job`` like a network call; its name, or UpstreamError."""
    log.add(job.name, "started")
    try:
        await asyncio.sleep(job.seconds)  # stands for waiting on a socket: the loop runs others meanwhile
    except asyncio.CancelledError:
        log.add(job.name, "cancelled")
        raise  # let the cancellation through
    if job.fails:
        log.add(job.name, "failed")
        raise UpstreamError(job.name)
    log.add(job.name, "done")
    return job.name


async def gather_all(jobs: list[Job], log: Log) -> list[str]:
    """Every job's answer, one per job, in a task group; if a job fails, the group raises an ExceptionGroup."""
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(call(job, log)) for job in jobs]
    return [task.result() for task in tasks]


async def gather_within(jobs: list[Job], log: Log, seconds: float) -> list[str | None]:
    """The answers that came within ``seconds``; None for the jobs cancelled at the deadline."""
    answers: list[str | None] = [None] * len(jobs)

    async def answer(i: int, job: Job) -> None:
        answers[i] = await call(job, log)

    try:
        async with asyncio.timeout(seconds):
            async with asyncio.TaskGroup() as group:
                for i, job in enumerate(jobs):
                    group.create_task(answer(i, job))
    except TimeoutError:
        pass  # keep what arrived in time
    return answers


async def call_within(job: Job, log: Log, seconds: float) -> str:
    """The job's answer; the call fails if it takes longer than ``seconds``."""
    async with asyncio.timeout(seconds):
        return await call(job, log)


async def pipeline(items: int, buffer: int | None, consume_s: float, produce_s: float = 0.0) -> list[Sample]:
    """Send ``items`` through a buffer of ``buffer`` items (None: unbounded) to a consumer taking
    ``consume_s`` each; one Sample per item sent."""
    if buffer == 0:
        raise ValueError(f"buffer={buffer!r}: the asyncio pipeline takes a buffer of 1 or more items, or None (unbounded)")
    queue: asyncio.Queue[int | None] = asyncio.Queue() if buffer is None else asyncio.Queue(buffer)
    samples: list[Sample] = []
    taken_ms: dict[int, float] = {}
    started = time.perf_counter()

    async def produce() -> None:
        for item in range(items):
            before = time.perf_counter()
            await queue.put(item)  # waits while the queue is full: that wait is the backpressure
            now = time.perf_counter()
            samples.append(Sample((now - started) * 1000, item, (now - before) * 1000, queue.qsize()))
            await asyncio.sleep(produce_s)
        await queue.put(None)  # a queue cannot be closed (before 3.13): tell the consumer with a sentinel

    async def consume() -> None:
        while (item := await queue.get()) is not None:
            taken_ms[item] = (time.perf_counter() - started) * 1000
            await asyncio.sleep(consume_s)  # stands for a slow client downstream

    async with asyncio.TaskGroup() as group:
        group.create_task(produce())
        group.create_task(consume())
    return with_queue_times(samples, taken_ms)


def run(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``main(*args)`` run to completion on a new asyncio loop (in a thread: see ``iolab.kit.runners``)."""
    return runners.run_asyncio(main, *args)


async def gather_unstructured(jobs: list[Job], log: Log) -> list[str]:
    """Like ``gather_all``, with ``asyncio.gather`` instead of a task group (the pre-3.11 idiom)."""
    return await asyncio.gather(*(call(job, log) for job in jobs))
