"""iolab.topics.asyncio_trio.structured: the asyncio and the trio version of the service behave the same way.

One suite, run against both modules (like CPython's test_selectors); the few real differences
(asyncio has no rendezvous queue, only asyncio has the unstructured ``gather``) get their own tests.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import trio

from iolab.topics.asyncio_trio.structured import Job, Log, UpstreamError, diff
from iolab.topics.asyncio_trio.structured import asyncio as asyncio_version
from iolab.topics.asyncio_trio.structured import trio as trio_version

VERSIONS = {"asyncio": asyncio_version, "trio": trio_version}
TIMEOUTS = {"asyncio": TimeoutError, "trio": trio.TooSlowError}


@pytest.fixture(params=list(VERSIONS))
def version(request):
    return request.param


def test_gather_all_returns_answers_in_job_order_after_running_them_concurrently(version):
    module = VERSIONS[version]
    log = Log()
    jobs = [Job("slow", 0.15), Job("fast", 0.01), Job("middle", 0.08)]
    answers = module.run(module.gather_all, jobs, log)
    assert answers == ["slow", "fast", "middle"]
    # The overlap shown by the log's order, not by a wall-clock bound (which a busy machine breaks):
    # every job started before any finished. (Not the order of the starts, nor of the ends if the
    # loop woke late: trio shuffles the tasks it runs in one batch.)
    events = [event for _, _, event in log.rows]
    assert events == ["started"] * 3 + ["done"] * 3


def test_a_failing_job_cancels_its_siblings_and_raises_an_exception_group(version):
    module = VERSIONS[version]
    log = Log()
    jobs = [Job("a", 5.0), Job("bad", 0.01, fails=True), Job("c", 5.0)]
    start = time.perf_counter()
    with pytest.raises(ExceptionGroup) as caught:
        module.run(module.gather_all, jobs, log)
    assert time.perf_counter() - start < 2.0, "siblings were cancelled, not waited for"
    assert [type(e) for e in caught.value.exceptions] == [UpstreamError]
    assert log.outcome() == {"a": "cancelled", "bad": "failed", "c": "cancelled"}


def test_gather_within_keeps_the_answers_that_beat_the_deadline_and_cancels_the_rest(version):
    module = VERSIONS[version]
    log = Log()
    answers = module.run(module.gather_within, [Job("quick", 0.01), Job("late", 5.0)], log, 0.2)
    assert answers == ["quick", None]
    assert log.outcome() == {"quick": "done", "late": "cancelled"}


def test_call_within_raises_the_librarys_timeout_error_after_the_deadline(version):
    module = VERSIONS[version]
    log = Log()
    with pytest.raises(TIMEOUTS[version]):
        module.run(module.call_within, Job("late", 5.0), log, 0.05)
    assert log.outcome() == {"late": "cancelled"}
    assert module.run(module.call_within, Job("quick", 0.01), Log(), 1.0) == "quick"


def test_a_bounded_buffer_holds_the_producer_back(version):
    module = VERSIONS[version]
    samples = module.run(module.pipeline, 30, 3, 0.005)
    assert len(samples) == 30
    assert max(s.depth for s in samples) <= 3
    assert sum(s.waited_ms for s in samples) > 30 * 5 * 0.5, "the producer waited for the slow consumer"


def test_an_unbounded_buffer_lets_the_producer_run_ahead_without_waiting(version):
    module = VERSIONS[version]
    samples = module.run(module.pipeline, 30, None, 0.005)
    assert max(s.depth for s in samples) >= 25, "almost every item waits in the buffer"
    assert sum(s.waited_ms for s in samples) < 30 * 5 * 0.5


def test_asyncio_refuses_a_zero_buffer_because_queue_zero_means_unbounded():
    with pytest.raises(ValueError, match="unbounded"):
        asyncio_version.run(asyncio_version.pipeline, 3, 0, 0.001)


def test_a_trio_channel_without_buffer_hands_each_item_over_directly():
    samples = trio_version.run(trio_version.pipeline, 10, 0, 0.002)
    assert max(s.depth for s in samples) == 0


def test_asyncio_gather_leaves_siblings_running_after_the_caller_got_the_error():
    log = Log()

    async def caller() -> None:
        try:
            await asyncio_version.gather_unstructured([Job("bad", 0.01, fails=True), Job("orphan", 0.1)], log)
        except UpstreamError:
            log.add("caller", "caught")
        await asyncio.sleep(0.3)  # stay around long enough to see what the orphan does

    asyncio_version.run(caller)
    events = [(job, event) for _, job, event in log.rows]
    assert events.index(("caller", "caught")) < events.index(("orphan", "done"))


def test_the_diff_shows_task_groups_against_nurseries():
    text = diff(asyncio_version, trio_version)
    assert "-    async with asyncio.TaskGroup() as group:" in text
    assert "+    async with trio.open_nursery() as nursery:" in text
    assert "async def call(" not in text, "call() is the same in both apart from its sleep"


def test_fan_out_takes_about_the_wait_and_reports_every_library_and_count():
    from iolab.topics.asyncio_trio.structured import timing

    df = timing.fan_out([1, 50], wait_s=0.05, repeats=1)
    assert set(df.library) == set(timing.LIBRARIES) and set(df.jobs) == {1, 50}
    assert (df.seconds >= 0.05).all(), "no fan-out can beat the wait of its jobs"
    assert (df.seconds < 0.05 * 50).all(), "50 concurrent waits must overlap"
    with pytest.raises(ValueError, match="libraries are"):
        timing.fan_out_seconds("curio", 1, 0.01)


def test_items_wait_longer_and_longer_in_an_unbounded_buffer_but_not_in_a_bounded_one(version):
    module = VERSIONS[version]
    unbounded = module.run(module.pipeline, 40, None, 0.004)
    bounded = module.run(module.pipeline, 40, 2, 0.004)
    assert unbounded[-1].queued_ms > 40 * 4 * 0.6, "the last item waits for the whole backlog"
    assert max(s.queued_ms for s in bounded) < unbounded[-1].queued_ms / 3
