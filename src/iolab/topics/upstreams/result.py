"""What one run of the service measured, and the figures source 001 reports, computed from it.

The service records every request (arrival, start of its call, end, outcome), so every figure is
exact: overhead percentiles are order statistics of all requests, as in the source's tool, not
estimates. The lab kit's HDR histograms (:mod:`iolab.load.histogram`) would do for the healthy
runs, but they stop at 60 s, and a collapsed sync service makes requests wait for minutes; with
at most 10^5 requests a run, the plain arrays cost less than a megabyte.

- *rate*: successful answers per second of the run, counted by the second they completed in. As in
  the source, the average and standard deviation leave out the first and last seconds, which are
  partial (see :func:`rate_window`).
- *overhead*: what the service added to the upstream's own latency: the end of the request minus
  its arrival minus the endpoint's latency from the spec. It includes the wait for a free thread.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from iolab.load.histogram import percentile_key
from iolab.topics.upstreams.service import LATE, OK, REJECTED, UNFINISHED
from iolab.topics.upstreams.spec import ANSWER, Endpoint, parse_spec

# The overhead percentiles the source's tool prints.
PERCENTILES = (0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0)
# Percentiles for the p0..p100 curve (the source's "overhead by percentile" plots).
CURVE = tuple(np.concatenate([np.linspace(0, 90, 19), np.linspace(91, 99, 9), [99.5, 99.9, 99.99, 100]]))
# Rate samples for comparisons: a quarter of a second holds 250 answers at 1,000 req/s, enough to be a
# rate, and a 3 s run still gives eight of them.
RATE_SLICE_S = 0.25
# Tail samples: a p99 of 500 requests rests on its 5 slowest, and a 3 s run at 1,000 req/s gives six.
TAIL_BLOCK = 500


# Settings that mean nothing for a model, left out of its summary.
_NOT_APPLICABLE = {"sync": ("loop", "limit", "limit_scope"), "async": ("threads",)}


def window_bounds(counts: np.ndarray, cut: bool = False) -> tuple[int, int] | None:
    """The seconds ``[start, end)`` the average is taken over: those strictly between the first second
    that saw a success and the last one; None if no second saw one.

    Those two are partial: the first misses the answers still on their way, the last ends with the
    run. (Source 001's tool drops two seconds at each end; one suffices.) The last second is the
    last success's, or, for a run ``cut`` by its time limit with requests still waiting, the
    limit's: the seconds in which a stuck service answered nothing count too. With fewer than
    three seconds there is nothing to drop.
    """
    seen = np.flatnonzero(counts)
    if len(seen) == 0:
        return None
    first, last = int(seen[0]), (len(counts) - 1 if cut else int(seen[-1]))
    return (first + 1, last) if last - first >= 2 else (first, last + 1)


def rate_window(counts: np.ndarray, cut: bool = False) -> np.ndarray:
    """The per-second counts the average is taken over (see :func:`window_bounds`)."""
    bounds = window_bounds(counts, cut)
    return counts[:0] if bounds is None else counts[bounds[0] : bounds[1]]


@dataclass(frozen=True)
class UpstreamsResult:
    """One run: its settings, each request's fate (arrays, one entry per request), memory samples."""

    settings: dict[str, Any]  # the RunSpec as a dict, plus "model" details
    endpoints: tuple[Endpoint, ...]
    seconds: float  # the run's length, from the first arrival to its end
    started: np.ndarray  # s since the first arrival; NaN: the call never began
    done: np.ndarray  # s since the first arrival; NaN: no end (unfinished, or late and still hanging)
    kind: np.ndarray  # outcome per request: ok, late, timeout, refused, reset, rejected, unfinished...
    samples: pd.DataFrame = field(repr=False)  # t_s, rss_kb, fds: the service's memory and descriptors over time
    cpu_s: float = 0.0  # CPU the service process used during the run

    # --- per request ---------------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Requests in the run."""
        return len(self.kind)

    @property
    def arrival(self) -> np.ndarray:
        """Each request's arrival, s since the first: ``i / rate``."""
        return np.arange(self.n) / self.settings["rate"]

    @property
    def upstream_s(self) -> np.ndarray:
        """The latency of the endpoint each request went to (round robin); NaN for a fault."""
        per_endpoint = np.array([e.latency_s if e.kind == ANSWER else np.nan for e in self.endpoints])
        return per_endpoint[np.arange(self.n) % len(self.endpoints)]

    @property
    def ok(self) -> np.ndarray:
        """True for the requests answered 200 in time."""
        return self.kind == OK

    @property
    def overhead_ms(self) -> np.ndarray:
        """Overhead of each successful request, in ms, in arrival order."""
        ok = self.ok
        return (self.done[ok] - self.arrival[ok] - self.upstream_s[ok]) * 1000

    @property
    def mean_call_s(self) -> float:
        """The mean duration of a call (start to outcome), over the requests that made one."""
        made = ~np.isnan(self.started) & ~np.isnan(self.done) & (self.kind != REJECTED)
        return float(np.mean(self.done[made] - self.started[made])) if made.any() else float("nan")

    # --- counts --------------------------------------------------------------------------------

    @property
    def succeeded(self) -> int:
        """Requests answered in time."""
        return int(self.ok.sum())

    @property
    def unfinished(self) -> int:
        """Requests with no outcome when the run hit its time limit."""
        return int((self.kind == UNFINISHED).sum())

    @property
    def failed(self) -> int:
        """Requests that ended without a useful answer (late, refused, timeout, rejected...)."""
        return self.n - self.succeeded - self.unfinished

    def failures(self) -> dict[str, int]:
        """Failed requests by kind."""
        return dict(Counter(k for k in self.kind.tolist() if k not in (OK, UNFINISHED)))

    # --- rates ---------------------------------------------------------------------------------

    def rate_per_second(self) -> np.ndarray:
        """Successful answers completed in each second of the run, from second 0."""
        bins = max(1, int(np.ceil(self.seconds)))
        seconds = np.floor(self.done[self.ok]).astype(int)
        return np.bincount(np.clip(seconds, 0, bins - 1), minlength=bins)

    @property
    def avg_rate(self) -> float:
        """Average successful answers per second over the full seconds of the run (source 001's figure)."""
        window = rate_window(self.rate_per_second(), cut=self.unfinished > 0)
        return float(window.mean()) if len(window) else 0.0

    def rate_samples(self, slice_s: float = RATE_SLICE_S) -> np.ndarray:
        """Successful answers per second in each ``slice_s`` slice of the seconds :attr:`avg_rate` averages.

        One run's many samples of its rate, for comparing two runs with their spread
        (:func:`iolab.kit.verdicts.compare`): a 3 s run has only two full seconds, but eight
        quarter-seconds. Their mean is :attr:`avg_rate`, up to a slice cut by the window's end.
        """
        bounds = window_bounds(self.rate_per_second(), cut=self.unfinished > 0)
        if bounds is None:
            return np.zeros(0)
        start, end = bounds
        edges = np.arange(start, end + slice_s / 2, slice_s)
        if len(edges) < 2:
            return np.zeros(0)
        done = self.done[self.ok]
        counts: np.ndarray = np.histogram(done[done < edges[-1]], bins=edges)[0]  # half-open, as the seconds are
        return counts / slice_s

    @property
    def stddev_rate(self) -> float:
        """Standard deviation of the per-second rate over the same seconds."""
        window = rate_window(self.rate_per_second(), cut=self.unfinished > 0)
        return float(window.std()) if len(window) else 0.0

    # --- latency -------------------------------------------------------------------------------

    def overhead_percentiles(self, percentiles: tuple[float, ...] = PERCENTILES) -> dict[str, float]:
        """Overhead in ms at each percentile, keyed p0, p50 ... p99_9 ... p100 (NaN if nothing succeeded)."""
        values = self.overhead_ms
        if not len(values):
            return {percentile_key(p): float("nan") for p in percentiles}
        # inverted_cdf: every percentile is an observed request, as in the source's tool.
        found = np.percentile(values, percentiles, method="inverted_cdf")
        return {percentile_key(p): float(v) for p, v in zip(percentiles, found)}

    def tail_samples(self, block: int = TAIL_BLOCK, percentile: float = 99.0) -> np.ndarray:
        """The overhead percentile (ms) of each run of ``block`` successful requests, in arrival order.

        One run's p99 is one number; the p99s of its consecutive blocks are many, and their spread is
        what a comparison of two runs' tails needs (the batch-means method of simulation studies). A
        last block shorter than ``block`` is left out.
        """
        values = self.overhead_ms
        whole = len(values) // block
        if whole == 0:
            return np.zeros(0)
        blocks = values[: whole * block].reshape(whole, block)
        found: np.ndarray = np.percentile(blocks, percentile, axis=1, method="inverted_cdf")
        return found

    def overhead_curve(self) -> pd.DataFrame:
        """Overhead (ms) from p0 to p100: the source's percentile plots; columns percentile, overhead_ms."""
        values = self.overhead_ms
        found = np.percentile(values, CURVE, method="inverted_cdf") if len(values) else np.full(len(CURVE), np.nan)
        return pd.DataFrame({"percentile": CURVE, "overhead_ms": found})

    # --- over time -----------------------------------------------------------------------------

    def load_at(self, t: np.ndarray) -> pd.DataFrame:
        """At each time ``t`` (s): requests arrived, waiting for a thread (queued), in a call (in_flight)."""
        started = np.sort(np.nan_to_num(self.started, nan=np.inf))
        done_started = np.sort(np.where(np.isnan(self.started), np.inf, np.nan_to_num(self.done, nan=np.inf)))
        arrived = np.searchsorted(self.arrival, t, side="right")
        began = np.searchsorted(started, t, side="right")
        ended = np.searchsorted(done_started, t, side="right")
        return pd.DataFrame({"t_s": t, "arrived": arrived, "queued": arrived - began, "in_flight": began - ended})

    def memory_timeline(self) -> pd.DataFrame:
        """The service's RSS (MiB) and open descriptors over time, with the requests queued and in flight."""
        load = self.load_at(self.samples.t_s.to_numpy())
        return load.assign(rss_mb=self.samples.rss_kb.to_numpy() / 1024, fds=self.samples.fds.to_numpy())

    def timeline(self) -> pd.DataFrame:
        """One row per second: rps (successes completed), failed, p50/p90/p99 overhead, queued, in flight.

        The overhead of second ``s`` is that of the answers completed in it: what the users answered
        then had gone through. ``partial`` marks the seconds the rate average leaves out.
        """
        rps = self.rate_per_second()
        seconds = np.arange(len(rps))
        seen = np.flatnonzero(rps)
        last = len(rps) - 1 if self.unfinished else (seen[-1] if len(seen) else 0)
        full = (seconds > seen[0]) & (seconds < last) if len(seen) and last - seen[0] >= 2 else np.ones(len(rps), bool)
        # A late call still hanging failed when it became late.
        end = np.where(np.isnan(self.done), self.started + self.settings["late_s"], self.done)
        ended = np.floor(np.nan_to_num(end, nan=-1)).astype(int)
        bad = ~self.ok & (self.kind != UNFINISHED)
        failed = np.bincount(np.clip(ended[bad], 0, len(rps) - 1), minlength=len(rps))
        frame = pd.DataFrame({"second": seconds, "rps": rps, "failed": failed, "partial": ~full})
        completed = np.floor(self.done[self.ok]).astype(int)
        overhead = pd.Series(self.overhead_ms).groupby(completed)
        for p in (50, 90, 99):
            frame[f"p{p}_ms"] = overhead.quantile(p / 100, interpolation="higher").reindex(seconds).to_numpy()
        load = self.load_at(seconds + 1.0)
        return frame.assign(queued=load.queued.to_numpy(), in_flight=load.in_flight.to_numpy())

    # --- records -------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The headline figures, JSON-ready: avg_rate, stddev_rate, overhead_ms, succeeded, failed..."""
        settings = {k: v for k, v in self.settings.items() if k not in _NOT_APPLICABLE[self.settings["model"]]}
        return {
            **settings,
            "avg_rate": round(self.avg_rate, 3),
            "stddev_rate": round(self.stddev_rate, 3),
            "overhead_ms": {k: round(v, 3) for k, v in self.overhead_percentiles().items()},
            "succeeded": self.succeeded,
            "failed": self.failed,
            "failed_by_kind": self.failures(),
            "unfinished": self.unfinished,
            "seconds": round(self.seconds, 3),
            "mean_call_ms": round(self.mean_call_s * 1000, 3),
            "service_cpu_s": self.cpu_s,
            "peak_rss_mb": round(float(self.samples.rss_kb.max()) / 1024, 1) if len(self.samples) else None,
        }

    def row(self) -> dict[str, Any]:
        """A flat row for tables: settings, rate, overhead percentiles (ms), counts."""
        d = self.summary()
        overhead = {f"overhead_{k}_ms": v for k, v in d.pop("overhead_ms").items()}
        d.pop("failed_by_kind")
        return d | overhead

    @classmethod
    def from_record(cls, settings: dict[str, Any], record: dict[str, Any]) -> UpstreamsResult:
        """The result from the service's RESULT record and the settings of the run."""
        samples = pd.DataFrame(record["samples"], columns=["t_s", "rss_kb", "fds"])
        as_float = lambda xs: np.array([np.nan if x is None else x for x in xs], dtype=float)  # noqa: E731
        return cls(
            settings=settings,
            endpoints=parse_spec(settings["latency"]),
            seconds=record["seconds"],
            started=as_float(record["started"]),
            done=as_float(record["done"]),
            kind=np.array(record["kind"], dtype=object),
            samples=samples,
            cpu_s=record["cpu_s"],
        )


__all__ = ["LATE", "PERCENTILES", "RATE_SLICE_S", "TAIL_BLOCK", "UpstreamsResult", "rate_window", "window_bounds"]
