"""Counting threads under an address-space limit: the count ends with the limit's error, never with a hang."""

from __future__ import annotations

import pytest

from iolab.topics.event_loop import limits


@pytest.mark.parametrize("spare_mb", range(16, 28))
def test_small_stacks_end_with_an_error_whatever_the_spare_memory(spare_mb: int) -> None:
    # With 32 KiB stacks, the limit lands on a Python allocation in the new thread about half the time;
    # threading.Thread.start() then waited forever for the thread to say it had started.
    started, error = limits.thread_capacity(spare_mb, 32, limit=5_000, timeout=20)
    assert started > 0
    assert error != "none"


def test_limit_reached_first_reports_none() -> None:
    assert limits.thread_capacity(512, 256, limit=50) == (50, "none")


def test_larger_stacks_fit_fewer_threads() -> None:
    small, _ = limits.thread_capacity(256, 256, limit=5_000)
    large, _ = limits.thread_capacity(256, 4096, limit=5_000)
    assert large < small
