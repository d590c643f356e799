"""The chapter's experiments as calls that return tidy tables: runs side by side, laws, published figures.

``run_all({"sync": RunSpec(...), "async": RunSpec(...)})`` runs each spec once; specs with the same
latency spec share one upstreams process. The table functions take what ``run_all`` returned.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby

import numpy as np
import pandas as pd

from iolab.kit import plots, results
from iolab.topics.upstreams.result import UpstreamsResult
from iolab.topics.upstreams.run import RunSpec, run_service
from iolab.topics.upstreams.endpoints import Upstreams, open_upstreams
from iolab.topics.upstreams.service import ServiceSpec
from iolab.topics.upstreams.spec import ANSWER, parse_spec

SOURCE = "001"
# The book's colour for each model: a thread pool is "threaded", an event loop "asyncio".
COLORS = {"sync": plots.PALETTE["threaded"], "async": plots.PALETTE["asyncio"], "published": plots.PALETTE["published"]}


def probe(upstreams: Upstreams, timeout_s: float = 0.5) -> pd.DataFrame:
    """Call each endpoint once, blocking, as a sync worker would: its outcome and how long it took."""
    import time

    from iolab.topics.upstreams.sync import BlockingCaller

    spec = ServiceSpec("sync", 1.0, 1, upstreams.endpoints, upstreams.ports, timeout_s=timeout_s)
    caller = BlockingCaller(spec)
    rows = []
    for e, endpoint in enumerate(upstreams.endpoints):
        start = time.perf_counter()
        outcome = caller.call(e)
        rows.append({"endpoint": endpoint.label, "port": upstreams.ports[e], "outcome": outcome, "ms": (time.perf_counter() - start) * 1000})
    caller.close()
    return pd.DataFrame(rows)


def versus(rate: float, latency: str, seconds: float, threads: int = 50, **common) -> dict[str, RunSpec]:
    """The source's pair of runs: ``sync --threads N`` and ``async``, ``rate * seconds`` requests each."""
    num_req = max(1, round(rate * seconds))
    return {
        "sync": RunSpec(rate, num_req, latency, "sync", threads=threads, **common),
        "async": RunSpec(rate, num_req, latency, "async", **common),
    }


def run_all(specs: dict[str, RunSpec], progress: bool = False) -> dict[str, UpstreamsResult]:
    """Run every spec, in order; consecutive specs with the same latency share the upstreams."""
    done: dict[str, UpstreamsResult] = {}
    for latency, group in groupby(specs.items(), key=lambda item: parse_spec(item[1].latency)):
        with open_upstreams(latency) as upstreams:
            for label, spec in group:
                done[label] = run_service(spec, upstreams, progress)
    return done


def _tidy(runs: dict[str, UpstreamsResult], frame: Callable[[UpstreamsResult], pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([frame(r).assign(run=label) for label, r in runs.items()], ignore_index=True)


def table(runs: dict[str, UpstreamsResult]) -> pd.DataFrame:
    """One row per run: its pool (threads, sync only), rate and its standard deviation, overhead
    percentiles (ms), counts."""
    rows = []
    for label, r in runs.items():
        p = r.overhead_percentiles()
        rows.append(
            {
                "run": label,
                "threads": r.settings["threads"] if r.settings["model"] == "sync" else np.nan,
                "avg_rate": r.avg_rate,
                "stddev_rate": r.stddev_rate,
                "overhead_p50_ms": p["p50"],
                "overhead_p99_ms": p["p99"],
                "overhead_p100_ms": p["p100"],
                "succeeded": r.succeeded,
                "failed": r.failed,
                "unfinished": r.unfinished,
                "seconds": r.seconds,
                "mean_call_ms": r.mean_call_s * 1000,
                "service_cpu_s": r.cpu_s,
            }
        )
    return pd.DataFrame(rows).set_index("run")


def timelines(runs: dict[str, UpstreamsResult]) -> pd.DataFrame:
    """Per second of each run: rps, failed, p50/p90/p99 overhead, queued, in flight; a ``run`` column."""
    return _tidy(runs, UpstreamsResult.timeline)


def rate_samples(runs: dict[str, UpstreamsResult], scenario: str) -> pd.DataFrame:
    """Each run's rate in quarter-seconds (:meth:`UpstreamsResult.rate_samples`): columns scenario, run, slice, rps.

    The samples a claim compares two runs' rates on, with their spread; tidy, so that the chapter's
    scenarios go in one table (``results.save``) and the reference run's can be read back.
    """
    frames = [pd.DataFrame({"scenario": scenario, "run": label, "slice": np.arange(len(s)), "rps": s})
              for label, r in runs.items() for s in [r.rate_samples()]]
    return pd.concat(frames, ignore_index=True)


def tail_samples(runs: dict[str, UpstreamsResult], scenario: str) -> pd.DataFrame:
    """Each run's p99 overhead per block of 500 answers (:meth:`UpstreamsResult.tail_samples`): scenario, run, block, p99_ms."""
    frames = [pd.DataFrame({"scenario": scenario, "run": label, "block": np.arange(len(s)), "p99_ms": s})
              for label, r in runs.items() for s in [r.tail_samples()]]
    return pd.concat(frames, ignore_index=True)


def curves(runs: dict[str, UpstreamsResult]) -> pd.DataFrame:
    """Overhead from p0 to p100 of each run; a ``run`` column."""
    return _tidy(runs, UpstreamsResult.overhead_curve)


def memory_timelines(runs: dict[str, UpstreamsResult]) -> pd.DataFrame:
    """Each run's RSS and requests in flight, sampled every 0.1 s; a ``run`` column."""
    return _tidy(runs, UpstreamsResult.memory_timeline)


def law_rate(spec: RunSpec, call_s: float | None = None) -> float:
    """Successful answers per second the bandwidth law allows ``spec``'s sync pool.

    ``threads / mean call time``, capped by the arrival rate, times the share of calls that
    succeed. The mean call time is that of the spec's endpoints (an answer takes its latency, a
    refusal or a reset nothing, a hang the timeout) unless ``call_s`` gives a measured one.
    A call slower than the caller's deadline (``late_s``) is counted as a failure, as in the runs.
    """
    endpoints = parse_spec(spec.latency)
    hang = spec.timeout_s if spec.timeout_s is not None else np.inf
    cost = [min(e.latency_s, spec.timeout_s or np.inf) if e.kind == ANSWER else (hang if e.kind == "hang" else 0.0) for e in endpoints]
    good = [e.kind == ANSWER and e.latency_s < spec.late_s and e.latency_s < (spec.timeout_s or np.inf) for e in endpoints]
    mean_call = call_s if call_s is not None else float(np.mean(cost))
    calls_per_s = min(spec.rate, spec.threads / mean_call) if mean_call > 0 else spec.rate
    return calls_per_s * float(np.mean(good))


def bandwidth_sweep(thread_counts: list[int], latency: str, rate: float, seconds: float, progress: bool = False) -> pd.DataFrame:
    """Sync pools of each size under the same load: measured rate against the bandwidth law."""
    specs = {
        f"{n} threads": RunSpec(rate, round(rate * seconds), latency, "sync", threads=n, max_seconds=seconds + 1)
        for n in thread_counts
    }
    runs = run_all(specs, progress)
    return pd.DataFrame(
        {
            "threads": thread_counts,
            "law_rps": [law_rate(specs[k]) for k in specs],
            "measured_rps": [runs[k].avg_rate for k in specs],
            "overhead_p99_ms": [runs[k].overhead_percentiles()["p99"] for k in specs],
        }
    )


def published(experiment: str) -> pd.DataFrame:
    """Source 001's figures for ``experiment`` (e.g. ``upstreams-one-down-30s``): quantity -> value."""
    rows = results.published(SOURCE)
    return rows[rows.experiment == experiment].set_index("quantity")[["value", "unit"]]


def published_rates(experiment: str) -> dict[str, tuple[float, float]]:
    """model -> (average rate, its standard deviation) as source 001 printed them."""
    rows = published(experiment).value
    return {m: (float(rows[f"{m} rate"]), float(rows.get(f"{m} rate sd", np.nan))) for m in ("sync", "async")}


def side_by_side(scenarios: dict[str, str], runs: dict[str, dict[str, UpstreamsResult]]) -> pd.DataFrame:
    """Published vs measured average rate for each scenario and model.

    ``scenarios`` maps a scenario label to its experiment in data/published.csv; ``runs`` maps the
    same label to what :func:`run_all` returned for ``versus(...)``.
    """
    rows = []
    for label, experiment in scenarios.items():
        pub = published_rates(experiment)
        for model, result in runs[label].items():
            rows.append(
                {
                    "scenario": label,
                    "model": model,
                    "published_rps": pub[model][0],
                    "published_sd": pub[model][1],
                    "measured_rps": result.avg_rate,
                    "measured_sd": result.stddev_rate,
                }
            )
    return pd.DataFrame(rows)
