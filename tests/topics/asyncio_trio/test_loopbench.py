"""iolab.topics.asyncio_trio.loopbench: the event-loop benchmarks run real servers and report every run."""

from __future__ import annotations

import pytest

from iolab.topics.asyncio_trio import loopbench


def test_compare_loops_interleaves_models_and_serves_without_errors():
    df = loopbench.compare_loops(["asyncio", "uvloop"], connections=4, duration_s=0.5, repeats=2)
    assert list(df.model) == ["asyncio", "uvloop", "asyncio", "uvloop"]
    assert (df.rps > 0).all() and (df.errors == 0).all()
    assert (df.p99_ms >= df.p50_ms).all()


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_an_inline_julia_set_delays_tiny_requests_by_about_its_own_cost():
    df = loopbench.tiny_route_beside_cpu(False, julia_ms=60, julia_clients=1, rate=50, duration_s=1.0, alone_first=True)
    alone, beside = df.set_index("case").loc["alone"], df.set_index("case").loc["beside Julia"]
    assert alone.julia_rps == 0 and beside.julia_rps > 0
    assert (df.errors == 0).all() and (df.requests > 0).all()
    # A tiny request that arrives during a 60 ms computation waits for the rest of it.
    assert beside.max_ms > 30
    assert beside.max_ms > alone.max_ms


@pytest.mark.parametrize("rps, rounds", [(lambda n: 1000.0 + n % 2, 2), (lambda n: 1000.0 + 500 * (n % 2), 4)])
def test_compare_loops_stops_once_the_runs_agree(monkeypatch, rps, rounds):
    calls = []

    class Fake:
        def __init__(self, n):
            self.errors, self.n = {}, n

        def to_dict(self):
            return {name: 1.0 for name in loopbench.FIGURES} | {"rps": rps(self.n)}

    def fake_run(spec):
        calls.append(spec.url)
        return Fake(sum(url == spec.url for url in calls))  # the model's own run count: steady or alternating

    monkeypatch.setattr(loopbench, "run_load", fake_run)
    df = loopbench.compare_loops(["asyncio", "uvloop"], repeats=4, until_spread_pct=10)
    assert sorted(df.repeat.unique()) == list(range(rounds))
    assert len(df) == 2 * rounds
