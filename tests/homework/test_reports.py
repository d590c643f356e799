"""What grading hands back: the gradebook an LMS imports, pass rates, and feedback without the key."""

from __future__ import annotations

from iolab.homework import reports
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
    assert sorted(p.name for p in (paths["feedback"] / "bob").iterdir()) == ["02-blocking.md", "04-prefork.md"]
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
    assert sorted(p.name for p in (paths["feedback"] / "zed").iterdir()) == ["submission.md"]
    assert "not followed" in (paths["feedback"] / "zed" / "submission.md").read_text()
