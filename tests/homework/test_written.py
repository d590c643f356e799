"""Written answers a TA scores: read from the markup, stubbed in the edition, exported per exercise, merged back.

The class is the toy course of ``homework_notebooks`` with a written exercise (``ex-why``, 2 points), graded
without a sandbox in seconds: ada hands in the model answer, bob the edition as handed out, cyd an answer
that tries to run a script in the TA's browser.
"""

from __future__ import annotations

import copy
import csv
import shutil
from pathlib import Path

import pytest

from homework_notebooks import (MODEL_ANSWER, RUBRIC, cell_index, nbgrader_cell, paste_solutions, tiny_written_course,
                                write)
from iolab.homework import classes, editions, leaks, markup, written
from iolab.homework.contract import AWAITING

NOTEBOOK = "hw.ipynb"
SCRIPT = "<script>alert('the TA')</script> because 6 * 7 = 42"


def _scores(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _fill(path: Path, scores: dict[str, tuple[str, str]]) -> None:
    """Fill ``path`` as a TA would: (points, comment) for some students, the other rows as they are."""
    rows = _scores(path)
    for row in rows:
        row["points"], row["comment"] = scores.get(row["student"], (row["points"], row["comment"]))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=written.SCORES_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def _grades(subs: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (subs / "grades.csv").open() as f:
        return {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}


def _gradebook(subs: Path) -> dict[str, str]:
    with (subs / "gradebook.csv").open() as f:
        return {r["Student"]: r["hw"] for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of the instructor notebooks and the submissions after grading ada, bob and cyd, graded once per
    module (and worker): each test gets a copy (:func:`graded`), so that ten tests cost one grading, not ten."""
    folder = tmp_path_factory.mktemp("written")
    notebooks, subs = folder / "notebooks", folder / "submissions"
    write(tiny_written_course(), notebooks / NOTEBOOK)
    edition = editions.student_edition(tiny_written_course())
    write(paste_solutions(edition, tiny_written_course()), subs / "ada" / NOTEBOOK)
    write(edition, subs / "bob" / NOTEBOOK)
    script = paste_solutions(edition, tiny_written_course())
    script.cells[cell_index(script, "ex-why-answer")].source = SCRIPT
    write(script, subs / "cyd" / NOTEBOOK)
    classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, time_limit=60))
    return folder


@pytest.fixture
def graded(graded_once: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(the instructor notebooks, the submissions) after grading ada, bob and cyd once: this test's own copy."""
    shutil.copytree(graded_once, tmp_path, dirs_exist_ok=True)
    return tmp_path / "notebooks", tmp_path / "submissions"


def test_a_written_exercise_is_read_with_its_answer_cell_and_points_and_no_problem() -> None:
    nb = tiny_written_course()
    why = next(e for e in markup.exercises(nb) if e.label == "ex-why")
    assert (why.written, why.graded, why.points, why.answers) == (True, False, 2.0, (cell_index(nb, "ex-why-answer"),))
    assert markup.problems(nb) == []
    [question] = written.questions(nb, NOTEBOOK)
    assert (question.model, question.rubric, question.points) == (MODEL_ANSWER, RUBRIC, 2.0)


def test_an_answer_cell_outside_its_folded_solution_or_beside_a_check_is_a_problem() -> None:
    nb = tiny_written_course()
    nb.cells.append(copy.deepcopy(nb.cells[cell_index(nb, "ex-why-answer")]))
    nb.cells[-1].metadata["nbgrader"]["grade_id"] = "ex-b-answer"
    found = markup.problems(nb)
    assert any("ex-b: both written (an answer cell) and checked" in p for p in found)
    assert any("the answer cell of ex-b is not inside its folded solution" in p for p in found)


def test_the_student_edition_keeps_the_answer_cell_as_nbgraders_stub_without_the_model_answer_or_rubric() -> None:
    nb = tiny_written_course()
    edition = editions.student_edition(nb)
    assert edition.cells[cell_index(edition, "ex-why-answer")].source == editions.TEXT_STUB == "YOUR ANSWER HERE"
    assert leaks.written_leaks(nb, edition) == []
    assert "| `ex-why` (written) | 2 |" in edition.cells[1].source
    leaked = copy.deepcopy(edition)
    leaked.cells.append(nbgrader_cell("markdown", f"Hint: {MODEL_ANSWER}"))
    assert [(leak.label, leak.key) for leak in leaks.written_leaks(nb, leaked)] == [("ex-why", "model answer")]


def test_grading_exports_a_page_and_a_scores_csv_and_an_unscored_answer_awaits_a_ta(graded) -> None:
    _, subs = graded
    rows = _grades(subs)
    assert (rows["ada", "ex-why"]["status"], rows["ada", "ex-why"]["points"]) == (AWAITING, "0.0")
    assert (rows["bob", "ex-why"]["status"], rows["bob", "ex-why"]["reason"]) == ("failed", written.NOT_ANSWERED)
    assert [(r["student"], r["points"], r["max_points"]) for r in _scores(subs / "hw-ex-why-scores.csv")] == [
        ("ada", "", "2"), ("cyd", "", "2")]  # bob wrote nothing to score
    assert _gradebook(subs) == {"Points Possible": "5.0", "ada": "", "bob": "0.0", "cyd": ""}  # empty, not 0
    feedback = (subs / "feedback" / "ada" / "hw.md").read_text()
    assert "3 of 5 points so far (2 await a TA)" in feedback and "What to look at" not in feedback


def test_the_page_shows_the_question_rubric_and_points_and_escapes_a_script_answer(graded) -> None:
    _, subs = graded
    page = (subs / "hw-ex-why-answers.html").read_text()
    assert "hw.ipynb: ex-why (written, 2 points)" in page and "Explain, in a sentence" in page
    assert MODEL_ANSWER in page and "One point for naming multiplication" in page
    assert "&lt;script&gt;alert(&#x27;the TA&#x27;)&lt;/script&gt;" in page and "<script>" not in page
    assert "bob: " + written.NOT_ANSWERED in page


def test_filled_scores_merge_into_the_grades_gradebook_and_feedback_without_grading(graded) -> None:
    notebooks, subs = graded
    _fill(subs / "hw-ex-why-scores.csv", {"ada": ("2", "clear and complete"), "cyd": ("0.5", "")})
    before = {key: row["seconds"] for key, row in _grades(subs).items()}
    summary = classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, scores_only=True))
    rows = _grades(subs)
    assert {key: row["seconds"] for key, row in rows.items()} == before  # nothing ran again
    assert (rows["ada", "ex-why"]["status"], rows["ada", "ex-why"]["points"],
            rows["ada", "ex-why"]["reason"]) == ("passed", "2.0", "scored by a TA: clear and complete")
    assert (rows["cyd", "ex-why"]["status"], rows["cyd", "ex-why"]["points"]) == ("partial", "0.5")
    assert _gradebook(subs) == {"Points Possible": "5.0", "ada": "5.0", "bob": "0.0", "cyd": "3.5"}
    assert "clear and complete" in (subs / "feedback" / "ada" / "hw.md").read_text()
    assert "5 of 5 points\n" in (subs / "feedback" / "ada" / "hw.md").read_text()
    assert not any("await a TA" in line for line in summary.lines())


def test_grading_again_and_a_regrade_keep_filled_scores_and_add_new_students(graded) -> None:
    notebooks, subs = graded
    _fill(subs / "hw-ex-why-scores.csv", {"ada": ("1.5", "half the product")})
    dan = paste_solutions(editions.student_edition(tiny_written_course()), tiny_written_course())
    write(dan, subs / "dan" / NOTEBOOK)
    classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, time_limit=60))
    assert [(r["student"], r["points"], r["comment"]) for r in _scores(subs / "hw-ex-why-scores.csv")] == [
        ("ada", "1.5", "half the product"), ("cyd", "", ""), ("dan", "", "")]
    write(dan, subs / "bob" / NOTEBOOK)  # bob hands in an answer at last: regraded alone
    classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, time_limit=60, students=["bob"]))
    assert [(r["student"], r["points"]) for r in _scores(subs / "hw-ex-why-scores.csv")] == [
        ("ada", "1.5"), ("cyd", ""), ("dan", ""), ("bob", "")]
    rows = _grades(subs)
    assert (rows["ada", "ex-why"]["points"], rows["bob", "ex-why"]["status"]) == ("1.5", AWAITING)


@pytest.mark.parametrize("points, student, refusal", [
    ("3", "cyd", "line 3: cyd's points 3 is not between 0 and 2"),
    ("-1", "cyd", "line 3: cyd's points -1 is not between 0 and 2"),
    ("two", "cyd", "line 3: cyd's points 'two' is not a number"),
    ("nan", "cyd", "line 3: cyd's points nan is not between 0 and 2"),
    ("1", "zed", "line 4: no student 'zed' in this class handed in this notebook"),
    ("1", "ada", "line 4: ada has a score already, on an earlier line"),
])
def test_a_bad_score_is_refused_naming_the_file_and_line_and_nothing_is_lost(graded, points: str, student: str,
                                                                              refusal: str) -> None:
    notebooks, subs = graded
    path = subs / "hw-ex-why-scores.csv"
    _fill(path, {"ada": ("2", "fine"), "cyd": (points, "")})
    if student != "cyd":
        _fill(path, {"cyd": ("1", "")})
        path.write_text(path.read_text() + f"{student},{points},2,\n")
    files = {p: p.read_bytes() for p in subs.iterdir() if p.is_file()}
    with pytest.raises(classes.SettingRefused, match=f"{path}, {refusal}"):
        classes.prepare(subs, notebooks, sandboxed=False, scores_only=True)
    with pytest.raises(written.ScoresError, match=refusal.split(":")[0]):
        written.export([r for r in classes.regrade.read_rows(subs / "grades.csv")], subs, notebooks, subs)
    assert {p: p.read_bytes() for p in subs.iterdir() if p.is_file()} == files


def test_the_command_merges_scores_only_and_refuses_a_bad_row_by_file_and_line(graded, capsys) -> None:
    from iolab.commands import main

    _, subs = graded
    notebooks = subs.parent / "notebooks"
    _fill(subs / "hw-ex-why-scores.csv", {"ada": ("2", ""), "cyd": ("1", "")})
    assert main(["homework", "grade", str(subs), "--scores-only", "--no-sandbox", "--notebooks", str(notebooks)]) == 0
    assert "merging the written answers' scores" in capsys.readouterr().out
    assert _gradebook(subs)["cyd"] == "4.0"
    _fill(subs / "hw-ex-why-scores.csv", {"cyd": ("9", "")})
    with pytest.raises(SystemExit) as exited:
        main(["homework", "grade", str(subs), "--scores-only", "--no-sandbox", "--notebooks", str(notebooks)])
    assert exited.value.code == 2 and "hw-ex-why-scores.csv, line 3: cyd's points 9" in capsys.readouterr().err
