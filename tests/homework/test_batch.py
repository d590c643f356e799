"""A class's submissions are data, never paths to follow: one notebook per student and name, regular files only.

The hostile files here are refused before any kernel starts, so most of these tests start none; the
last grades a class by the command, where one honest submission shares the folder with them. Tests
that read a FIFO carry a timeout: the hang they guard against would otherwise hang the test run.
"""

from __future__ import annotations

import csv
import os

import pytest

from homework_notebooks import SANDBOX, solved, tiny_course, write
from iolab.commands import main
from iolab.homework import batch, reports
from iolab.homework.grading import GradingOptions, Row


@pytest.fixture
def course(tmp_path):
    """(the instructor notebooks' folder, the submissions folder), with ada's honest hw.ipynb in it."""
    write(tiny_course(), tmp_path / "notebooks" / "hw.ipynb")
    subs = tmp_path / "submissions"
    write(solved(), subs / "ada" / "hw.ipynb")
    return tmp_path / "notebooks", subs


def _refused(path, sources, student="mallory") -> list[Row]:
    rows = batch.grade_file(path, student, sources, GradingOptions(sandbox="none"))
    assert [(r.exercise, r.points, r.max_points, r.status) for r in rows] == [
        ("ex-a", 0.0, 1.0, "error"), ("ex-b", 0.0, 2.0, "error")]
    return rows


def test_only_the_notebook_at_the_top_of_a_students_folder_is_graded(course):
    sources, subs = course
    write(solved(), subs / "ada" / "old" / "hw.ipynb")
    write(solved(), subs / "ada" / "old" / "older" / "essay.ipynb")
    write(solved(), subs / "ada" / ".ipynb_checkpoints" / "hw-checkpoint.ipynb")
    write(solved(), subs / "feedback" / "ada" / "hw.ipynb")
    assert list(batch.submissions(subs)) == [("ada", subs / "ada" / "hw.ipynb")]
    assert batch.not_graded(subs) == [
        Row("ada", "hw.ipynb", "", 0.0, 0.0, "error",
            "a second copy of hw.ipynb (ada/old/hw.ipynb) was not graded: only ada/hw.ipynb is", 0.0),
        Row("ada", "essay.ipynb", "", 0.0, 0.0, "error", "ada/old/older/essay.ipynb was not graded: only a notebook "
            "at the top of the folder is (ada/essay.ipynb)", 0.0)]


def test_a_student_folder_that_is_a_link_is_not_followed(course):
    sources, subs = course
    (subs / "zed").symlink_to(subs / "ada")
    assert [student for student, _ in batch.submissions(subs)] == ["ada"]
    [row] = batch.not_graded(subs)
    assert (row.student, row.points, row.max_points, row.status) == ("zed", 0.0, 0.0, "error")
    assert "symbolic link" in row.reason and "not followed" in row.reason


def test_a_link_to_a_classmates_notebook_scores_nothing(course):
    sources, subs = course
    (subs / "bob").mkdir()
    (subs / "bob" / "hw.ipynb").symlink_to(subs / "ada" / "hw.ipynb")
    rows = _refused(subs / "bob" / "hw.ipynb", sources)
    assert rows[0].reason == "hw.ipynb was not read: not a regular file: a symbolic link (not followed)"


def test_a_link_to_dev_zero_is_refused_without_reading_it(course):
    sources, subs = course
    (subs / "bob").mkdir()
    (subs / "bob" / "hw.ipynb").symlink_to("/dev/zero")
    assert "a symbolic link" in _refused(subs / "bob" / "hw.ipynb", sources)[0].reason


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_waiting_for_a_writer(course):
    sources, subs = course
    (subs / "eve").mkdir()
    os.mkfifo(subs / "eve" / "hw.ipynb")
    assert "not a regular file: a FIFO" in _refused(subs / "eve" / "hw.ipynb", sources)[0].reason


def test_a_notebook_over_the_size_limit_is_refused_with_its_size(course, monkeypatch):
    sources, subs = course
    size = (subs / "ada" / "hw.ipynb").stat().st_size
    monkeypatch.setenv(batch.MAX_NOTEBOOK_BYTES_ENV, str(size - 1))
    reason = _refused(subs / "ada" / "hw.ipynb", sources)[0].reason
    assert f"{size:,} bytes, over the limit of {size - 1:,}" in reason and batch.MAX_NOTEBOOK_BYTES_ENV in reason
    monkeypatch.setenv(batch.MAX_NOTEBOOK_BYTES_ENV, str(size))
    assert batch.read_notebook(subs / "ada" / "hw.ipynb").cells


def test_the_size_limit_is_20_mib_unless_the_environment_says_a_number_of_bytes(monkeypatch):
    monkeypatch.delenv(batch.MAX_NOTEBOOK_BYTES_ENV, raising=False)
    assert batch.max_notebook_bytes() == batch.MAX_NOTEBOOK_BYTES == 20 * 2**20
    monkeypatch.setenv(batch.MAX_NOTEBOOK_BYTES_ENV, "20MB")
    with pytest.raises(ValueError, match="IOLAB_MAX_NOTEBOOK_BYTES must be a number of bytes"):
        batch.max_notebook_bytes()


def test_a_notebook_nested_too_deeply_for_json_is_an_error_row_not_a_crash(course):
    sources, subs = course
    (subs / "eve").mkdir()
    (subs / "eve" / "hw.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    assert _refused(subs / "eve" / "hw.ipynb", sources)[0].reason.startswith("cannot read the notebook: RecursionError")


def test_the_progress_line_says_how_many_are_graded_together_and_which_alone_and_why(course):
    sources, subs = course
    solo = tiny_course()
    solo.metadata["iolab"] = {"solo": True}
    write(solo, sources / "solo.ipynb")
    for student in ("bob", "cyd"):
        write(solved(), subs / student / "hw.ipynb")
    write(solo, subs / "ada" / "solo.ipynb")
    write(solo, subs / "bob" / "solo.ipynb")
    together, alone = batch.plan(subs, sources, 2)
    assert [(s, p.name) for s, p in alone] == [("ada", "solo.ipynb"), ("bob", "solo.ipynb")]
    assert batch.progress(together, alone, 2) == (
        "grading 5 notebooks, 3 of them 2 at a time; 2 one at a time after those: solo.ipynb is solo (a neighbour "
        "on the same cores would change what its checks measure)")
    assert batch.progress(*batch.plan(subs, sources, 1), 1) == "grading 5 notebooks, one at a time"
    only_solo = batch.progress([], alone, 2)
    assert only_solo.startswith("grading 2 notebooks, 2 one at a time: solo.ipynb is solo")


@pytest.mark.timeout(240)
def test_a_class_with_hostile_files_grades_the_honest_notebook_once_and_the_rest_zero(course):
    sources, subs = course
    write(solved(), subs / "ada" / "backup" / "hw.ipynb")  # the same notebook again: it counted twice
    (subs / "bob").mkdir()
    (subs / "bob" / "hw.ipynb").symlink_to(subs / "ada" / "hw.ipynb")
    (subs / "eve").mkdir()
    os.mkfifo(subs / "eve" / "hw.ipynb")
    (subs / "zed").symlink_to(subs / "ada")
    assert main(["homework", "grade", str(subs), "--jobs", "2", "--timeout", "60", "--notebooks", str(sources),
                 *(["--no-sandbox"] if SANDBOX == "none" else [])]) == 0
    rows = [Row(**{**r, **{k: float(r[k]) for k in ("points", "max_points", "seconds")}})
            for r in csv.DictReader((subs / "grades.csv").open())]
    assert {(r.student, r.exercise): r.status for r in rows if r.exercise} == {
        ("ada", "ex-a"): "passed", ("ada", "ex-b"): "passed", ("bob", "ex-a"): "error", ("bob", "ex-b"): "error",
        ("eve", "ex-a"): "error", ("eve", "ex-b"): "error"}
    assert all(r.reason for r in rows if r.status != "passed")
    assert {r.student for r in rows if not r.exercise} == {"ada", "zed"}  # the second copy, the linked folder
    book = reports.gradebook(rows).set_index("Student")  # no names.csv: the course's id stands for the name
    assert book.loc["Points Possible", "Total"] == 3.0
    assert book.loc[["ada", "bob", "eve"], "Total"].to_list() == [3.0, 0.0, 0.0]


@pytest.mark.timeout(240)
def test_the_grade_command_titles_the_gradebook_as_the_canvas_export_and_refuses_an_unfit_column_first(
        course, capsys):
    sources, subs = course
    (subs / "names.csv").write_text("id,name,canvas_id,sis_user_id,sis_login_id,section\n"
                                    "ada,\"Lovelace, Ada\",1001,,ada,Section A\n")
    export = subs / "canvas-gradebook.csv"  # where intake keeps Canvas's export (canvas_files has the full shape)
    export.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4321)\n"
                      "    Points Possible,,,,,3\n\"Lovelace, Ada\",1001,,ada,Section A,\n")
    sandbox_flag = ["--no-sandbox"] if SANDBOX == "none" else []
    with pytest.raises(SystemExit) as stopped:
        main(["homework", "grade", str(subs), "--notebooks", str(sources), "--canvas-assignment", "hw=Quiz",
              *sandbox_flag])
    assert stopped.value.code == 2 and "hw: no Canvas assignment columns fit" in capsys.readouterr().err
    assert not (subs / "grades.csv").exists()
    assert main(["homework", "grade", str(subs), "--notebooks", str(sources), "--jobs", "2", *sandbox_flag]) == 0
    said = capsys.readouterr().out
    assert said.startswith("grading 1 notebook, 1 of them 2 at a time, ")
    assert "Canvas columns: hw -> Homework 1 (4321) (3 points in Canvas)" in said
    assert (subs / "gradebook.csv").read_text().splitlines() == [
        "Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4321)", "Points Possible,,,,,3.0",
        '"Lovelace, Ada",1001,,ada,Section A,3.0']
