"""What a check cell's public asserts ask of an answer, said in a student's terms.

A number is a number whatever made it: ``150``, ``150.0``, ``np.float64(150.0)`` and the ``np.int64``
that ``frame.column.iloc[0]`` returns all pass :func:`number`. A check uses these as predicates and
writes its own message, with :func:`shown` for the value it got::

    assert expect.number(last_done_ms), f"last_done_ms: a number of ms, not {expect.shown(last_done_ms)}"
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any


def number(value: Any) -> bool:
    """A finite real number: an int, a float or a NumPy scalar (not a bool, not a string of digits)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def whole(value: Any) -> bool:
    """A whole number: an int, a NumPy integer, or a float with nothing after the point (``3.0``)."""
    return number(value) and float(value).is_integer()


def fraction(value: Any) -> bool:
    """A number from 0 to 1 (a share, not a percentage)."""
    return number(value) and 0 <= value <= 1


def numbers_in(values: Any, length: int | None = None) -> bool:
    """A list or tuple of :func:`number` s (of ``length`` of them, when given)."""
    return (isinstance(values, (list, tuple)) and all(number(v) for v in values)
            and (length is None or len(values) == length))


def choice(value: Any, choices: Sequence[str]) -> bool:
    """One of ``choices``, written exactly so (they are listed in the question)."""
    return isinstance(value, str) and value in choices


def shown(value: Any) -> str:
    """``value`` as a check's message shows it: its repr and, where the repr hides it, its type."""
    text = repr(value)
    kind = type(value).__name__
    if kind in ("str", "int", "float", "list", "tuple", "dict", "NoneType") or kind in text:
        return text
    return f"{text} (a {kind})"
