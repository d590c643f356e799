"""Run services against a database under load and tabulate what they did: source 002's experiment.

``compare_variants`` starts each of the six services in turn, checks it answers, drives it with
the lab's load generator in a closed loop (``ab -c 5`` in the source) and returns one row per
variant. ``load_service`` is the step it repeats; the chapter's other experiments
(:mod:`iolab.topics.databases.experiments`) reuse it. ``get`` is a plain blocking HTTP client that times the
first and the last byte of one answer.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import psutil

from iolab.kit import results
from iolab.load import LoadSpec, run_load
from iolab.load.client import request_bytes
from iolab.topics.databases.postgres import Database
from iolab.topics.databases.service import open_service
from iolab.topics.databases.variants import POOL_SIZE, VARIANTS

CONCURRENCY = 5  # source 002: ab -c 5
# A bound on every run even when a request count is given: a slow variant at 2,000 requests must
# not hold a notebook cell for minutes.
MAX_RUN_SECONDS = 120.0
GET_TIMEOUT_S = 30.0
RECV_BYTES = 64 * 1024


@dataclass(frozen=True)
class TimedResponse:
    """One HTTP answer read whole by :func:`get`: its bytes and when they came."""

    raw: bytes  # status line, headers and body, exactly as received
    first_byte_s: float  # from sending the request to the first byte of the answer
    last_byte_s: float  # ... to the last byte (the server closed the connection)

    @property
    def status(self) -> int:
        """The status code."""
        return int(self.raw.split(b" ", 2)[1])

    @property
    def head(self) -> bytes:
        """Status line and headers."""
        return self.raw.partition(b"\r\n\r\n")[0]


def get(url: str, timeout: float = GET_TIMEOUT_S) -> TimedResponse:
    """GET ``url`` on a new connection that the server closes after answering; the answer, timed."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = request_bytes(host, port, parts.path or "/", keepalive=False)
    chunks: list[bytes] = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.perf_counter()
        sock.sendall(request)
        first = None
        while data := sock.recv(RECV_BYTES):
            first = first if first is not None else time.perf_counter()
            chunks.append(data)
        last = time.perf_counter()
    if first is None:
        raise ConnectionError(f"{url} closed the connection without answering")
    return TimedResponse(b"".join(chunks), first - start, last - start)


def load_service(url: str, requests: int, *, concurrency: int = CONCURRENCY, keepalive: bool = False) -> dict[str, Any]:
    """Drive ``url`` with ``requests`` requests in a closed loop; rps, p50_ms, p99_ms, response_bytes...

    A request count, as ``ab -n`` in source 002, rather than a duration: a run bounded by time
    counts the answers still in flight at its deadline but not the time they took, which inflates
    rps by up to concurrency / duration (64 clients of a 50 ms service over 1.5 s: +43 rps). A run
    bounded by count ends with its last answer. MAX_RUN_SECONDS still bounds it.
    ``keepalive=False`` (the default) opens a connection per request, as ``ab`` without ``-k`` did.
    """
    spec = LoadSpec(
        url,
        mode="closed",
        connections=concurrency,
        duration_s=MAX_RUN_SECONDS,
        max_requests=requests,
        keepalive=keepalive,
        timeout_s=30.0,  # a pool-of-1 service at concurrency 64 answers slowly, but answers
    )
    result = run_load(spec)
    p = result.percentiles("latency") or {}
    return {
        "rps": result.rps,
        "p50_ms": p.get("p50", float("nan")),
        "p99_ms": p.get("p99", float("nan")),
        "response_bytes": result.bytes_received / result.requests if result.requests else 0.0,
        "requests": result.requests,
        "errors": result.error_count,
        "seconds": result.duration_s,
        "client_cpu_s": result.cpu_s,
    }


def cpu_snapshot(db: Database, service_pid: int) -> tuple[float, float]:
    """(service, database) CPU seconds used so far."""
    times = psutil.Process(service_pid).cpu_times()
    return times.user + times.system, db.cpu_seconds()


def cpu_per_request(before: tuple[float, float], after: tuple[float, float], measured: dict[str, Any]) -> dict[str, float]:
    """CPU ms per answered request in the service, the database and the load generator.

    On a machine whose cores all three share, their sum bounds throughput: rps <= cores x 1000 / sum.
    """
    n = max(1, measured["requests"])
    return {
        "service_cpu_ms": 1000 * (after[0] - before[0]) / n,
        "db_cpu_ms": 1000 * (after[1] - before[1]) / n,
        "client_cpu_ms": 1000 * measured["client_cpu_s"] / n,
    }


def published_rps() -> dict[int, float]:
    """Source 002's requests/s per variant number, from data/published.csv."""
    table = results.published("002")
    table = table[table["experiment"] == "db-variants"]
    return {int(q.split()[0]): float(v) for q, v in zip(table["quantity"], table["value"])}


def compare_variants(
    db: Database,
    sql: str,
    variants: Iterable[int] = tuple(VARIANTS),
    *,
    requests: int = 2000,
    concurrency: int = CONCURRENCY,
    size: int = POOL_SIZE,
    repeats: int = 1,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per variant of source 002 and repeat: its service under closed-loop load, beside the published rps.

    Each service is started, answers one request (kept, to check that all variants answer the same
    bytes: ``body_sha``), is measured, and is stopped before the next starts. ``repeats`` rounds go
    through every variant in turn, so that a slow patch of the machine spreads over the variants.
    """
    import hashlib

    from tqdm.auto import tqdm

    published = published_rps()
    rows = []
    runs = [(repeat, number) for repeat in range(repeats) for number in variants]
    for repeat, number in tqdm(runs, desc="variants", disable=not progress, leave=False):
        service = VARIANTS[number]
        with open_service(db, number, sql, size) as running:
            first = get(running.url)
            if first.status != 200:
                raise RuntimeError(f"variant {number} ({service.name}) answered {first.head.decode(errors='replace')}")
            before = cpu_snapshot(db, running.pid)
            measured = load_service(running.url, requests, concurrency=concurrency)
            service_after = cpu_snapshot(db, running.pid)[0]
        # The database's side is read once the service's backends have exited: the kernel reports a live
        # process's CPU time in whole 10 ms ticks, which would lose up to 10 ms per pooled backend.
        measured |= cpu_per_request(before, (service_after, db.cpu_seconds()), measured)
        rows.append(
            {
                "variant": number,
                "repeat": repeat,
                "service": service.name,
                "label": service.label,
                **measured,
                "published_rps": published.get(number, float("nan")),
                "answer_sha": hashlib.sha256(first.raw).hexdigest()[:12],
            }
        )
    return pd.DataFrame(rows)


def parse_variants(text: str) -> list[int]:
    """'1-6' or '1,3,6' or '2' as variant numbers; ValueError naming the valid ones."""
    numbers: list[int] = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        try:
            numbers += range(int(low), int(high or low) + 1)
        except ValueError:
            raise ValueError(f"{text!r}: give variants as 1-6, 1,3,6 or 2") from None
    if not numbers or any(n not in VARIANTS for n in numbers):
        raise ValueError(f"{text!r}: source 002's variants are 1 to 6")
    return numbers
