"""The listen backlog: connections the kernel queues before ``accept()``, and what a full queue costs.

:func:`fill_backlog` connects clients to a listener that never accepts and shows where the queue
stops; :func:`connect_after_overflow` times a client that arrived while the queue was full, and
:func:`overflow_staircase` does so for several delays, beside the SYN retry times that predict it.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import time

import pandas as pd

from iolab.kit import machine, platforms, procnet, sockets
from iolab.kit.sockets import HOST

# A SYN that finds the accept queue full is dropped, and the client's kernel sends it again after its
# retransmission timeout: 1 s at first (RFC 6298's initial RTO), then as syn_send_times() says.
# (The handshake's last ACK can find the queue full too, with another cost: see accept_overflow.)
INITIAL_SYN_RTO_S = 1.0


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
    Off Linux (no /proc/net) only the clients' own columns are measured: ``state`` is "?", and
    ``accept_queue`` and ``overflows`` are None.
    """
    if clients > 200:
        raise ValueError("at most 200 clients: each one that is not queued costs the whole timeout")
    on_linux = platforms.missing("procnet") is None
    rows = []
    with open_listener(backlog) as listener, contextlib.ExitStack() as stack:
        port = listener.getsockname()[1]
        before = procnet.tcpext().get("ListenOverflows", 0) if on_linux else 0
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
                    "accept_queue": procnet.accept_queue(port) if on_linux else None,
                    "overflows": procnet.tcpext().get("ListenOverflows", 0) - before if on_linux else None,
                }
            )
        sockets_now = procnet.read_sockets(port) if on_linux else []
        states = {s.local[1]: s.state for s in sockets_now if s.remote[1] == port}
        for row, sock in zip(rows, socks):
            row["state"] = states.get(sock.getsockname()[1], "?")
    return pd.DataFrame(rows, columns=["client", "connect_ms", "connected", "state", "accept_queue", "overflows"])


def syn_send_times(retries: int | None = None, linear: int | None = None) -> list[float]:
    """When a client's kernel sends its SYN and each retry, in s after the first: 0, 1, 2, 3, 4, 5, 7, 11... on Linux 6.5+.

    The first retry comes INITIAL_SYN_RTO_S after the SYN. Since Linux 6.5 the next
    ``tcp_syn_linear_timeouts`` retries (4 by default) keep that gap, and from then on it doubles
    after each retry; older kernels (``linear=0``) double it from the first. The linear retries come
    on top of ``tcp_syn_retries``: a client sends ``retries + linear`` retries in all, and gives up one
    more doubled gap after the last. This is the kernel's documented schedule (Documentation/networking/
    ip-sysctl.rst: with tcp_syn_linear_timeouts 4, SYN RTOs of 1, 1, 1, 1, 1, 2, 4, ...; with the
    default 6 tcp_syn_retries, the last retry at 67 s and the timeout at 131 s).
    """
    if retries is None:
        retries = machine.sysctl("net.ipv4.tcp_syn_retries", default=[6])[0]
    if linear is None:
        linear = machine.sysctl("net.ipv4.tcp_syn_linear_timeouts", default=[0])[0]
    times, gap = [0.0], INITIAL_SYN_RTO_S
    for k in range(1, retries + linear + 1):
        times.append(times[-1] + gap)
        if k > linear:  # the kernel doubles the RTO once its backoff count exceeds tcp_syn_linear_timeouts
            gap *= 2
    return times


def connect_after_overflow(backlog: int = 1, free_after_s: float = 0.2, timeout: float = 10.0) -> dict[str, float]:
    """Time a client that connects while the accept queue is full; the server accepts ``free_after_s`` later.

    The client's SYN is dropped at the full queue; this times its connect() in all. Returns
    ``free_after_s``, ``connect_s`` (from the client's first SYN) and the client's retransmitted
    SYNs seen in ``/proc/net/tcp`` while it waited; ``freed_s``, when the queue was actually emptied.
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
        retransmits = max((s.retransmits for s in procnet.read_sockets(port) if s.local[1] == mine), default=0)
        for _ in queued:
            stack.enter_context(listener.accept()[0])
        freed_s = time.perf_counter() - start  # later than asked if this process was kept waiting for a core
        if not wait_connected(late, timeout):
            raise TimeoutError(f"the late client did not connect within {timeout:g} s of the queue emptying")
        return {"free_after_s": free_after_s, "freed_s": freed_s, "connect_s": time.perf_counter() - start,
                "syn_retransmits": retransmits}


def overflow_staircase(free_after: list[float], backlog: int = 1) -> pd.DataFrame:
    """:func:`connect_after_overflow` for each delay; one row each.

    Adds ``predicted_s``, the notebook's model of ``connect_s`` from :func:`syn_send_times`, and
    ``loopback_drops``, packets the machine dropped meanwhile (see :func:`iolab.kit.procnet.backlog_drops`).
    """
    sends = syn_send_times()
    rows = []
    for delay in free_after:
        drops = procnet.backlog_drops()
        row = connect_after_overflow(backlog, delay)
        row["predicted_s"] = next((t for t in sends if t >= row["freed_s"]), float("nan"))
        row["loopback_drops"] = procnet.backlog_drops() - drops  # nonzero: some other packet flood may have cost a retry
        rows.append(row)
    return pd.DataFrame(rows)
