"""The student edition of a notebook; the instructor edition is the notebook itself.

What a student must not see is removed the way nbgrader's ``ClearSolutions`` and
``ClearHiddenTests`` remove it, plus what the book folds:

- a solution cell's ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region becomes nbgrader's stub
  (``# YOUR CODE HERE`` / ``raise NotImplementedError()``), indented like the region; a solution cell
  without a region becomes the stub as a whole;
- a written exercise's answer cell (markdown, the model answer as a whole) becomes nbgrader's text stub,
  ``YOUR ANSWER HERE``, and stays although it sits in the folded solution, whose rubric goes;
- ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` lines go; the public asserts stay;
- the prose between ``{solution-start}`` and ``{solution-end}`` goes, and a code cell inside it that
  is not marked (a notebook not converted yet) is taken for a solution and stubbed;
- a bare "Prediction" paragraph, which states its answer, becomes an open question;
- a given cell that measures (``# measured``) ends with ``student.record(...)`` of what it measured, so
  the notebook a student hands in keeps their own machine's numbers for the class's measurements.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import checks, markup
from iolab.kit import student

CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"  # nbgrader's ClearSolutions.text_stub
PREFACE_ID = "student-edition"  # fixed, so that two runs write the same file
RECORD_COMMENT = "# keeps your run's numbers in this notebook, for your instructor's figures of the class's machines"
OPEN_QUESTION = ("**Prediction.** What do you expect the next cells to show, and why? "
                 "Write it down before you run them.")


def replace_regions(source: str, begin: str, end: str, stub: list[str]) -> tuple[str, bool]:
    """``source`` with each ``begin`` ... ``end`` region (delimiters included) replaced by ``stub``, indented
    like its ``begin`` line; and whether there was a region."""
    out, inside, found = [], False, False
    for line in source.split("\n"):
        if line.strip() == begin:
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + stub_line for stub_line in stub]
            inside, found = True, True
        elif line.strip() == end:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out), found


def stub_solutions(source: str) -> str:
    """``source`` with each solution region replaced by the stub (all of it, if it has no region): ClearSolutions."""
    stubbed, found = replace_regions(source, markup.BEGIN_SOLUTION, markup.END_SOLUTION, CODE_STUB.split("\n"))
    return stubbed if found else CODE_STUB


def drop_hidden_tests(source: str) -> str:
    """``source`` without its hidden-test regions: ClearHiddenTests."""
    return replace_regions(source, markup.BEGIN_HIDDEN, markup.END_HIDDEN, [])[0]


def _open_questions(text: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """``text`` with each span's prediction replaced by the open question (text before the marker stays)."""
    out = list(text)
    for first, last in sorted(spans, reverse=True):
        paragraph = "\n".join(out[first:last + 1])
        match = markup.PREDICTION.search(paragraph)
        if match:
            out[first:last + 1] = (paragraph[: match.start()] + OPEN_QUESTION).split("\n")
    return out


def preface(nb: Any) -> Any:
    """The markdown cell that opens a student edition: the student id, the answer cells, the points."""
    graded = [e for e in markup.exercises(nb) if e.graded or e.written]
    text = ["**Student edition.** Start Jupyter with your student id in its environment (in the course's "
            f"folder: `{student.ENV}=<your id> make lab LAB=<this folder>`): exercises marked *your numbers* "
            "draw their parameters from it, and the grader runs your notebook with the same id. Replace each "
            "`raise NotImplementedError()` with your answer; the cell after it checks its shape, and "
            "the grader also checks its value."]
    if any(e.written for e in graded):
        text += ["", f"A *written* exercise asks you to explain in words: replace `{TEXT_STUB}` in its answer cell; "
                 "a TA scores it by hand."]
    if graded:
        text += ["", "The grader runs the setup cell and the exercises' cells (not the experiments in "
                 "between): an answer may use the setup cell's imports and its own exercise's cells only.",
                 "", "| exercise | points |", "|---|---|"]
        text += [f"| `{e.label}` ({'written' if e.written else e.kind}) | {e.points:g} |" for e in graded]
    else:
        text += ["", "This chapter's exercises are not graded yet: run their checks yourself."]
    cell = nbformat.v4.new_markdown_cell("\n".join(text))
    cell.id = PREFACE_ID
    return cell


def with_record(source: str) -> str:
    """A given cell's ``source`` with a last line that records what its ``# measured`` statements measured, if any."""
    if not checks.MEASURED.search(source):
        return source
    try:
        names = sorted(checks.parameters(source)[1])
    except SyntaxError:
        return source
    if not names:
        return source
    return (source.rstrip("\n") + f"\nimport iolab.kit.student  {RECORD_COMMENT}\n"
            f"iolab.kit.student.record({', '.join(f'{n}={n}' for n in names)})")


def student_edition(nb: Any) -> Any:
    """A copy of instructor notebook ``nb`` with the solutions, hidden tests and explanations removed."""
    out = copy.deepcopy(nb)
    regions = list(markup.solution_regions(nb).values())
    predictions: dict[int, list[tuple[int, int]]] = {}
    for cell, first, last in markup.bare_predictions(nb):
        predictions.setdefault(cell, []).append((first, last))
    cells = []
    for index, cell in enumerate(out.cells):
        if cell.cell_type == "markdown" and markup.role(cell) == markup.ANSWER:
            cell.source = TEXT_STUB  # the model answer goes whole, as nbgrader's ClearSolutions does
        elif cell.cell_type == "markdown":
            text = markup.lines(cell)
            folded = {i for region in regions for i in region.lines_in(index, len(text))}
            text = _open_questions(text, predictions.get(index, []))
            kept = [line for i, line in enumerate(text) if i not in folded] if folded else text
            if not "\n".join(kept).strip():
                continue  # nothing left but the fences of a folded solution
            cell.source = "\n".join(kept).strip("\n")
        elif cell.cell_type == "code":
            meta = markup.nbgrader(cell)
            in_solution = any(region.covers_cell(index) for region in regions)
            if meta.get("solution") or (in_solution and not meta.get("grade")):
                cell.source = stub_solutions(cell.source)
            cell.source = drop_hidden_tests(cell.source)
            if not (meta.get("solution") or meta.get("grade") or in_solution):
                cell.source = with_record(cell.source)
            if meta.get("solution") or meta.get("grade") or in_solution:
                cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    after_title = 1 if cells and cells[0].cell_type == "markdown" else 0
    out.cells = cells[:after_title] + [preface(nb)] + cells[after_title:]
    return out


def write_student_editions(notebooks: Path, out_dir: Path, force: bool = False) -> tuple[list[Path], list[Path]]:
    """Write the student edition of every notebook in ``notebooks`` into ``out_dir``: (written, kept).

    A notebook already there that is not the edition about to be written (a student's answers, or an
    edition of an older course) is kept, not overwritten, unless ``force``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for path in sorted(notebooks.glob("*.ipynb")):
        edition = student_edition(nbformat.read(path, as_version=4))
        nbformat.validate(edition)  # nbformat.write only logs an invalid notebook
        target = out_dir / path.name
        text = nbformat.writes(edition) + "\n"  # as nbformat.write writes it
        if target.exists() and not force and target.read_text() != text:
            kept.append(target)
            continue
        target.write_text(text)
        written.append(target)
    return written, kept
