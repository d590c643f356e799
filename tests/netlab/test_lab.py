"""The lab for real: two namespaces, a TUN link, TCP across it, and nothing left behind (needs root)."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from iolab.kit.procs import python_argv
from iolab.netlab import available, cleanup_leftovers, namespaces, open_netlab
from iolab.netlab.lab import NetLab

pytestmark = pytest.mark.skipif(available() is not None, reason=available() or "")

ECHO_SERVER = textwrap.dedent("""
    import socket, sys
    ls = socket.create_server((sys.argv[1], 0))
    print("listening", ls.getsockname()[1], flush=True)
    while True:
        c, _ = ls.accept()
        while data := c.recv(65536):
            c.sendall(data)
        c.close()
""")


class Echo:
    """An echo server on a thread of this process, listening inside the lab's server namespace."""

    def __init__(self, lab: NetLab) -> None:
        self.listener = lab.socket("server")
        self.listener.bind((lab.server_ip, 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with self.listener:
            while True:
                try:
                    conn, _ = self.listener.accept()
                except OSError:  # closed
                    return
                with conn:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    while data := conn.recv(65536):
                        conn.sendall(data)

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)


@pytest.fixture
def echo_lab(request: pytest.FixtureRequest) -> Iterator[tuple[NetLab, Echo]]:
    with open_netlab(**getattr(request, "param", {})) as lab:
        echo = Echo(lab)
        yield lab, echo
        echo.close()


def connect(lab: NetLab, port: int) -> socket.socket:
    sock = lab.socket("client")
    sock.settimeout(20)
    sock.connect((lab.server_ip, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def round_trips(sock: socket.socket, n: int) -> list[float]:
    """Seconds each of ``n`` one-byte echoes took."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
        times.append(time.perf_counter() - start)
    return times


def total_retrans(sock: socket.socket) -> int:
    """Segments this TCP socket has retransmitted (``tcpi_total_retrans`` of ``struct tcp_info``)."""
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 100)[0]


def transfer(lab: NetLab, port: int, data: bytes) -> tuple[bytes, float, int]:
    """Send ``data`` to the echo server and read it back: what came back, the seconds, the retransmissions."""
    with connect(lab, port) as sock:
        start = time.perf_counter()
        received = bytearray()
        sender = threading.Thread(target=sock.sendall, args=(data,))
        sender.start()
        while len(received) < len(data):
            chunk = sock.recv(1 << 16)
            assert chunk, "the connection closed early"
            received += chunk
        sender.join()
        return bytes(received), time.perf_counter() - start, total_retrans(sock)


def gone(names: list[str], pids: list[int], within: float = 10.0) -> bool:
    """Whether, within ``within`` s, none of the namespaces ``names`` and none of the processes ``pids`` remain."""
    deadline = time.monotonic() + within
    while set(names) & set(namespaces.list_namespaces()) or any(namespaces.alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- the link works ---------------------------------------------------------------------------


def test_a_tcp_echo_crosses_the_link(echo_lab: tuple[NetLab, Echo]) -> None:
    lab, echo = echo_lab
    data = os.urandom(200_000)
    assert transfer(lab, echo.port, data)[0] == data
    stats = lab.stats()
    assert stats["up"]["passed"] > 100 and stats["down"]["passed"] > 100  # data one way, the echo back
    assert stats["up"]["lost"] == stats["down"]["lost"] == 0


def test_the_namespaces_see_only_each_other() -> None:
    with open_netlab() as lab:
        for ns in (lab.server_ns, lab.client_ns):
            assert "default" not in namespaces.ip("-n", ns, "route")  # no way out of the lab
            assert "inet6" not in namespaces.ip("-n", ns, "addr", "show", "iolab0")  # nor IPv6 chatter on the link
        with lab.socket("client") as sock, pytest.raises(OSError) as unreachable:
            sock.connect(("192.0.2.1", 80))  # TEST-NET-1: any address but the server's
        assert unreachable.value.errno == errno.ENETUNREACH


def test_popen_runs_a_server_inside_the_server_namespace() -> None:
    with open_netlab(delay_ms=2) as lab:
        server = lab.popen("server", python_argv("-c", ECHO_SERVER, lab.server_ip))
        port = int(server.wait_for_line(r"listening (\d+)").group(1))
        assert str(server.pid) in namespaces.ip("netns", "pids", lab.server_ns).split()
        with connect(lab, port) as sock:
            sock.sendall(b"hello")
            assert sock.recv(5) == b"hello"
    assert server.poll() is not None


@pytest.mark.solo
@pytest.mark.parametrize("delay_ms", [5, 25, 75])
def test_the_round_trip_time_is_twice_the_delay(delay_ms: float) -> None:
    with open_netlab(delay_ms=delay_ms) as lab:
        echo = Echo(lab)
        connects = []
        for _ in range(5):
            start = time.perf_counter()
            sock = connect(lab, echo.port)  # SYN there, SYN-ACK back: one round trip
            connects.append(time.perf_counter() - start)
            sock.close()
        with connect(lab, echo.port) as sock:
            rtt = statistics.median(round_trips(sock, 20))
        echo.close()
    expected = 2 * delay_ms / 1e3
    assert expected <= rtt <= expected * 1.05 + 0.001, f"median RTT {rtt * 1e3:.2f} ms"
    assert expected <= statistics.median(connects) <= expected * 1.05 + 0.001


@pytest.mark.solo
def test_set_changes_the_delay_while_connected(echo_lab: tuple[NetLab, Echo]) -> None:
    lab, echo = echo_lab
    with connect(lab, echo.port) as sock:
        before = statistics.median(round_trips(sock, 5))
        assert lab.set(delay_ms=20).delay_ms == 20
        after = statistics.median(round_trips(sock, 5))
    assert before < 0.003 and 0.040 <= after <= 0.043


def test_set_refuses_unknown_or_nonsense_impairments(echo_lab: tuple[NetLab, Echo]) -> None:
    lab, _ = echo_lab
    with pytest.raises(TypeError):
        lab.set(latency=3)
    with pytest.raises(ValueError, match="loss"):
        lab.set(loss=2.0)
    assert lab.set(loss=0.0).loss == 0.0  # the forwarder still answers


@pytest.mark.solo
def test_loss_makes_tcp_retransmit_and_slower_but_the_data_arrives_intact() -> None:
    data = os.urandom(1_000_000)
    # Linux's TCP (SACK, fast recovery) copes well with a loss in 20 packets at a 20 ms round trip:
    # measured, the transfer takes 2 to 2.5 times as long as without loss, not the ~20 times the
    # textbook's 1.2/sqrt(p) segments per round trip would predict.
    with open_netlab(delay_ms=10, seed=1) as lab:
        echo = Echo(lab)
        clean, clean_s, clean_retrans = transfer(lab, echo.port, data)
        lab.set(loss=0.05)
        lossy, lossy_s, lossy_retrans = transfer(lab, echo.port, data)
        stats = lab.stats()
        echo.close()
    assert hashlib.sha256(clean).digest() == hashlib.sha256(lossy).digest() == hashlib.sha256(data).digest()
    assert clean_retrans == 0 and lossy_retrans > 10
    assert stats["up"]["lost"] > 10 and stats["down"]["lost"] > 10
    assert lossy_s > 1.5 * clean_s, f"{clean_s:.3f} s without loss, {lossy_s:.3f} s with"


@pytest.mark.solo
def test_a_rate_limit_sets_the_throughput() -> None:
    data = os.urandom(1_000_000)
    with open_netlab(rate_mbit=20, delay_ms=1) as lab:
        echo = Echo(lab)
        _, seconds, _ = transfer(lab, echo.port, data)  # both ways at once, each direction at 20 Mbit/s
        echo.close()
    mbit = len(data) * 8 / seconds / 1e6
    # Headers (40 of every 1500 bytes) and the first round trips take a little of the rate.
    assert 16 <= mbit <= 20, f"{mbit:.1f} Mbit/s"


# --- nothing is left behind ---------------------------------------------------------------------


def test_leaving_the_block_removes_namespaces_devices_and_processes() -> None:
    with open_netlab() as lab:
        names = [lab.server_ns, lab.client_ns]
        sleeper = lab.popen("server", ["sleep", "60"])
        pids = [lab.forwarder.pid, sleeper.pid]
        assert set(names) <= set(namespaces.list_namespaces())
    assert gone(names, pids, within=0)


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_exception_in_the_block_removes_everything(error: type[BaseException]) -> None:
    with pytest.raises(error):
        with open_netlab(delay_ms=5) as lab:
            names = [lab.server_ns, lab.client_ns]
            pids = [lab.forwarder.pid, lab.popen("client", ["sleep", "60"]).pid]
            raise error("in the block")
    assert gone(names, pids, within=0)


LAB_IN_A_CHILD = textwrap.dedent("""
    import time
    from iolab.netlab import open_netlab
    with open_netlab(delay_ms=5) as lab:
        sleeper = lab.popen("server", ["sleep", "60"])
        print(lab.server_ns, lab.client_ns, lab.forwarder.pid, sleeper.pid, flush=True)
        time.sleep(60)
""")


def test_the_forwarder_cleans_up_when_the_creating_process_is_killed() -> None:
    child = subprocess.Popen([sys.executable, "-c", LAB_IN_A_CHILD], stdout=subprocess.PIPE, text=True)
    try:
        server_ns, client_ns, forwarder, sleeper = child.stdout.readline().split()
        child.send_signal(signal.SIGKILL)  # no finally, no atexit: only the forwarder can clean up
        child.wait()
        assert gone([server_ns, client_ns], [int(forwarder), int(sleeper)], within=10)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_cleanup_leftovers_removes_the_namespaces_of_dead_runs_only() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = namespaces.name_for("server", 0, pid=dead.pid)
    namespaces.create(left)
    inside = subprocess.Popen(namespaces.exec_argv(left, ["sleep", "60"]))
    try:
        with open_netlab() as lab:  # a live run's namespaces stay
            time.sleep(0.2)  # for ``ip netns exec`` to have entered the namespace
            assert left in namespaces.leftovers()
            assert cleanup_leftovers() == [left]
            assert inside.wait(5) is not None  # the process inside was killed with it
            assert {lab.server_ns, lab.client_ns} <= set(namespaces.list_namespaces())
        assert left not in namespaces.list_namespaces()
    finally:
        inside.kill()
        inside.wait()
        namespaces.delete(left)

