"""iolab.servers.limits: when a read times out and what the client is told, without a socket."""

from __future__ import annotations

import threading

import pytest

from iolab.servers import Options
from iolab.servers.limits import NO_LIMITS, ConnectionCap, Limits, ReadClock
from iolab.web.http import Connection

GET = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"


def test_limits_are_off_unless_asked() -> None:
    assert Limits.from_options(Options("threaded")) == NO_LIMITS and not NO_LIMITS.timed
    clock = ReadClock(NO_LIMITS)
    assert clock.left() is None and clock.deadline() is None


def test_an_idle_connection_has_the_keepalive_deadline_and_is_closed_without_a_word() -> None:
    conn, clock = Connection(), ReadClock(Limits(header_s=5.0, keepalive_s=1.0))
    clock.update(conn)
    assert 0.9 < clock.left() <= 1.0  # type: ignore[operator]
    assert clock.expired(conn) == b""


def test_a_begun_request_has_the_header_deadline_from_its_first_byte_and_gets_408() -> None:
    conn, clock = Connection(), ReadClock(Limits(header_s=5.0, keepalive_s=1.0))
    clock.update(conn)
    conn.feed(GET[:10])
    clock.update(conn)
    first = clock.deadline()
    assert 4.9 < clock.left() <= 5.0  # type: ignore[operator]
    conn.feed(GET[10:20])  # more of the same head: the deadline does not move
    clock.update(conn)
    assert clock.deadline() == first
    assert clock.expired(conn).startswith(b"HTTP/1.1 408 ")


def test_the_clock_restarts_after_each_request_even_when_pipelined() -> None:
    conn, clock = Connection(), ReadClock(Limits(header_s=5.0))
    conn.feed(GET[:10])
    clock.update(conn)
    first = clock.deadline()
    assert len(conn.feed(GET[10:] + GET[:10])) == 1  # one done, the next begun in the same read
    clock.update(conn)
    assert clock.deadline() != first
    conn.feed(GET[10:])
    clock.update(conn)
    assert clock.deadline() is None  # idle, and no keep-alive timeout


def test_only_a_header_timeout_leaves_idle_connections_alone() -> None:
    conn, clock = Connection(), ReadClock(Limits(header_s=0.1))
    clock.update(conn)
    assert clock.left() is None


@pytest.mark.parametrize("limit", [None, 3])
def test_the_cap_admits_up_to_its_limit_and_counts_leavers_out(limit: int | None) -> None:
    cap = ConnectionCap(limit)
    admitted = [cap.admit() for _ in range(5)]
    assert admitted == ([True] * 5 if limit is None else [True, True, True, False, False])
    cap.leave()
    assert cap.admit()


def test_the_cap_counts_right_across_threads() -> None:
    cap = ConnectionCap(10_000)

    def churn() -> None:
        for _ in range(2_000):
            assert cap.admit()
            cap.leave()

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cap.count == 0
