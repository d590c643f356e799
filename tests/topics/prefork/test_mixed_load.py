"""iolab.topics.prefork.mixed_load: a Julia set computed in the event loop delays everyone; in a worker it does not."""

from __future__ import annotations

import pytest

from iolab.load.comparisons import Variant
from iolab.topics.prefork import mixed_load


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_julia_in_the_loop_delays_the_tiny_route_and_prefork_does_not() -> None:
    results = {}
    for variant in (Variant("asyncio", "asyncio"), Variant("prefork", "prefork", 4)):
        with variant.open() as server:
            results[variant.label] = mixed_load.mixed_sweep(server.url, server.pid, [0, 2], duration_s=1.0).set_index("julia_clients")
    loop, prefork = results["asyncio"], results["prefork"]
    assert loop.loc[2, "julia_rps"] > 0 and loop.loc[0, "julia_rps"] == 0
    # One Julia set is ~20 ms: the loop's tiny answers wait behind them, the pre-fork ones mostly do not.
    assert loop.loc[2, "tiny_p50_ms"] > 10 and loop.loc[2, "tiny_p50_ms"] > 3 * loop.loc[0, "tiny_p50_ms"]
    assert prefork.loc[2, "tiny_p50_ms"] < loop.loc[2, "tiny_p50_ms"]
    assert (loop.tiny_errors == 0).all() and (prefork.tiny_errors == 0).all()


def test_waiting_for_a_busy_server_gives_up_with_a_clear_message() -> None:
    with Variant("asyncio", "asyncio").open() as server:
        with pytest.raises(TimeoutError, match="background load"):
            mixed_load.wait_until_busy(server.pid, cpu_s=1.0, timeout_s=0.3)


def test_background_clients_stop_with_their_block() -> None:
    import threading
    import time

    with Variant("asyncio", "asyncio").open() as server:
        with mixed_load.open_background_clients(server.url, "/", 2) as stats:
            deadline = time.monotonic() + 10
            while stats.answers < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
    assert stats.answers >= 20 and stats.errors == 0 and stats.rps > 0
    assert not [t for t in threading.enumerate() if t.name.startswith("background-")]
