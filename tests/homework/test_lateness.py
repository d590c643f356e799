"""Late work: Canvas's late mark kept by intake, file times against a due date, a policy with a cap, extensions,
and what the grades CSV, the gradebook and the feedback then say.

The Canvas download and gradebook export are those of ``canvas_files``, whose docstring cites where in
Canvas's source each shape is made (``doecyd_LATE_1003_...``: Cyd's upload, marked late).
"""

from __future__ import annotations

import csv
import os
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import canvas_files
from iolab.homework import intake, lateness, reports
from iolab.homework.grading import Row
from iolab.homework.lateness import Late, Policy, Rules

DUE = datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc)
NOTEBOOK = "02-blocking.ipynb"


def _rows() -> list[Row]:
    return [Row(s, NOTEBOOK, ex, 2.0, 2.0, "passed", "", 1.0) for s in ("ada", "cyd") for ex in ("ex-a", "ex-b")]


def _submitted(folder: Path, student: str, when: datetime) -> Path:
    path = folder / student / NOTEBOOK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def test_the_policy_reads_none_a_percent_per_day_and_a_cap_and_refuses_anything_else() -> None:
    assert Policy.parse("none") == Policy(0.0, 100.0)
    assert Policy.parse("10-per-day").penalty(3) == 30
    assert Policy.parse("10-per-day", cap=50).penalty(9) == 50
    with pytest.raises(ValueError, match="--late-policy 10%: not 'none' nor 'PCT-per-day'"):
        Policy.parse("10%")
    with pytest.raises(ValueError, match="--late-cap 150"):
        Policy.parse("10-per-day", cap=150)


def test_every_started_day_after_the_due_date_counts() -> None:
    assert [lateness.days_late(DUE + delta, DUE) for delta in
            (-DUE.resolution, timedelta(0), timedelta(minutes=1), timedelta(days=1), timedelta(days=1, seconds=1))
            ] == [0, 0, 1, 1, 2]
    assert lateness.parse_due("2026-11-20T23:59") == DUE  # no zone: UTC
    with pytest.raises(ValueError, match="not an ISO date-time"):
        lateness.parse_due("Friday")


def test_intake_keeps_canvas_late_mark_and_the_zip_time_of_each_file(tmp_path: Path) -> None:
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in canvas_files.DOWNLOAD.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(2026, 11, 21, 10, 30, 0)), data)
    export = tmp_path / "export.csv"
    export.write_text(canvas_files.EXPORT)
    out = tmp_path / "subs"
    intake.intake(archive, export, out, {NOTEBOOK})
    assert lateness.read_marks(out / lateness.MARKS) == {("cdoe", NOTEBOOK)}
    stamp = datetime(2026, 11, 21, 10, 30, tzinfo=timezone.utc).timestamp()
    assert (out / "alovelace" / NOTEBOOK).stat().st_mtime == stamp
    # without a due date Canvas's mark alone says late: one day at least, no penalty without a policy
    rules = Rules(marks=frozenset(lateness.read_marks(out / lateness.MARKS)))
    assert rules.late(out, "cdoe", NOTEBOOK) == Late(1, 0.0) and rules.late(out, "alovelace", NOTEBOOK) == Late(0, 0.0)
    # with DUE, the zip's time decides: 10 h 31 min late is one started day for everyone
    assert Rules(Policy.parse("10-per-day"), DUE).late(out, "alovelace", NOTEBOOK) == Late(1, 10.0)


def test_no_policy_records_lateness_and_shows_it_without_taking_points_off(tmp_path: Path) -> None:
    _submitted(tmp_path, "cyd", DUE + timedelta(days=1, hours=2))
    assert not Rules().given and Rules(due=DUE).given  # nothing said: the grades CSV keeps its columns
    late = lateness.lateness(tmp_path, [("cyd", NOTEBOOK)], Rules(due=DUE))
    assert late == {("cyd", NOTEBOOK): Late(2, 0.0)}
    table = reports.gradebook(_rows(), late=late)
    assert table.iloc[1:]["02-blocking"].to_list() == [4.0, 4.0]
    assert "**Late:** submitted 2 days late (no penalty)" in reports.feedback_text("cyd", NOTEBOOK, _rows()[2:], late=late[
        "cyd", NOTEBOOK])


def test_a_per_day_penalty_comes_off_the_gradebook_and_the_points_before_it_stay_in_the_feedback(tmp_path: Path) -> None:
    _submitted(tmp_path, "ada", DUE - timedelta(hours=1))
    _submitted(tmp_path, "cyd", DUE + timedelta(days=1, hours=2))
    late = lateness.lateness(tmp_path, [(r.student, r.notebook) for r in _rows()], Rules(Policy.parse("10-per-day"), DUE))
    assert late == {("ada", NOTEBOOK): Late(0, 0.0), ("cyd", NOTEBOOK): Late(2, 20.0)}
    assert reports.gradebook(_rows(), late=late).iloc[1:]["02-blocking"].to_list() == [4.0, 3.2]
    text = reports.feedback_text("cyd", NOTEBOOK, _rows()[2:], late=late["cyd", NOTEBOOK])
    assert text.startswith(f"# {NOTEBOOK}: 4 of 4 points")
    assert "**Late:** submitted 2 days late: -20 % (3.2 of 4 points after it)" in text


def test_the_cap_bounds_the_penalty(tmp_path: Path) -> None:
    _submitted(tmp_path, "cyd", DUE + timedelta(days=8))
    rules = Rules(Policy.parse("10-per-day", cap=50), DUE)
    assert rules.late(tmp_path, "cyd", NOTEBOOK) == Late(8, 50.0)


def test_an_extension_moves_one_students_due_date_and_overrides_canvas_mark(tmp_path: Path) -> None:
    _submitted(tmp_path, "ada", DUE + timedelta(days=2))
    _submitted(tmp_path, "cyd", DUE + timedelta(days=2))
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("student,notebook,due\ncyd,02-blocking,2026-11-23T12:00\n")
    rules = Rules(Policy.parse("10-per-day"), DUE, lateness.read_extensions(extensions),
                  frozenset({("cyd", NOTEBOOK)}))
    assert rules.late(tmp_path, "cyd", NOTEBOOK) == Late(0, 0.0)
    assert rules.late(tmp_path, "ada", NOTEBOOK) == Late(2, 20.0)
    extensions.write_text("student,notebook\ncyd,02-blocking\n")
    with pytest.raises(ValueError, match="line 2: needs student, notebook, due"):
        lateness.read_extensions(extensions)


def test_the_grades_csv_gains_late_days_and_penalty_on_every_row(tmp_path: Path) -> None:
    grades = tmp_path / "grades.csv"
    grades.write_text("student,notebook,exercise,points\nada,02-blocking.ipynb,ex-a,2.0\ncyd,02-blocking.ipynb,ex-a,2.0\n")
    lateness.annotate(grades, {("cyd", NOTEBOOK): Late(2, 20.0)})
    lateness.annotate(grades, {("cyd", NOTEBOOK): Late(2, 20.0)})  # again: the columns are not doubled
    with grades.open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["student"], r["points"], r["late_days"], r["penalty"]) for r in rows] == [
        ("ada", "2.0", "0", "0"), ("cyd", "2.0", "2", "20")]
    assert list(rows[0]) == ["student", "notebook", "exercise", "points", "late_days", "penalty"]
    assert not list(tmp_path.glob(".*.tmp"))
