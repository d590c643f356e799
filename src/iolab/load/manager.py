"""``run_load(spec)``: start the worker processes, start them together, merge what they measured.

The workers are separate programs (``python -m iolab.load.worker``), each in a process group of its
own through :func:`iolab.kit.channel.open_child`, which also carries their READY, progress and
result lines: leaving ``run_load`` in any way, KeyboardInterrupt included, ends them all. Nothing
here runs an event loop, so a notebook (whose kernel already runs one) can call ``run_load`` directly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from typing import Any

from iolab.kit import machine
from iolab.kit.channel import Child, open_child
from iolab.kit.procs import START_SECONDS, ProcessTimeout
from iolab.load.histogram import Histogram
from iolab.load.model import LoadResult, LoadSpec
from iolab.load._share import Share

# Past duration + timeout, a worker that has not reported is stuck, not slow.
RESULT_MARGIN_S = 15.0
# How long the manager waits on one worker's output before looking at the next.
POLL_S = 0.05


def default_workers(spec: LoadSpec) -> int:
    """Half the cores this process may use (at least one), never more than the connections.

    Half, because the server under test runs on the same machine and needs cores of its own: what
    more generator processes than that do to a measurement is chapter 11's prediction
    (``pred-generator``), and the figures behind this default are in ``benchmarks/README.md``.
    """
    return max(1, min(machine.cores() // 2, spec.connections))


def check_descriptors(connections: int, workers: int) -> None:
    """Raise DescriptorLimit if one worker's share of ``connections`` exceeds ``ulimit -n``.

    A worker raises its soft limit up to the hard one itself, so the hard limit is what counts.
    """
    machine.reserve_descriptors(
        -(-connections // workers),
        what=f"{connections:,} connections over {workers} worker(s)",
        fewer=lambda room: f"use at least {-(-connections // max(1, room))} workers",
        here=False,
    )


def shares(spec: LoadSpec) -> list[Share]:
    """Split ``spec`` over its workers: connections, rate and request bound, as evenly as possible."""
    w = spec.workers
    conns = [spec.connections // w + (i < spec.connections % w) for i in range(w)]
    bounds: list[int | None] = [None] * w
    if spec.max_requests is not None:
        bounds = [spec.max_requests // w + (i < spec.max_requests % w) for i in range(w)]
    rate = spec.rate / w if spec.rate else None
    # Worker i starts i/rate after worker 0: together the schedules tick every 1/rate seconds.
    return [
        Share(spec, i, conns[i], rate, (i / spec.rate) if spec.rate else 0.0, bounds[i]) for i in range(w)
    ]


def merge(spec: LoadSpec, parts: list[dict[str, Any]]) -> LoadResult:
    """One LoadResult from the workers' results."""
    names = parts[0]["histograms"].keys()
    histograms = {
        name: Histogram.merged([Histogram.decode(p["histograms"][name]) for p in parts]).encode() for name in names
    }
    seconds = []
    for i in range(len(parts[0]["seconds"])):
        row = [p["seconds"][i] for p in parts]
        hist = Histogram.merged([Histogram.decode(s["histogram"]) for s in row])
        seconds.append(
            {
                "requests": sum(s["requests"] for s in row),
                "errors": sum(s["errors"] for s in row),
                "histogram": hist.encode(),
            }
        )
    errors: dict[str, int] = {}
    for p in parts:
        for kind, n in p["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
    return LoadResult(
        spec=spec,
        duration_s=max(p["duration_s"] for p in parts),
        requests=sum(p["requests"] for p in parts),
        errors=errors,
        sent=sum(p["sent"] for p in parts),
        unsent=sum(p["unsent"] for p in parts),
        bytes_received=sum(p["bytes_received"] for p in parts),
        per_connection=[n for p in parts for n in p["per_connection"]],
        cpu_s=sum(p["cpu_s"] for p in parts),
        workers=len(parts),
        histograms=histograms,
        seconds=seconds,
    )


def _collect(workers: list[Child], spec: LoadSpec, progress: bool) -> list[dict[str, Any]]:
    """Read TICK lines (for the progress bar) until every worker printed its RESULT."""
    from tqdm.auto import tqdm

    results: dict[int, dict[str, Any]] = {}
    ticks: dict[int, tuple[int, ...]] = {}
    deadline = time.monotonic() + spec.duration_s + spec.timeout_s + RESULT_MARGIN_S
    bar = tqdm(total=round(spec.duration_s), unit="s", disable=not progress, file=sys.stderr, leave=False)
    with bar:
        while len(results) < len(workers):
            if time.monotonic() > deadline:
                raise ProcessTimeout(f"load workers sent no result within {spec.duration_s + spec.timeout_s + RESULT_MARGIN_S:g} s")
            for i, w in enumerate(workers):
                if i in results:
                    continue
                try:
                    tick = w.wait_progress(timeout=POLL_S)
                except ProcessTimeout:
                    continue
                if tick is None:
                    results[i] = w.result
                else:
                    ticks[i] = tick  # second, answers, errors
                    answers, errors = sum(t[1] for t in ticks.values()), sum(t[2] for t in ticks.values())
                    bar.set_postfix(answers=answers, errors=errors, refresh=False)
                    bar.update(max(0, min(t[0] for t in ticks.values()) - bar.n))
    return [results[i] for i in range(len(workers))]


def run_load(spec: LoadSpec, progress: bool = False) -> LoadResult:
    """Run ``spec`` in its worker processes (default: :func:`default_workers`, half the cores); merge their results."""
    if spec.workers is None:
        spec = dataclasses.replace(spec, workers=default_workers(spec))
    check_descriptors(spec.connections, spec.workers)
    with contextlib.ExitStack() as stack:
        workers = [
            stack.enter_context(open_child(share, namespace=spec.namespace))
            for share in shares(spec)
        ]
        for w in workers:
            w.wait_ready(timeout=START_SECONDS)
        for w in workers:
            w.start()
        parts = _collect(workers, spec, progress)
        for w in workers:
            w.wait(timeout=START_SECONDS)
    return merge(spec, parts)
