"""Regrade a few students (``--students ada,bob``) without touching the rest of the class.

Their folders are graded alone (copied, file times kept, into a scratch folder), their new rows
replace theirs in the class's grades CSV, the other students' rows stay as they were, and each
exercise whose points changed gets a line in ``SUBMISSIONS/history.csv``: when (UTC), student,
notebook, exercise, old points, new points, why (``--reason``, default "regrade"). Every file is
replaced whole (a temporary file renamed over it), so a crash leaves the old one.
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from iolab.homework import batch
from iolab.homework.grading import GRADES_COLUMNS, Row
from iolab.homework.lateness import open_replacement

HISTORY = "history.csv"
HISTORY_COLUMNS = ["when", "student", "notebook", "exercise", "old_points", "new_points", "why"]
REASON = "regrade"
NUMBERS = {"points", "max_points", "seconds"}


def check(submissions: Path, grades: Path, students: Iterable[str]) -> tuple[str, ...]:
    """The students to regrade, each with a folder in ``submissions``; ``ValueError`` naming those without one,
    or saying there is no grades CSV to merge into."""
    wanted = tuple(dict.fromkeys(s.strip() for s in students if s.strip()))
    if not wanted:
        return ()
    missing = [s for s in wanted if not (submissions / s).is_dir()]
    if missing:
        raise ValueError(f"no folder in {submissions} for {', '.join(missing)}")
    if not grades.is_file():
        raise ValueError(f"no {grades} to merge into: grade the whole class first")
    return wanted


def read_rows(path: Path) -> list[Row]:
    """The rows of a grades CSV (columns it has beyond a row's, such as ``late_days``, left out)."""
    names = GRADES_COLUMNS
    with path.open(newline="") as f:
        return [Row(**{k: float(row[k]) if k in NUMBERS else row.get(k) or "" for k in names})  # type: ignore[arg-type]
                for row in csv.DictReader(f)]


def write_rows(rows: Iterable[Row], path: Path) -> list[Row]:
    """Write a grades CSV all at once (:func:`~iolab.homework.lateness.open_replacement`)."""
    with open_replacement(path) as temporary:
        return batch.write_csv(rows, temporary)


def merge(old: list[Row], new: list[Row], students: Iterable[str]) -> list[Row]:
    """The class's rows with ``students``' replaced by ``new``: the others' as they were, in their order."""
    again = set(students)
    return [r for r in old if r.student not in again] + new


def changes(old: list[Row], new: list[Row], students: Iterable[str]) -> Iterator[tuple[str, str, str, str, str]]:
    """(student, notebook, exercise, old points, new points) for each exercise of ``students`` whose points changed
    (an exercise graded only once has an empty side)."""
    again = set(students)
    before = {(r.student, r.notebook, r.exercise): r.points for r in old if r.student in again and r.exercise}
    after = {(r.student, r.notebook, r.exercise): r.points for r in new if r.exercise}
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            was, now = before.get(key), after.get(key)
            yield (*key, "" if was is None else f"{was:g}", "" if now is None else f"{now:g}")


def append_history(path: Path, lines: Iterable[tuple[str, str, str, str, str]], why: str,
                   when: datetime | None = None) -> int:
    """Append a line per change to ``history.csv`` (its header first if it is new); how many."""
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [[stamp, *line, why] for line in lines]
    new = not path.is_file()
    with path.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(HISTORY_COLUMNS)
        writer.writerows(rows)
    return len(rows)


def regrade(submissions: Path, grades: Path, students: tuple[str, ...], why: str,
            grade: Callable[[Path], Iterable[Row]]) -> list[Row]:
    """Grade ``students``' folders with ``grade`` (a folder -> its rows), merge their rows into ``grades``, append
    what changed to ``history.csv``; the class's rows, merged."""
    old = read_rows(grades)
    with tempfile.TemporaryDirectory(prefix="iolab-regrade-") as scratch:
        for student in students:  # copies, not links: a linked student folder is refused by the grader
            shutil.copytree(submissions / student, Path(scratch) / student)
        new = list(grade(Path(scratch)))
    rows = write_rows(merge(old, new, students), grades)
    append_history(submissions / HISTORY, changes(old, new, students), why)
    return rows
