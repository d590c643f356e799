"""What source 002 leaves out, each measured by one function returning a tidy DataFrame.

- ``connection_costs``: what one request pays for each step (connect, query, prepared query, JSON);
- ``backend_census``: the server's backend processes, counted as connections open and close;
- ``pool_sweep``: throughput and p99 against the pool size, for a query that half computes, half waits;
- ``threads_vs_async``: blocking queries in N threads against an async pool, for a slow query;
- ``time_to_first_byte``: rows streamed to the client as they arrive, against the whole result first.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import pandas as pd
import psutil
import psycopg

from iolab.topics.databases.postgres import Database, title
from iolab.topics.databases.queries import encode
from iolab.topics.databases.runner import get, load_service
from iolab.topics.databases.service import open_service

SELECT_1 = "select 1"


def _ms_each(fn, repeats: int) -> list[float]:
    return [wall for wall, _ in _timed_each(fn, repeats)]


def _timed_each(fn, repeats: int) -> list[tuple[float, float]]:
    """(wall ms, CPU ms of the calling thread) of each of ``repeats`` calls of ``fn``."""
    out = []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.thread_time()
        fn()
        out.append(((time.perf_counter() - start) * 1000, (time.thread_time() - cpu_start) * 1000))
    return out


def connection_costs(db: Database, sql: str, repeats: int = 50) -> pd.DataFrame:
    """Per step of one request, ``repeats`` timings: step, repeat, ms (wall), cpu_ms (sync psycopg, this process).

    ``ms`` is the wall time the notebook's process waited for the step; ``cpu_ms`` the CPU time its
    thread spent on it, which leaves out the database's side (a connect's fork, a query's execution).
    """
    def connect_and_select() -> None:
        with psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute(SELECT_1).fetchone()

    base = len(db.backends())
    with psycopg.connect(db.url, autocommit=True) as conn:
        cur = conn.execute(sql, prepare=False)
        columns, rows = [c.name for c in cur.description or ()], cur.fetchall()
        steps = {
            "connect + select 1 + close": connect_and_select,
            "select 1, open connection": lambda: conn.execute(SELECT_1, prepare=False).fetchone(),
            "query, unprepared": lambda: conn.execute(sql, prepare=False).fetchall(),
            "query, prepared": lambda: conn.execute(sql, prepare=True).fetchall(),
            "rows to JSON": lambda: encode(columns, rows),
        }
        for fn in steps.values():
            fn()  # warm: the first prepared run prepares, the first connect loads libraries
        table = [
            {"step": step, "repeat": i, "ms": ms, "cpu_ms": cpu_ms}
            for step, fn in steps.items()
            for i, (ms, cpu_ms) in enumerate(_timed_each(fn, repeats))
        ]
    db.wait_backends(base)  # a closed connection's backend exits a moment later
    return pd.DataFrame(table)


def backends_now(db: Database) -> pd.DataFrame:
    """The server's backend processes now: pid, parent, title, rss_mb."""
    rows = []
    for proc in db.backends():
        try:
            rows.append({"pid": proc.pid, "parent": proc.ppid(), "title": title(proc), "rss_mb": proc.memory_info().rss / 2**20})
        except psutil.NoSuchProcess:
            continue
    return pd.DataFrame(rows, columns=["pid", "parent", "title", "rss_mb"])


def backend_census(db: Database, counts: Sequence[int] = (0, 1, 2, 4, 8)) -> pd.DataFrame:
    """Backends counted with 0, 1, 2... connections open (and after closing them): connections, backends."""
    if db.pid is None:
        raise RuntimeError("the server's processes are not visible from here (IOLAB_DATABASE_URL names another machine's or user's server)")
    rows = []
    base = len(db.backends())
    conns: list[psycopg.Connection] = []
    try:
        for n in sorted(counts):
            while len(conns) < n:
                conns.append(psycopg.connect(db.url, autocommit=True))
            rows.append({"connections": n, "backends": len(db.backends()) - base, "phase": "open"})
    finally:
        for conn in conns:
            conn.close()
    rows.append({"connections": 0, "backends": db.wait_backends(base) - base, "phase": "closed again"})
    return pd.DataFrame(rows)


def calibrate_cpu_rows(db: Database, ms: float, probe: int = 200_000) -> int:
    """How many generated numbers a ``queries.cpu`` query must sum to cost about ``ms`` of server CPU.

    The cost is read as the backend's CPU time when its process is visible, so that a busy machine
    (where the query also waits for a core) does not make it look dearer than it is; otherwise as the
    fastest of a few runs' wall time.
    """
    from iolab.topics.databases.queries import cpu

    base = len(db.backends())
    with psycopg.connect(db.url, autocommit=True) as conn:
        conn.execute(cpu(probe)).fetchone()
        backend = _backend_process(db, conn)
        if backend is not None:
            start = sum(backend.cpu_times()[:2])
            runs = _ms_each(lambda: conn.execute(cpu(probe)).fetchone(), 5)
            took = 1000 * (sum(backend.cpu_times()[:2]) - start) / len(runs)
        else:
            took = min(_ms_each(lambda: conn.execute(cpu(probe)).fetchone(), 5))
    db.wait_backends(base)
    return max(1000, int(probe * ms / max(took, 1e-3)))


def _backend_process(db: Database, conn: psycopg.Connection) -> psutil.Process | None:
    """The backend process serving ``conn``, if it runs on this machine under our server."""
    if db.pid is None:
        return None
    pid = conn.execute("select pg_backend_pid()").fetchone()[0]
    try:
        proc = psutil.Process(pid)
        return proc if proc.ppid() == db.pid else None
    except psutil.NoSuchProcess:
        return None


def pool_sweep(db: Database, sql: str, sizes: Iterable[int], *, requests: int, concurrency: int = 64,
               repeats: int = 1) -> pd.DataFrame:
    """The async pool service at each pool size, ``requests`` from ``concurrency`` keep-alive clients.

    One row per run: pool, repeat, rps, p50_ms, p99_ms..., and ``db_cpu_ms``, the database's CPU time
    per answered request during the run, read after its backends exited (NaN where its processes are
    not visible). ``repeats`` rounds
    go through every size in turn, so that a slow patch of a shared machine spreads over the sizes
    instead of bending the curve at one of them.
    """
    rows = []
    sizes = list(sizes)
    for repeat in range(repeats):
        for size in sizes:
            with open_service(db, "async-pool", sql, size) as running:
                get(running.url)
                before = db.cpu_seconds()
                measured = load_service(running.url, requests, concurrency=concurrency, keepalive=True)
            # Read once the pool's backends have exited: the kernel reports a live process's CPU time in
            # whole 10 ms ticks, and 64 backends of a few queries each would lose most of theirs.
            db_cpu_ms = 1000 * (db.cpu_seconds() - before) / max(1, measured["requests"])
            rows.append({"pool": size, "repeat": repeat, "concurrency": concurrency, **measured, "db_cpu_ms": db_cpu_ms})
    return pd.DataFrame(rows)


def threads_vs_async(
    db: Database, sql: str, concurrencies: Sequence[int], *, requests: int, threads: int = 8, repeats: int = 1
) -> pd.DataFrame:
    """A slow query through N threads (blocking calls) and through an async pool as large as the clients.

    One row per run: service, workers (threads or connections), concurrency, repeat, rps, p99_ms...
    ``repeats`` rounds go through both services in turn.
    """
    pool = max(concurrencies)
    rows = []
    for repeat in range(repeats):
        for name, workers in (("sync-threads", threads), ("async-pool", pool)):
            with open_service(db, name, sql, workers) as running:
                get(running.url)
                for c in concurrencies:
                    measured = load_service(running.url, max(requests, 2 * c), concurrency=c, keepalive=True)
                    rows.append({"service": name, "workers": workers, "concurrency": c, "repeat": repeat, **measured})
    return pd.DataFrame(rows)


def time_to_first_byte(db: Database, sql: str, repeats: int = 3) -> pd.DataFrame:
    """The same big answer buffered (async-pool) and streamed (async-pool-stream): mode, repeat, first_byte_ms, last_byte_ms, bytes."""
    rows = []
    for name, mode in (("async-pool", "whole result first"), ("async-pool-stream", "rows as they arrive")):
        with open_service(db, name, sql, 1) as running:
            get(running.url)  # warm: the first answer also pays for caches and the plan
            for i in range(repeats):
                answer = get(running.url)
                rows.append({"mode": mode, "repeat": i, "first_byte_ms": answer.first_byte_s * 1000,
                             "last_byte_ms": answer.last_byte_s * 1000, "bytes": len(answer.raw),
                             "rss_mb": psutil.Process(running.pid).memory_info().rss / 2**20})  # fmt: skip
    return pd.DataFrame(rows)
