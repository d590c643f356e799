"""Every graded key that reads a measurement, run on the reference run's data (full scale): its solution scores.

A prediction about a measurement is graded against the student's own runs (a given cell's
``# measured`` statement). Its key must then hold whatever a run measured: a quick run here, and the
full-scale run in ``data/reference/`` too, where the book's own run contradicting a fixed key
(chapter 10's pred-10-sleepers) is what issue 38 found. So, for every exercise whose measured names
the notebook also saves (``results.save(NAME, "KEY")``), this test puts the reference run's ``KEY``
in their place, runs the rest of the measured statements, the instructor's solution and the check
cell with its hidden tests, and expects every assert to pass. Nothing is measured: the data is the
reference's, and the given statements that would start a server are left out.
"""

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

SAVE = re.compile(r'results\.save\((\w+),\s*"([\w-]+)"\)')
# A given statement the test runs as the notebook does: it draws a parameter or reads a fact, and starts nothing.
PURE_CALLS = {"student.pick", "machine.cores", "scale.pick", "print", "len", "range", "sorted", "Job"}


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


def _calls(stmt: ast.stmt) -> set[str]:
    return {ast.unparse(node.func) for node in ast.walk(stmt) if isinstance(node, ast.Call)}


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
            if bound & measured or not (_calls(stmt) - PURE_CALLS):
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
