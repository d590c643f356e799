"""The other way a full accept queue drops a connection: after the handshake, with connect() already done.

Linux checks the accept queue twice: when a client's SYN arrives (a SYN that finds it full is
:func:`iolab.topics.sockets.listen_backlog.fill_backlog`'s case), and when the client's last ACK of
the handshake arrives, which is when the connection would join the queue. This module makes the
second check find the queue full, with net.ipv4.tcp_abort_on_overflow = 0, the default; what that
does to the client's connect(), to the server's side and to the client's first bytes is what
:func:`ack_dropped` records (the notebook's prediction asks it first).

To make that order of events happen on demand, the late clients delay their handshake ACK:
TCP_DEFER_ACCEPT set on a *client* socket makes its kernel hold the ACK back (up to 200 ms,
TCP_DELACK_MAX) in the hope of sending it with data. Their SYNs all arrive while the queue still
has room; their ACKs arrive after it has filled.
"""

from __future__ import annotations

import contextlib
import socket
import time

import pandas as pd

from iolab.kit import procnet
from iolab.kit.sockets import HOST
from iolab.topics.sockets.listen_backlog import open_listener

# The kernel sends a held-back handshake ACK after at most TCP_DELACK_MAX (200 ms); wait a little more.
DELAYED_ACK_S = 0.3


def _connect_with_delayed_ack(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 1)
    sock.settimeout(5)
    sock.connect((HOST, port))
    return sock


def ack_dropped(backlog: int = 4, late: int = 3, free_after_s: float = 0.3, timeout: float = 10.0) -> pd.DataFrame:
    """``backlog`` clients queue on a listener, one short of what Linux admits; ``late`` more connect, ACKing late.

    Every late client then sends a line, and the server accepts everything ``free_after_s`` later.
    One row per late client: ``client``, ``connect_ms`` (connect() returned after), ``client_state``
    (its socket's state after the handshake), ``server_state`` (the server's end then, as
    ``/proc/net/tcp`` lists it), ``first_bytes_s`` (from its send until the server read the line).
    """
    if not 1 <= late <= backlog:
        # More half-open requests than the backlog make Linux answer with SYN cookies instead.
        raise ValueError(f"late must be between 1 and the backlog ({backlog}), not {late}")
    with open_listener(backlog) as listener, contextlib.ExitStack() as stack:
        port = listener.getsockname()[1]
        for _ in range(backlog):  # the queue holds `backlog`: not full yet (full is more than backlog)
            stack.enter_context(socket.create_connection((HOST, port), timeout=5))
        rows, clients = [], []
        for i in range(late):
            start = time.perf_counter()
            sock = stack.enter_context(_connect_with_delayed_ack(port))
            rows.append({"client": i + 1, "connect_ms": (time.perf_counter() - start) * 1000})
            clients.append(sock)
        time.sleep(DELAYED_ACK_S)
        ports = {sock.getsockname()[1]: row for sock, row in zip(clients, rows)}
        for s in procnet.read_sockets(port):
            if s.remote[1] in ports:  # the server's end of a late client
                ports[s.remote[1]]["server_state"] = s.state
            elif s.local[1] in ports:
                ports[s.local[1]]["client_state"] = s.state
        sent = time.perf_counter()
        for sock in clients:
            sock.sendall(b"hello\n")
        time.sleep(free_after_s)
        listener.settimeout(timeout)
        while any("first_bytes_s" not in row for row in rows):
            conn, (_, peer_port) = listener.accept()
            stack.enter_context(conn)
            if peer_port in ports:
                conn.settimeout(timeout)
                conn.recv(64)
                ports[peer_port]["first_bytes_s"] = time.perf_counter() - sent
    columns = ["client", "connect_ms", "client_state", "server_state", "first_bytes_s"]
    return pd.DataFrame(rows, columns=columns)
