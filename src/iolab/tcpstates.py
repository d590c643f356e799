"""TCP sockets as the kernel sees them, from ``/proc/net/tcp``: states, queues, and the listen backlog.

``/proc/net/tcp`` lists every IPv4 TCP socket of this network namespace that is listening or part
of a connection (a socket that is only bound is in neither table and is not listed). ``ss -tan``
prints the same sockets. For a listening socket the receive-queue column is the *accept queue*:
connections the kernel has completed (handshake done) that no ``accept()`` has taken yet.

The backlog experiments: :func:`fill_backlog` connects clients to a listener that never accepts
and shows where the queue stops; :func:`connect_after_overflow` times a client that arrived
while the queue was full.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iolab import netstat
from iolab.servers import sockets

# include/net/tcp_states.h: the state column is the enum value in hex.
TCP_STATES = {
    0x01: "ESTABLISHED",
    0x02: "SYN_SENT",
    0x03: "SYN_RECV",
    0x04: "FIN_WAIT1",
    0x05: "FIN_WAIT2",
    0x06: "TIME_WAIT",
    0x07: "CLOSE",
    0x08: "CLOSE_WAIT",
    0x09: "LAST_ACK",
    0x0A: "LISTEN",
    0x0B: "CLOSING",
    0x0C: "NEW_SYN_RECV",
}
HOST = "127.0.0.1"
# A SYN that finds the accept queue full is dropped, and the client's kernel sends it again after its
# retransmission timeout: 1 s at first (RFC 6298's initial RTO), then as syn_send_times() says.
# (The handshake's last ACK can find the queue full too, with another cost: see accept_overflow.)
INITIAL_SYN_RTO_S = 1.0


@dataclass(frozen=True)
class TcpSocket:
    """One line of ``/proc/net/tcp``."""

    local: tuple[str, int]
    remote: tuple[str, int]
    state: str
    send_queue: int  # bytes not yet acknowledged by the peer
    recv_queue: int  # bytes not yet read; for LISTEN: connections waiting for accept()
    retransmits: int  # unanswered retransmissions (e.g. SYNs sent again)
    inode: int


def _address(field: str) -> tuple[str, int]:
    # "0100007F:1F90": the IPv4 address as the kernel's 32-bit word in host byte order, then the port.
    ip_hex, port_hex = field.split(":")
    return socket.inet_ntoa(struct.pack("=I", int(ip_hex, 16))), int(port_hex, 16)


def parse(text: str, port: int | None = None) -> list[TcpSocket]:
    """The sockets in the text of ``/proc/net/tcp``; with ``port``, only lines that mention it are parsed."""
    lines = text.splitlines()[1:]
    if port is not None:
        # A busy machine lists tens of thousands of TIME_WAIT sockets: skip most lines with a cheap
        # text search for ":PORT " (four hex digits) before parsing any.
        needle = f":{port:04X} "
        lines = [line for line in lines if needle in line]
    sockets = []
    for line in lines:
        f = line.split()
        if len(f) < 10:
            continue
        send_q, recv_q = (int(x, 16) for x in f[4].split(":"))
        sockets.append(
            TcpSocket(
                local=_address(f[1]),
                remote=_address(f[2]),
                state=TCP_STATES.get(int(f[3], 16), f[3]),
                send_queue=send_q,
                recv_queue=recv_q,
                retransmits=int(f[6], 16),
                inode=int(f[9]),
            )
        )
    return sockets


def read_sockets(port: int | None = None) -> list[TcpSocket]:
    """The IPv4 TCP sockets of this namespace; with ``port``, those whose local or remote port it is."""
    sockets = parse(Path("/proc/net/tcp").read_text(), port)
    if port is None:
        return sockets
    return [s for s in sockets if port in (s.local[1], s.remote[1])]


def table(port: int, names: dict[int, str] | None = None) -> pd.DataFrame:
    """The sockets on ``port`` as a table; ``names`` labels sockets by their local port."""
    names = names or {}
    rows = [
        {
            "socket": names.get(s.local[1], ""),
            "local": f"{s.local[0]}:{s.local[1]}",
            "remote": f"{s.remote[0]}:{s.remote[1]}",
            "state": s.state,
            "recv_q": s.recv_queue,
            "send_q": s.send_queue,
        }
        for s in read_sockets(port)
    ]
    return pd.DataFrame(rows, columns=["socket", "local", "remote", "state", "recv_q", "send_q"])


def accept_queue(port: int) -> int:
    """Connections waiting for accept() on the socket listening on ``port`` (0 if none listens)."""
    return sum(s.recv_queue for s in read_sockets(port) if s.state == "LISTEN" and s.local[1] == port)


def count_states(port: int | None = None) -> dict[str, int]:
    """How many sockets (on ``port``, or all) are in each state."""
    counts: dict[str, int] = {}
    for s in read_sockets(port):
        counts[s.state] = counts.get(s.state, 0) + 1
    return counts


def backlog_drops() -> int:
    """Packets dropped so far because a CPU's input queue was full (``/proc/net/softnet_stat``, column 2).

    Loopback packets wait in that queue too (net.core.netdev_max_backlog, 1000 by default): when
    other programs flood loopback, a SYN can be lost there, and the client waits for a retry.
    """
    lines = Path("/proc/net/softnet_stat").read_text().splitlines()
    return sum(int(line.split()[1], 16) for line in lines)


def open_listener(backlog: int) -> socket.socket:
    """A socket listening on 127.0.0.1 (a free port) with this ``backlog``: the kit's servers' own listener."""
    return sockets.open_listener(0, backlog)


def start_connect(port: int) -> socket.socket:
    """A non-blocking client socket whose connect() to ``port`` has begun (SYN sent)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    code = sock.connect_ex((HOST, port))
    if code not in (0, errno.EINPROGRESS):
        sock.close()
        raise OSError(code, f"connect to {HOST}:{port}: {errno.errorcode.get(code, code)}")
    return sock


def wait_connected(sock: socket.socket, timeout: float) -> bool:
    """Wait up to ``timeout`` s for a non-blocking connect() to finish; True if it did (and succeeded)."""
    _, writable, _ = select.select([], [sock], [], timeout)
    if not writable:
        return False
    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if code:
        raise OSError(code, f"connect failed: {errno.errorcode.get(code, code)}")
    return True


def fill_backlog(backlog: int, clients: int, timeout: float = 0.3) -> pd.DataFrame:
    """Connect ``clients`` clients one after another to a listener with ``backlog`` that never accepts.

    One row per client: ``client``, ``connect_ms`` (until connected, or the ``timeout``),
    ``connected``, ``state`` (its socket's state afterwards), ``accept_queue`` (the listener's
    queue after this client), ``overflows`` (ListenOverflows counted since the start, namespace-wide).
    """
    if clients > 200:
        raise ValueError("at most 200 clients: each one that is not queued costs the whole timeout")
    rows = []
    with open_listener(backlog) as listener, contextlib.ExitStack() as stack:
        port = listener.getsockname()[1]
        before = netstat.tcpext().get("ListenOverflows", 0)
        socks = []
        for i in range(clients):
            start = time.perf_counter()
            sock = stack.enter_context(start_connect(port))
            connected = wait_connected(sock, timeout)
            elapsed = time.perf_counter() - start
            socks.append(sock)
            rows.append(
                {
                    "client": i + 1,
                    "connect_ms": elapsed * 1000,
                    "connected": connected,
                    "accept_queue": accept_queue(port),
                    "overflows": netstat.tcpext().get("ListenOverflows", 0) - before,
                }
            )
        states = {s.local[1]: s.state for s in read_sockets(port) if s.remote[1] == port}
        for row, sock in zip(rows, socks):
            row["state"] = states.get(sock.getsockname()[1], "?")
    return pd.DataFrame(rows, columns=["client", "connect_ms", "connected", "state", "accept_queue", "overflows"])


def sysctl(name: str) -> int | None:
    """An integer kernel setting under ``/proc/sys/net/ipv4`` (e.g. "tcp_syn_retries"); None if absent."""
    path = Path("/proc/sys/net/ipv4") / name
    return int(path.read_text().split()[0]) if path.exists() else None


def syn_send_times(retries: int | None = None, linear: int | None = None) -> list[float]:
    """When a client's kernel sends its SYN and each retry, in s after the first: 0, 1, 2, 3, 4, 6, 10... on Linux 6.7+.

    The gap starts at INITIAL_SYN_RTO_S and doubles after each retry, except that the first
    ``tcp_syn_linear_timeouts`` retries (Linux 6.7 and later; 4 by default) keep it at 1 s.
    """
    retries = (sysctl("tcp_syn_retries") or 6) if retries is None else retries
    linear = (sysctl("tcp_syn_linear_timeouts") or 0) if linear is None else linear
    times, gap = [0.0], INITIAL_SYN_RTO_S
    for k in range(1, retries + 1):
        times.append(times[-1] + gap)
        if k >= linear:
            gap *= 2
    return times


def connect_after_overflow(backlog: int = 1, free_after_s: float = 0.2, timeout: float = 10.0) -> dict[str, float]:
    """Time a client that connects while the accept queue is full; the server accepts ``free_after_s`` later.

    The client's SYN is dropped; it succeeds only when its kernel sends the SYN again after the
    queue has room. Returns ``free_after_s``, ``connect_s`` (from the client's first SYN) and the
    client's retransmitted SYNs seen in ``/proc/net/tcp`` while it waited; ``freed_s``, when the
    queue was actually emptied.
    """
    with open_listener(backlog) as listener, contextlib.ExitStack() as stack:
        port = listener.getsockname()[1]
        queued = [stack.enter_context(start_connect(port)) for _ in range(backlog + 1)]
        for sock in queued:
            if not wait_connected(sock, 1.0):
                raise RuntimeError(f"the first {backlog + 1} clients should fit in a backlog of {backlog}")
        start = time.perf_counter()
        late = stack.enter_context(start_connect(port))
        if wait_connected(late, free_after_s):
            raise RuntimeError("the late client connected although the queue was full")
        mine = late.getsockname()[1]
        retransmits = max((s.retransmits for s in read_sockets(port) if s.local[1] == mine), default=0)
        for _ in queued:
            stack.enter_context(listener.accept()[0])
        freed_s = time.perf_counter() - start  # later than asked if this process was kept waiting for a core
        if not wait_connected(late, timeout):
            raise TimeoutError(f"the late client did not connect within {timeout:g} s of the queue emptying")
        return {"free_after_s": free_after_s, "freed_s": freed_s, "connect_s": time.perf_counter() - start,
                "syn_retransmits": retransmits}


# --- bind, listen, connect, accept, close: the states step by step --------------------------------


def _role(s: TcpSocket, port: int) -> str:
    if s.state == "LISTEN":
        return "server: listening socket"
    return "server: connection" if s.local[1] == port else "client"


def snapshot(step: str, port: int) -> list[dict[str, object]]:
    """One row per socket on ``port`` after ``step`` (one placeholder row if there is none)."""
    found = read_sockets(port)
    if not found:
        return [{"step": step, "socket": "(none listed)", "state": "", "recv_q": 0, "send_q": 0}]
    found.sort(key=lambda s: _role(s, port), reverse=True)
    return [
        {"step": step, "socket": _role(s, port), "state": s.state, "recv_q": s.recv_queue, "send_q": s.send_queue}
        for s in found
    ]


def _settle(port: int, done, timeout: float = 2.0) -> None:
    # A close sends a FIN; the peer's kernel answers it asynchronously. Wait until /proc agrees.
    deadline = time.monotonic() + timeout
    while not done(read_sockets(port)) and time.monotonic() < deadline:
        time.sleep(0.005)


def walk_through() -> pd.DataFrame:
    """A server and a client go through bind, listen, connect, accept, send, recv and close; the sockets after each.

    Columns: ``step`` (the call just made), ``socket`` (whose it is), ``state``, ``recv_q``,
    ``send_q``. A step that leaves no socket listed shows one "(none listed)" row.
    """
    rows: list[dict[str, object]] = []
    with socket.socket() as server, socket.socket() as client:
        server.bind((HOST, 0))
        port = server.getsockname()[1]
        rows += snapshot("1 server.bind(('127.0.0.1', 0))", port)
        server.listen(8)
        rows += snapshot("2 server.listen(8)", port)
        client.connect((HOST, port))
        rows += snapshot("3 client.connect(...)", port)
        conn, _ = server.accept()
        with conn:
            rows += snapshot("4 server.accept()", port)
            client.sendall(b"hello")
            _settle(port, lambda ss: any(s.recv_queue == 5 for s in ss))
            rows += snapshot("5 client.sendall(b'hello')", port)
            conn.recv(5)
            rows += snapshot("6 conn.recv(5)", port)
            client.close()
            _settle(port, lambda ss: any(s.state == "CLOSE_WAIT" for s in ss))
            rows += snapshot("7 client.close()", port)
        _settle(port, lambda ss: any(s.state == "TIME_WAIT" for s in ss))
        rows += snapshot("8 conn.close()", port)
    return pd.DataFrame(rows)


def overflow_staircase(free_after: list[float], backlog: int = 1) -> pd.DataFrame:
    """:func:`connect_after_overflow` for each delay; one row each.

    Adds ``predicted_s``, the first SYN retry at or after the moment the queue was freed, and
    ``loopback_drops``, packets the machine dropped meanwhile (see :func:`backlog_drops`).
    """
    sends = syn_send_times()
    rows = []
    for delay in free_after:
        drops = backlog_drops()
        row = connect_after_overflow(backlog, delay)
        row["predicted_s"] = next((t for t in sends if t >= row["freed_s"]), float("nan"))
        row["loopback_drops"] = backlog_drops() - drops  # nonzero: some other packet flood may have cost a retry
        rows.append(row)
    return pd.DataFrame(rows)
