"""``python -m iolab completion``: chapter 13's comparisons from a terminal, with io_uring and without it."""

from __future__ import annotations

import json

import pytest

from iolab.commands import main
from iolab.topics.completion import experiments, support, syscall_counts

no_uring = pytest.mark.skipif(support.unavailable("sockets") is not None,
                              reason=f"io_uring: {support.unavailable('sockets')}")


@pytest.fixture
def without_io_uring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(support.FORCE_ENV, "1")


def test_reads_prints_a_row_per_way_and_depth_in_the_tables_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "reads", "--depths", "1", "2", "--seconds", "0.05", "--repeats", "1",
                 "--file-mib", "4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    ways = [r["way"] for r in rows]
    assert ways == sorted(ways, key=list(experiments.WAYS).index), "the ways in the table's order"
    assert [(r["way"], r["depth"]) for r in rows if r["way"] in ("one thread", "thread pool")] == [
        ("one thread", 1), ("thread pool", 1), ("thread pool", 2)]
    assert all(r["iops"] > 0 and r["p99_us"] >= r["p50_us"] for r in rows)


def test_reads_without_io_uring_measures_the_threads_and_says_why(without_io_uring: None,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "reads", "--depths", "1", "--seconds", "0.05", "--repeats", "1", "--file-mib", "4"]) == 0
    out, err = capsys.readouterr()
    assert "thread pool" in out and "io_uring (Python" not in out and "disk: " in out
    assert f"not measured here: {support.FORCE_ENV} is set" in err


def test_servers_prints_the_median_row_of_each_server_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "servers", "--servers", "epoll", "uvloop", "--connections", "4", "--seconds", "0.3",
                 "--repeats", "2", "--no-strace", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["server"], r["connections"], r["traced"]) for r in rows] == [("epoll", 4, False), ("uvloop", 4, False)]
    assert all(r["rps"] > 0 and r["errors"] == 0 for r in rows)
    assert rows[0]["own_calls_per_request"] >= 2  # epoll: a recv and a send per request, by its own count


@pytest.mark.skipif(syscall_counts.strace_missing() is not None, reason=f"{syscall_counts.strace_missing()}")
def test_servers_traced_adds_a_row_per_server_with_every_call_strace_counted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "servers", "--connections", "4", "--seconds", "0.3", "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["connections", "traced", "server", "rps", "p99_ms", "errors", "cpu_us_per_request",
                                "own_calls_per_request", "syscalls_per_request"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[1], r[2]) for r in rows] == [(t, s) for t in ("False", "True") for s in experiments.available_servers()
                                            if s in experiments.python_servers()]
    assert all(r[-1] == "NaN" for r in rows if r[1] == "False")  # only a traced run counts every call
    assert all(float(r[-1]) > 0 for r in rows if r[1] == "True")


@no_uring
def test_sqpoll_prints_the_ring_without_and_with_its_poller(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "sqpoll", "--connections", "4", "--seconds", "0.3", "--repeats", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["server"] for r in rows] == ["uring", "uring (SQPOLL)"] and all(r["rps"] > 0 for r in rows)


def test_sqpoll_without_io_uring_exits_1_with_the_reason(without_io_uring: None,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "sqpoll", "--seconds", "0.3"]) == 1
    assert f"not measured here: {support.FORCE_ENV} is set" in capsys.readouterr().err


@pytest.mark.parametrize("argv, refused", [
    (["reads", "--seconds", "0"], "0.0 s: give 0.01 to 60 s"),
    (["reads", "--depths", "4096"], "4,096 is out of range: give 1 to 1,024"),
    (["servers", "--connections", "0"], "0 is out of range: give 1 to 10,000"),
    (["servers", "--seconds", "nan"], "nan s: give 0.1 to 600 s"),
    (["servers", "--servers", "iocp"], "invalid choice: 'iocp'"),
    (["sqpoll", "--repeats", "many"], "invalid whole number value: 'many'"),
])
def test_a_run_out_of_bounds_is_refused_before_it_starts(argv: list[str], refused: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["completion", *argv])
    assert refused in capsys.readouterr().err


def test_reads_cached_reads_through_the_page_cache_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "reads", "--cached", "--depths", "4", "--seconds", "0.05", "--repeats", "1",
                 "--file-mib", "4"]) == 0
    out = capsys.readouterr().out
    assert "thread pool" in out and "reads from: the page cache" in out
