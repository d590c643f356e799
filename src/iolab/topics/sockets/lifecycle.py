"""A connection's life in TCP states: bind, listen, connect, accept, send, recv and close, step by step.

:func:`walk_through` makes the calls one at a time in one process and lists, after each, the sockets
on the server's port as the kernel shows them in ``/proc/net/tcp``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pandas as pd

from iolab.kit import procnet
from iolab.kit.sockets import HOST


def _role(s: procnet.TcpSocket, port: int) -> str:
    if s.state == "LISTEN":
        return "server: listening socket"
    return "server: connection" if s.local[1] == port else "client"


def snapshot(step: str, port: int) -> list[dict[str, object]]:
    """One row per socket on ``port`` after ``step`` (one placeholder row if there is none)."""
    found = procnet.read_sockets(port)
    if not found:
        return [{"step": step, "socket": "(none listed)", "state": "", "recv_q": 0, "send_q": 0}]
    found.sort(key=lambda s: _role(s, port), reverse=True)
    return [
        {"step": step, "socket": _role(s, port), "state": s.state, "recv_q": s.recv_queue, "send_q": s.send_queue}
        for s in found
    ]


def _settle(port: int, done: Callable[[list[procnet.TcpSocket]], bool], timeout: float = 2.0) -> None:
    # A close sends a FIN; the peer's kernel answers it asynchronously. Wait until /proc agrees.
    deadline = time.monotonic() + timeout
    while not done(procnet.read_sockets(port)) and time.monotonic() < deadline:
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
            # The server's kernel may hold back its ACK of the FIN (delayed ACK, hoping to send it with a
            # FIN of its own): the client shows FIN_WAIT1 until that ACK comes, then FIN_WAIT2.
            _settle(port, lambda ss: any(s.state == "FIN_WAIT2" for s in ss), timeout=0.5)
            rows += snapshot("7 client.close()", port)
        _settle(port, lambda ss: any(s.state == "TIME_WAIT" for s in ss))
        rows += snapshot("8 conn.close()", port)
    return pd.DataFrame(rows)
