"""Amdahl's law and the 90%-waiting request against the kit's asyncio server."""

from __future__ import annotations

import math

import pytest

from iolab.topics.c10k import amdahl


def test_amdahl_bounds_a_faster_tenth_to_one_ninth_faster():
    assert amdahl.amdahl_speedup(0.1, 1) == 1
    assert amdahl.amdahl_speedup(0.1, 2) == pytest.approx(1 / 0.95)
    assert amdahl.amdahl_speedup(0.1, math.inf) == pytest.approx(1 / 0.9)


def test_predicted_throughput_grows_with_clients_until_the_cpu_is_full():
    assert amdahl.predicted_rps(1, 10, 90) == pytest.approx(10)
    assert amdahl.predicted_rps(5, 10, 90) == pytest.approx(50)
    assert amdahl.predicted_rps(50, 10, 90) == pytest.approx(100)  # one core, 10 ms each


def test_more_clients_at_once_serve_more_requests_than_a_faster_cpu_part():
    # 5 ms of CPU in a 95 ms request: four clients keep the server's core busy a fifth of the time,
    # so the four-fold gain leaves room for a busy machine.
    df = amdahl.sweep([1, 4], [5, 1], wait_ms=90, duration_s=1.5).set_index(["cpu_ms", "clients"])
    concurrency_gain = df.rps[5, 4] / df.rps[5, 1]
    cpu_gain = df.rps[1, 1] / df.rps[5, 1]
    assert concurrency_gain > 2
    assert cpu_gain < 1.3  # Amdahl: at most 95/91 with one client, plus noise
    assert concurrency_gain > cpu_gain
    assert (df.wait_step_ms >= 90).all()
