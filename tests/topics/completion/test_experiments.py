"""``iolab.topics.completion.experiments``: the chapter's tables, with io_uring and without it."""

from __future__ import annotations

import dataclasses

import pytest

from iolab.kit import platforms
from iolab.kit.scale import Scale
from iolab.topics.completion import experiments, support

QUICK = Scale("quick")


@pytest.fixture
def without_io_uring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(support.FORCE_ENV, "1")


def test_without_io_uring_the_file_table_has_the_threads_only_and_says_why(without_io_uring: None) -> None:
    reads, missing = experiments.file_reads(QUICK, progress=False, repeats=2)
    assert set(reads.way) == {"one thread", "thread pool"}
    for repeat in (0, 1):  # every repeat visits every depth, the repeats in turns
        assert sorted(reads[(reads.way == "thread pool") & (reads.repeat == repeat)].depth) == experiments.depths(QUICK)
    assert list(reads.repeat) == sorted(reads.repeat)
    assert (reads.iops > 0).all() and (reads.p99_us >= reads.p50_us).all()
    assert any(support.FORCE_ENV in reason for reason in missing)
    assert reads.disk.nunique() == 1 and "hypervisor" in reads.disk.iloc[0]  # the figure's note on the device
    assert reads.held_us.isna().all()  # a blocking read is handed over as it is asked: nothing to hold


def test_without_io_uring_the_servers_are_the_readiness_ones_and_sqpoll_says_why(without_io_uring: None) -> None:
    assert [s for s in experiments.available_servers() if s in experiments.python_servers()] == ["epoll", "uvloop"]
    sqpoll, missing = experiments.sqpoll_cost(QUICK, progress=False)
    assert sqpoll.empty and support.FORCE_ENV in missing[0]


def test_off_linux_the_epoll_servers_are_left_out_with_the_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    assert experiments.available_servers() == ["uvloop"]  # no epoll, no io_uring
    calls, missing = experiments.server_runs([4], 0.2, 0.2, servers=["epoll"], traced=False, progress=False, repeats=1)
    assert calls.empty and any("epoll" in reason for reason in missing)


@pytest.mark.skipif(support.unavailable("files") is not None, reason=f"io_uring: {support.unavailable('files')}")
def test_with_io_uring_every_way_is_measured_at_every_depth() -> None:
    reads = experiments.file_reads(QUICK, progress=False, repeats=1).table
    ways = set(experiments.WAYS) if "fio io_uring" in set(reads.way) else set(experiments.WAYS) - {"fio io_uring"}
    assert set(reads.way) == ways
    for way in ways - {"one thread"}:
        assert sorted(reads[reads.way == way].depth) == experiments.depths(QUICK), way


@pytest.mark.skipif(support.unavailable("sockets") is not None, reason=f"io_uring: {support.unavailable('sockets')}")
def test_sqpoll_runs_take_turns_off_and_on_in_every_repeat() -> None:
    sqpoll, missing = experiments.sqpoll_cost(QUICK, progress=False, repeats=2)
    assert missing == []
    assert list(zip(sqpoll.repeat, sqpoll.server)) == [(0, "uring"), (0, "uring (SQPOLL)"), (1, "uring"), (1, "uring (SQPOLL)")]
    assert (sqpoll.rps > 0).all() and (sqpoll.cpu_us_per_request > 0).all()


def test_without_io_uring_the_server_rates_repeat_in_turns_and_one_traced_run_counts(without_io_uring: None) -> None:
    calls, missing = experiments.server_calls(QUICK, connection_counts=(10,), progress=False, repeats=2)
    assert any(support.FORCE_ENV in reason for reason in missing)
    untraced = calls[~calls.traced]
    assert list(zip(untraced.repeat, untraced.server)) == [(0, "epoll"), (0, "uvloop"), (1, "epoll"), (1, "uvloop")]
    assert (untraced.rps > 0).all()
    assert len(calls[calls.traced]) in (0, 2)  # one counted run per server, where strace is here


def test_the_deepest_queue_is_64_at_either_scale_as_the_notebook_exercise_takes_it() -> None:
    assert max(experiments.depths(QUICK)) == max(experiments.depths(Scale("full"))) == 64


def test_a_ways_label_only_names_it_what_it_does_is_in_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    # Relabelled, the rows run as before: the pool still visits every depth, one thread depth 1 only.
    renamed = {f"way {i}": dataclasses.replace(experiments.WAYS[label], label=f"way {i}")
               for i, label in enumerate(["one thread", "thread pool"])}
    monkeypatch.setattr(experiments, "WAYS", renamed)
    reads, _ = experiments.read_runs([1, 2], 0.05, 50, 1 << 20, progress=False, repeats=1)
    assert list(zip(reads.way, reads.depth)) == [("way 0", 1), ("way 1", 1), ("way 1", 2)]
    assert reads.held_us.isna().all()


def test_the_queued_ways_are_every_way_but_one_thread_in_the_tables_order() -> None:
    assert experiments.QUEUED == tuple(experiments.WAYS)[1:]
    assert experiments.PER_READ in experiments.QUEUED and experiments.BATCHED in experiments.QUEUED


def test_the_server_runs_leave_out_servers_not_asked_for_and_skip_tracing_when_told(without_io_uring: None) -> None:
    calls, _ = experiments.server_runs([4], 0.2, 0.2, servers=["epoll", "uring"], traced=False, progress=False,
                                       repeats=1)
    assert list(calls.server) == ["epoll"] and not calls.traced.any()


def test_cached_runs_warm_the_file_and_say_they_read_the_page_cache() -> None:
    direct, _ = experiments.read_runs([4], 0.05, 200, 1 << 20, progress=False, repeats=1)
    cached, _ = experiments.read_runs([4], 0.05, 200, 1 << 20, progress=False, repeats=1, cached=True)
    assert set(direct.reads_from) == {"O_DIRECT"} and cached.reads_from.iloc[0].startswith("the page cache")
    assert set(cached.way) == set(direct.way) and (cached.iops > 0).all()


def test_the_cached_case_visits_depth_one_and_the_deepest_only() -> None:
    cached, _ = experiments.cached_reads(QUICK, progress=False, repeats=1)
    assert set(cached.depth) == {1, max(experiments.depths(QUICK))}
    assert cached.reads_from.iloc[0].startswith("the page cache")
