"""Regrading a few students: their rows replaced, the others' untouched, what changed in history.csv, an unknown
student refused by name. The class is the toy course of ``homework_notebooks`` (a notebook graded in seconds)."""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path

import pytest

from homework_notebooks import cell_index, paste_solutions, tiny_course, write
from iolab.homework import classes, editions, regrade
from iolab.homework.grading import Row

NOTEBOOK = "hw.ipynb"


def _row(student: str, exercise: str, points: float) -> Row:
    return Row(student, NOTEBOOK, exercise, points, 2.0, "passed" if points == 2 else "failed", "", 1.0)


def _history(path: Path) -> list[list[str]]:
    with path.open() as f:
        return list(csv.reader(f))


def test_an_unknown_student_is_refused_by_name_before_any_grading(tmp_path: Path) -> None:
    (tmp_path / "ada").mkdir()
    with pytest.raises(ValueError, match="no folder in .* for zed, yan"):
        regrade.check(tmp_path, tmp_path / "grades.csv", ["ada", "zed", " yan"])
    with pytest.raises(ValueError, match="grade the whole class first"):
        regrade.check(tmp_path, tmp_path / "grades.csv", ["ada"])
    assert regrade.check(tmp_path, tmp_path / "grades.csv", ["", ""]) == ()


def test_a_regrade_merges_one_students_rows_and_writes_a_history_line_per_changed_exercise(tmp_path: Path) -> None:
    grades = tmp_path / "grades.csv"
    old = [_row("ada", "ex-a", 2.0), _row("bob", "ex-a", 0.0), _row("bob", "ex-b", 2.0)]
    regrade.write_rows(old, grades)
    for student in ("ada", "bob"):
        (tmp_path / student).mkdir()
        (tmp_path / student / NOTEBOOK).write_text("{}")
    seen: list[list[str]] = []

    def grade(folder: Path) -> list[Row]:
        seen.append(sorted(p.name for p in folder.iterdir()))
        return [_row("bob", "ex-a", 2.0), _row("bob", "ex-b", 2.0)]

    rows = regrade.regrade(tmp_path, grades, ("bob",), "ex-a's check fixed", grade)
    assert seen == [["bob"]]  # only bob's folder was graded
    assert rows == [old[0], _row("bob", "ex-a", 2.0), _row("bob", "ex-b", 2.0)]
    assert regrade.read_rows(grades) == rows
    history = _history(tmp_path / regrade.HISTORY)
    assert history[0] == regrade.HISTORY_COLUMNS
    assert [line[1:] for line in history[1:]] == [["bob", NOTEBOOK, "ex-a", "0", "2", "ex-a's check fixed"]]
    assert datetime.strptime(history[1][0], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) <= datetime.now(timezone.utc)
    regrade.regrade(tmp_path, grades, ("bob",), "again", grade)  # nothing changed: no line
    assert len(_history(tmp_path / regrade.HISTORY)) == 2


def test_regrading_a_student_through_the_class_changes_their_points_and_leaves_the_others(tmp_path: Path) -> None:
    notebooks, subs = tmp_path / "notebooks", tmp_path / "submissions"
    write(tiny_course(), notebooks / NOTEBOOK)
    solved = paste_solutions(editions.student_edition(tiny_course()), tiny_course())
    write(solved, subs / "ada" / NOTEBOOK)
    wrong = paste_solutions(editions.student_edition(tiny_course()), tiny_course())
    wrong.cells[cell_index(wrong, "ex-a-code")].source = "answer = 41"
    write(wrong, subs / "bob" / NOTEBOOK)
    on_time = classes.LateSettings(due="2100-01-01")  # a due date: grades.csv says late_days and penalty
    first = classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, time_limit=60, late=on_time))
    ada_before = [r for r in first.rows if r.student == "ada"]
    ada_feedback = (subs / "feedback" / "ada" / "hw.md").stat().st_mtime_ns
    assert sum(r.points for r in first.rows if r.student == "bob") == 2
    with pytest.raises(classes.SettingRefused, match="--students: no folder in .* for zed"):
        classes.prepare(subs, notebooks, sandboxed=False, students=["bob", "zed"])
    write(solved, subs / "bob" / NOTEBOOK)  # bob's notebook, fixed
    again = classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, time_limit=60, students=["bob"],
                                                reason="late upload accepted", late=on_time))
    assert [r for r in again.rows if r.student == "ada"] == ada_before
    assert sum(r.points for r in again.rows if r.student == "bob") == 3
    assert [line[1:] for line in _history(subs / regrade.HISTORY)[1:]] == [
        ["bob", NOTEBOOK, "ex-a", "0", "1", "late upload accepted"]]
    with (subs / "grades.csv").open() as f:
        assert [(r["student"], r["late_days"]) for r in csv.DictReader(f)] == [("ada", "0"), ("ada", "0"),
                                                                              ("bob", "0"), ("bob", "0")]
    assert (subs / "feedback" / "ada" / "hw.md").stat().st_mtime_ns == ada_feedback  # not rewritten
    assert "3 of 3 points" in (subs / "feedback" / "bob" / "hw.md").read_text()
    with (subs / "gradebook.csv").open() as f:
        assert [r["hw"] for r in csv.DictReader(f)] == ["3.0", "3.0", "3.0"]


def test_the_command_refuses_an_unknown_student_by_name_and_changes_nothing(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from iolab.commands import main

    (tmp_path / "ada").mkdir()
    regrade.write_rows([_row("ada", "ex-a", 2.0)], tmp_path / "grades.csv")
    before = (tmp_path / "grades.csv").read_text()
    with pytest.raises(SystemExit) as exited:
        main(["homework", "grade", str(tmp_path), "--no-sandbox", "--students", "ada,zed", "--reason", "typo"])
    assert exited.value.code == 2 and f"--students: no folder in {tmp_path} for zed" in capsys.readouterr().err
    assert (tmp_path / "grades.csv").read_text() == before and not (tmp_path / regrade.HISTORY).exists()
