"""The service in trio: tasks in a nursery, ``move_on_after``/``fail_after``, a memory channel.

Read it beside ``asyncio.py`` (``shared.diff`` prints the difference). trio has no twin of
``gather_unstructured``: a trio task can only be started in a nursery.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from iolab.kit import runners
from iolab.topics.asyncio_trio.structured.shared import Job, Log, Sample, UpstreamError, with_queue_times

T = TypeVar("T")


async def call(job: Job, log: Log) -> str:
    """Wait for the upstream ``job`` like a network call; its name, or UpstreamError."""
    log.add(job.name, "started")
    try:
        await trio.sleep(job.seconds)  # stands for waiting on a socket: the loop runs others meanwhile
    except trio.Cancelled:
        log.add(job.name, "cancelled")
        raise  # let the cancellation through
    if job.fails:
        log.add(job.name, "failed")
        raise UpstreamError(job.name)
    log.add(job.name, "done")
    return job.name


async def gather_all(jobs: list[Job], log: Log) -> list[str]:
    """Every job's answer, one per job, in a nursery; if a job fails, the nursery raises an ExceptionGroup."""
    answers: list[str] = [""] * len(jobs)

    async def answer(i: int, job: Job) -> None:
        answers[i] = await call(job, log)

    async with trio.open_nursery() as nursery:
        for i, job in enumerate(jobs):
            nursery.start_soon(answer, i, job)  # returns nothing: a task's result is whatever it stores
    return answers


async def gather_within(jobs: list[Job], log: Log, seconds: float) -> list[str | None]:
    """The answers that came within ``seconds``; None for the jobs cancelled at the deadline."""
    answers: list[str | None] = [None] * len(jobs)

    async def answer(i: int, job: Job) -> None:
        answers[i] = await call(job, log)

    with trio.move_on_after(seconds):
        async with trio.open_nursery() as nursery:
            for i, job in enumerate(jobs):
                nursery.start_soon(answer, i, job)
    return answers


async def call_within(job: Job, log: Log, seconds: float) -> str:
    """The job's answer; the call fails if it takes longer than ``seconds``."""
    with trio.fail_after(seconds):
        return await call(job, log)


async def pipeline(items: int, buffer: int | None, consume_s: float, produce_s: float = 0.0) -> list[Sample]:
    """Send ``items`` through a buffer of ``buffer`` items (None: unbounded) to a consumer taking
    ``consume_s`` each; one Sample per item sent."""
    send, receive = trio.open_memory_channel[int](math.inf if buffer is None else buffer)
    samples: list[Sample] = []
    taken_ms: dict[int, float] = {}
    started = time.perf_counter()

    async def produce() -> None:
        async with send:
            for item in range(items):
                before = time.perf_counter()
                await send.send(item)  # waits while the buffer is full: that wait is the backpressure
                now = time.perf_counter()
                used = send.statistics().current_buffer_used
                samples.append(Sample((now - started) * 1000, item, (now - before) * 1000, used))
                await trio.sleep(produce_s)
        # leaving "async with send" closes the channel: the consumer's loop ends by itself

    async def consume() -> None:
        async with receive:
            async for item in receive:
                taken_ms[item] = (time.perf_counter() - started) * 1000
                await trio.sleep(consume_s)  # stands for a slow client downstream

    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        nursery.start_soon(consume)
    return with_queue_times(samples, taken_ms)


def run(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``main(*args)`` run to completion on a new trio loop (in a thread: see ``iolab.kit.runners``)."""
    return runners.run_trio(main, *args)
