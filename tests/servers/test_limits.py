"""iolab.servers.limits: when a read times out and what the client is told, first without a socket, then
chapter 12's server limits over every model: timeouts, the connection cap, and pre-fork's rescue.

The second half starts servers as real processes, all at once, shared by its tests. Margins are
generous (the machine has two cores and runs other tests meanwhile); the tests that compare times
closely are ``solo``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from iolab import servers
from iolab.commands import main
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


# --- over every model, on real servers ------------------------------------------------------------

TIMEOUT_S = 0.3
MARGIN_S = 2.0  # "closed by the server, within reason": not a measurement
TIMED = {"keepalive_timeout": TIMEOUT_S, "header_timeout": TIMEOUT_S}
CAPPED_MODELS = ["threaded", "asyncio", "uvloop", "trio", "scratch"]


def _options(model: str) -> dict:
    return {"workers": 2} if model == "prefork" else {}


@contextlib.contextmanager
def _started(specs: dict[str, tuple[str, dict]]) -> Iterator[dict[str, servers.Server]]:
    import concurrent.futures

    with contextlib.ExitStack() as stack, concurrent.futures.ThreadPoolExecutor(len(specs)) as pool:

        def start(name: str) -> servers.Server:
            model, settings = specs[name]
            return stack.enter_context(servers.open_server(model, **settings, **_options(model)))

        yield dict(zip(specs, pool.map(start, specs)))


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, servers.Server]]:
    specs = {f"timed-{m}": (m, TIMED) for m in servers.MODELS}
    specs |= {f"capped-{m}": (m, {"max_connections": 2}) for m in CAPPED_MODELS}
    with _started(specs) as started:
        yield started


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _status(sock: socket.socket, request: bytes = GET) -> int:
    """Send ``request`` and read one small response's status (the tiny route's fits one recv)."""
    sock.sendall(request)
    reply = sock.recv(65536)
    return int(reply.split()[1]) if reply else 0


def _until_closed(sock: socket.socket, within: float) -> tuple[float, bytes]:
    """Seconds until the server closed ``sock``, and what it sent first (TimeoutError if it did not close)."""
    start = time.monotonic()
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return time.monotonic() - start, received


@pytest.mark.parametrize("model", list(servers.MODELS))
def test_keepalive_timeout_closes_an_idle_connection(running: dict[str, servers.Server], model: str) -> None:
    with _connect(running[f"timed-{model}"].port) as sock:
        assert _status(sock) == 200
        waited, said = _until_closed(sock, TIMEOUT_S + MARGIN_S)
    assert said == b"" and waited < TIMEOUT_S + MARGIN_S  # closed without a word


@pytest.mark.parametrize("model", list(servers.MODELS))
def test_header_timeout_answers_a_half_sent_head_408_and_the_next_client_is_served(
    running: dict[str, servers.Server], model: str
) -> None:
    port = running[f"timed-{model}"].port
    with _connect(port) as sock:
        sock.sendall(GET[:12])
        waited, said = _until_closed(sock, TIMEOUT_S + MARGIN_S)
    assert said == b"" or said.startswith(b"HTTP/1.1 408 ")
    assert waited < TIMEOUT_S + MARGIN_S
    with _connect(port) as sock:
        assert _status(sock) == 200


@pytest.mark.parametrize("model", CAPPED_MODELS)
def test_beyond_max_connections_a_new_connection_is_closed_and_the_server_lives_on(
    running: dict[str, servers.Server], model: str
) -> None:
    port = running[f"capped-{model}"].port
    with _connect(port) as first, _connect(port) as second:
        assert _status(first) == _status(second) == 200  # both admitted and counted
        with _connect(port) as third:
            try:
                status = _status(third)
            except ConnectionResetError:
                status = 0
            assert status == 0  # closed at once, unanswered
    deadline = time.monotonic() + MARGIN_S
    while True:  # the server counts the two out when it sees them close
        with _connect(port) as sock, contextlib.suppress(ConnectionResetError):
            if _status(sock) == 200:
                break
        assert time.monotonic() < deadline, "the server never took a new client after the others left"
        time.sleep(0.05)


@pytest.mark.parametrize("model", ["iterative", "prefork"])
def test_max_connections_is_refused_where_one_process_serves_one_connection(
    model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", model, "--max-connections", "2"])
    assert "backlog" in capsys.readouterr().err


# --- pre-fork's rescue: two children, two idle clients, and a third who waits for one -----------------


def _third_client_wait(port: int, give_up_s: float) -> float | None:
    """Hold two idle keep-alive clients, then time a third's answer (None: none within ``give_up_s``)."""
    with _connect(port) as a, _connect(port) as b, _connect(port) as third:
        assert _status(a) == _status(b) == 200  # each holds one of the two children in recv() now
        start = time.monotonic()
        third.settimeout(give_up_s)
        try:
            status = _status(third)
        except TimeoutError:
            return None
        assert status == 200
        return time.monotonic() - start


@pytest.mark.solo
@pytest.mark.parametrize("keepalive_s", [0.3, 0.5])
def test_a_keepalive_timeout_frees_a_prefork_child_for_the_third_client(keepalive_s: float) -> None:
    with servers.open_server("prefork", workers=2, keepalive_timeout=keepalive_s) as server:
        waited = _third_client_wait(server.port, give_up_s=5.0)
    assert waited is not None and waited < keepalive_s + 0.1


@pytest.mark.solo
def test_without_timeouts_two_idle_clients_stop_a_prefork_server_of_two() -> None:
    with servers.open_server("prefork", workers=2) as server:
        assert _third_client_wait(server.port, give_up_s=1.0) is None
