"""How a pre-fork server's connections spread over its workers, and what the kernel wakes per connection.

Two ways to share a port among N processes:

- one listening socket, inherited by every worker, all blocked in ``accept()`` on it: the kernel
  keeps one queue, and each connection goes to a worker that calls ``accept()`` on it;
- ``SO_REUSEPORT``: a socket per worker on the same port; the kernel picks the socket by a hash of
  the client's address and port.

Counting is done from the answers: each carries ``X-Worker: <pid>``. "Thundering herd" is the fear
that a connection wakes *every* worker blocked in accept(); the voluntary context switches of all
workers, per connection, show whether it does.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib

import pandas as pd
import psutil

from iolab.kit import procfs
from iolab.load import Histogram, LoadSpec, run_load
from iolab.topics.prefork import mixed_load, occupancy


def _one_per_connection(url: str, n: int, target: str) -> list[int]:
    workers = []
    for _ in range(n):
        with contextlib.closing(occupancy.connect(url)) as conn:
            workers.append(occupancy.get_worker(conn, target, close=True))
    return workers


def worker_counts(url: str, connections: int, clients: int = 1, target: str = "/") -> pd.DataFrame:
    """Open ``connections`` connections, one request each, from ``clients`` threads at once; answers per worker.

    Rows: worker (pid), connections; busiest first.
    """
    if clients < 1 or connections < clients:
        raise ValueError(f"need 1 <= clients <= connections, got {clients} clients for {connections} connections")
    shares = [connections // clients + (i < connections % clients) for i in range(clients)]
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        answered = [pid for part in pool.map(lambda n: _one_per_connection(url, n, target), shares) for pid in part]
    counts = collections.Counter(answered)
    return pd.DataFrame(counts.most_common(), columns=["worker", "connections"])


def worker_pids(server_pid: int) -> list[int]:
    """The pids of a server's worker processes (its children), in pid order."""
    return sorted(p.pid for p in psutil.Process(server_pid).children())


def spread(url: str, server_pid: int, connections: int, clients: int = 1) -> pd.DataFrame:
    """:func:`worker_counts` with a row for every worker, idle ones too (0 connections), in pid order."""
    counts = worker_counts(url, connections, clients).set_index("worker").connections
    pids = worker_pids(server_pid)
    return pd.DataFrame({"worker": range(len(pids)), "pid": pids, "connections": [int(counts.get(p, 0)) for p in pids]})


def switches_per_connection(url: str, server_pid: int, connections: int) -> float:
    """Voluntary context switches of all workers together, per connection served (one request each).

    A worker switches when it blocks (in accept, in recv): a few times per connection it serves.
    If every idle worker were woken for each connection, this would grow with the number of workers.
    """
    pids = worker_pids(server_pid)
    before = sum(procfs.status(p).voluntary_switches for p in pids)
    _one_per_connection(url, connections, "/")
    after = sum(procfs.status(p).voluntary_switches for p in pids)
    return (after - before) / connections


def share_slower_than(histogram: Histogram, ms: float) -> float:
    """The fraction of the values in ``histogram`` above ``ms`` milliseconds."""
    hdr, total = histogram.hdr, histogram.count
    if not total:
        return 0.0
    slow = sum(item.count_added_in_this_iter_step for item in hdr.get_recorded_iterator() if item.value_iterated_to > ms * 1000)
    return slow / total


def behind_a_busy_worker(
    url: str, server_pid: int, busy_ms: float, rate: float = 50, duration_s: float = 1.0, slow_ms: float = 100
) -> dict[str, float]:
    """Tiny requests (a new connection each) while one worker computes a ``busy_ms`` Julia set.

    A row: the tiny route's corrected p50/p99/max (ms) of the answered requests, and ``slow_share``,
    the fraction of all requests sent that took over ``slow_ms`` or got no answer.
    """
    if duration_s * 1000 >= busy_ms:
        raise ValueError(f"the probe ({duration_s} s) must end before the busy request ({busy_ms} ms) does")
    busy_s = busy_ms / 1000
    # Enough connection slots for every request that may queue behind the busy worker, and a
    # timeout that lets them wait the busy request out: a slow machine may take twice as long.
    spec = LoadSpec(
        url + "/", mode="open", rate=rate, connections=int(rate * busy_s) + 16, duration_s=duration_s,
        keepalive=False, workers=1, timeout_s=2 * busy_s + 5,
    )
    with concurrent.futures.ThreadPoolExecutor(1) as pool, contextlib.closing(occupancy.connect(url, 60)) as conn:
        # Connection: close, or the busy worker would stay tied to this idle keep-alive client after
        # answering, and the connections queued on its socket (SO_REUSEPORT) would wait for good.
        busy = pool.submit(occupancy.get_worker, conn, f"/julia?ms={busy_ms:g}", close=True)
        mixed_load.wait_until_busy(server_pid)
        tiny = run_load(spec)
        busy.result()
    histogram = tiny.histogram("corrected") or Histogram()
    answered, failed = histogram.count, tiny.error_count + tiny.unsent
    slow = share_slower_than(histogram, slow_ms) * answered + failed
    p = histogram.percentiles()
    return {
        "tiny_p50_ms": p["p50"],
        "tiny_p99_ms": p["p99"],
        "tiny_max_ms": p["max"],
        "slow_share": slow / (answered + failed) if answered + failed else 0.0,
        "requests": answered,
        "failed": failed,
    }
