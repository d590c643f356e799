"""A value the student's run says it measured, beside the checker's own measurement of it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from iolab.homework import plausible


def test_a_number_within_the_factor_stands_and_one_beyond_it_is_refused_with_both_values():
    assert plausible.judge("lag_ms", 30.0, 20.0) == (30.0, None)
    value, why = plausible.judge("lag_ms", 1000.0, 20.0)
    assert value == 1000.0 and "1,000 in your run and 20 in the grader's" in why
    assert plausible.judge("lag_ms", -20.0, 20.0)[1] is not None  # another sign
    assert plausible.judge("share", 0.0001, 0.0)[1] is None  # both noise around zero


def test_a_fact_is_the_graders_whatever_the_student_says():
    assert plausible.judge("lab_runs", False, True) == (True, None)
    assert plausible.judge("lab_runs", None, False) == (False, None)


def test_a_frame_is_compared_column_by_column_on_medians():
    ours = pd.DataFrame({"workers": [1, 2], "rps": [9000.0, 9500.0]})
    assert plausible.judge("noise", pd.DataFrame({"workers": [1, 2], "rps": [8000.0, 12000.0]}), ours)[1] is None
    typed = pd.DataFrame({"workers": [1, 2], "rps": [100.0, 2_000_000.0]})
    assert "`noise`'s rps" in plausible.judge("noise", typed, ours)[1]
    assert "not what this notebook measures" in plausible.judge("noise", 5.0, ours)[1]


@dataclass(frozen=True)
class Result:
    rate: float
    label: str


def test_a_result_object_is_compared_on_its_numeric_fields_and_other_values_are_not_magnitudes():
    assert plausible.judge("run", Result(900.0, "a"), Result(1000.0, "b"))[1] is None
    assert plausible.judge("run", Result(10.0, "a"), Result(1000.0, "a"))[1] is not None
    assert plausible.judge("name", "typed", "measured") == ("typed", None)


def test_a_columns_median_under_one_on_either_side_is_noise_not_a_forgery():
    ours = pd.DataFrame({"lag_p50_ms": [0.16, 0.2], "rps": [9000.0, 9500.0]})
    assert plausible.judge("runs", pd.DataFrame({"lag_p50_ms": [5.4, 5.5], "rps": [9100.0, 9200.0]}), ours)[1] is None
    typed = pd.DataFrame({"lag_p50_ms": [5.4, 5.5], "rps": [10.0, 12.0]})
    assert "`runs`'s rps" in plausible.judge("runs", typed, ours)[1]


def test_tail_columns_are_not_compared_and_the_rate_and_median_still_are():
    ours = pd.DataFrame({"rps": [1000.0, 1100.0], "p50_ms": [2.0, 2.2], "p99_ms": [101.3, 90.0], "max_ms": [400.0, 300.0]})
    honest = pd.DataFrame({"rps": [1200.0, 1150.0], "p50_ms": [1.9, 2.1], "p99_ms": [3.0, 3.1], "max_ms": [5.0, 6.0]})
    assert plausible.judge("loops", honest, ours)[1] is None  # a burner's tail 34x the student's: both honest
    typed = honest.assign(rps=[1e6, 1e6])
    assert "rps" in (plausible.judge("loops", typed, ours)[1] or "")
