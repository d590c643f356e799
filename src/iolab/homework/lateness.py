"""Late work: how late each submission was, and what the class's policy takes off for it.

How late comes from, in this order:

- the due date: ``--due`` (``DUE=``, an ISO date-time, UTC unless it says otherwise), or a later one for
  one student and notebook from ``--extensions`` (a CSV of ``student, notebook, due``); the notebook's
  file time against it, every started day counting one (intake gives a file the time the LMS's zip
  holds for it, not the time it was unpacked);
- Canvas's ``_LATE`` mark, kept by intake in ``lateness.csv`` (``student, notebook``): late by one
  day at least, unless an extension covers that notebook (Canvas marked it against the old date).

The policy (``--late-policy``): ``none`` (recorded and shown, nothing taken off) or ``PCT-per-day``,
each started day late costing PCT % of the notebook's points, at most ``--late-cap`` % in all. The
grades CSV keeps every exercise's points before the penalty and, when any of this is given, gains two
columns, ``late_days`` and ``penalty`` (the percent taken off the whole notebook, the same on each of
its rows); the gradebook holds the points after it, the feedback says both.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

MARKS = "lateness.csv"  # intake: one row per notebook Canvas marked late
CANVAS_LATE = re.compile(r"(?:^|_)LATE_")  # Canvas's "hopper_LATE_777_..." and "LATE_anon_..."
POLICY = re.compile(r"^(?P<pct>\d+(?:\.\d+)?)-per-day$")
DAY = timedelta(days=1)


@dataclass(frozen=True)
class Policy:
    """What a day late costs, in percent of a notebook's points, and at most in all."""

    per_day: float = 0.0
    cap: float = 100.0

    @classmethod
    def parse(cls, text: str, cap: float | None = None) -> Policy:
        """``none`` or ``PCT-per-day``, capped at ``cap`` percent; ``ValueError`` naming the forms it takes."""
        match = POLICY.match(text.strip())
        if text.strip() != "none" and not match:
            raise ValueError(f"--late-policy {text}: not 'none' nor 'PCT-per-day' (e.g. 10-per-day)")
        if cap is not None and not 0 <= cap <= 100:
            raise ValueError(f"--late-cap {cap:g}: not a percent between 0 and 100")
        return cls(float(match["pct"]) if match else 0.0, 100.0 if cap is None else cap)

    def penalty(self, days: int) -> float:
        """The percent taken off for ``days`` started days late."""
        return min(self.per_day * days, self.cap)


@dataclass(frozen=True)
class Late:
    """One submission's lateness: started days late, and the percent the policy takes off."""

    days: int
    penalty: float

    def words(self) -> str:
        """As the feedback says it: "submitted 2 days late: -20 %"."""
        late = f"submitted {self.days} day{'s' if self.days != 1 else ''} late"
        return f"{late}: -{self.penalty:g} %" if self.penalty else f"{late} (no penalty)"


def parse_due(text: str) -> datetime:
    """An ISO date-time (a bare date is its midnight), in UTC unless it names its zone."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r}: not an ISO date-time (e.g. 2026-11-20T23:59)") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def days_late(submitted: datetime, due: datetime) -> int:
    """Started days from ``due`` to ``submitted``: 0 on time, 1 a minute late."""
    return max(0, math.ceil((submitted - due) / DAY))


def record(out: Path, placed: Iterable[tuple[str | None, Path, zipfile.ZipInfo]]) -> None:
    """What intake keeps of lateness: each file unpacked to ``out`` gets its member's time in the zip (as UTC, not
    the time it was unpacked: ``--due`` compares it), and ``lateness.csv`` the graded notebooks Canvas marked late."""
    marks = []
    for student, path, member in placed:
        if path.is_file():
            when = datetime(*member.date_time, tzinfo=timezone.utc).timestamp()
            os.utime(path, (when, when))
            if student and path.parent == out / student and CANVAS_LATE.search(PurePosixPath(member.filename).name):
                marks.append((student, path.name))
    if marks:
        write_marks(out / MARKS, marks)
    else:  # none late: no file, and none left from an earlier intake into this folder
        (out / MARKS).unlink(missing_ok=True)


def write_marks(path: Path, marks: Iterable[tuple[str, str]]) -> None:
    """``lateness.csv``: the (student, notebook) pairs the LMS marked late."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "notebook"])
        writer.writerows(sorted(set(marks)))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        return [{k.strip(): (v or "").strip() for k, v in row.items() if k} for row in csv.DictReader(f)]


def read_marks(path: Path) -> set[tuple[str, str]]:
    """The pairs :func:`write_marks` wrote; none when there is no file."""
    return {(r["student"], r["notebook"]) for r in _rows(path)} if path.is_file() else set()


def read_extensions(path: Path) -> dict[tuple[str, str], datetime]:
    """(student, notebook stem) -> the later due date, from a CSV of ``student, notebook, due``."""
    found = {}
    for number, row in enumerate(_rows(path), start=2):
        try:
            found[row["student"], row["notebook"].removesuffix(".ipynb")] = parse_due(row["due"])
        except (KeyError, ValueError) as exc:
            raise ValueError(f"--extensions {path}, line {number}: needs student, notebook, due ({exc})") from None
    return found


@dataclass(frozen=True)
class Rules:
    """Everything lateness is judged by: the policy, the due date, the extensions, the LMS's marks."""

    policy: Policy = Policy()
    due: datetime | None = None
    extensions: Mapping[tuple[str, str], datetime] | None = None
    marks: frozenset[tuple[str, str]] = frozenset()

    @property
    def given(self) -> bool:
        """Whether anything was said about lateness (else the grades CSV keeps its columns as they were)."""
        return bool(self.policy.per_day or self.due or self.extensions or self.marks)

    def late(self, submissions: Path, student: str, notebook: str) -> Late:
        """How late ``submissions/student/notebook`` is, and its penalty."""
        extended = (self.extensions or {}).get((student, notebook.removesuffix(".ipynb")))
        due, path, days = extended or self.due, submissions / student / notebook, 0
        if due is not None and path.is_file():
            days = days_late(datetime.fromtimestamp(path.stat().st_mtime, timezone.utc), due)
        if extended is None and (student, notebook) in self.marks:
            days = max(days, 1)  # Canvas says late, not by how much
        return Late(days, self.policy.penalty(days))


def lateness(submissions: Path, pairs: Iterable[tuple[str, str]], rules: Rules) -> dict[tuple[str, str], Late]:
    """(student, notebook) -> :class:`Late`, for each pair that names a notebook."""
    return {(s, n): rules.late(submissions, s, n) for s, n in set(pairs) if n}


def annotate(grades: Path, late: Mapping[tuple[str, str], Late]) -> None:
    """Add ``late_days`` and ``penalty`` to each row of the grades CSV (replaced whole, never half written)."""
    with grades.open(newline="") as f:
        reader = csv.DictReader(f)
        header = [c for c in reader.fieldnames or [] if c not in ("late_days", "penalty")]
        rows = list(reader)
    with open_replacement(grades) as temporary, temporary.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*header, "late_days", "penalty"], extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            found = late.get((row["student"], row["notebook"]), Late(0, 0.0))
            writer.writerow({**row, "late_days": found.days, "penalty": f"{found.penalty:g}"})


@contextlib.contextmanager
def open_replacement(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` to write; renamed over ``path`` when the block ends, removed if it raises:
    ``path`` is the old file or the whole new one, never half written."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        yield temporary
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)


def replace_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` over ``path``, all or nothing (:func:`open_replacement`)."""
    with open_replacement(path) as temporary:
        frame.to_csv(temporary, index=False)
