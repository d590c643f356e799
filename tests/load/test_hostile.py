"""iolab.load.hostile: bad clients, bounded in count and time, that close every socket they open.

Functional only: counts, bounds and clean-up against real servers, no timing compared.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psutil
import pytest

from iolab import servers
from iolab.kit import machine, sockets
from iolab.load import hostile

TIMEOUT = {"header_timeout": 0.3, "keepalive_timeout": 0.3}
SLACK_S = 3.0  # "never runs past its seconds": past them plus a busy machine's slack


@pytest.fixture(scope="module")
def plain() -> Iterator[servers.Server]:
    with servers.open_server("asyncio") as server:
        yield server


@pytest.fixture(scope="module")
def timed() -> Iterator[servers.Server]:
    with servers.open_server("asyncio", **TIMEOUT) as server:
        yield server


def _open_to(port: int) -> int:
    """This process's TCP connections to ``port`` (TIME_WAIT ones belong to no process)."""
    return sum(1 for c in psutil.Process().net_connections("tcp") if c.raddr and c.raddr.port == port)


def test_addresses_are_read_from_urls_pairs_and_host_port() -> None:
    assert hostile.address("http://127.0.0.1:8000/x") == ("127.0.0.1", 8000)
    assert hostile.address("127.0.0.1:81") == ("127.0.0.1", 81)
    assert hostile.address(("::1", 9)) == ("::1", 9)


@pytest.mark.parametrize(("count", "seconds"), [(0, 1.0), (hostile.MAX_COUNT + 1, 1.0), (1, 0.0), (1, 1e9)])
def test_counts_and_durations_are_bounded(count: int, seconds: float) -> None:
    with pytest.raises(ValueError):
        hostile.idle("127.0.0.1:1", count=count, seconds=seconds)


def test_a_too_low_descriptor_limit_says_what_to_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "open_files_limit", lambda: (256, 256))
    with pytest.raises(machine.DescriptorLimit, match=r"ulimit -n 564"):
        hostile.slowloris("127.0.0.1:1", count=500, seconds=1).start()


def test_slowloris_against_a_header_timeout_sees_408s_and_closes(timed: servers.Server) -> None:
    start = time.monotonic()
    report = hostile.slowloris(timed.url, count=20, byte_every_ms=50, seconds=2.0).run()
    assert time.monotonic() - start < 2.0 + SLACK_S
    assert (report.connected, report.closed_by_server, report.held) == (20, 20, 0)
    assert report.answered_408 == 20 and report.bytes_sent >= 20
    assert _open_to(timed.port) == 0


def test_slowloris_without_timeouts_holds_every_connection_until_its_end(plain: servers.Server) -> None:
    report = hostile.slowloris(plain.url, count=20, byte_every_ms=50, seconds=1.0).run()
    assert (report.connected, report.closed_by_server, report.held, report.max_held) == (20, 0, 20, 20)
    assert report.statuses == {}
    assert 1.0 <= report.elapsed_s < 1.0 + SLACK_S
    assert _open_to(plain.port) == 0


def test_a_finished_slowloris_head_is_answered(plain: servers.Server) -> None:
    report = hostile.slowloris(plain.url, count=5, byte_every_ms=20, seconds=1.0, finish_after_s=0.2).run()
    assert report.statuses == {200: 5}


@pytest.mark.parametrize("request_first", [True, False])
def test_idle_holders_are_closed_by_a_keepalive_timeout(timed: servers.Server, request_first: bool) -> None:
    report = hostile.idle(timed.url, count=10, seconds=2.0, request=request_first).run()
    assert (report.connected, report.closed_by_server, report.held) == (10, 10, 0)
    assert report.statuses == ({200: 10} if request_first else {})
    assert _open_to(timed.port) == 0


def test_leaving_the_block_ends_the_attack_early_and_closes_its_sockets(plain: servers.Server) -> None:
    start = time.monotonic()
    with hostile.idle(plain.url, count=30, seconds=60.0) as attack:
        assert attack.report().connected == 30  # the block starts once every connection was tried
        assert _open_to(plain.port) == 30
    assert time.monotonic() - start < SLACK_S
    assert attack.report().held == 30 and _open_to(plain.port) == 0


def test_slow_readers_read_no_faster_than_asked(plain: servers.Server) -> None:
    report = hostile.slowread(plain.url, count=3, seconds=1.0, bytes_per_s=4096, pipelined=50).run()
    assert report.statuses == {200: 3} and report.held == 3
    assert 0 < report.bytes_received <= 3 * 4096 * (1.0 + hostile.SLOWREAD_TICK_S) + 3 * 4096
    assert _open_to(plain.port) == 0


def test_connections_that_fail_are_counted_and_the_attack_ends() -> None:
    port = sockets.free_port()  # nobody listens: every connect is refused
    report = hostile.idle(f"127.0.0.1:{port}", count=5, seconds=5.0).run()
    assert (report.connected, report.failed, report.held) == (0, 5, 0)
    assert report.elapsed_s < SLACK_S and _open_to(port) == 0
