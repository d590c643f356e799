"""A check cell read as the grader reads it: the answers it needs, its public gate, its scored parts."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from homework_notebooks import graded_notebooks, read
from iolab.homework import checks, markup
from iolab.kit import results

CELL = """assert isinstance(answer, int), "an integer"
### BEGIN HIDDEN TESTS
expected = 6 * 7
assert answer == expected, "forty-two"
for k in range(2):
    assert k < answer
assert answer > 0
### END HIDDEN TESTS"""


def test_a_check_cell_splits_into_its_public_gate_and_one_part_per_hidden_assert():
    found = checks.parts(CELL)
    assert [(p.hidden, p.line) for p in found] == [(False, 1), (True, 4), (True, 5), (True, 7)]
    assert "expected = 6 * 7" in found[1].source  # a statement belongs to the assert after it


def test_the_answer_names_are_what_the_check_reads_and_nothing_else_provides():
    assert checks.answer_names(CELL, []) == {"answer"}
    assert checks.answer_names("assert np.isclose(ratio, given)", ["import numpy as np", "given = 3"]) == {"ratio"}


def _outcomes(answer):
    return checks.run_parts(checks.parts(CELL), {"answer": answer}, "<check>")


def test_every_part_passed_earns_the_points():
    assert checks.score(_outcomes(42), 3) == (3, "passed")


def test_some_hidden_parts_passed_earn_their_share():
    outcomes = _outcomes(41)  # an int, positive, above 1, but not 42
    assert [o.passed for o in outcomes] == [True, False, True, True]
    assert outcomes[1].message == "forty-two"
    assert checks.score(outcomes, 3) == (2.0, "partial")


def test_a_failed_public_gate_earns_nothing():
    outcomes = _outcomes("42")
    assert checks.score(outcomes, 3) == (0.0, "failed")
    assert outcomes[0].message == "an integer"


def test_a_cell_without_hidden_asserts_shares_its_points_among_the_public_ones():
    found = checks.parts("assert a == 1\nassert b == 2")
    outcomes = checks.run_parts(found, {"a": 1, "b": 3}, "<check>")
    assert checks.score(outcomes, 2) == (1.0, "partial")


def test_an_error_in_one_part_fails_that_part_only_and_names_the_error():
    outcomes = checks.run_parts(checks.parts("assert x == 1\nassert y == 2"), {"x": 1}, "<check>")
    assert [(o.passed, o.message) for o in outcomes] == [(True, ""), (False, "NameError: name 'y' is not defined")]


def test_a_given_cells_measured_lines_are_left_to_the_students_run_and_the_rest_runs_in_the_checker():
    given = ('faster = student.pick("ex", [2, 3])\n'
             'baseline = amdahl.sweep([1], wait_ms=90)  # measured\n'
             'share = baseline.wait / 2  # measured: from the baseline\n'
             'print(faster)')
    code, measured = checks.parameters(given)
    assert code == 'faster = student.pick("ex", [2, 3])\nprint(faster)'
    assert measured == {"baseline", "share"}
    assert checks.answer_names("assert abs(gain - share * faster) < 1", [code]) == {"gain", "share"}


# What a given cell may compute for the checker without the student's run: a parameter, a constant, a machine fact.
PURE_CALLS = {"student.pick", "machine.cores", "Job", "scale.pick"}  # scale.pick: the grader runs at quick scale, as the student's check read it


def _calls(stmt: ast.stmt) -> set[str]:
    return {ast.unparse(node.func) for node in ast.walk(stmt) if isinstance(node, ast.Call)}


@pytest.mark.parametrize("path", graded_notebooks(), ids=lambda p: p.stem)
def test_a_given_cell_that_measures_what_a_check_reads_marks_it_measured(path):
    # Unmarked, the checker measures it again and grades the student's answer, reasoned from the student's run,
    # against its own run: an honest answer near a boundary then loses its points (chapter 9's pred-ten-rows
    # did, once in 300 honest checks beside a CPU burner).
    nb = read(path)
    unmarked = []
    for exercise in markup.exercises(nb):
        read_by_checks = _reads(nb, exercise.checks)
        for i in exercise.given:
            kept, _ = checks.parameters(nb.cells[i].source)
            for stmt in ast.parse(kept).body:
                if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    continue
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)} & read_by_checks
                if names and _calls(stmt) - PURE_CALLS:
                    unmarked.append(f"{exercise.label}: {sorted(names)} from {sorted(_calls(stmt) - PURE_CALLS)}")
    assert not unmarked, "given statements the checker would measure again for its own answer key:\n" + "\n".join(unmarked)


# Every graded key that reads a saved measurement, run on the reference run's data (full scale): its solution scores.
# A prediction about a measurement is graded against the student's own runs (a given cell's
# ``# measured`` statement). Its key must then hold whatever a run measured: a quick run here, and the
# full-scale run in ``data/reference/`` too, where the book's own run contradicting a fixed key
# (chapter 10's pred-10-sleepers) is what issue 38 found. So, for every exercise whose measured names
# the notebook also saves (``results.save(NAME, "KEY")``), this test puts the reference run's ``KEY``
# in their place, runs the rest of the measured statements, the instructor's solution and the check
# cell with its hidden tests, and expects every assert to pass. Nothing is measured: the data is the
# reference's, and the given statements that would start a server are left out.
# A given statement such a run may still run as the notebook does: it draws a parameter, reads a fact, prints.
SAVE = re.compile(r'results\.save\((\w+),\s*"([\w-]+)"\)')
RUNNABLE_CALLS = PURE_CALLS | {"scale.pick", "print", "len", "range", "sorted"}


def _saved(nb: Any) -> dict[str, str]:
    return {name: key for cell in nb.cells if cell.cell_type == "code" for name, key in SAVE.findall(cell.source)}


def _reads(nb: Any, cells: tuple[int, ...]) -> set[str]:
    return {node.id for i in cells for node in ast.walk(ast.parse(nb.cells[i].source)) if isinstance(node, ast.Name)}


def _cases() -> list[Any]:
    cases = []
    for path in graded_notebooks():
        nb = read(path)
        saved = _saved(nb)
        for exercise in markup.exercises(nb):
            measured = {n for i in exercise.given for n in checks.parameters(nb.cells[i].source)[1]}
            needed = measured & _reads(nb, exercise.solutions + exercise.checks)
            binders = {n for n in measured if n in saved}
            if needed and binders:
                cases.append(pytest.param(path, exercise.label, id=f"{path.stem}-{exercise.label}"))
    return cases


def _run(source: str, namespace: dict[str, Any], name: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, name, "exec"), namespace)


def _on_reference(nb: Any, exercise: markup.Exercise, namespace: dict[str, Any]) -> None:
    """Run ``exercise``'s given cells with each saved measurement replaced by the reference run's."""
    saved = _saved(nb)
    for i in exercise.given:
        kept, measured = checks.parameters(nb.cells[i].source)
        for stmt in ast.parse(nb.cells[i].source).body:
            bound = checks.bound_names(ast.unparse(stmt))
            if bound & measured & saved.keys():
                for name in bound & saved.keys():
                    data = results.reference(saved[name])
                    if data is None:
                        pytest.skip(f"no reference run {saved[name]} shipped")
                    namespace[name] = data.drop(columns="machine")
                continue
            if bound & measured or not (_calls(stmt) - RUNNABLE_CALLS):
                _run(ast.unparse(stmt), namespace, f"<given {i}>")


@pytest.mark.parametrize(("path", "label"), _cases())
def test_the_solution_scores_on_the_reference_runs_data(path: Path, label: str) -> None:
    nb = read(path)
    exercise = next(e for e in markup.exercises(nb) if e.label == label)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    setup = markup.setup_cell(nb)
    if setup is not None:
        _run(nb.cells[setup].source, namespace, "<setup>")
    _on_reference(nb, exercise, namespace)
    for i in exercise.solutions:
        _run(nb.cells[i].source, namespace, f"<solution {i}>")
    for i in exercise.checks:
        _run(nb.cells[i].source, namespace, f"<check {i}>")  # the hidden tests are in the instructor's cell


def test_the_exercises_graded_on_their_own_runs_are_found() -> None:
    # A regex that stopped matching would leave this test with nothing to run and nothing to say.
    assert len(_cases()) >= 5


@pytest.mark.parametrize("path", graded_notebooks(), ids=lambda p: p.stem)
def test_no_cell_an_exercise_grades_saves_results(path: Path) -> None:
    # The grader runs an exercise's cells in a sandbox where the course's data folder is read-only: a given cell
    # that saved its runs raised there, and the blank and honest editions of 11-measuring lost pred-generator.
    nb = read(path)
    saving = [f"{exercise.label}: cell {i}" for exercise in markup.exercises(nb)
              for i in (*exercise.given, *exercise.solutions, *exercise.checks) if "results.save(" in nb.cells[i].source]
    assert not saving, "save the runs in a cell after the exercise's check: " + ", ".join(saving)


def _loaded(source: str) -> set[str]:
    """The names ``source`` reads, less those it checks for first (``"name" in globals()``)."""
    tree = ast.parse(source)
    guarded = {node.left.value for node in ast.walk(tree) if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
               and isinstance(node.left.value, str) and any(isinstance(c, ast.Call) and ast.unparse(c.func) == "globals"
                                                             for c in node.comparators)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - guarded


@pytest.mark.parametrize("path", graded_notebooks(), ids=lambda p: p.stem)
def test_an_exercise_reads_nothing_but_the_setup_cell_and_its_own_cells(path: Path) -> None:
    # The grader runs the setup cell and each exercise's cells, not the experiments between them: chapter 13's
    # given cells once read the medians of an experiment above them, and every honest submission lost 3 points.
    import builtins

    nb = read(path)
    setup = markup.setup_cell(nb)
    known = set(dir(builtins)) | (checks.bound_names(nb.cells[setup].source) if setup is not None else set())
    problems = []
    for exercise in markup.exercises(nb):  # in order: the grader runs the blocks in one kernel, an earlier one's names stay
        cells = (*exercise.given, *exercise.solutions, *exercise.checks)
        known |= {n for i in cells for n in checks.bound_names(nb.cells[i].source)}
        known |= {node.name for i in cells for node in ast.walk(ast.parse(nb.cells[i].source))
                  if isinstance(node, ast.ExceptHandler) and node.name}
        for i in (*exercise.given, *exercise.solutions):
            if missing := _loaded(nb.cells[i].source) - known:
                problems.append(f"{exercise.label}, cell {i}: {sorted(missing)}")
    assert not problems, "an exercise's cell reads a name only a cell outside it binds:\n" + "\n".join(problems)
