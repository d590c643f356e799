"""Notebooks for the homework tests: the course's own, and a tiny course built in code (fast to grade)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import editions, markup, sandbox

ROOT = Path(__file__).resolve().parents[2]
COURSE_NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# In the sandbox where bubblewrap is installed (CI installs it); else as this user, so that a machine
# without it still checks the notebooks' markup and answers (the sandbox's own tests skip there).
SANDBOX = "bwrap" if sandbox.usable() is None else "none"


def read(path: Path) -> Any:
    """A notebook, as nbformat reads it."""
    return nbformat.read(path, as_version=4)


def graded_notebooks() -> list[Path]:
    """The course's notebooks that have graded exercises (the pilot first; each converted one joins)."""
    return [path for path in COURSE_NOTEBOOKS if any(e.graded for e in markup.exercises(read(path)))]


def nbgrader_cell(kind: str, source: str, label: str | None = None, role: str | None = None,
                  points: float | None = None) -> Any:
    """A markdown or code cell; with ``role`` (given, code, check, answer, setup), nbgrader's metadata for it."""
    cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
    if role:
        meta = {"grade": role in ("check", "answer"), "grade_id": "setup" if role == "setup" else f"{label}-{role}",
                "locked": role in ("given", "check", "setup"), "schema_version": 3,
                "solution": role in ("code", "answer"), "task": False}
        if role in ("check", "answer"):
            meta["points"] = points
        cell.metadata["nbgrader"] = meta
    return cell


def statement(label: str, text: str, explanation: str | None = None) -> str:
    """An exercise's markdown: the statement, and (if given) the start of its folded solution."""
    source = f"```{{exercise-start}}\n:label: {label}\n```\n{text}\n```{{exercise-end}}\n```"
    if explanation:
        source += f"\n\n```{{solution-start}} {label}\n:class: dropdown\n```\n{explanation}"
    return source


SOLUTION_END = "```{solution-end}\n```"


def course(cells: list[Any]) -> Any:
    """An instructor notebook of ``cells``, with a Python 3 kernel."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = cells
    return nb


def tiny_course() -> Any:
    """An instructor notebook of two graded exercises around an experiment: a setup cell, ex-a (1 point), ex-b (2)."""
    md, code = "markdown", "code"
    return course([
        nbgrader_cell(md, "# A tiny course"),
        nbgrader_cell(code, "import os, time", role="setup"),
        nbgrader_cell(code, "experiment = sum(range(10))"),
        nbgrader_cell(md, statement("ex-a", "Store six sevens in `answer`.", "Six sevens make forty-two, said the mice.")),
        nbgrader_cell(code, "### BEGIN SOLUTION\nanswer = 6 * 7\n### END SOLUTION", "ex-a", "code"),
        nbgrader_cell(md, SOLUTION_END),
        nbgrader_cell(code, "assert isinstance(answer, int)\n### BEGIN HIDDEN TESTS\nassert answer == 42\n"
                      "### END HIDDEN TESTS", "ex-a", "check", 1),
        nbgrader_cell(md, statement("ex-b", "Store twice `n` in `total`.")),
        nbgrader_cell(code, "n = 3", "ex-b", "given"),
        nbgrader_cell(md, "```{solution-start} ex-b\n:class: dropdown\n```\nDoubling is adding a number to itself."),
        nbgrader_cell(code, "### BEGIN SOLUTION\ntotal = n + n\n### END SOLUTION", "ex-b", "code"),
        nbgrader_cell(md, SOLUTION_END),
        nbgrader_cell(code, "assert total == 2 * n", "ex-b", "check", 2),
    ])


MODEL_ANSWER = "Six sevens are forty-two because multiplying is adding six times over."
RUBRIC = "**Rubric (2 points).** One point for naming multiplication as repeated adding; one for the product."


def tiny_written_course() -> Any:
    """The tiny course with a written exercise after its two others: ex-why (2 points), which a TA scores."""
    nb = tiny_course()
    nb.cells += [
        nbgrader_cell("markdown", statement("ex-why", "Explain, in a sentence, why `answer` is 42.", RUBRIC)),
        nbgrader_cell("markdown", MODEL_ANSWER, "ex-why", "answer", 2),
        nbgrader_cell("markdown", SOLUTION_END),
    ]
    return nb


def cell_index(nb: Any, grade_id: str) -> int:
    """The index of the cell with ``grade_id``."""
    return next(i for i, cell in enumerate(nb.cells) if markup.grade_id(cell) == grade_id)


def paste_solutions(edition: Any, instructor: Any) -> Any:
    """A student edition in which every solution cell holds the instructor's solution again (and every written
    answer the model answer)."""
    solved = copy.deepcopy(edition)
    for cell in solved.cells:
        if markup.role(cell) in ("code", markup.ANSWER):
            cell.source = instructor.cells[cell_index(instructor, markup.grade_id(cell))].source
    return solved


def solved(**answers: str) -> Any:
    """The tiny course's student edition, solved as the book does except for ``answers`` (grade_id -> source)."""
    instructor = tiny_course()
    edition = paste_solutions(editions.student_edition(instructor), instructor)
    for gid, source in answers.items():
        edition.cells[cell_index(edition, gid)].source = source
    return edition


def write(nb: Any, path: Path) -> Path:
    """Write ``nb`` to ``path`` (folders made); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
