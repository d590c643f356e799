"""A TCP connection from the client's side: an HTTP exchange by hand, and what setting one up costs.

- :func:`exchange` and :func:`dribble` speak HTTP over a plain socket, the bytes in full view.
- :func:`setup_costs` times, on loopback and without HTTP, a connection's whole life
  (connect, accept, close) against one round trip on a connection already open.
- :func:`keepalive_costs` runs the load generator against a server with and without keep-alive.
"""

from __future__ import annotations

import select
import socket
import time

import pandas as pd

from iolab.kit import platforms, procnet

HOST = "127.0.0.1"
# Every read here is bounded: a server that does not answer fails the call instead of hanging it.
TIMEOUT_S = 5.0


def request(target: str = "/", close: bool = True, host: str = "lab") -> bytes:
    """The bytes of a minimal HTTP/1.1 GET: request line, Host (required in 1.1), blank line."""
    connection = b"Connection: close\r\n" if close else b""
    return b"GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target.encode(), host.encode(), connection)


def exchange(port: int, data: bytes, timeout: float = TIMEOUT_S) -> bytes:
    """Send ``data`` to 127.0.0.1:``port`` and read until the server closes; every byte received.

    Ask with ``Connection: close`` (see :func:`request`): a keep-alive server would wait for the
    next request instead of closing, and the read would end only at the timeout.
    """
    received = bytearray()
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.sendall(data)
        while chunk := sock.recv(65536):
            received += chunk
    return bytes(received)


def dribble(port: int, data: bytes, pause_s: float = 0.002, timeout: float = TIMEOUT_S) -> pd.DataFrame:
    """Send ``data`` one byte at a time, checking after each byte whether the server has answered.

    One row per byte: ``byte`` (its index), ``sent`` (the byte, printable), ``answered`` (any
    response bytes arrived by then), ``answer_ms`` (for the last byte: from its send to the answer).
    TCP_NODELAY makes each byte leave in a segment of its own, so the server's recv() returns
    pieces of a request and its parser must wait for the rest.
    """
    rows = []
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(data)):
            start = time.perf_counter()
            sock.sendall(data[i : i + 1])
            wait = timeout if i == len(data) - 1 else pause_s
            readable, _, _ = select.select([sock], [], [], wait)
            rows.append(
                {
                    "byte": i,
                    "sent": repr(data[i : i + 1])[2:-1],
                    "answered": bool(readable),
                    "answer_ms": (time.perf_counter() - start) * 1000 if readable else float("nan"),
                }
            )
    return pd.DataFrame(rows)


def _one_connection(listener: socket.socket) -> None:
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    client.close()
    server.close()


def _one_round_trip(client: socket.socket, server: socket.socket) -> None:
    client.sendall(b"?")
    server.recv(1)
    server.sendall(b"!")
    client.recv(1)


def setup_costs(rounds: int = 1000, repeats: int = 3) -> pd.DataFrame:
    """Microseconds per connection life (connect + accept + close) and per round trip on one open connection.

    Both run in this process on loopback, so what differs is only the kernel's work: opening,
    accepting and closing a connection against two one-byte messages. One row per (what, repeat):
    ``what``, ``rounds``, ``us_each``.
    """
    rows = []
    with socket.create_server((HOST, 0), backlog=128) as listener:
        with socket.create_connection(listener.getsockname()) as client, listener.accept()[0] as server:
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for repeat in range(repeats):
                start = time.perf_counter()
                for _ in range(rounds):
                    _one_connection(listener)
                connect_s = time.perf_counter() - start
                start = time.perf_counter()
                for _ in range(rounds):
                    _one_round_trip(client, server)
                trip_s = time.perf_counter() - start
                rows.append({"what": "new connection (connect, accept, close)", "repeat": repeat, "rounds": rounds,
                             "us_each": connect_s / rounds * 1e6})
                rows.append({"what": "round trip on an open connection", "repeat": repeat, "rounds": rounds,
                             "us_each": trip_s / rounds * 1e6})
    return pd.DataFrame(rows)


def _time_wait(port: int) -> set[tuple[tuple[str, int], tuple[str, int]]] | None:
    # Compared as sets: sockets left by an earlier run expire (60 s) while this one adds its own.
    # None where there is no socket table to read (macOS): the run's time_wait is then NaN.
    if platforms.missing("procnet") is not None:
        return None
    return {(s.local, s.remote) for s in procnet.read_sockets(port) if s.state == "TIME_WAIT"}


def keepalive_costs(url: str, connections: int = 1, duration_s: float = 2.0, workers: int | None = 1,
                    repeats: int = 1) -> pd.DataFrame:
    """The load generator against ``url`` with keep-alive and with a new connection per request.

    One row per run: ``keepalive``, ``repeat``, ``rps``, ``p50_ms``, ``p99_ms``, ``errors``,
    ``time_wait`` (sockets that entered TIME_WAIT during the run, each kept by the kernel for 60 s; NaN off Linux,
    where no socket table says).
    """
    from iolab.load import LoadSpec, run_load  # the load generator starts processes: import when used

    port = LoadSpec(url).port
    rows = []
    for repeat in range(repeats):
        for keepalive in (True, False):
            spec = LoadSpec(url, connections=connections, duration_s=duration_s, keepalive=keepalive, workers=workers)
            before = _time_wait(port)
            result = run_load(spec)
            latency = result.percentiles() or {}
            rows.append(
                {
                    "keepalive": keepalive,
                    "repeat": repeat,
                    "rps": result.rps,
                    "p50_ms": latency.get("p50"),
                    "p99_ms": latency.get("p99"),
                    "errors": result.error_count,
                    "time_wait": float("nan") if before is None else len((_time_wait(port) or set()) - before),
                }
            )
    return pd.DataFrame(rows)

