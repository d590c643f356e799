"""Whether a value the student's run says it measured could have been measured: the checker's own run decides.

A given cell's ``# measured`` statement (``checks.parameters``) measures something whose value the
checks take from the student's run, so that a check compares an answer with the measurement it
came from. A student could type that value instead. The checker therefore runs the statement too
(beside the submission when the notebook tolerates a neighbour, after it when the notebook is solo),
and compares:

- a ``bool`` is a fact about the machine (``lab_runs``: could the lab run here?), not a magnitude:
  the grader's value replaces the student's;
- numbers, and the numeric columns of a DataFrame, a Series or one of the kit's result dataclasses,
  must lie within :data:`FACTOR` of the checker's (their medians, for columns): two runs of the same
  measurement on one machine differ by tens of percent, a typed value by whatever the student chose.

A typed value within that factor still passes: the check then grades the student's reasoning from
a number close to what the machine measures, which is the exercise's point.
"""

from __future__ import annotations

import math
import re
from typing import Any

from iolab.kit.magnitudes import numbers

# Honest runs of one measurement on a busy two-core machine differ by several times: eight runs of chapter 6's
# trio.to_thread lag (20 jobs of 20 ms) at load average 3.4 spanned 106-389 ms (3.7x), and a ticker's median
# lag of a fraction of a millisecond moves more: in the honest batch beside a CPU burner, chapter 6's offload
# runs gave a lag_p50_ms of 0.22 and 2.97 in the student's run against 2.25 and 0.24 in the checker's (10.4x,
# 12.5x). Honest work must not lose a point to that, so 30x: it still refuses a value made up by orders of
# magnitude, not one nudged.
FACTOR = 30.0
# Below this, a magnitude is noise around zero (a lag of 0.1 ms, a share of 0.001): not compared.
FLOOR = 1e-3
# A table's column whose median is under 1 on either side is not compared: a median lag of a fraction of a
# millisecond moved 0.16 -> 5.4 ms between two honest runs beside a burner (34x). Its other columns still are.
COLUMN_FLOOR = 1.0
# Tail figures (p90, p99, p99.9, max) are a run's worst moments, which a neighbour moves by more than any factor: in the
# honest batch beside a burner, chapter 6's uvloop runs gave a p99 of 3.0 ms in the student's run and 101 ms in the
# checker's (34x), and an honest submission lost pred-uvloop's point. They are not compared; the rate and median are.
TAIL = re.compile(r"(^|_)(p9\d+(_\d+)?|max)(_|$)")


def _close(yours: float, ours: float) -> bool:
    if not (math.isfinite(yours) and math.isfinite(ours)):
        return yours == ours or (math.isnan(yours) and math.isnan(ours))
    if abs(yours) < FLOOR and abs(ours) < FLOOR:
        return True
    if yours * ours <= 0:
        return False
    ratio = yours / ours
    return 1 / FACTOR <= ratio <= FACTOR


def _shown(value: float) -> str:
    return f"{value:,.4g}"


def judge(name: str, yours: Any, ours: Any) -> tuple[Any, str | None]:
    """The value the check should read for ``name``, and why the student's is refused (None if it is not).

    ``yours`` is the student's run's value, ``ours`` the checker's measurement of the same statement.
    """
    if type(ours) is bool:
        return ours, None
    mine, theirs = numbers(yours), numbers(ours)
    if theirs is None:
        return yours, None  # nothing to compare: not a magnitude
    if mine is None or set(mine) != set(theirs):
        return yours, f"not what this notebook measures (the grader's run measured {type(ours).__name__} {_keys(theirs)})"
    for key, value in theirs.items():
        if key and (min(abs(mine[key]), abs(value)) < COLUMN_FLOOR or TAIL.search(key)):
            continue
        if not _close(mine[key], value):
            what = f"`{name}`" + (f"'s {key}" if key else "")
            return yours, (f"not what this notebook measures: {what} is {_shown(mine[key])} in your run and "
                           f"{_shown(value)} in the grader's (more than {FACTOR:g}x apart)")
    return yours, None


def _keys(numbers: dict[str, float]) -> str:
    return "with " + ", ".join(k for k in numbers if k) if any(numbers) else "a number"
