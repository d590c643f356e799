"""The shared argument types refuse a bad number with a reason, and take a good one as it is."""

from __future__ import annotations

import argparse
import math

import pytest

from iolab.commands.argtypes import duration, non_negative_int, positive_int, seconds, seconds_between


def test_counts_refuse_what_is_below_their_floor() -> None:
    assert positive_int("3") == 3 and non_negative_int("0") == 0
    with pytest.raises(argparse.ArgumentTypeError, match="not a positive number"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match="negative"):
        non_negative_int("-1")


@pytest.mark.parametrize("text", ["0", "-1", "nan"])
def test_seconds_refuses_zero_negative_and_nan(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a positive number of seconds"):
        seconds(text)


def test_seconds_between_keeps_its_bounds_and_names_them() -> None:
    within = seconds_between(0, 3600)
    assert within("0") == 0 and within("3600") == 3600 and within("2.5") == 2.5
    with pytest.raises(argparse.ArgumentTypeError, match=r"5000.0 s: give 0 to 3600 s"):
        within("5000")
    with pytest.raises(ValueError):  # argparse says "invalid seconds value", after the function's name
        within("abc")
    assert within.__name__ == "seconds"


def test_duration_reads_plain_seconds_and_units() -> None:
    assert duration("0.5") == 0.5
    assert math.isclose(duration("20ms"), 0.02)
    with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
        duration("3xs")
