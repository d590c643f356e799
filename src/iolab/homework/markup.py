"""The exercises of a notebook, read from its markup: MyST directives for the book, nbgrader's for the grader.

One exercise, as the instructor notebook (the one in ``notebooks/``) holds it::

    markdown   ```{exercise-start}  :label: ex-own-offset ...``` statement ```{exercise-end}```
    code       locked, grade_id ex-own-offset-given    the student's parameters (kit.student.pick)
    markdown   ```{solution-start} ex-own-offset ...``` the explanation, folded in the book
    code       solution, grade_id ex-own-offset-code   ### BEGIN SOLUTION ... ### END SOLUTION
    markdown   ```{solution-end}```
    code       grade, grade_id ex-own-offset-check     public asserts; ### BEGIN HIDDEN TESTS ...

A *written* exercise asks the student to explain in words; a TA scores it by hand. In place of the
solution and check cells it has nbgrader's "manually graded answer" cell, inside its folded solution::

    markdown   ```{solution-start} ex-why ...``` the rubric, for the TA (folded in the book, not in the edition)
    markdown   grade, solution, not locked, points, grade_id ex-why-answer    the model answer, the whole cell
    markdown   ```{solution-end}```

The whole answer cell is the model answer, as nbgrader's ``ClearSolutions`` reads a solution cell
without ``### BEGIN SOLUTION`` (those lines would be headings in the book): the student edition puts
nbgrader's text stub, ``YOUR ANSWER HERE``, in its place (``editions``); ``written`` exports the class's
answers for a TA and merges the scores back.

A *prediction* is the same with a label starting ``pred-``: a question answered in a solution cell
before the experiment that measures it (its check sits inside the folded solution, since the
hidden test is the answer). A "Prediction" paragraph outside any exercise is a *bare* prediction:
a notebook not yet converted states its answer in the open.

The cell metadata is nbgrader's schema version 3 (``nbgrader/nbgraderformat/v3.json``): required
``schema_version``, ``grade``, ``locked``, ``solution``; a ``grade_id`` when any of those is true;
``points`` on a grade cell; no other keys. ``problems`` checks it, so an nbgrader course can take
the notebooks as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
SCHEMA_VERSION = 3
SETUP_ID = "setup"
PREDICTION_PREFIX = "pred-"
# grade_id = "<label>-<role>": what each kind of exercise cell is called.
ROLES = {"given": "locked", "code": "solution", "check": "grade", "answer": "solution"}
ANSWER = "answer"  # the role of a written exercise's answer cell (markdown, grade and solution)

_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|:{3,})\{(?P<name>(?:exercise|solution)-(?:start|end))\}\s*(?P<arg>.*?)\s*$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*?)\s*$")
# "**Prediction.**", "**Prediction (source 000).**", "Prediction:", "Predictions, from the costs above:".
PREDICTION = re.compile(r"\*\*Predictions?\b[^*]*\*\*|\bPredictions?\b[^.:\n*]{0,40}:")
_ALLOWED_KEYS = {"schema_version", "grade", "locked", "solution", "task", "grade_id", "points", "checksum", "cell_type"}
_GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")


@dataclass(frozen=True)
class Directive:
    """One ``{exercise-start}``-like directive: where it sits (cell, first and last line), its argument, options."""

    cell: int
    first: int
    last: int
    name: str
    argument: str
    options: dict[str, str]


@dataclass(frozen=True)
class Region:
    """A span of markdown from one line of a cell to a line of the same or a later cell (both included)."""

    first_cell: int
    first_line: int
    last_cell: int
    last_line: int

    def lines_in(self, cell: int, n_lines: int) -> range:
        """The lines of ``cell`` (which has ``n_lines``) that the region covers; empty if none."""
        if not self.first_cell <= cell <= self.last_cell:
            return range(0)
        start = self.first_line if cell == self.first_cell else 0
        stop = self.last_line + 1 if cell == self.last_cell else n_lines
        return range(start, stop)

    def covers_cell(self, cell: int) -> bool:
        """True for a cell strictly inside the region (a code cell between its two markdown ends)."""
        return self.first_cell < cell < self.last_cell


@dataclass(frozen=True)
class Exercise:
    """One exercise or prediction: its label, statement, cells by role, and the points its checks give."""

    label: str
    statement: str
    first_cell: int
    last_cell: int
    given: tuple[int, ...]
    solutions: tuple[int, ...]
    checks: tuple[int, ...]
    points: float
    answers: tuple[int, ...] = ()  # a written exercise's answer cells (grade_id ``<label>-answer``)

    @property
    def kind(self) -> str:
        """``"prediction"`` or ``"exercise"``, from the label."""
        return "prediction" if self.label.startswith(PREDICTION_PREFIX) else "exercise"

    @property
    def graded(self) -> bool:
        """True once the exercise has a check cell that nbgrader's metadata marks as graded (graded by the grader)."""
        return bool(self.checks)

    @property
    def written(self) -> bool:
        """True for a written exercise: an answer cell a TA scores by hand (``written``)."""
        return bool(self.answers)


def nbgrader(cell: Any) -> dict[str, Any]:
    """The cell's nbgrader metadata; empty for a cell without any."""
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def grade_id(cell: Any) -> str | None:
    """The cell's nbgrader ``grade_id``, or None."""
    return nbgrader(cell).get("grade_id")


def cell_label(grade_id_: str) -> tuple[str, str]:
    """``("ex-own-offset", "check")`` for ``"ex-own-offset-check"``; ``(grade_id, "")`` for another id."""
    label, _, role = grade_id_.rpartition("-")
    return (label, role) if label and role in ROLES else (grade_id_, "")


def role(cell: Any) -> str:
    """What an exercise's cell is (``given``, ``code``, ``check``), from its grade_id; ``""`` for any other cell."""
    return cell_label(grade_id(cell) or "")[1]


def lines(cell: Any) -> list[str]:
    """The cell's source as lines (without line ends)."""
    return str(cell.source).split("\n")


def directives(nb: Any) -> list[Directive]:
    """Every exercise/solution start/end directive of the notebook's markdown, in order."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = lines(cell)
        i = 0
        while i < len(text):
            match = _FENCE.match(text[i])
            if not match:
                i += 1
                continue
            options: dict[str, str] = {}
            j = i + 1
            while j < len(text) and (option := _OPTION.match(text[j])):
                options[option["key"]] = option["value"]
                j += 1
            closed = j < len(text) and text[j].strip() == match["fence"]
            last = j if closed else j - 1
            found.append(Directive(index, i, last, match["name"], match["arg"], options))
            i = last + 1
    return found


def _pairs(nb: Any, start: str, end: str) -> Iterator[tuple[Directive, Directive | None]]:
    """Each ``start`` directive with the next ``end`` one (None if it has none)."""
    found = directives(nb)
    for k, directive in enumerate(found):
        if directive.name == start:
            yield directive, next((d for d in found[k + 1:] if d.name == end), None)


def solution_regions(nb: Any) -> dict[str, Region]:
    """Each ``{solution-start} label`` ... ``{solution-end}`` span, by label: what the book folds."""
    regions = {}
    for start, end in _pairs(nb, "solution-start", "solution-end"):
        if end is not None:
            regions[start.argument] = Region(start.cell, start.first, end.cell, end.last)
    return regions


def exercise_regions(nb: Any) -> dict[str, Region]:
    """Each ``{exercise-start}`` ... ``{exercise-end}`` span (the statement and its fences), by label."""
    regions = {}
    for start, end in _pairs(nb, "exercise-start", "exercise-end"):
        if end is not None:
            regions[start.options.get("label", "")] = Region(start.cell, start.first, end.cell, end.last)
    return regions


def _text(nb: Any, region: Region, inner: bool) -> str:
    """The markdown a region spans; with ``inner``, without its first and last line (the fences)."""
    out = []
    for cell in range(region.first_cell, region.last_cell + 1):
        if nb.cells[cell].cell_type == "markdown":
            text = lines(nb.cells[cell])
            out += [text[i] for i in region.lines_in(cell, len(text))]
    return "\n".join(out[1:-1] if inner else out)


def exercises(nb: Any) -> list[Exercise]:
    """The notebook's exercises and predictions, in order of their ``{exercise-start}``."""
    by_label: dict[str, dict[str, list[int]]] = {}
    points: dict[str, float] = {}
    for index, cell in enumerate(nb.cells):
        meta = nbgrader(cell)
        label, role = cell_label(meta.get("grade_id", ""))
        if role:
            by_label.setdefault(label, {}).setdefault(role, []).append(index)
            if role in ("check", ANSWER) and meta.get("grade"):
                points[label] = points.get(label, 0.0) + float(meta.get("points", 0))
    solutions = solution_regions(nb)
    found = []
    for start, end in _pairs(nb, "exercise-start", "exercise-end"):
        label = start.options.get("label", "")
        roles = by_label.get(label, {})
        statement = _text(nb, Region(start.cell, start.last, end.cell, end.first), inner=True) if end else ""
        ends = [start.cell] + [i for cells in roles.values() for i in cells]
        if label in solutions:
            ends.append(solutions[label].last_cell)
        found.append(Exercise(label, statement.strip(), start.cell, max(ends), tuple(roles.get("given", [])),
                              tuple(roles.get("code", [])), tuple(roles.get("check", [])), points.get(label, 0.0),
                              tuple(roles.get(ANSWER, []))))
    return found


def setup_cell(nb: Any) -> int | None:
    """The setup cell: the one whose grade_id is ``setup``, else the first code cell (None if there is none)."""
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    marked = [i for i in code if grade_id(nb.cells[i]) == SETUP_ID]
    found = marked or code
    return found[0] if found else None


def paragraphs(text: str) -> list[tuple[int, int]]:
    """The (first, last) line numbers of each paragraph of ``text`` (blocks between blank lines)."""
    spans, start = [], None
    text_lines = text.split("\n")
    for i, line in enumerate(text_lines + [""]):
        if line.strip() and start is None:
            start = i
        elif not line.strip() and start is not None:
            spans.append((start, i - 1))
            start = None
    return spans


def bare_predictions(nb: Any) -> list[tuple[int, int, int]]:
    """The "Prediction" paragraphs outside exercises and solutions, as (cell, first line, last line)."""
    regions = list(exercise_regions(nb).values()) + list(solution_regions(nb).values())
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = lines(cell)
        inside = {i for region in regions for i in region.lines_in(index, len(text))}
        for first, last in paragraphs(cell.source):
            if not inside & set(range(first, last + 1)) and PREDICTION.search("\n".join(text[first:last + 1])):
                found.append((index, first, last))
    return found


def metadata_problems(cell: Any, index: int) -> list[str]:
    """What makes one cell's nbgrader metadata invalid under schema version 3 (nothing for a cell without any)."""
    if "nbgrader" not in cell.get("metadata", {}):
        return []
    meta, where = nbgrader(cell), f"cell {index}"
    found = [f"{where}: nbgrader key {key!r} is not in schema version 3" for key in sorted(set(meta) - _ALLOWED_KEYS)]
    found += [f"{where}: nbgrader metadata lacks {key!r}" for key in ("schema_version", "grade", "locked", "solution")
              if key not in meta]
    if meta.get("schema_version") != SCHEMA_VERSION:
        found.append(f"{where}: schema_version must be {SCHEMA_VERSION}")
    for key in ("grade", "locked", "solution", "task"):
        if key in meta and not isinstance(meta[key], bool):
            found.append(f"{where}: {key} must be true or false")
    if any(meta.get(key) for key in ("grade", "locked", "solution")):
        gid = meta.get("grade_id")
        if not isinstance(gid, str) or not gid or not _GRADE_ID.match(gid):
            found.append(f"{where}: a graded, locked or solution cell needs a grade_id of letters, digits, - and _")
    if meta.get("grade") and not (isinstance(meta.get("points"), (int, float)) and meta["points"] >= 0):
        found.append(f"{where}: a grade cell needs points >= 0")
    if cell.cell_type == "markdown" and not meta.get("task") and bool(meta.get("grade")) != bool(meta.get("solution")):
        found.append(f"{where}: a markdown cell must be both grade and solution, or neither")
    if meta.get("task") and cell.cell_type != "markdown":
        found.append(f"{where}: a task cell must be markdown")
    return found


def delimiter_problems(cell: Any, index: int) -> list[str]:
    """Unbalanced or misplaced ``### BEGIN/END SOLUTION`` and ``HIDDEN TESTS`` lines in one cell."""
    found = []
    meta = nbgrader(cell)
    for begin, end, needs, kind in ((BEGIN_SOLUTION, END_SOLUTION, "solution", "solution"),
                                    (BEGIN_HIDDEN, END_HIDDEN, "grade", "hidden tests")):
        depth, seen = 0, False
        for line in lines(cell):
            if line.strip() == begin:
                depth, seen = depth + 1, True
                if depth > 1:
                    found.append(f"cell {index}: nested {begin!r}")
            elif line.strip() == end:
                depth -= 1
                if depth < 0:
                    found.append(f"cell {index}: {end!r} without {begin!r}")
                    depth = 0
        if depth:
            found.append(f"cell {index}: {begin!r} without {end!r}")
        if seen and (cell.cell_type != "code" or not meta.get(needs)):
            found.append(f"cell {index}: {kind} region outside a code cell marked {needs}")
    return found


def problems(nb: Any) -> list[str]:
    """Everything that keeps the notebook's markup from making a sound student edition and grader."""
    found = [p for i, cell in enumerate(nb.cells) for p in metadata_problems(cell, i) + delimiter_problems(cell, i)]
    ids = [gid for cell in nb.cells if (gid := grade_id(cell)) and any(nbgrader(cell).get(k) for k in ROLES.values())]
    found += [f"grade_id {gid!r} is used twice" for gid in sorted({g for g in ids if ids.count(g) > 1})]
    found_exercises = exercises(nb)
    labels = [e.label for e in found_exercises]
    found += [f"exercise label {label!r} is used twice" for label in sorted({x for x in labels if labels.count(x) > 1})]
    found += [f"an {{exercise-start}} in cell {e.first_cell} has no :label:" for e in found_exercises if not e.label]
    for start, end in _pairs(nb, "solution-start", "solution-end"):
        if end is None:
            found.append(f"cell {start.cell}: {{solution-start}} {start.argument} has no {{solution-end}}")
        if start.argument not in labels:
            found.append(f"cell {start.cell}: {{solution-start}} names no exercise: {start.argument!r}")
    for gid in ids:
        label, role = cell_label(gid)
        if gid != SETUP_ID and (not role or label not in labels):
            found.append(f"grade_id {gid!r} is neither 'setup' nor '<exercise label>-given|code|check|answer'")
    regions = solution_regions(nb)
    for exercise in found_exercises:
        found += answer_problems(nb, exercise, regions.get(exercise.label))
        if exercise.written or not (exercise.given or exercise.solutions or exercise.checks):
            continue  # not converted yet: the student edition treats its folded code as the solution
        if not exercise.checks:
            found.append(f"{exercise.label}: marked up, but no check cell ({exercise.label}-check)")
        region = regions.get(exercise.label)
        for i in range(len(nb.cells)):
            unmarked = not any(nbgrader(nb.cells[i]).get(k) for k in ("solution", "grade"))
            if region and region.covers_cell(i) and nb.cells[i].cell_type == "code" and unmarked:
                found.append(f"cell {i}: code inside the solution of {exercise.label} that is neither solution nor check")
    if any(e.graded for e in found_exercises):
        found += [f"cell {cell}: a bare 'Prediction' paragraph (lines {first}-{last}) in a graded notebook"
                  for cell, first, last in bare_predictions(nb)]
    return found


def answer_problems(nb: Any, exercise: Exercise, region: Region | None) -> list[str]:
    """What keeps a written exercise's answer cells from being nbgrader's "manually graded answer" cells inside
    its folded solution (where the book folds the model answer and the edition keeps only the stub)."""
    found = []
    if exercise.written and (exercise.given or exercise.solutions or exercise.checks):
        found.append(f"{exercise.label}: both written (an answer cell) and checked: make them two exercises")
    for index in exercise.answers:
        meta = nbgrader(nb.cells[index])
        if nb.cells[index].cell_type != "markdown" or not (meta.get("grade") and meta.get("solution")) or meta.get("locked"):
            found.append(f"cell {index}: an answer cell must be markdown, grade and solution, not locked")
        if region is None or not region.covers_cell(index):
            found.append(f"cell {index}: the answer cell of {exercise.label} is not inside its folded solution")
    return found
