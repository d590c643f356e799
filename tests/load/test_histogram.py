"""The latency histogram: percentiles within HDR precision, merging, and the wire format."""

from __future__ import annotations

import random

import pytest

from iolab.load.histogram import HIGHEST_US, Histogram, percentile_key

# 3 significant digits: any reported value is within 0.1 % of the true one (plus 1 us of rounding).
REL = 1e-3


def filled(values: list[int]) -> Histogram:
    h = Histogram()
    for v in values:
        h.record(v)
    return h


def test_percentiles_of_1_to_10000_us_are_the_order_statistics_in_ms() -> None:
    p = filled(list(range(1, 10_001))).percentiles()
    assert list(p) == ["p50", "p90", "p99", "p99_9", "p99_99", "max"]
    expected = {"p50": 5.0, "p90": 9.0, "p99": 9.9, "p99_9": 9.99, "p99_99": 9.999, "max": 10.0}
    for key, ms in expected.items():
        assert p[key] == pytest.approx(ms, rel=REL, abs=0.002), key


def test_percentiles_of_a_skewed_sample_match_numpy_within_hdr_precision() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(7)
    values = [int(rng.lognormvariate(6, 1.2)) + 1 for _ in range(50_000)]
    p = filled(values).percentiles()
    for q in (50, 90, 99, 99.9):
        exact = float(np.percentile(values, q, method="inverted_cdf")) / 1000
        assert p[percentile_key(q)] == pytest.approx(exact, rel=2 * REL, abs=0.002), q
    assert p["max"] == pytest.approx(max(values) / 1000, rel=REL)


def test_a_single_value_is_every_percentile() -> None:
    p = filled([1234]).percentiles()
    assert all(v == pytest.approx(1.234, rel=REL) for v in p.values())


def test_empty_histogram_reports_zeros_not_an_error() -> None:
    assert set(Histogram().percentiles().values()) == {0.0}


def test_merge_of_two_equals_one_fed_both() -> None:
    rng = random.Random(1)
    a_values = [rng.randint(50, 900) for _ in range(3000)]
    b_values = [rng.randint(5_000, 2_000_000) for _ in range(500)]
    merged = filled(a_values).merge(filled(b_values))
    both = filled(a_values + b_values)
    assert merged.count == both.count == 3500
    assert merged.percentiles() == both.percentiles()
    assert Histogram.merged([filled(a_values), filled(b_values)]).percentiles() == both.percentiles()


def test_encode_decode_round_trip_keeps_every_count() -> None:
    h = filled([1, 7, 7, 250, 99_999, 3_000_000])
    text = h.encode()
    assert isinstance(text, str) and text.isascii()
    back = Histogram.decode(text)
    assert back.count == 6
    assert back.percentiles() == h.percentiles()
    assert Histogram.decode(Histogram().encode()).count == 0


def test_out_of_range_values_are_clamped_not_lost() -> None:
    h = filled([0, -5, HIGHEST_US * 10])
    assert h.count == 3
    assert h.percentiles()["max"] == pytest.approx(HIGHEST_US / 1000, rel=REL)


def test_record_seconds_converts_to_microseconds() -> None:
    h = Histogram()
    h.record_seconds(0.0025)
    assert h.percentiles()["p50"] == pytest.approx(2.5, rel=REL)


def test_mean_matches_the_sample_mean_within_hdr_precision() -> None:
    rng = random.Random(3)
    values = [rng.randint(1, 100_000) for _ in range(20_000)]
    assert filled(values).mean_us() == pytest.approx(sum(values) / len(values), rel=REL)
    assert Histogram().mean_us() == 0.0
