"""The experiment runner: upstreams in one process, the service in another, the caller waits.

``run_upstreams(RunSpec(rate=1000, num_req=10000, latency="20ms*9,30s", model="sync", threads=50))``
is source 001's ``concurrency-demo-benchmarks --rate 1000 --num_req 10000 --latency "20ms*9,30s"
sync --threads 50``, with real upstreams on real sockets. The requests are made inside the service
process on a schedule, as in the source's tool, rather than sent over HTTP by the load generator:
an HTTP client holds one connection per request in flight, and a service stuck behind a 30 s
upstream at 1,000 req/s has 30,000 of them, past the 20,000 descriptors a process may open here;
it would also put a third busy process on two cores. The notebook's kernel only waits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from iolab.kit import machine, procs
from iolab.kit.channel import open_child
from iolab.kit.procs import START_SECONDS
from iolab.topics.upstreams.result import UpstreamsResult
from iolab.topics.upstreams.endpoints import Upstreams, open_upstreams
from iolab.topics.upstreams.service import LATE_S, PARKED, ServiceSpec
from iolab.topics.upstreams.spec import parse_spec

MODELS = ("sync", "async")
LOOPS = ("asyncio", "uvloop", "trio")
LIMIT_SCOPES = ("upstream", "service")
# Past its own time limit, a service that has not reported is stuck, not slow.
RESULT_MARGIN_S = 30.0


@dataclass(frozen=True)
class RunSpec:
    """One run, in the terms of source 001's command line, plus the course's additions."""

    rate: float  # requests per second
    num_req: int
    latency: str  # a latency spec: "20ms*9,30s" (see iolab.topics.upstreams.spec)
    model: str = "sync"  # "sync" (a thread pool) or "async" (an event loop)
    threads: int = 50  # sync
    loop: str = "asyncio"  # async: "asyncio", "uvloop" or "trio"
    timeout_s: float | None = None  # client timeout per upstream call; None: wait as long as it takes
    limit: int | None = None  # async: calls in flight at most; past it a request is rejected at once
    limit_scope: str = "upstream"  # the limit counts per upstream, or for the whole service
    late_s: float = LATE_S  # an answer slower than this counts as failed (the source's 1 s)
    max_seconds: float = 120.0  # the run stops here whatever is left

    def __post_init__(self) -> None:
        endpoints = parse_spec(self.latency)  # raises ValueError with the grammar
        if not self.rate > 0:
            raise ValueError(f"rate {self.rate}: give a positive number of requests per second")
        if not 1 <= self.num_req <= 1_000_000:
            raise ValueError(f"num_req {self.num_req}: give 1 to 1,000,000 requests")
        if self.model not in MODELS:
            raise ValueError(f"model {self.model!r}: use 'sync' (a thread pool) or 'async' (an event loop)")
        if self.model == "sync" and not 1 <= self.threads <= 20_000:
            raise ValueError(f"{self.threads} threads: give 1 to 20,000 (Python stops near 21,800 per process)")
        if self.loop not in LOOPS:
            raise ValueError(f"loop {self.loop!r}: use one of {', '.join(LOOPS)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit {self.limit}: give at least 1 call in flight, or no limit")
        if self.limit_scope not in LIMIT_SCOPES:
            raise ValueError(f"limit scope {self.limit_scope!r}: use one of {', '.join(LIMIT_SCOPES)}")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ValueError(f"timeout {self.timeout_s}: give a positive number of seconds, or none")
        if not 0 < self.max_seconds <= 3600:
            raise ValueError(f"max_seconds {self.max_seconds}: give 0 < max_seconds <= 3600")
        if self.model == "sync":
            # Each thread keeps a connection to each upstream, in the service process (which raises its own limit).
            machine.reserve_descriptors(
                self.threads * len(endpoints),
                what=f"{self.threads:,} threads x {len(endpoints)} upstreams, a connection each,",
                fewer=lambda room: f"use at most {room // len(endpoints):,} threads",
                here=False,
            )

    def to_dict(self) -> dict[str, Any]:
        """The spec as a dict."""
        return dataclasses.asdict(self)

    def service_spec(self, ports: tuple[int, ...], park: bool = False, stack_kb: int | None = None) -> ServiceSpec:
        """What the service process needs to run this spec against upstreams on ``ports``."""
        return ServiceSpec(
            model=self.model,
            rate=self.rate,
            num_req=self.num_req,
            endpoints=parse_spec(self.latency),
            ports=ports,
            threads=self.threads,
            loop=self.loop,
            timeout_s=self.timeout_s,
            limit=self.limit,
            limit_scope=self.limit_scope,
            late_s=self.late_s,
            max_seconds=self.max_seconds,
            stack_kb=stack_kb,
            park=park,
        )


def run_service(spec: RunSpec, upstreams: Upstreams, progress: bool = False) -> UpstreamsResult:
    """Run ``spec``'s service against running ``upstreams``; what it measured."""
    from tqdm.auto import tqdm

    if parse_spec(spec.latency) != upstreams.endpoints:
        raise ValueError(f"the upstreams serve {upstreams.spec!r}, not {spec.latency!r}")
    service = spec.service_spec(upstreams.ports)
    label = f"{spec.model} {spec.latency} @ {spec.rate:g}/s"
    with open_child(service) as child:
        bar = tqdm(total=spec.num_req, desc=label, unit="req", disable=not progress, file=sys.stderr, leave=False)
        with bar:
            timeout = min(spec.max_seconds, spec.num_req / spec.rate + 3600) + RESULT_MARGIN_S + START_SECONDS
            while (tick := child.wait_progress(timeout)) is not None:
                _, finished = tick
                bar.update(finished - bar.n)
        child.wait(timeout=10)
    return UpstreamsResult.from_record(spec.to_dict(), child.result)


def run_upstreams(spec: RunSpec, progress: bool = False) -> UpstreamsResult:
    """Start the upstreams of ``spec.latency``, run the service against them, stop both; the result."""
    with open_upstreams(spec.latency) as upstreams:
        return run_service(spec, upstreams, progress)


@contextlib.contextmanager
def open_parked_service(model: str, threads: int = 1, stack_kb: int | None = None, env: dict[str, str] | None = None) -> Iterator[procs.ManagedProcess]:
    """A service process with its pool started (sync) or its loop running (async), doing nothing.

    For memory readings: the process prints PARKED once its threads exist, and waits to be stopped.
    """
    spec = RunSpec(rate=1, num_req=1, latency="0ms", model=model, threads=threads)
    service = spec.service_spec(ports=(0,), park=True, stack_kb=stack_kb)
    with open_child(service, env=env) as child:
        child.process.wait_for_line(f"^{PARKED}$", timeout=START_SECONDS + threads / 1000)
        yield child.process


__all__ = ["RunSpec", "open_parked_service", "run_service", "run_upstreams"]
