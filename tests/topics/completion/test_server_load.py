"""Chapter 13's three servers: each answers every request, counts it, refuses bad input and lives on."""

from __future__ import annotations

import os
import socket

import pytest

from iolab.topics.completion import experiments, server_load, support
from iolab.topics.completion.server_process import SERVERS, ServerSpec
from iolab.topics.completion.tiny_http import BAD, OK

GET = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
no_uring = pytest.mark.skipif(support.unavailable("sockets") is not None,
                              reason=f"io_uring: {support.unavailable('sockets')}")


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
            if request == GET and received.endswith(OK):
                break
        return received


@pytest.mark.parametrize("server", experiments.available_servers())
def test_every_request_is_answered_and_counted(server: str) -> None:
    row = server_load.measure(server, connections=4, seconds=0.5)
    assert row["errors"] == 0 and row["answered"] > 100
    # The clients count answers within the run; the server also those still on their way at its end,
    # at most one per connection.
    assert 0 <= row["requests"] - row["answered"] <= 4


@pytest.mark.parametrize("server", experiments.available_servers())
def test_a_bad_request_gets_400_and_the_next_client_is_served(server: str) -> None:
    with server_load.open_tiny_server(ServerSpec(server)) as serving:
        assert serving.url == f"http://127.0.0.1:{serving.port}" and serving.pid == serving.child.pid
        assert _exchange(serving.port, b"POST / HTTP/1.1\r\n\r\n") == BAD  # and then the server closed the connection
        assert _exchange(serving.port, GET) == OK


@no_uring
def test_the_completion_server_makes_fewer_calls_per_request_than_the_readiness_one() -> None:
    # Counts, not rates: epoll needs a recv and a send per request whatever the timing; the ring
    # hands over every send and takes every completion of a turn in one call.
    epoll = server_load.measure("epoll", connections=8, seconds=0.5)
    uring = server_load.measure("uring", connections=8, seconds=0.5)
    assert epoll["own_calls_per_request"] >= 2
    assert uring["own_calls_per_request"] < 1


@no_uring
def test_sqpoll_serves_too_and_leaves_the_counting_to_strace() -> None:
    row = server_load.measure("uring", connections=4, seconds=0.5, sqpoll=True)
    assert row["server"] == "uring (SQPOLL)" and row["errors"] == 0 and row["requests"] > 100
    assert row["own_calls_per_request"] is None


def test_without_io_uring_the_uring_server_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(support.FORCE_ENV, "1")
    with pytest.raises(support.Unavailable, match=support.FORCE_ENV):
        server_load.measure("uring", connections=1, seconds=0.1)


def test_a_spec_for_an_unknown_server_or_sqpoll_elsewhere_is_refused() -> None:
    with pytest.raises(ValueError, match="the servers are epoll, uvloop, uring"):
        ServerSpec("iocp")
    with pytest.raises(ValueError, match="sqpoll applies to the uring server only"):
        ServerSpec("epoll", sqpoll=True)


def test_every_server_in_the_table_is_named_by_its_key_and_only_the_ring_takes_sqpoll() -> None:
    assert all(name == server.name for name, server in SERVERS.items())
    assert [name for name, server in SERVERS.items() if server.sqpoll] == ["uring"]
    assert [name for name, server in SERVERS.items() if server.uring] == ["uring", "uring (C)"]


@no_uring
@pytest.mark.parametrize("sqpoll", [False, True])
def test_the_servers_ring_takes_the_taskrun_flags_the_kernel_allows_beside_its_mode(sqpoll: bool) -> None:
    import liburing as uring

    from iolab.topics.completion import uring_server

    ring = uring.Ring()
    flags = uring_server._setup(uring, ring, sqpoll)
    try:
        assert bool(flags & uring.IORING_SETUP_SQPOLL) == sqpoll
        assert flags & uring.IORING_SETUP_SINGLE_ISSUER  # 6.0 and later: every kernel the chapter runs on
        assert bool(flags & uring.IORING_SETUP_DEFER_TASKRUN) != sqpoll  # the kernel refuses it beside SQPOLL
    finally:
        uring.io_uring_queue_exit(ring)


@no_uring
def test_giving_a_buffer_back_the_older_way_is_timed_in_microseconds() -> None:
    from iolab.topics.completion import uring_server

    assert 0 < uring_server.provide_cost_us(buffers=64, rounds=5) < 1000


@no_uring
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="placing a server and its load needs two CPUs")
def test_a_placed_run_keeps_the_server_and_its_poller_off_the_loads_cpus() -> None:
    row = server_load.measure("uring", 10, 0.3, sqpoll=True, placed=True)
    assert row["server_cpus"] and row["load_cpus"] and row["poller_cpus"]
    assert row["server_cpus"] != row["load_cpus"]
    # this kernel gives the polling thread its program's CPUs; the row reports whatever it gave
    assert row["answered"] > 0
