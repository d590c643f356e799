"""iolab.topics.asyncio_trio.looplag: the ticker sees a blocked loop, on asyncio and on trio."""

from __future__ import annotations

import asyncio
import time

import pytest
import trio

from iolab.kit import runners
from iolab.topics.asyncio_trio import looplag
from iolab.web import julia

BLOCK_MS = 60


def block() -> None:
    julia.julia_for_ms(BLOCK_MS)  # CPU work without an await: the loop can run nothing else


BLOCKED_MS: list[float] = []  # how long each block() took, measured: the Julia calibration varies per process


async def watched(watch, sleep, blocks: bool) -> looplag.LagProbe:
    async with watch() as probe:
        await sleep(0.05)
        if blocks:
            started = time.perf_counter()
            block()
            BLOCKED_MS.append((time.perf_counter() - started) * 1000)
        await sleep(0.05)
    return probe


LIBRARIES = {
    "asyncio": lambda blocks: runners.run_asyncio(watched, looplag.open_asyncio_ticker, asyncio.sleep, blocks),
    "trio": lambda blocks: runners.run_trio(watched, looplag.open_trio_ticker, trio.sleep, blocks),
}


@pytest.mark.solo  # measures CPU time or timing: needs the cores to itself
@pytest.mark.parametrize("library", list(LIBRARIES))
def test_a_blocking_call_shows_as_lag_as_long_as_the_block(library):
    blocked, idle = LIBRARIES[library](True), LIBRARIES[library](False)
    assert blocked.summary()["lag_max_ms"] > BLOCKED_MS[-1] * 0.6, (blocked.summary()["lag_max_ms"], BLOCKED_MS[-1])
    assert idle.summary()["lag_max_ms"] < blocked.summary()["lag_max_ms"]
    assert blocked.summary()["stalled_pct"] > idle.summary()["stalled_pct"]


def test_summary_percentiles_use_nearest_rank():
    probe = looplag.LagProbe(0.001)
    start = probe.started
    for i, lag in enumerate([1.0, 2.0, 3.0, 4.0, 100.0]):
        probe.record(start + i * 0.01, start + i * 0.01 + lag / 1000)
    row = probe.summary()
    assert row["wakeups"] == 5
    assert row["lag_p50_ms"] == pytest.approx(3.0)
    assert row["lag_p99_ms"] == pytest.approx(100.0)
    assert row["lag_max_ms"] == pytest.approx(100.0)


def test_an_empty_probe_summarises_to_nan():
    row = looplag.LagProbe(0.001).summary()
    assert row["wakeups"] == 0 and row["lag_max_ms"] != row["lag_max_ms"]


def spin(seconds: float) -> None:
    """CPU work without an await that lasts ``seconds`` by the clock, however loaded the machine is."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def test_debug_mode_logs_a_slow_callback_and_names_the_task():
    async def blocks() -> None:
        spin(BLOCK_MS / 1000)  # a calibrated Julia set ran under 30 ms once beside the parallel stage

    async def main() -> None:
        asyncio.get_running_loop().slow_callback_duration = 0.03
        await asyncio.create_task(blocks(), name="blocker")

    with looplag.capture_slow_callbacks() as messages:
        runners.run_asyncio(main, debug=True)
    assert any("took" in m and "blocker" in m for m in messages), messages
    with looplag.capture_slow_callbacks() as quiet:
        runners.run_asyncio(main)
    assert quiet == [], "without debug mode, asyncio says nothing"


def test_capture_hears_asyncio_when_the_root_logger_is_quieter():
    import logging

    root, before = logging.getLogger(), logging.getLogger().level
    root.setLevel(logging.ERROR)  # setLevel, not an attribute: it clears the loggers' cached verdicts
    try:
        with looplag.capture_slow_callbacks() as messages:
            logging.getLogger("asyncio").warning("Executing <Task> took 0.1 seconds")
    finally:
        root.setLevel(before)
    assert messages == ["Executing <Task> took 0.1 seconds"]
    assert logging.getLogger("asyncio").level == logging.NOTSET, "the level is put back"
