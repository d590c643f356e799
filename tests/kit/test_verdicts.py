"""iolab.kit.verdicts: the interval chooses the words, and a noisy or short run says so."""

from __future__ import annotations

import numpy as np
import pytest

from iolab.kit import verdicts


def test_a_clear_difference_is_higher_with_an_interval_around_the_ratio():
    c = verdicts.compare([300, 310, 295], [100, 102, 99])
    assert c.verdict == "higher"
    assert c.low <= c.ratio <= c.high and c.low > 2.5 and c.high < 3.3
    assert c.words("faster", "slower").startswith("faster (")


def test_the_other_way_round_is_lower():
    assert verdicts.compare([100, 102, 99], [300, 310, 295]).verdict == "lower"


def test_a_tight_equal_pair_is_the_same_within_the_noise():
    c = verdicts.compare([100, 101, 99, 100], [100, 99, 101, 100])
    assert c.verdict == "same" and c.words().startswith("the same within the noise")


def test_an_overlap_wider_than_the_band_is_undecided():
    c = verdicts.compare([70, 100, 130], [100, 101, 99])
    assert c.verdict == "undecided" and "not decided" in c.words()


def test_a_small_difference_inside_the_band_is_not_called_a_direction():
    # 4 % apart, every run: a real difference, but smaller than the noise band of loopback runs
    c = verdicts.compare([104, 104.1, 103.9], [100, 100.1, 99.9])
    assert c.low > 1 and c.verdict == "same"


def test_too_few_runs_and_unstable_runs_are_warned_about():
    assert "too few" in verdicts.compare([1.0, 1.1], [1.0, 1.0, 1.0], names=("pre-fork", "asyncio")).warning
    assert "unstable" in verdicts.compare([1.0, 1.5, 2.0], [1.0, 1.0, 1.0]).warning
    assert verdicts.compare([1.0, 1.01, 0.99], [1.0, 1.0, 1.0]).warning == ""


def test_many_samples_are_compared_by_their_medians_and_the_same_data_gives_the_same_words():
    rng = np.random.default_rng(1)
    a, b = rng.exponential(2.0, 50_000), rng.exponential(1.0, 50_000)
    first, second = verdicts.compare(a, b), verdicts.compare(a, b)
    assert first == second and first.verdict == "higher" and 1.8 < first.ratio < 2.2
    assert first.warning == "", "a run's many samples are not repeats: their spread is no instability"


def test_nothing_to_compare_is_a_clear_error():
    with pytest.raises(ValueError, match="nothing to compare"):
        verdicts.compare([], [1.0])
    with pytest.raises(ValueError, match="median is 0"):
        verdicts.compare([1.0], [0.0, 0.0])
