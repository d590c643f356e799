"""The public checks' predicates: a number is a number whatever made it; the messages show the type."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iolab.kit import expect


def test_ints_floats_and_numpy_scalars_are_numbers_but_bools_strings_and_nan_are_not() -> None:
    frame = pd.DataFrame({"syncs": [3], "ms": [1.5]})
    for value in (150, 150.0, np.float64(1.5), np.int64(3), frame.syncs.iloc[0], frame.ms.iloc[0], np.float32(2)):
        assert expect.number(value), value
    for value in (True, "150", None, float("nan"), float("inf"), [1], np.array([1.0])):
        assert not expect.number(value), value


def test_whole_fraction_lists_and_choices() -> None:
    assert expect.whole(3) and expect.whole(np.int64(3)) and expect.whole(3.0) and not expect.whole(3.5)
    assert expect.fraction(0.47) and not expect.fraction(47) and not expect.fraction(-0.1)
    assert expect.numbers_in([1, 2.5, np.int64(3)], length=3) and not expect.numbers_in([1, "2"]) and not expect.numbers_in((1,), length=2)
    assert expect.choice("cancelled", ("cancelled", "answer later")) and not expect.choice("Cancelled", ("cancelled",))


def test_shown_names_the_type_where_the_repr_hides_it() -> None:
    assert expect.shown(43) == "43" and expect.shown("43") == "'43'"
    assert "int64" in expect.shown(np.int64(3))
    assert expect.shown(True) == "True (a bool)"
