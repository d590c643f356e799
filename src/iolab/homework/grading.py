"""Grade submitted notebooks against the instructor notebooks, as nbgrader's autograde does, without its database.

For each submission: the instructor's locked cells and check cells replace the submission's, by
``grade_id`` (so hidden tests come back and an edited check counts for nothing); the setup cell
and the graded exercises' cells run in a fresh kernel at quick scale, with the student's id in
``IOLAB_STUDENT`` and one time limit for the notebook; a check cell that runs without an error
scores its points. Whatever happens to one submission (an error, a hang, a deleted check, a file
that is not a notebook) becomes rows with a reason, and the batch goes on.
"""

from __future__ import annotations

import copy
import csv
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import markup
from iolab.homework.execution import Execution, execute_cells
from iolab.kit import student as students

# Generous for notebook 1 (about 15 s of exercises at quick scale); a hang costs this much, once.
DEFAULT_TIME_LIMIT = 300.0
GRADING_ENV = {"IOLAB_SCALE": "quick"}


@dataclass(frozen=True)
class Row:
    """One student's result on one exercise: a row of the grades CSV."""

    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    status: str  # passed | failed | not run | missing | error | not graded
    reason: str
    seconds: float


def restore_instructor_cells(nb: Any, source: Any) -> set[str]:
    """Replace ``nb``'s locked and check cells with ``source``'s, by grade_id; the grade_ids ``nb`` lacks."""
    kept = {gid: cell for cell in source.cells
            if (gid := markup.grade_id(cell)) and (markup.nbgrader(cell).get("locked") or markup.nbgrader(cell).get("grade"))}
    found = set()
    for index, cell in enumerate(nb.cells):
        gid = markup.grade_id(cell)
        if gid in kept:
            nb.cells[index] = copy.deepcopy(kept[gid])
            found.add(gid)
    return set(kept) - found


def _belongs(cell: Any, label: str) -> bool:
    """True for a cell of exercise ``label``: its statement, or a cell whose grade_id is ``label-<role>``."""
    if cell.cell_type == "markdown":
        return "{exercise-start}" in cell.source and re.search(rf"^\s*:label:\s*{re.escape(label)}\s*$",
                                                               cell.source, re.MULTILINE) is not None
    return markup.role(cell) != "" and markup.cell_label(markup.grade_id(cell))[0] == label


def exercise_block(nb: Any, label: str) -> range:
    """The cells of exercise ``label`` in a submission, from its first cell to its last check (empty without one).

    Cells a student added in between belong to it; the experiments between exercises do not.
    """
    mine = [i for i, cell in enumerate(nb.cells) if _belongs(cell, label)]
    checks = [i for i in mine if markup.role(nb.cells[i]) == "check"]
    return range(min(mine), max(checks) + 1) if checks else range(0)


def cells_to_run(nb: Any, blocks: list[range], whole: bool = False) -> list[int]:
    """The code cells to run: the setup cell and the exercises' ``blocks``, or every code cell with ``whole``.

    Skipping the experiments between exercises is what makes grading fast, and what "an exercise
    needs only the setup cell and its own cells" promises.
    """
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    if whole:
        return code
    setup = markup.setup_cell(nb)
    wanted = {i for block in blocks for i in block} | ({setup} if setup is not None else set())
    return [i for i in code if i in wanted]


def _reason(nb: Any, block: range, run: Execution, setup_error: str | None) -> tuple[str, str]:
    """The status and reason of an exercise whose cells in ``block`` ran (or did not) in ``run``."""
    checks = [i for i in block if markup.role(nb.cells[i]) == "check"]
    # A check that the time limit (or the kernel's death) cut short did not run to its end.
    done = [run.cells[i] for i in checks if i in run.cells and not (run.stopped and run.cells[i].error == run.stopped)]
    if len(done) < len(checks):
        return "not run", run.stopped or "its check cell did not run"
    failed = [c for c in done if c.error]
    if not failed:
        return "passed", ""
    before = [run.cells[i] for i in block if i in run.cells and i < failed[0].index and run.cells[i].error]
    why = [f"the setup cell raised {setup_error}"] if setup_error else []
    if before and before[0].error.startswith("NotImplementedError"):
        why.append("not answered: the solution cell still raises NotImplementedError")
    elif before:
        why.append(f"cell {before[0].index} raised {before[0].error}")
    why.append(f"the check failed with {failed[0].error}")
    return "failed", "; ".join(why)


def grade(submission: Any, source: Any, student: str, notebook: str, time_limit: float = DEFAULT_TIME_LIMIT,
          whole: bool = False) -> list[Row]:
    """One row per graded exercise of ``source``: what ``student``'s ``submission`` of it scores.

    Runs the setup cell and the graded exercises' cells (every code cell with ``whole``).
    """
    graded = [e for e in markup.exercises(source) if e.graded]
    nb = copy.deepcopy(submission)
    missing = restore_instructor_cells(nb, source)
    rows: dict[str, Row] = {}
    blocks: dict[str, range] = {}
    for exercise in graded:
        lost = sorted(g for i in exercise.checks if (g := markup.grade_id(source.cells[i])) in missing)
        if lost:
            rows[exercise.label] = Row(student, notebook, exercise.label, 0.0, exercise.points, "missing",
                                       f"the check cell {lost[0]} is not in the submission (deleted, or its "
                                       "metadata lost): 0 points", 0.0)
        else:
            blocks[exercise.label] = exercise_block(nb, exercise.label)
    setup = markup.setup_cell(nb)
    indices = cells_to_run(nb, list(blocks.values()), whole)
    with tempfile.TemporaryDirectory(prefix="iolab-grade-") as scratch:  # the submission's files land there
        run = execute_cells(nb, indices, time_limit, GRADING_ENV | {students.ENV: student}, cwd=scratch)
    setup_error = run.cells[setup].error if setup in run.cells else None
    for exercise in graded:
        if exercise.label in rows:
            continue
        block = blocks[exercise.label]
        status, reason = _reason(nb, block, run, setup_error)
        seconds = sum(run.cells[i].seconds for i in block if i in run.cells)
        rows[exercise.label] = Row(student, notebook, exercise.label, exercise.points if status == "passed" else 0.0,
                                   exercise.points, status, reason, round(seconds, 2))
    return [rows[e.label] for e in graded]


def _error_rows(student: str, notebook: str, source: Any | None, reason: str) -> list[Row]:
    """Rows that say a submission could not be graded at all: one per graded exercise, or one for the file."""
    graded = [e for e in markup.exercises(source) if e.graded] if source is not None else []
    if not graded:
        return [Row(student, notebook, "", 0.0, 0.0, "error", reason, 0.0)]
    return [Row(student, notebook, e.label, 0.0, e.points, "error", reason, 0.0) for e in graded]


def grade_file(path: Path, student: str, sources: Path, time_limit: float = DEFAULT_TIME_LIMIT,
               whole: bool = False) -> list[Row]:
    """The rows of one submitted notebook, graded against the notebook of the same name in ``sources``."""
    source_path = sources / path.name
    if not source_path.is_file():
        return _error_rows(student, path.name, None, f"no instructor notebook named {path.name} in {sources}")
    source = nbformat.read(source_path, as_version=4)
    if not any(e.graded for e in markup.exercises(source)):
        return [Row(student, path.name, "", 0.0, 0.0, "not graded", "this notebook has no graded exercises yet", 0.0)]
    try:
        submission = nbformat.read(path, as_version=4)
    except Exception as exc:  # not JSON, not a notebook: the student's problem, reported as such
        return _error_rows(student, path.name, source, f"cannot read the notebook: {type(exc).__name__}: {exc}")
    try:
        return grade(submission, source, student, path.name, time_limit, whole)
    except Exception as exc:  # a kernel that will not start, say: this submission's rows say so, the batch goes on
        return _error_rows(student, path.name, source, f"grading failed: {type(exc).__name__}: {exc}")


def submissions(folder: Path) -> Iterator[tuple[str, Path]]:
    """(student, notebook) for every ``folder/<student>/**/*.ipynb``, in order (checkpoints skipped)."""
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(student_dir.rglob("*.ipynb")):
            if ".ipynb_checkpoints" not in path.parts:
                yield student_dir.name, path


def grade_folder(folder: Path, sources: Path, time_limit: float = DEFAULT_TIME_LIMIT,
                 whole: bool = False) -> Iterator[Row]:
    """The rows of every submission in ``folder`` (one sub-folder per student), as each is graded."""
    for student, path in submissions(folder):
        yield from grade_file(path, student, sources, time_limit, whole)


def write_csv(rows: Iterable[Row], path: Path) -> list[Row]:
    """Write ``rows`` to CSV at ``path`` as they come (a crash keeps those done); the rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[field.name for field in fields(Row)])
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))
            f.flush()
            written.append(row)
    return written
