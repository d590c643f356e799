"""What TLS adds to a request: round trips before the first byte, and CPU for the handshake.

Before a TLS client may send its request, client and server agree on keys in a handshake: one round
trip in TLS 1.3, two in TLS 1.2, after TCP's own (``connect()``). These are full handshakes: session
resumption, TLS 1.3's early (0-RTT) data and TCP Fast Open can save round trips, and the kit uses none
of them. The handshake also costs CPU: the server signs with its private key, the client checks the
certificate chain, both do a key exchange.

The certificate is made at run time by ``trustme``: a throwaway certificate authority that only this
process's client trusts, and a server certificate it signs, with ECDSA P-256 keys (``trustme``'s
default; an RSA key costs the server more to sign with). Nothing is written to disk.

:func:`request_phases` times each phase of a request on a new connection, plain or TLS, on the
loopback or across a netlab link; :func:`handshake_cpu` measures the CPU of both ends per request on a
new connection (TCP's handshake, TLS's and the request together; it does not split them).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pandas as pd
import trustme

from iolab.netlab import NetLab

KINDS = ("plain", "TLS 1.2", "TLS 1.3")
_VERSIONS = {"TLS 1.2": ssl.TLSVersion.TLSv1_2, "TLS 1.3": ssl.TLSVersion.TLSv1_3}
SERVER_NAME = "iolab.test"  # the name in the certificate; never looked up
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
ACCEPT_TICK_S = 0.2  # how often the serving thread looks whether it should stop


@dataclass(frozen=True)
class Contexts:
    """The server's and the client's TLS settings for one protocol version."""

    server: ssl.SSLContext
    client: ssl.SSLContext


def contexts(kind: str) -> Contexts:
    """TLS contexts pinned to ``kind`` ("TLS 1.2" or "TLS 1.3"), with a fresh certificate."""
    authority = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert(SERVER_NAME).configure_cert(server)
    client = ssl.create_default_context()
    authority.configure_trust(client)
    for context in (server, client):
        context.minimum_version = context.maximum_version = _VERSIONS[kind]
    return Contexts(server, client)


@contextlib.contextmanager
def open_responder(listener: socket.socket, context: ssl.SSLContext | None) -> Iterator[None]:
    """Answer every connection on ``listener`` (TLS if ``context``) with a tiny response, in a thread."""
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(ACCEPT_TICK_S)
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            with contextlib.suppress(OSError), sock:
                sock.settimeout(5.0)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # see one_request
                conn = context.wrap_socket(sock, server_side=True) if context else sock  # the handshake
                with conn:
                    head = b""
                    while b"\r\n\r\n" not in head and (data := conn.recv(4096)):
                        head += data
                    conn.sendall(ANSWER)

    thread = threading.Thread(target=serve, name="tls-server", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def one_request(make_socket: Callable[[], socket.socket], address: tuple[str, int],
                context: ssl.SSLContext | None) -> dict[str, float]:
    """Connect, handshake (TLS only), send a GET and read the answer; each phase's ms."""
    marks = [time.perf_counter()]
    with make_socket() as sock:
        sock.settimeout(10.0)
        # Without it, Nagle's algorithm holds a small write back until the previous one is acknowledged:
        # TLS 1.3's last handshake message and the request would cost a round trip more. asyncio, the
        # kit's servers and browsers turn it off too.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect(address)
        marks.append(time.perf_counter())
        conn = context.wrap_socket(sock, server_hostname=SERVER_NAME) if context else sock  # handshake here
        marks.append(time.perf_counter())
        with conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % SERVER_NAME.encode())
            answer = b""
            while data := conn.recv(4096):
                answer += data
            marks.append(time.perf_counter())
    if not answer.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"unexpected answer: {answer[:40]!r}")
    connect, handshake, request = ((b - a) * 1000 for a, b in zip(marks, marks[1:]))
    return {"connect_ms": connect, "handshake_ms": handshake, "request_ms": request, "total_ms": connect + handshake + request}


def request_phases(kinds: Sequence[str], samples: int, lab: NetLab | None = None) -> pd.DataFrame:
    """``samples`` requests on new connections per kind (plain, TLS 1.2, TLS 1.3); one row per request.

    Across ``lab``'s link if given (server in its server namespace, client in its client's), else on
    the loopback.
    """
    rows = []
    for kind in kinds:
        ctx = None if kind == "plain" else contexts(kind)
        listener = lab.socket("server") if lab else socket.socket()
        with listener:
            listener.bind((lab.server_ip if lab else "127.0.0.1", 0))
            listener.listen(64)
            address = (lab.server_ip if lab else "127.0.0.1", listener.getsockname()[1])
            make_socket = (lambda: lab.socket("client")) if lab else socket.socket
            with open_responder(listener, ctx.server if ctx else None):
                for sample in range(samples):
                    rows.append({"kind": kind, "sample": sample}
                                | one_request(make_socket, address, ctx.client if ctx else None))
    return pd.DataFrame(rows)


def handshake_cpu(kinds: Sequence[str], samples: int) -> pd.DataFrame:
    """CPU ms (client and server together, both in this process) per request on a new loopback connection."""
    rows = []
    for kind in kinds:
        ctx = None if kind == "plain" else contexts(kind)
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            with open_responder(listener, ctx.server if ctx else None):
                one_request(socket.socket, listener.getsockname(), ctx.client if ctx else None)  # warm up
                cpu, wall = time.process_time(), time.perf_counter()
                for _ in range(samples):
                    one_request(socket.socket, listener.getsockname(), ctx.client if ctx else None)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rows.append({"kind": kind, "requests": samples, "cpu_ms_per_request": 1000 * cpu / samples,
                     "wall_ms_per_request": 1000 * wall / samples})
    return pd.DataFrame(rows)
