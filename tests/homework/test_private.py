"""An instructor's own checks and course secret, from a folder outside the repository, and ids students can see."""

from __future__ import annotations

import nbformat
import pytest

from homework_notebooks import SANDBOX, cell_index, paste_solutions, tiny_course, write
from iolab.commands import main
from iolab.homework import editions, grading, markup, private
from iolab.kit import student

CHOICES = [3, 5, 7, 9, 11]


def _course():
    """The tiny course, with ex-b's n drawn per student."""
    nb = tiny_course()
    nb.cells[cell_index(nb, "ex-b-given")].source = f"n = student.pick('ex-b', {CHOICES})"
    nb.cells[markup.setup_cell(nb)].source = "import os, time\nfrom iolab.kit import student\nprint(student.describe())"
    return nb


def _solved(nb):
    return paste_solutions(editions.student_edition(nb), nb)


def test_a_private_check_replaces_the_published_hidden_tests_and_an_added_one_comes_after(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "ex-a-check.py").write_text("assert answer == 41, 'the private key'\n")
    (tmp_path / "hw" / "ex-b-check.add.py").write_text("assert total % 2 == 0\n")
    nb, changed = private.with_private_checks(_course(), tmp_path, "hw.ipynb")
    assert changed == ["ex-a-check", "ex-b-check"]
    a = nb.cells[cell_index(nb, "ex-a-check")].source
    assert "assert isinstance(answer, int)" in a and "answer == 41" in a and "answer == 42" not in a
    assert nb.cells[cell_index(nb, "ex-b-check")].source.endswith("assert total % 2 == 0\n### END HIDDEN TESTS")
    (tmp_path / "hw" / "ex-z-check.py").write_text("assert True")
    with pytest.raises(ValueError, match="no check cell 'ex-z-check'"):
        private.with_private_checks(_course(), tmp_path, "hw.ipynb")


def test_grading_with_a_private_folder_uses_its_checks_and_seeds_from_the_secret(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "ex-a-check.py").write_text("assert answer == 41\n")
    (tmp_path / private.SECRET).write_text("correct horse battery staple\n")
    options = grading.GradingOptions(time_limit=60, sandbox=SANDBOX, private=str(tmp_path))
    rows = grading.grade(_solved(_course()), _course(), "ada", "hw.ipynb", options)
    assert [(r.exercise, r.status) for r in rows] == [("ex-a", "failed"), ("ex-b", "passed")]  # 42 is not 41
    seeded = student.with_token("ada", "correct horse battery staple")
    assert seeded.startswith("ada.") and len(seeded) == len("ada.") + 8
    assert rows[1].parameters == f"n={student.pick('ex-b', CHOICES, student=seeded)}"


def test_a_notebook_run_as_another_student_is_graded_with_a_note(tmp_path):
    nb = _solved(_course())
    setup = nb.cells[markup.setup_cell(nb)]
    setup.outputs = [nbformat.v4.new_output("stream", name="stdout", text="no IOLAB_STUDENT: the book's numbers\n")]
    assert grading.seeded_as(nb) == ""  # run without IOLAB_STUDENT: the book's numbers
    rows = grading.grade(nb, _course(), "ada", "hw.ipynb", grading.GradingOptions(time_limit=60, sandbox=SANDBOX))
    assert all("ran with no IOLAB_STUDENT" in r.note and "graded as ada" in r.note for r in rows)
    setup.outputs[0].text = "IOLAB_STUDENT=ada: your numbers\n"
    assert grading.id_note(nb, "ada") == ""


def test_ids_prints_each_students_id_with_its_token(tmp_path, capsys):
    (tmp_path / private.SECRET).write_text("s3cret")
    assert main(["homework", "ids", "ada", "bob", "--checks", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ada,{student.with_token('ada', 's3cret')}",
                                                    f"bob,{student.with_token('bob', 's3cret')}"]


def test_the_grade_command_refuses_a_private_file_that_names_no_check(tmp_path):
    write(tiny_course(), tmp_path / "notebooks" / "hw.ipynb")
    (tmp_path / "private" / "hw").mkdir(parents=True)
    (tmp_path / "private" / "hw" / "ex-q-check.py").write_text("assert True")
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    with pytest.raises(SystemExit):
        main(["homework", "grade", str(tmp_path / "subs"), "--checks", str(tmp_path / "private"),
              "--notebooks", str(tmp_path / "notebooks"), "--no-sandbox"])
