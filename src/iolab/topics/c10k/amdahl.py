"""Amdahl's law for a request that waits 90% of its time: a faster CPU part, or more requests at once?

Source 003: if waiting for the database is 90% of a request, making the server's own 10% faster can
cut the latency by 10% at most. The experiment makes that request with the kit's server: a client
asks ``/julia?ms=CPU`` (computed in the server) and then ``/upstream?ms=WAIT`` (a wait the server
spends in its event loop), on one keep-alive connection, over and over, with N clients at once.
Amdahl bounds what a faster CPU part buys; the number of clients is what serving more at once buys.
"""

from __future__ import annotations

import http.client
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from iolab.servers import open_server

if TYPE_CHECKING:
    import pandas as pd

# A client gives up on a server that does not answer one step within this long.
STEP_TIMEOUT_S = 30.0


def amdahl_speedup(fraction: float, factor: float) -> float:
    """Amdahl's law: the overall speed-up when ``fraction`` of the time becomes ``factor`` times faster."""
    return 1 / ((1 - fraction) + fraction / factor)


def predicted_rps(clients: int, cpu_ms: float, wait_ms: float, cpu_cores: int = 1) -> float:
    """Requests/s of ``clients`` closed-loop clients: each one per (cpu + wait), until the CPU is full."""
    return min(clients / (cpu_ms + wait_ms), cpu_cores / cpu_ms) * 1000


def _client(url: str, targets: tuple[str, str], deadline: float, steps: list[tuple[float, ...]]) -> None:
    """Make the two-step request over and over until ``deadline``; append each one's step times (s)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=STEP_TIMEOUT_S)
    try:
        while time.perf_counter() < deadline:
            times = []
            for target in targets:
                start = time.perf_counter()
                conn.request("GET", target)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    raise RuntimeError(f"GET {target}: HTTP {response.status}")
                times.append(time.perf_counter() - start)
            steps.append(tuple(times))  # list.append is atomic under the GIL
    finally:
        conn.close()


def measure(url: str, cpu_ms: float, wait_ms: float, clients: int, duration_s: float) -> dict[str, float]:
    """``clients`` threads making the two-step request for ``duration_s``; requests/s, latency percentiles (ms).

    ``cpu_step_ms`` and ``wait_step_ms`` are the medians of each step as the client saw it, queueing
    included: with one client they show the request's real split between computing and waiting.
    """
    import numpy as np

    targets = (f"/julia?ms={cpu_ms:g}", f"/upstream?ms={wait_ms:g}")
    steps: list[tuple[float, ...]] = []
    deadline = time.perf_counter() + duration_s
    errors: list[BaseException] = []

    def client() -> None:
        try:
            _client(url, targets, deadline, steps)
        except Exception as exc:  # reported below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration_s + 2 * STEP_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} of {clients} clients failed; the first: {errors[0]!r}")
    if not steps:
        raise RuntimeError(f"no request completed within {duration_s:g} s: is the server overloaded?")
    ms = np.array(steps) * 1000
    total = ms.sum(axis=1)
    return {
        "requests": len(total),
        "rps": len(total) / elapsed,
        "p50_ms": float(np.percentile(total, 50)),
        "p99_ms": float(np.percentile(total, 99)),
        "cpu_step_ms": float(np.median(ms[:, 0])),
        "wait_step_ms": float(np.median(ms[:, 1])),
    }


def sweep(
    clients: list[int],
    cpu_ms: list[float],
    *,
    wait_ms: float = 90.0,
    duration_s: float = 2.0,
    model: str = "asyncio",
    progress: bool = False,
    repeats: int = 1,
) -> "pd.DataFrame":
    """Each (CPU part, clients) pair against one ``model`` server; one row each, with the predictions.

    ``repeats`` runs every pair that many times, in turns (all pairs, then all again), so that a slow
    patch of the machine falls on every pair of one turn alike; ``repeat`` numbers the turn.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    rows = []
    with open_server(model) as server:
        measure(server.url, min(cpu_ms), wait_ms, 1, 0.3)  # warm-up: connections, caches, the Julia code
        jobs = [(turn, c, n) for turn in range(repeats) for c in cpu_ms for n in clients]
        for turn, cpu, n in tqdm(jobs, desc="two-step requests", disable=not progress):
            row = measure(server.url, cpu, wait_ms, n, duration_s)
            rows.append({
                "repeat": turn,
                "cpu_ms": cpu,
                "wait_ms": wait_ms,
                "clients": n,
                **row,
                "predicted_rps": predicted_rps(n, cpu, wait_ms),
                "waiting_share": wait_ms / (wait_ms + cpu),
            })
    return pd.DataFrame(rows)
