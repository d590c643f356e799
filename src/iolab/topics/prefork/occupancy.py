"""Keep-alive occupancy: what keep-alive clients do to a pre-fork server's workers, and to the next client.

:func:`server_processes` shows where each process of a server waits in the kernel (``wchan``),
:func:`open_held_connections` keeps keep-alive clients connected, and ``next_client_wait`` times one
more client's request while they stay.

The clients are ``http.client`` connections: the standard library's HTTP/1.1 client keeps the
connection open between requests and hands over the ``X-Worker`` header that names the process.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import psutil

from iolab.kit import procfs

WORKER_HEADER = "X-Worker"


def connect(url: str, timeout_s: float = 10.0) -> http.client.HTTPConnection:
    """An HTTP/1.1 connection to ``url``'s host and port (not yet connected: the first request does it)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{url!r}: give a plain http://HOST:PORT URL")
    return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout_s)


def get_worker(conn: http.client.HTTPConnection, target: str = "/", close: bool = False) -> int:
    """GET ``target`` on ``conn``; the pid in the answer's X-Worker header (raises on a non-2xx answer)."""
    conn.request("GET", target, headers={"Connection": "close"} if close else {})
    response = conn.getresponse()
    response.read()  # the body must be read before the connection can carry another request
    if not 200 <= response.status < 300:
        raise http.client.HTTPException(f"GET {target}: HTTP {response.status} {response.reason}")
    return int(response.getheader(WORKER_HEADER, "0"))


@dataclass(frozen=True)
class Held:
    """A keep-alive connection held open, and the worker that accepted it."""

    conn: http.client.HTTPConnection
    worker: int


@contextlib.contextmanager
def open_held_connections(url: str, n: int, timeout_s: float = 10.0) -> Iterator[list[Held]]:
    """Open ``n`` keep-alive connections, each answered once, and keep them open; leaving the block closes them.

    One answered request proves a worker has accepted the connection: a connection merely opened may
    still sit in the accept queue.
    """
    with contextlib.ExitStack() as stack:
        held = []
        for _ in range(n):
            conn = connect(url, timeout_s)
            stack.callback(conn.close)
            held.append(Held(conn, get_worker(conn)))
        yield held


def next_client_wait(url: str, holders: int, hold_s: float, timeout_s: float = 10.0) -> dict[str, float | int]:
    """How long one more client waits for ``/`` while ``holders`` keep-alive clients stay ``hold_s`` seconds more.

    A row: holders, wait_ms (from sending the request to reading the answer), worker (the X-Worker of
    the answer), held_workers (how many distinct workers the holders occupied).
    """
    if hold_s >= timeout_s:
        raise ValueError(f"hold_s ({hold_s} s) must be shorter than timeout_s ({timeout_s} s), or the client gives up first")
    with open_held_connections(url, holders, timeout_s) as held, contextlib.closing(connect(url, timeout_s)) as client:
        # The holders leave after hold_s, from a timer thread: they are idle, so closing them there
        # races with nothing, while this thread blocks on the newcomer's answer.
        timer = threading.Timer(hold_s, lambda: [h.conn.close() for h in held])
        start = time.perf_counter()
        timer.start()
        try:
            worker = get_worker(client)
        finally:
            timer.cancel()
            timer.join()
        wait_ms = (time.perf_counter() - start) * 1000
    return {"holders": holders, "wait_ms": wait_ms, "worker": worker, "held_workers": len({h.worker for h in held})}


def wait_sweep(url: str, holder_counts: Sequence[int], hold_s: float, repeats: int = 1) -> pd.DataFrame:
    """:func:`next_client_wait` for each number of holders, ``repeats`` times; tidy rows with a repeat column."""
    rows = [next_client_wait(url, n, hold_s) | {"repeat": r} for r in range(repeats) for n in holder_counts]
    return pd.DataFrame(rows)


def waiting_in(pid: int) -> str:
    """The kernel function process ``pid`` sleeps in (``/proc/PID/wchan``), e.g. ``inet_csk_accept``; "" if running."""
    try:
        text = Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        return "?"  # hidden by the kernel's settings, or the process is gone
    return "" if text == "0" else text


def server_processes(server_pid: int, settle_s: float = 1.0) -> pd.DataFrame:
    """One row per process of a server: role (parent, worker 0..), pid, state, and where it waits in the kernel.

    Waits up to ``settle_s`` for every process to be asleep somewhere: a worker just forked, or just
    done answering, may still be on its way to its next blocking call.
    """
    deadline = time.monotonic() + settle_s
    while True:
        workers = sorted(p.pid for p in psutil.Process(server_pid).children())
        rows = [
            {"process": role, "pid": pid, "state": procfs.status(pid).state, "waiting_in": waiting_in(pid)}
            for role, pid in [("parent", server_pid), *((f"worker {i}", pid) for i, pid in enumerate(workers))]
        ]
        settled = all(row["state"] == "S" and row["waiting_in"] for row in rows)
        if settled or time.monotonic() > deadline:
            return pd.DataFrame(rows)
        time.sleep(0.01)
