"""The numbers in a measured value: what a run's result is worth comparing, by name.

A measured name in an exercise holds a number, a pandas Series or DataFrame (a sweep's table), or a
kit result (a dataclass). :func:`numbers` reduces each to its magnitudes: the number itself, a
column's median, a result's numeric fields. The grader compares a student's value with its own
measurement by them (``homework.plausible``), and a student edition keeps them in the notebook's
output for the class's figures (``student.record``).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any


def numbers(value: Any) -> dict[str, float] | None:
    """The magnitudes to compare in ``value``, by name (medians for columns, "" for a lone number); None if it has none."""
    if type(value) in (int, float):
        return {"": float(value)}
    pandas = sys.modules.get("pandas")  # a value can only be a pandas object if pandas is already imported
    if pandas is not None and isinstance(value, pandas.Series):
        numeric = pandas.to_numeric(value, errors="coerce").dropna()
        return {"": float(numeric.median())} if len(numeric) else None
    if pandas is not None and isinstance(value, pandas.DataFrame):
        numeric = value.select_dtypes("number")
        return {str(c): float(numeric[c].median()) for c in numeric.columns if numeric[c].notna().any()} or None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {k: float(v) for k, v in fields.items() if type(v) in (int, float)} or None
    return None


def key(name: str, column: str) -> str:
    """One magnitude's name: ``name`` for a lone number, ``name:column`` for a table's column (``runs:lag_ms``)."""
    return f"{name}:{column}" if column else name
