"""The impairments as pure logic: no root, no network, made-up packets."""

from __future__ import annotations

import random

import pytest

from iolab.netlab.impair import Direction, Impairments, simulate


def evenly(n: int, gap_s: float, size: int = 1000) -> list[tuple[float, int]]:
    return [(i * gap_s, size) for i in range(n)]


def test_no_impairment_releases_each_packet_when_it_arrives() -> None:
    assert simulate(Impairments(), evenly(5, 0.01)) == [0.0, 0.01, 0.02, 0.03, 0.04]


def test_delay_shifts_every_packet_by_the_same_time() -> None:
    arrivals = evenly(100, 0.001)
    released = simulate(Impairments(delay_ms=25), arrivals)
    assert all(r - t == pytest.approx(0.025) for r, (t, _) in zip(released, arrivals))


def test_jitter_varies_the_delay_within_its_bounds_but_keeps_the_order() -> None:
    arrivals = evenly(10_000, 0.0005)
    released = simulate(Impairments(delay_ms=20, jitter_ms=5), arrivals, seed=1)
    assert released == sorted(released)  # FIFO: no packet overtakes another
    delays = [r - t for r, (t, _) in zip(released, arrivals)]
    # Never earlier than delay - jitter; later than delay + jitter only by waiting behind a slower packet.
    assert min(delays) >= 0.015 - 1e-9
    assert max(delays) <= 0.025 + 1e-9
    assert max(delays) - min(delays) > 0.008  # it does vary
    # Waiting behind slower packets raises the mean above the nominal delay, but not beyond the bound.
    assert 0.020 < sum(delays) / len(delays) < 0.025


def test_jitter_with_sparse_packets_averages_the_nominal_delay() -> None:
    arrivals = evenly(10_000, 0.1)  # further apart than the jitter: nothing waits
    released = simulate(Impairments(delay_ms=20, jitter_ms=5), arrivals, seed=2)
    mean = sum(r - t for r, (t, _) in zip(released, arrivals)) / len(arrivals)
    assert mean == pytest.approx(0.020, abs=0.0002)


def test_loss_drops_the_given_fraction_of_10000_packets() -> None:
    released = simulate(Impairments(loss=0.05), evenly(10_000, 0.001), seed=3)
    lost = sum(r is None for r in released)
    # Binomial(10000, 0.05): sd ~ 22 packets; 5 sd either side.
    assert 390 <= lost <= 610


def test_loss_is_the_same_with_the_same_seed_and_differs_with_another() -> None:
    imp = Impairments(loss=0.1, jitter_ms=2, delay_ms=5)
    arrivals = evenly(1000, 0.001)
    assert simulate(imp, arrivals, seed=7) == simulate(imp, arrivals, seed=7)
    assert simulate(imp, arrivals, seed=7) != simulate(imp, arrivals, seed=8)


def test_rate_serializes_a_burst_one_packet_after_the_other() -> None:
    # 1250 bytes at 1 Mbit/s: 10 ms each on the wire. A burst arriving at once leaves 10 ms apart.
    released = simulate(Impairments(rate_mbit=1.0), [(0.0, 1250)] * 5)
    assert released == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05])


def test_rate_adds_only_the_serialization_time_when_the_wire_is_idle() -> None:
    released = simulate(Impairments(rate_mbit=8.0, delay_ms=10), evenly(3, 1.0, size=1000))
    assert released == pytest.approx([0.011, 1.011, 2.011])


def test_throughput_through_a_rate_limit_is_the_rate() -> None:
    # Offer 20 Mbit/s to a 10 Mbit/s link with a queue long enough for it all: it drains at 10 Mbit/s.
    arrivals = evenly(2000, 1500 * 8 / 20e6, size=1500)
    released = simulate(Impairments(rate_mbit=10.0, queue_packets=10_000), arrivals)
    assert 2000 * 1500 * 8 / released[-1] == pytest.approx(10e6, rel=0.001)


def test_a_full_queue_drops_what_arrives() -> None:
    # 10 packets arrive at once at a queue of 4: the first 4 wait for the wire, the rest are dropped.
    released = simulate(Impairments(rate_mbit=1.0, queue_packets=4), [(0.0, 1250)] * 10)
    assert [r is not None for r in released] == [True] * 4 + [False] * 6
    # Once the wire has sent two, two places are free again.
    d = Direction(Impairments(rate_mbit=1.0, queue_packets=4))
    for _ in range(4):
        d.admit(0.0, 1250)
    assert d.admit(0.0201, 1250) is not None and d.admit(0.0201, 1250) is not None
    assert d.admit(0.0201, 1250) is None
    assert (d.counters.passed, d.counters.overflowed) == (6, 1)


def test_changing_the_impairments_keeps_the_order() -> None:
    d = Direction(Impairments(delay_ms=50), random.Random(0))
    first = d.admit(0.0, 100)
    d.impairments = Impairments(delay_ms=0)
    assert d.admit(0.001, 100) == first  # waits for the slower packet ahead instead of overtaking it


@pytest.mark.parametrize("bad", [dict(delay_ms=-1), dict(loss=1.5), dict(rate_mbit=0), dict(queue_packets=0)])
def test_nonsense_settings_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        Impairments(**bad)
