"""``iolab.topics.completion.experiments``: the chapter's tables, with io_uring and without it."""

from __future__ import annotations

import pytest

from iolab.kit.scale import Scale
from iolab.topics.completion import experiments, support

QUICK = Scale("quick")


@pytest.fixture
def without_io_uring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(support.FORCE_ENV, "1")


def test_without_io_uring_the_file_table_has_the_threads_only_and_says_why(without_io_uring: None) -> None:
    reads = experiments.file_reads(QUICK, progress=False)
    assert set(reads.way) == {"one thread", "thread pool"}
    assert sorted(reads[reads.way == "thread pool"].depth) == experiments.depths(QUICK)
    assert (reads.iops > 0).all() and (reads.p99_us >= reads.p50_us).all()
    assert any(support.FORCE_ENV in reason for reason in reads.attrs["missing"])


def test_without_io_uring_the_servers_are_the_readiness_ones_and_sqpoll_says_why(without_io_uring: None) -> None:
    assert experiments.available_servers() == ["epoll", "uvloop"]
    sqpoll = experiments.sqpoll_cost(QUICK, progress=False)
    assert sqpoll.empty and support.FORCE_ENV in sqpoll.attrs["missing"][0]


@pytest.mark.skipif(support.unavailable("files") is not None, reason=f"io_uring: {support.unavailable('files')}")
def test_with_io_uring_every_way_is_measured_at_every_depth() -> None:
    reads = experiments.file_reads(QUICK, progress=False)
    ways = set(experiments.WAYS) if "fio io_uring" in set(reads.way) else set(experiments.WAYS) - {"fio io_uring"}
    assert set(reads.way) == ways
    for way in ways - {"one thread"}:
        assert sorted(reads[reads.way == way].depth) == experiments.depths(QUICK), way


@pytest.mark.skipif(support.unavailable("sockets") is not None, reason=f"io_uring: {support.unavailable('sockets')}")
def test_sqpoll_runs_take_turns_off_and_on_in_every_repeat() -> None:
    sqpoll = experiments.sqpoll_cost(QUICK, progress=False, repeats=2)
    assert list(zip(sqpoll.repeat, sqpoll.server)) == [(0, "uring"), (0, "uring (SQPOLL)"), (1, "uring"), (1, "uring (SQPOLL)")]
    assert (sqpoll.rps > 0).all() and (sqpoll.cpu_us_per_request > 0).all()
