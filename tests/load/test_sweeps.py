"""``iolab.load.sweeps``: one row per (server, load, repeat), and spread statistics per group."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from iolab.load import sweeps


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


class FakeServer:
    """Records when it starts, is warmed up and stops."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def __enter__(self) -> FakeServer:
        self.log.append(f"start {self.name}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append(f"stop {self.name}")


@pytest.mark.parametrize("interleave, expected", [
    (False, ["start A", "warm A", "0 A", "1 A", "stop A", "start B", "warm B", "0 B", "1 B", "stop B"]),
    (True, ["start A", "start B", "warm A", "warm B", "0 A", "0 B", "1 A", "1 B", "stop B", "stop A"]),
])
def test_servers_take_turns_one_after_another_or_interleaved(interleave: bool, expected: list[str]) -> None:
    log: list[str] = []
    openers = [lambda name=name: FakeServer(name, log) for name in "AB"]
    warm = lambda server: log.append(f"warm {server.name}")  # noqa: E731
    with sweeps.open_in_turns(openers, 2, interleave=interleave, warm_up=warm) as turns:
        for repeat, index, server in turns:
            assert server.name == "AB"[index]
            log.append(f"{repeat} {server.name}")
    assert log == expected


def test_leaving_the_turns_early_stops_the_running_servers() -> None:
    log: list[str] = []
    openers = [lambda name=name: FakeServer(name, log) for name in "AB"]
    with pytest.raises(RuntimeError), sweeps.open_in_turns(openers, interleave=True) as turns:
        for _ in turns:
            raise RuntimeError("a run failed")
    assert log == ["start A", "start B", "stop B", "stop A"]


class FakeRun:
    """Stands in for ``run_load``: requests/s from ``rps(url, how many runs that url has had)``."""

    def __init__(self, rps) -> None:
        self.rps, self.calls, self.runs = rps, 0, {}

    def __call__(self, spec):
        self.calls += 1
        self.runs[spec.url] = self.runs.get(spec.url, 0) + 1
        return FakeResult(self.rps(spec.url, self.runs[spec.url]))


class FakeResult:
    def __init__(self, rps: float) -> None:
        self.rps, self.errors = rps, {}

    def to_dict(self) -> dict[str, float]:
        return {name: 0 for name in sweeps.FIGURES} | {"rps": self.rps}


@pytest.mark.parametrize("interleave", [False, True])
def test_a_steady_sweep_stops_after_two_rounds(monkeypatch: pytest.MonkeyPatch, interleave: bool) -> None:
    fake = FakeRun(lambda url, n: 1000.0 + n % 2)  # 0.1% apart
    monkeypatch.setattr(sweeps, "run_load", fake)
    df = sweeps.sweep([{"model": "iterative"}, {"model": "iterative"}],
                      [{"connections": 1}, {"connections": 2}], repeats=5, warmup_s=0, progress=False,
                      interleave=interleave, until_spread_pct=10)
    assert len(df) == 2 * 2 * 2 and fake.calls == 8
    assert sorted(df.repeat.unique()) == [0, 1]
    assert sweeps.spread(df, ["connections"]).runs.eq(4).all()


@pytest.mark.parametrize("interleave", [False, True])
def test_a_noisy_sweep_runs_every_repeat(monkeypatch: pytest.MonkeyPatch, interleave: bool) -> None:
    fake = FakeRun(lambda url, n: 1000.0 if n % 2 else 1500.0)  # each server's runs 40% apart
    monkeypatch.setattr(sweeps, "run_load", fake)
    df = sweeps.sweep([{"model": "iterative"}, {"model": "iterative"}], [{"connections": 1}], repeats=4,
                      warmup_s=0, progress=False, interleave=interleave, until_spread_pct=10)
    assert len(df) == 2 * 4 and sorted(df.repeat.unique()) == [0, 1, 2, 3]


def test_only_the_noisy_server_repeats_when_servers_take_turns_one_after_another(monkeypatch: pytest.MonkeyPatch) -> None:
    urls: list[str] = []

    def rps(url: str, n: int) -> float:
        if url not in urls:
            urls.append(url)
        return 1000.0 if urls.index(url) == 0 else 1000.0 + 500 * (n % 2)  # the first steady, the second not

    monkeypatch.setattr(sweeps, "run_load", FakeRun(rps))
    df = sweeps.sweep([{"model": "iterative"}, {"model": "iterative"}], [{"connections": 1}], repeats=4,
                      warmup_s=0, progress=False, until_spread_pct=10)
    assert list(df.repeat) == [0, 1, 0, 1, 2, 3]


def test_without_a_spread_a_sweep_runs_every_repeat_even_when_steady(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRun(lambda url, n: 1000.0)
    monkeypatch.setattr(sweeps, "run_load", fake)
    df = sweeps.sweep([{"model": "iterative"}], [{"connections": 1}], repeats=3, warmup_s=0, progress=False)
    assert list(df.repeat) == [0, 1, 2]


@pytest.mark.parametrize("interleave, expected", [
    (False, ["0 A", "1 A", "0 B", "1 B", "2 B"]),
    (True, ["0 A", "0 B", "1 A", "1 B"]),
])
def test_turns_end_when_the_caller_has_enough(interleave: bool, expected: list[str]) -> None:
    log: list[str] = []
    asked: list[tuple[int, int]] = []
    openers = [lambda name=name: FakeServer(name, log) for name in "AB"]

    def enough(repeat: int, index: int) -> bool:
        asked.append((repeat, index))
        return repeat >= (1 if index == 0 or interleave else 2)

    with sweeps.open_in_turns(openers, 4, interleave=interleave, enough=enough) as turns:
        for repeat, index, server in turns:
            log.append(f"{repeat} {server.name}")
    assert [entry for entry in log if not entry.startswith(("start", "stop"))] == expected
    if interleave:
        assert asked == [(0, 1), (1, 1)]  # once a round, after the last server
