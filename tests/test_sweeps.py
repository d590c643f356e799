"""``iolab.sweeps``: one row per (server, load, repeat), and spread statistics per group."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from iolab import sweeps


def test_a_sweep_has_one_row_per_server_load_and_repeat_with_their_settings() -> None:
    df = sweeps.sweep(
        [{"model": "asyncio"}, {"model": "prefork", "workers": 1}],
        [{"connections": 1, "duration_s": 0.3}, {"connections": 3, "duration_s": 0.3}],
        repeats=2, warmup_s=0.2, progress=False,
    )
    assert len(df) == 2 * 2 * 2
    assert set(df.columns) >= {"model", "workers", "connections", "repeat", "rps", "p99_ms", "never_served"}
    assert (df.rps > 0).all()
    # one keep-alive client per pre-fork child: with 3 clients and 1 child, 2 were never served
    assert df.query("model == 'prefork' and connections == 3").never_served.eq(2).all()
    assert df.query("model == 'asyncio'").never_served.eq(0).all()


def test_spread_is_the_range_over_the_median_in_percent() -> None:
    df = pd.DataFrame({"k": ["a", "a", "a", "b"], "rps": [90.0, 100.0, 120.0, 50.0]})
    stats = sweeps.spread(df, ["k"]).set_index("k")
    assert stats.loc["a", "rps_median"] == 100.0
    assert stats.loc["a", "spread_pct"] == pytest.approx(30.0)
    assert stats.loc["b", "spread_pct"] == 0.0 and stats.loc["b", "runs"] == 1


def test_an_interleaved_sweep_loads_every_server_in_each_repeat() -> None:
    df = sweeps.sweep(
        [{"model": "asyncio"}, {"model": "iterative"}],
        [{"connections": 1, "duration_s": 0.2}],
        repeats=2, warmup_s=0, progress=False, interleave=True,
    )
    assert list(zip(df.repeat, df.model)) == [(0, "asyncio"), (0, "iterative"), (1, "asyncio"), (1, "iterative")]
    assert (df.rps > 0).all()


def test_a_failed_run_stops_the_servers_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(spec):
        raise RuntimeError("load failed")

    monkeypatch.setattr(sweeps, "run_load", fail)
    with pytest.raises(RuntimeError) as failure:
        sweeps.sweep([{"model": "iterative"}, {"model": "iterative"}], [{"connections": 1}], warmup_s=0,
                     progress=False, interleave=True)
    # The traceback keeps the sweep's frame alive (as a notebook keeps its last error): the servers must not.
    assert failure.traceback
    import psutil
    assert not psutil.Process().children(recursive=True)


def test_the_warm_up_follows_the_first_load_and_gives_up_soon() -> None:
    # Keep-alive clients beyond a pre-fork server's one child would wait out a 5 s timeout in the
    # warm-up; the load itself opens a connection per request, and so does its warm-up.
    start = time.monotonic()
    df = sweeps.sweep([{"model": "prefork", "workers": 1}], [{"connections": 4, "duration_s": 0.3, "keepalive": False}],
                      warmup_s=0.3, progress=False)
    assert time.monotonic() - start < 3.5
    assert df.never_served.eq(0).all()
