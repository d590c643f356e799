"""What grading hands back: the gradebook an LMS imports, pass rates, and feedback without the key.

Canvas's gradebook export is the one in ``canvas_files``, whose docstring cites its shape's source.
"""

from __future__ import annotations

import csv

import pytest

import canvas_files
from iolab.homework import intake, reports
from iolab.homework.grading import Row


def _rows():
    return [Row("ada", "02-blocking.ipynb", "pred-a", 2.0, 2.0, "passed", "", 1.0),
            Row("ada", "02-blocking.ipynb", "ex-b", 0.5, 1.0, "partial", "hidden check 2 of 2 failed", 1.0),
            Row("bob", "02-blocking.ipynb", "pred-a", 0.0, 2.0, "failed", "`x` is not defined", 1.0),
            Row("bob", "02-blocking.ipynb", "ex-b", 1.0, 1.0, "passed", "", 1.0),
            Row("bob", "04-prefork.ipynb", "ex-c", 3.0, 3.0, "passed", "", 1.0)]


def test_the_gradebook_has_canvas_columns_a_points_possible_row_and_a_row_per_student():
    ada = {"id": "ada", "name": "Ada Lovelace", "canvas_id": "1001", "sis_login_id": "ada"}
    table = reports.gradebook(_rows(), {"ada": ada})
    assert list(table.columns) == [*reports.CANVAS_COLUMNS, "02-blocking", "04-prefork", "Total"]
    assert table.iloc[0].to_dict() | {} == {"Student": "Points Possible", "ID": "", "SIS User ID": "",
                                            "SIS Login ID": "", "Section": "", "02-blocking": 3.0,
                                            "04-prefork": 3.0, "Total": 6.0}
    assert table.iloc[1][["Student", "ID", "SIS User ID", "SIS Login ID", "02-blocking", "04-prefork", "Total"]
                         ].to_list() == ["Ada Lovelace", "1001", "", "ada", 2.5, 0.0, 2.5]  # no notebook 04: 0
    # nobody said bob's course id is an SIS User ID: it is not put there, only in place of a name
    assert table.iloc[2][["Student", "ID", "SIS User ID", "Total"]].to_list() == ["bob", "", "", 4.0]


def test_pass_rates_count_full_partial_and_zero_per_exercise():
    table = reports.pass_rates(_rows()).set_index("exercise")
    assert table.loc["pred-a", ["students", "passed_pct", "partial_pct", "zero_pct"]].to_list() == [2, 50.0, 0.0, 50.0]
    assert table.loc["ex-b", ["passed_pct", "partial_pct"]].to_list() == [50.0, 50.0]


def test_feedback_is_one_markdown_file_per_student_and_notebook_with_the_reasons(tmp_path):
    paths = reports.write_reports(_rows(), tmp_path)
    text = (paths["feedback"] / "ada" / "02-blocking.md").read_text()
    assert text.startswith("# 02-blocking.ipynb: 2.5 of 3 points")
    assert "hidden check 2 of 2 failed" in text and "withheld" in text
    assert sorted(p.name for p in (paths["feedback"] / "bob").iterdir()) == [
        "02-blocking.html", "02-blocking.md", "04-prefork.html", "04-prefork.md"]
    assert paths["gradebook"].read_text().splitlines()[1].startswith("Points Possible,")


def test_a_row_for_a_notebook_that_was_not_graded_changes_no_points_and_no_maximum():
    second_copy = Row("ada", "02-blocking.ipynb", "", 0.0, 0.0, "error",
                      "a second copy of 02-blocking.ipynb (ada/old/02-blocking.ipynb) was not graded: only "
                      "ada/02-blocking.ipynb is", 0.0)
    linked = Row("zed", "", "", 0.0, 0.0, "error", "zed is a symbolic link to a folder: not followed", 0.0)
    assert reports.gradebook([*_rows(), second_copy, linked]).equals(reports.gradebook(_rows()))
    assert reports.pass_rates([*_rows(), second_copy]).equals(reports.pass_rates(_rows()))
    text = reports.feedback_text("ada", "02-blocking.ipynb", [r for r in _rows() if r.student == "ada"] + [second_copy])
    assert text.startswith("# 02-blocking.ipynb: 2.5 of 3 points") and "a second copy" in text


def test_a_row_about_the_folder_gets_a_visible_feedback_file(tmp_path):
    linked = Row("zed", "", "", 0.0, 0.0, "error", "zed is a symbolic link to a folder: not followed", 0.0)
    paths = reports.write_reports([*_rows(), linked], tmp_path)
    assert sorted(p.name for p in (paths["feedback"] / "zed").iterdir()) == ["submission.html", "submission.md"]
    assert "not followed" in (paths["feedback"] / "zed" / "submission.md").read_text()


def _class_of_three(tmp_path):
    """Three Canvas students' rows for notebook 02, and their names.csv as intake writes it from Canvas's export."""
    export = tmp_path / "export.csv"
    export.write_text(canvas_files.EXPORT)
    people = intake.read_roster(export).people
    rows = [Row(student, "02-blocking.ipynb", "pred-a", points, 13.0, "passed" if points else "failed", "", 1.0)
            for student, points in (("alovelace", 13.0), ("cdoe", 11.33), ("agarcia", 0.0))]
    return export, people, rows


def test_with_canvas_export_the_gradebook_fills_its_assignment_by_canvas_id_without_a_total(tmp_path):
    export, people, rows = _class_of_three(tmp_path)
    assignments = reports.canvas_assignments(export)
    assert assignments == {canvas_files.ASSIGNMENT: "13", "Quiz 1 (87568490)": "10"}
    columns = reports.assignment_columns({"02-blocking.ipynb"}, assignments)
    assert columns == {"02-blocking": canvas_files.ASSIGNMENT}
    paths = reports.write_reports(rows, tmp_path / "out", people, columns=columns)
    lines = list(csv.reader(paths["gradebook"].open()))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "HW2 Blocking (4321)"]
    assert lines[1] == ["Points Possible", "", "", "", "", "13.0"]
    assert lines[2:] == [["Garcia, Ana", "1009", "S0009", "agarcia", "Section B", "0.0"],
                         ["Lovelace, Ada", "1001", "S0001", "alovelace", "Section A", "13.0"],
                         ["Doe, Cyd", "1003", "S0003", "cdoe", "Section A", "11.33"]]
    with_total = reports.gradebook(rows, people, columns, total=True)
    assert list(with_total.columns)[-2:] == [canvas_files.ASSIGNMENT, "Total"]


def test_a_notebook_no_canvas_column_fits_is_refused_with_the_columns_and_the_option():
    assignments = {canvas_files.ASSIGNMENT: "13", "Quiz 1 (87568490)": "10"}
    with pytest.raises(ValueError, match=r"04-prefork: no Canvas assignment columns fit \(HW2 Blocking \(4321\), "
                                         r"Quiz 1 \(87568490\)\); name one with --canvas-assignment 04-prefork="):
        reports.assignment_columns({"04-prefork.ipynb"}, assignments)
    assert reports.assignment_columns({"04-prefork.ipynb"}, assignments, {"04-prefork": "Quiz 1"}) == {
        "04-prefork": "Quiz 1 (87568490)"}
    assert reports.assignment_columns({"04-prefork.ipynb"}, {"Homework (9)": "5"}) == {"04-prefork": "Homework (9)"}


def test_feedback_explains_a_hidden_failure_without_sending_the_student_back_to_a_check_that_passed():
    hidden = reports.feedback_text("ada", "02-blocking.ipynb", [r for r in _rows() if r.student == "ada"])
    assert "passed its public checks" in hidden and "Rerun" not in hidden and "rerun it" not in hidden
    public = Row("cy", "02-blocking.ipynb", "ex-b", 0.0, 1.0, "failed", "the check failed: ratio: a number, not 'x'", 1.0)
    text = reports.feedback_text("cy", "02-blocking.ipynb", [public])
    assert "rerun it" in text and "passed its public checks" not in text


def test_the_html_feedback_is_the_markdowns_text_as_a_page_and_shows_html_in_a_reason_as_text(tmp_path):
    hostile = Row("ada", "02-blocking.ipynb", "ex-x", 0.0, 1.0, "failed",
                  "cell 4 raised ValueError: <script>alert(1)</script> [here](javascript:alert(2))", 0.1)
    paths = reports.write_reports([*_rows(), hostile], tmp_path)
    page = (paths["feedback"] / "ada" / "02-blocking.html").read_text()
    assert page.startswith("<!doctype html>") and "<title>02-blocking.ipynb: feedback</title>" in page
    assert "<h1>02-blocking.ipynb: 2.5 of 4 points</h1>" in page and "<table>" in page and "<td><code>ex-x</code></td>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page and 'href="javascript' not in page
