"""The student edition: valid, runnable up to the first answer, and without a line of any solution.

The secret lines are collected here from the instructor notebook directly (what a solution cell,
a hidden test, a folded explanation or a stated prediction holds), then looked for in the edition.
"""

from __future__ import annotations

import ast

import nbformat
import pytest

from homework_notebooks import COURSE_NOTEBOOKS, cell_index, nbgrader_cell, read, tiny_course
from iolab.commands import main
from iolab.homework import editions, markup

# Shorter lines ("```", "else:", "pass") say nothing about a solution.
MIN_SECRET = 12


def _inside(source: str, begin: str, end: str) -> tuple[list[str], list[str]]:
    """(lines between begin and end delimiters, the other lines) of ``source``."""
    inside, outside, depth = [], [], False
    for line in source.split("\n"):
        if line.strip() in (begin, end):
            depth = line.strip() == begin
        else:
            (inside if depth else outside).append(line)
    return inside, outside


def secret_and_visible(nb) -> tuple[set[str], set[str]]:
    """The stripped lines a student must not see, and those they may (a line in both is no secret)."""
    regions = markup.solution_regions(nb).values()
    secret, visible = set(), set()
    for index, cell in enumerate(nb.cells):
        text = cell.source.split("\n")
        if cell.cell_type == "markdown":
            folded = {i for region in regions for i in region.lines_in(index, len(text))}
            for i, line in enumerate(text):
                (secret if i in folded else visible).add(line.strip())
            continue
        meta = markup.nbgrader(cell)
        if meta.get("solution") and markup.BEGIN_SOLUTION in cell.source:
            hidden, shown = _inside(cell.source, markup.BEGIN_SOLUTION, markup.END_SOLUTION)
        elif meta.get("solution") or (any(r.covers_cell(index) for r in regions) and not meta.get("grade")):
            hidden, shown = text, []
        else:
            hidden, shown = _inside(cell.source, markup.BEGIN_HIDDEN, markup.END_HIDDEN)
        secret |= {line.strip() for line in hidden}
        visible |= {line.strip() for line in shown}
    for cell, first, last in markup.bare_predictions(nb):
        paragraph = "\n".join(nb.cells[cell].source.split("\n")[first:last + 1])
        told = paragraph[markup.PREDICTION.search(paragraph).end():]
        secret |= {line.strip() for line in told.split("\n")}
    return {s for s in secret - visible if len(s) >= MIN_SECRET}, visible


def edition_lines(nb) -> set[str]:
    return {line.strip() for cell in nb.cells for line in cell.source.split("\n")}


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_the_student_edition_is_a_valid_notebook_without_solution_text(path):
    instructor = read(path)
    edition = editions.student_edition(instructor)
    nbformat.validate(edition)
    secret, _ = secret_and_visible(instructor)
    assert secret, "every notebook has exercises with solutions"
    assert secret & edition_lines(edition) == set()
    text = "\n".join(cell.source for cell in edition.cells)
    assert "{solution-start}" not in text and markup.BEGIN_SOLUTION not in text and markup.BEGIN_HIDDEN not in text


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_the_student_edition_keeps_every_statement_check_and_experiment(path):
    instructor = read(path)
    edition = editions.student_edition(instructor)
    assert [e.label for e in markup.exercises(edition)] == [e.label for e in markup.exercises(instructor)]
    assert [e.statement for e in markup.exercises(edition)] == [e.statement for e in markup.exercises(instructor)]
    for exercise in markup.exercises(instructor):
        for index in exercise.checks:
            check = instructor.cells[index]
            kept = edition.cells[cell_index(edition, markup.grade_id(check))]
            assert kept.source == editions.drop_hidden_tests(check.source) != ""
    # Outside exercises, every code cell (the experiments) is there as it was.
    regions = list(markup.solution_regions(instructor).values())
    plain = [c.source for i, c in enumerate(instructor.cells)
             if c.cell_type == "code" and not markup.nbgrader(c) and not any(r.covers_cell(i) for r in regions)]
    assert [s for s in plain if s not in {c.source for c in edition.cells}] == []


def test_a_solution_region_becomes_the_stub_at_its_indent_and_the_rest_stays():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n\nprint(f(2))"
    assert editions.stub_solutions(source) == (
        "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nprint(f(2))")


def test_a_solution_cell_without_a_region_becomes_the_stub_as_a_whole():
    assert editions.stub_solutions("answer = 42") == "# YOUR CODE HERE\nraise NotImplementedError()"


def test_hidden_tests_go_and_public_ones_stay():
    source = "assert x > 0\n### BEGIN HIDDEN TESTS\nassert x == 42\n### END HIDDEN TESTS\nprint('ok')"
    assert editions.drop_hidden_tests(source) == "assert x > 0\nprint('ok')"


def test_the_folded_explanation_goes_and_the_statement_stays():
    edition = editions.student_edition(tiny_course())
    text = "\n".join(cell.source for cell in edition.cells)
    assert "Store six sevens in `answer`." in text
    assert "said the mice" not in text and "adding a number to itself" not in text
    assert edition.cells[cell_index(edition, "ex-b-given")].source == "n = 3"  # given cells stay as they are


def test_unmarked_code_in_an_unconverted_solution_is_stubbed():
    nb = tiny_course()
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    nb.cells[4].source = "answer = 6 * 7"
    edition = editions.student_edition(nb)
    assert "answer = 6 * 7" not in edition_lines(edition)
    assert editions.CODE_STUB in [cell.source for cell in edition.cells]


def test_a_bare_prediction_becomes_an_open_question_and_the_text_before_it_stays():
    nb = tiny_course()
    nb.cells[2:2] = [nbgrader_cell("markdown", "Sums are cheap. Prediction: it takes 1 ms,\nbecause it is small.")]
    edition = editions.student_edition(nb)
    assert f"Sums are cheap. {editions.OPEN_QUESTION}" in [cell.source for cell in edition.cells]
    assert "because it is small." not in edition_lines(edition)


def test_the_preface_lists_the_graded_exercises_and_their_points():
    preface = editions.student_edition(tiny_course()).cells[1].source
    assert "IOLAB_STUDENT=<your id>" in preface
    assert "| `ex-a` (exercise) | 1 |" in preface and "| `ex-b` (exercise) | 2 |" in preface


def test_the_student_command_writes_every_notebook_the_same_way_twice(tmp_path, capsys):
    assert main(["homework", "student", str(tmp_path / "one")]) == 0
    assert str(tmp_path / "one") in capsys.readouterr().out
    main(["homework", "student", str(tmp_path / "two")])
    written = sorted(p.name for p in (tmp_path / "one").glob("*.ipynb"))
    assert written == [p.name for p in COURSE_NOTEBOOKS]
    assert all((tmp_path / "one" / n).read_bytes() == (tmp_path / "two" / n).read_bytes() for n in written)


def test_making_the_editions_again_keeps_a_notebook_a_student_wrote_in_unless_forced(tmp_path, capsys):
    folder = tmp_path / "homework"
    assert main(["homework", "student", str(folder)]) == 0
    assert main(["homework", "student", str(folder)]) == 0, "an untouched edition is written again"
    answered = folder / COURSE_NOTEBOOKS[0].name
    answered.write_text(answered.read_text().replace("raise NotImplementedError", "answer = 42  # mine", 1))
    capsys.readouterr()
    assert main(["homework", "student", str(folder)]) == 1
    assert "kept 1 notebooks that differ from their student edition" in capsys.readouterr().out
    assert "answer = 42  # mine" in answered.read_text()
    assert main(["homework", "student", str(folder), "--force"]) == 0
    assert "answer = 42  # mine" not in answered.read_text()


def _bound(source: str) -> set[str]:
    """The names a cell binds anywhere (assignments, imports, defs and their arguments, loop targets)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _loaded(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def experiments_needing_solutions(nb) -> dict[int, set[str]]:
    """Code cells outside the exercises that read a name only a solution cell binds, with those names."""
    ipython = [c.source for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith(("%", "!"))]
    assert ipython == [], "line magics would need IPython's parser here"
    solution_only = set().union(*[_bound(c.source) for c in nb.cells if markup.role(c) == "code"])
    solution_only -= set().union(*[_bound(c.source) for c in nb.cells if c.cell_type == "code" and markup.role(c) != "code"])
    exercise_cells = {i for e in markup.exercises(nb) for i in (*e.given, *e.solutions, *e.checks)}
    needs = {i: (_loaded(c.source) - _bound(c.source)) & solution_only for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and i not in exercise_cells}
    return {i: names for i, names in needs.items() if names}


def test_an_experiment_that_reads_a_solutions_answer_is_found():
    nb = tiny_course()
    nb.cells.append(nbgrader_cell("code", "print(f'the answer was {answer}')"))
    assert experiments_needing_solutions(nb) == {len(nb.cells) - 1: {"answer"}}


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_experiment_needs_a_name_that_only_a_solution_defines(path):
    # In the student edition the solutions are stubs: an experiment that reads a name only a solution binds
    # would fail for every student who has not solved that exercise, however far they are.
    assert experiments_needing_solutions(read(path)) == {}
