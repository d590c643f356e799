"""Grading a class from start to end: every setting that cannot work is refused before any grading, and
the summary says what was written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from homework_notebooks import paste_solutions, tiny_course, write
from iolab.homework import classes, editions, intake, regrade


@pytest.fixture
def course(tmp_path: Path) -> tuple[Path, Path]:
    """(the instructor notebooks' folder, a submissions folder with ada's honest hw.ipynb)."""
    write(tiny_course(), tmp_path / "notebooks" / "hw.ipynb")
    write(paste_solutions(editions.student_edition(tiny_course()), tiny_course()),
          tmp_path / "submissions" / "ada" / "hw.ipynb")
    return tmp_path / "notebooks", tmp_path / "submissions"


def test_prepare_fills_the_defaults_beside_the_submissions(course: tuple[Path, Path]) -> None:
    notebooks, subs = course
    plan = classes.prepare(subs, notebooks, sandboxed=False, time_limit=6)
    assert (plan.out, plan.names, plan.assignments) == (subs / "grades.csv", subs / intake.NAMES, None)
    assert (plan.options.time_limit, plan.options.sandbox, plan.options.private) == (6, "none", None)
    assert plan.announce()[0].endswith(", without a sandbox") and plan.announce()[1].startswith("each held to ")


def test_a_regrade_announces_only_the_notebooks_it_grades(course: tuple[Path, Path]) -> None:
    notebooks, subs = course
    write(paste_solutions(editions.student_edition(tiny_course()), tiny_course()), subs / "bob" / "hw.ipynb")
    assert classes.prepare(subs, notebooks, sandboxed=False).announce()[0].startswith("grading 2 notebooks, ")
    regrade.write_rows([], subs / "grades.csv")  # the class's grades, which a regrade merges into
    again = classes.prepare(subs, notebooks, sandboxed=False, students=["bob"])
    assert again.announce()[0].startswith("grading 1 notebook, one at a time")


@pytest.mark.parametrize("setting, refusal", [
    ({"checks": Path("/no/such/checks")}, "--checks /no/such/checks: no such folder"),
    ({"canvas_gradebook": Path("/no/such.csv")}, "--canvas-gradebook /no/such.csv: no such file"),
])
def test_prepare_refuses_a_setting_that_cannot_work_by_its_flag(course: tuple[Path, Path], setting: dict,
                                                                 refusal: str) -> None:
    notebooks, subs = course
    with pytest.raises(classes.SettingRefused, match=refusal):
        classes.prepare(subs, notebooks, sandboxed=False, **setting)


def test_prepare_refuses_a_missing_folder_a_bad_cap_and_an_unfit_canvas_column(
        course: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    notebooks, subs = course
    with pytest.raises(classes.SettingRefused, match="is not a folder"):
        classes.prepare(subs / "nobody", notebooks, sandboxed=False)
    (subs / intake.CANVAS_GRADEBOOK).write_text("Student,ID,Quiz 3 (99),Quiz 4 (100)\n    Points Possible,,5,5\n")
    with pytest.raises(classes.SettingRefused, match=r"hw: no Canvas assignment columns fit .* \(the columns of "):
        classes.prepare(subs, notebooks, sandboxed=False)
    monkeypatch.setenv("IOLAB_GRADE_MEMORY", "lots")
    with pytest.raises(classes.SettingRefused, match="IOLAB_GRADE_MEMORY"):
        classes.prepare(subs, notebooks, sandboxed=False)


def test_a_class_without_notebooks_has_no_rows_and_no_reports(tmp_path: Path) -> None:
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    summary = classes.grade_class(classes.prepare(tmp_path / "subs", tmp_path, sandboxed=False))
    assert summary.rows == [] and summary.reports == {} and summary.table is None


def test_the_summary_names_the_canvas_columns_the_totals_and_every_file(tmp_path: Path) -> None:
    table = pd.DataFrame({"student": ["ada"], "notebook": ["hw.ipynb"], "points": [2.96], "max_points": [3.0],
                          "seconds": [1.04]}).set_index(["student", "notebook"])
    summary = classes.GradeSummary([], tmp_path / "grades.csv", {"hw": "Homework 1 (4321)"},
                                   {"Homework 1 (4321)": ""}, {"gradebook": tmp_path / "gradebook.csv"}, table)
    lines = summary.lines()
    assert lines[0] == "Canvas columns: hw -> Homework 1 (4321) (? points in Canvas)"
    assert "3.0" in lines[1] and "1.0" in lines[1]
    assert lines[2:] == [f"grades: {tmp_path / 'grades.csv'}", f"gradebook: {tmp_path / 'gradebook.csv'}"]


@pytest.mark.parametrize("late, refusal", [
    (classes.LateSettings(policy="10%"), "--late-policy 10%: not 'none' nor 'PCT-per-day'"),
    (classes.LateSettings(policy="10-per-day", cap=120), "--late-cap 120"),
    (classes.LateSettings(due="Friday"), "--due 'Friday': not an ISO date-time"),
    (classes.LateSettings(extensions=Path("/no/such.csv")), "--extensions /no/such.csv: no such file"),
])
def test_prepare_refuses_a_late_work_setting_that_cannot_work_by_its_flag(course: tuple[Path, Path],
                                                                          late: classes.LateSettings,
                                                                          refusal: str) -> None:
    notebooks, subs = course
    with pytest.raises(classes.SettingRefused, match=refusal):
        classes.prepare(subs, notebooks, sandboxed=False, late=late)
