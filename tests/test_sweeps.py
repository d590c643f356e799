"""``iolab.sweeps``: one row per (server, load, repeat), and spread statistics per group."""

from __future__ import annotations

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
