"""What one run measured, computed from its per-request arrays (no servers: the arrays are made up)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iolab.topics.upstreams.experiments import rate_samples, table, tail_samples
from iolab.topics.upstreams.result import UpstreamsResult, rate_window, window_bounds
from iolab.topics.upstreams.service import OK
from iolab.topics.upstreams.spec import parse_spec


def a_run(done: np.ndarray, rate: float = 1000.0, latency: str = "20ms", unfinished: int = 0,
          threads: int | None = None) -> UpstreamsResult:
    """A run whose requests all succeeded, ending at ``done`` (s since the first arrival); sync with ``threads``."""
    n = len(done)
    kind = np.array([OK] * n + ["unfinished"] * unfinished, dtype=object)
    return UpstreamsResult(
        settings={"rate": rate, "latency": latency, "late_s": 1.0,
                  **({"model": "async"} if threads is None else {"model": "sync", "threads": threads})},
        endpoints=parse_spec(latency), seconds=float(np.nanmax(done)) if n else 0.0,
        started=np.concatenate([done - 0.02, np.full(unfinished, np.nan)]),
        done=np.concatenate([done, np.full(unfinished, np.nan)]), kind=kind,
        samples=pd.DataFrame(columns=["t_s", "rss_kb", "fds"]),
    )


def test_the_window_leaves_out_the_first_and_last_seconds_and_its_slices_average_to_the_rate() -> None:
    done = np.arange(3000) / 1000 + 0.02  # 1,000 req/s for 3 s, each answered 20 ms after it arrived
    run = a_run(done)
    assert window_bounds(run.rate_per_second()) == (1, 3)
    assert list(rate_window(run.rate_per_second())) == [1000, 1000]
    slices = run.rate_samples()
    assert len(slices) == 8 and np.allclose(slices, 1000)
    assert np.isclose(slices.mean(), run.avg_rate)


def test_a_run_that_answered_nothing_has_no_rate_samples() -> None:
    assert len(a_run(np.array([])).rate_samples()) == 0


def test_a_stalled_second_shows_as_slices_of_zero() -> None:
    done = np.concatenate([np.arange(1000) / 1000, 4 + np.arange(2000) / 1000])  # nothing answered in seconds 1 to 3
    slices = a_run(done, unfinished=5).rate_samples()  # cut by its time limit: the window runs to its last second
    assert list(slices) == [0] * 12 + [1000] * 4


def test_tail_samples_are_one_percentile_per_block_of_answers() -> None:
    arrival = np.arange(1500) / 1000
    done = arrival + 0.020 + np.where(np.arange(1500) % 100 == 99, 0.050, 0.001)  # one slow answer in a hundred
    tails = a_run(done).tail_samples(block=500)
    assert len(tails) == 3 and np.allclose(tails, 1.0)  # p99 of 500: the 495th, still a fast one
    assert np.allclose(a_run(done).tail_samples(block=500, percentile=99.9), 50.0)


def test_tidy_tables_name_the_scenario_and_the_run() -> None:
    runs = {"sync": a_run(np.arange(3000) / 1000 + 0.02), "async": a_run(np.arange(3000) / 1000 + 0.02)}
    rates, tails = rate_samples(runs, "healthy"), tail_samples(runs, "healthy")
    assert set(rates.run) == {"sync", "async"} and (rates.scenario == "healthy").all() and len(rates) == 16
    assert list(tails.columns) == ["scenario", "run", "block", "p99_ms"] and len(tails) == 12


def test_the_table_gives_each_sync_run_its_threads_from_its_settings_not_from_its_rate() -> None:
    done = np.arange(3000) / 1000 + 0.02
    runs = table({"sync": a_run(done, threads=200), "async": a_run(done)})
    assert runs.threads["sync"] == 200 and np.isnan(runs.threads["async"])
    assert runs.avg_rate["sync"] == runs.avg_rate["async"] == 1000
