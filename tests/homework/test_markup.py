"""The markup parser: every notebook's exercises found, nbgrader's schema (version 3) kept, mistakes named.

The tests over the course's notebooks hold for converted and unconverted ones alike, so converting
another notebook only adds what they check.
"""

from __future__ import annotations

import copy

import pytest

from homework_notebooks import COURSE_NOTEBOOKS, cell_index, graded_notebooks, nbgrader_cell, read, tiny_course
from iolab.homework import markup


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_start_of_every_notebook_is_found_with_its_label(path):
    nb = read(path)
    written = sum(cell.source.count("{exercise-start}") for cell in nb.cells if cell.cell_type == "markdown")
    found = markup.exercises(nb)
    assert len(found) == written > 0
    assert all(e.label and e.statement for e in found)


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_has_a_markup_problem(path):
    assert markup.problems(read(path)) == []


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_every_solution_is_folded_in_the_book(path):
    # sphinx-exercise folds a solution whose directive has the dropdown class; the book must not show answers.
    nb = read(path)
    starts = [d for d in markup.directives(nb) if d.name == "solution-start"]
    assert starts, "every notebook has solutions"
    assert [d.argument for d in starts if d.options.get("class") != "dropdown"] == []


def test_exercise_labels_are_unique_across_the_book():
    labels = [e.label for path in COURSE_NOTEBOOKS for e in markup.exercises(read(path))]
    assert len(labels) == len(set(labels))


def test_the_pilot_is_graded_and_states_no_prediction_in_the_open():
    pilot = read(COURSE_NOTEBOOKS[0])
    assert COURSE_NOTEBOOKS[0] in graded_notebooks()
    found = markup.exercises(pilot)
    assert all(e.graded and e.points > 0 and len(e.checks) == 1 for e in found)
    assert {e.kind for e in found} == {"prediction", "exercise"}
    assert markup.bare_predictions(pilot) == []


def test_an_exercise_is_read_with_its_statement_cells_by_role_and_points():
    nb = tiny_course()
    a, b = markup.exercises(nb)
    assert (a.label, a.statement, a.solutions, a.checks, a.given, a.points) == (
        "ex-a", "Store six sevens in `answer`.", (4,), (6,), (), 1.0)
    assert (b.label, b.given, b.solutions, b.checks, b.points, b.first_cell, b.last_cell) == (
        "ex-b", (8,), (10,), (12,), 2.0, 7, 12)
    assert a.kind == b.kind == "exercise"
    assert markup.setup_cell(nb) == 1


def test_the_setup_cell_is_the_first_code_cell_when_none_is_marked():
    nb = tiny_course()
    del nb.cells[1].metadata["nbgrader"]
    nb.cells.insert(0, nbgrader_cell("code", "x = 1"))
    assert markup.setup_cell(nb) == 0


def test_a_prediction_paragraph_outside_exercises_is_bare_and_inside_a_solution_is_not():
    nb = tiny_course()
    nb.cells[2:2] = [nbgrader_cell("markdown", "Intro.\n\n**Prediction.** It will be fast.\nVery fast.")]
    nb.cells[10].source += "\n\n**Prediction.** Hidden in the folded solution."  # ex-b's explanation
    assert markup.bare_predictions(nb) == [(2, 2, 3)]


def _problems_after(change) -> list[str]:
    nb = tiny_course()
    assert markup.problems(nb) == []
    change(nb)
    return markup.problems(nb)


def test_a_grade_cell_without_points_is_a_problem():
    def drop_points(nb):
        del nb.cells[cell_index(nb, "ex-a-check")].metadata["nbgrader"]["points"]

    assert _problems_after(drop_points) == ["cell 6: a grade cell needs points >= 0"]


def test_a_key_outside_schema_version_3_is_a_problem():
    def add_key(nb):
        nb.cells[cell_index(nb, "ex-a-code")].metadata["nbgrader"]["difficulty"] = "hard"

    assert _problems_after(add_key) == ["cell 4: nbgrader key 'difficulty' is not in schema version 3"]


def test_an_unclosed_solution_region_is_a_problem():
    def unclose(nb):
        nb.cells[4].source = nb.cells[4].source.replace("### END SOLUTION", "")

    assert _problems_after(unclose) == ["cell 4: '### BEGIN SOLUTION' without '### END SOLUTION'"]


def test_a_solution_region_in_a_cell_not_marked_solution_is_a_problem():
    def mark_wrongly(nb):
        nb.cells[2].source = "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"

    assert _problems_after(mark_wrongly) == ["cell 2: solution region outside a code cell marked solution"]


def test_unmarked_code_inside_a_converted_solution_is_a_problem():
    def leak(nb):
        nb.cells.insert(5, nbgrader_cell("code", "print('the answer is', answer)"))

    assert _problems_after(leak) == ["cell 5: code inside the solution of ex-a that is neither solution nor check"]


def test_a_duplicated_grade_id_is_a_problem():
    def duplicate(nb):
        nb.cells.append(copy.deepcopy(nb.cells[cell_index(nb, "ex-b-check")]))

    assert _problems_after(duplicate) == ["grade_id 'ex-b-check' is used twice"]


def test_a_bare_prediction_in_a_graded_notebook_is_a_problem():
    def predict_openly(nb):
        nb.cells[2:2] = [nbgrader_cell("markdown", "Prediction: the experiment sums to 45.")]

    assert _problems_after(predict_openly) == [
        "cell 2: a bare 'Prediction' paragraph (lines 0-0) in a graded notebook"]


def test_a_grade_id_that_names_no_exercise_is_a_problem():
    def stray(nb):
        nb.cells[cell_index(nb, "ex-b-given")].metadata["nbgrader"]["grade_id"] = "ex-c-given"

    assert _problems_after(stray) == ["grade_id 'ex-c-given' is neither 'setup' nor '<exercise label>-given|code|check|answer'"]
