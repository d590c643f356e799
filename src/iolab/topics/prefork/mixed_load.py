"""The tiny route's latency while CPU-heavy Julia requests run in the background.

Source 000's ``process_io`` bottleneck, tested: whether a server that computes one request holds up
other clients, however little they ask. ``tiny_under_julia`` measures it from the outside.
``julia_clients`` keep-alive clients ask for ``/julia?ms=...`` without pause (threads of this
process, so that they start before the probe and stop right after it), and meanwhile the load
generator asks for ``/`` at a steady rate, a new connection per request, so that no tiny client
holds a pre-fork worker, and every tiny request is timed from when it was *due* (corrected latency:
a request stuck behind a Julia set counts the whole delay).
"""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from iolab.kit import procfs
from iolab.load import LoadResult, LoadSpec, run_load
from iolab.topics.prefork import occupancy

if TYPE_CHECKING:
    from iolab.load.comparisons import Startable

# The probe's pool of connection slots: a tiny request stuck behind Julia sets holds a slot, and a
# request that finds no free slot is never sent (the run reports it as unsent), so the pool must
# outlast rate x the worst wait (100 req/s x 0.3 s = 30) with room to spare.
PROBE_POOL = 64
# The probe starts once the server has burnt BUSY_CPU_S of CPU: the background load has begun.
BUSY_CPU_S = 0.05
BUSY_TIMEOUT_S = 20.0
POLL_S = 0.01
# A background client stops after its request in progress; one Julia set is at most app.MAX_MS.
BACKGROUND_TIMEOUT_S = 30.0


def wait_until_busy(pid: int, cpu_s: float = BUSY_CPU_S, timeout_s: float = BUSY_TIMEOUT_S) -> float:
    """Wait until server ``pid`` (its process tree) has used ``cpu_s`` more CPU; the seconds waited."""
    start, first = time.monotonic(), procfs.tree_cpu_seconds(pid)
    while procfs.tree_cpu_seconds(pid) - first < cpu_s:
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"server {pid} used under {cpu_s} s of CPU in {timeout_s:g} s: is the background load running?")
        time.sleep(POLL_S)
    return time.monotonic() - start


def _probe(url: str, rate: float, duration_s: float) -> LoadResult:
    spec = LoadSpec(url + "/", mode="open", rate=rate, connections=PROBE_POOL, duration_s=duration_s, keepalive=False, workers=1)
    return run_load(spec)


@dataclass
class Background:
    """What the background clients did: answers, errors, and over how long."""

    answers: int = 0
    errors: int = 0
    seconds: float = 0.0

    @property
    def rps(self) -> float:
        """Answers per second while they ran."""
        return self.answers / self.seconds if self.seconds > 0 else 0.0


@contextlib.contextmanager
def open_background_clients(url: str, target: str, clients: int,
                            timeout_s: float = BACKGROUND_TIMEOUT_S) -> Iterator[Background]:
    """``clients`` threads asking for ``target`` in a closed loop, each on its own keep-alive connection, until the block ends.

    Leaving the block (an error or an interrupt included) stops them after their request in progress.
    """
    stop, lock, stats = threading.Event(), threading.Lock(), Background()

    def client() -> None:
        with contextlib.closing(occupancy.connect(url, timeout_s)) as conn:
            while not stop.is_set():
                try:
                    occupancy.get_worker(conn, target)
                except (OSError, http.client.HTTPException):
                    with lock:
                        stats.errors += 1
                    return
                with lock:
                    stats.answers += 1

    threads = [threading.Thread(target=client, name=f"background-{i}", daemon=True) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    try:
        yield stats
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout_s)
        stats.seconds = time.perf_counter() - start


def _row(tiny: LoadResult, julia: Background | None, julia_clients: int) -> dict[str, float | int]:
    p = tiny.percentiles("corrected") or {}
    return {
        "julia_clients": julia_clients,
        "tiny_rps": tiny.rps,
        "tiny_errors": tiny.error_count,
        "tiny_unsent": tiny.unsent,
        **{f"tiny_{k}_ms": v for k, v in p.items() if k in ("p50", "p90", "p99", "max")},
        "julia_rps": julia.rps if julia is not None else 0.0,
    }


def tiny_under_julia(
    url: str, pid: int, julia_clients: int, julia_ms: float = 20, rate: float = 50, duration_s: float = 3.0
) -> dict[str, float | int]:
    """The tiny route's latency (corrected, ms) at ``rate`` req/s while ``julia_clients`` clients ask for Julia sets.

    ``pid`` is the server's, to see when the background load has started. With ``julia_clients=0``
    the same probe runs alone: the baseline.
    """
    if julia_clients == 0:
        return _row(_probe(url, rate, duration_s), None, 0)
    with open_background_clients(url, f"/julia?ms={julia_ms:g}", julia_clients) as julia:
        wait_until_busy(pid)
        tiny = _probe(url, rate, duration_s)
    return _row(tiny, julia, julia_clients)


def mixed_sweep(url: str, pid: int, julia_clients: Sequence[int], **kwargs: float) -> pd.DataFrame:
    """:func:`tiny_under_julia` for each number of Julia clients (0: the baseline); one row each."""
    return pd.DataFrame([tiny_under_julia(url, pid, n, **kwargs) for n in julia_clients])


def mixed_matrix(variants: Sequence[Startable], julia_clients: Sequence[int], **kwargs: float) -> pd.DataFrame:
    """:func:`mixed_sweep` on each variant (see :mod:`iolab.load.comparisons`), started in turn; tidy rows."""
    frames = []
    for variant in variants:
        with variant.open() as server:
            frames.append(mixed_sweep(server.url, server.pid, julia_clients, **kwargs).assign(server=variant.label))
    return pd.concat(frames, ignore_index=True)
