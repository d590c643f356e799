"""Written answers a TA scores: nbgrader's "manually graded answer" cells, exported for a TA and merged back.

A written exercise (``markup``: an answer cell, markdown, grade and solution, inside its folded
solution) asks a student to explain in words; no check can score that. Grading a class (``classes``)
writes, beside the grades CSV, for each notebook and written exercise:

- ``<notebook>-<label>-answers.html`` (:func:`page`): the question, the instructor's model answer and
  rubric (the exercise's folded solution), the points possible, and every student's answer as text,
  escaped and cut at :data:`MAX_ANSWER` characters, read from the handed-in notebook as data
  (``batch.read_notebook``, as ``untrusted`` reads it). The instructor's text is Markdown rendered as the
  feedback pages render it (``reports.markdown_html``); a student's answer is never rendered, only escaped
  (``<script>`` reads as text);
- ``<notebook>-<label>-scores.csv``: ``student, points, max_points, comment``, a row per student who wrote
  an answer, for the TA to fill. Grading again, or regrading a few students, adds the students who are
  new and keeps every row already there (filled or not) as it is.

The scores become the exercise's rows (:func:`add_rows`): in the grades CSV, the gradebook and the
feedback, the TA's points, and the TA's comment as the reason. A written answer no TA has scored is
``awaiting a TA`` (``contract.AWAITING``): not lost and not 0, the gradebook leaves that notebook's cell
empty until it is scored; an answer cell still saying ``YOUR ANSWER HERE`` is not answered, 0 points
(unless a TA scores it). A score above the points possible, negative or not a number, or for a student
the class does not have, is a :class:`ScoresError` that names the file and line; nothing is written.
"""

from __future__ import annotations

import csv
import html
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import batch, editions, markup, untrusted
from iolab.homework.contract import AWAITING, Status
from iolab.homework.grading import Row
from iolab.homework.lateness import open_replacement
from iolab.homework.reports import FEEDBACK_STYLE, markdown_html, standalone_html

SCORES_COLUMNS = ["student", "points", "max_points", "comment"]
MAX_ANSWER = 20_000  # characters of one answer the TA's page shows: a paragraph or two is asked for
MAX_COMMENT = 2_000  # characters of a TA's comment carried into the reason and the feedback
SCORED = "scored by a TA"
NOT_SCORED = "written: a TA scores it by hand; not scored yet"
NOT_ANSWERED = f"not answered: the answer cell still says {editions.TEXT_STUB}"


class ScoresError(ValueError):
    """A scores CSV that cannot be merged; the message names the file and the line."""


@dataclass(frozen=True)
class Question:
    """A written exercise as the instructor notebook holds it: what the TA's page shows."""

    notebook: str  # the notebook's file name
    label: str
    statement: str
    points: float
    model: str  # the instructor's answer cell
    rubric: str  # the exercise's folded solution, without the answer cell


@dataclass(frozen=True)
class Answer:
    """One student's answer: its text, and why it needs no TA (a status and reason), if it does not."""

    text: str
    status: Status | None = None  # None: answered, for a TA to score
    reason: str = ""


@dataclass(frozen=True)
class Score:
    """A row of a scores CSV: the TA's points (None: not filled yet) and comment."""

    points: float | None
    comment: str = ""


def _folded(nb: Any, region: markup.Region) -> str:
    """The markdown of a folded solution, without its fences and the answer cells in it."""
    fences = {(d.cell, line) for d in markup.directives(nb) for line in range(d.first, d.last + 1)}
    out = []
    for index in range(region.first_cell, region.last_cell + 1):
        cell = nb.cells[index]
        if cell.cell_type == "markdown" and markup.role(cell) != markup.ANSWER:
            text = markup.lines(cell)
            out += [text[i] for i in region.lines_in(index, len(text)) if (index, i) not in fences]
    return "\n".join(out).strip()


def questions(source: Any, notebook: str) -> list[Question]:
    """The written exercises of the instructor notebook ``source`` (file name ``notebook``), in order."""
    regions = markup.solution_regions(source)
    found = []
    for exercise in markup.exercises(source):
        if exercise.written:
            region = regions.get(exercise.label)
            found.append(Question(notebook, exercise.label, exercise.statement, exercise.points,
                                  "\n\n".join(str(source.cells[i].source).strip() for i in exercise.answers),
                                  _folded(source, region) if region else ""))
    return found


def read_questions(notebooks: Path, notebook: str) -> list[Question]:
    """The written exercises of ``notebooks/notebook``; none if there is no such instructor notebook."""
    path = notebooks / notebook
    return questions(nbformat.read(path, as_version=4), notebook) if path.is_file() else []


def scores_path(folder: Path, notebook: str, label: str) -> Path:
    """Where the TA fills the scores of one written exercise: ``<notebook>-<label>-scores.csv`` in ``folder``."""
    return folder / f"{Path(notebook).stem}-{label}-scores.csv"


def page_path(folder: Path, notebook: str, label: str) -> Path:
    """The TA's page of one written exercise's answers: ``<notebook>-<label>-answers.html`` in ``folder``."""
    return folder / f"{Path(notebook).stem}-{label}-answers.html"


def _grade_id(cell: Any) -> object:
    """A submitted cell's nbgrader grade_id, whatever shape its metadata has (it is the student's data)."""
    meta = cell.get("metadata") if isinstance(cell, Mapping) else None
    found = meta.get("nbgrader") if isinstance(meta, Mapping) else None
    return found.get("grade_id") if isinstance(found, Mapping) else None


def answer_in(submission: Any, label: str) -> Answer:
    """The answer the submitted notebook holds for written exercise ``label``: its answer cells' text, cut."""
    grade_id = f"{label}-{markup.ANSWER}"
    cells = submission.get("cells") if isinstance(submission, Mapping) else None
    texts = [str(cell.get("source", "")) for cell in (cells if isinstance(cells, list) else [])
             if _grade_id(cell) == grade_id]
    if not texts:
        return Answer("", "missing", f"the answer cell {grade_id} is not in the submission (deleted, or its "
                      "metadata lost): 0 points unless a TA scores it")
    text = "\n\n".join(t.strip() for t in texts)
    if text.strip() in ("", editions.TEXT_STUB):
        return Answer("", "failed", NOT_ANSWERED)
    if len(text) > MAX_ANSWER:
        text = text[:MAX_ANSWER] + f"\n[... cut here: the answer has {len(text):,} characters]"
    return Answer(text)


def answers_in(path: Path, labels: Iterable[str]) -> dict[str, Answer]:
    """Each written exercise's answer in the submitted notebook ``path``, read as data (``batch.read_notebook``)."""
    try:
        submission = batch.read_notebook(path)
    except (untrusted.Refused, OSError) as exc:
        why = f"{path.name} was not read: {exc}"
        return {label: Answer("", "error", why) for label in labels}
    except Exception as exc:  # not JSON, not a notebook: as the grader says it
        why = f"cannot read the notebook: {type(exc).__name__}: {str(exc)[:200]}"
        return {label: Answer("", "error", why) for label in labels}
    return {label: answer_in(submission, label) for label in labels}


def known_students(submissions: Path, notebook: str) -> set[str]:
    """The students of the class in ``submissions`` who handed in ``notebook``."""
    return {student for student, path in batch.submissions(submissions) if path.name == notebook}


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header of the CSV at ``path`` and its rows, each with the line it ends on (as a spreadsheet numbers it)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = [c.strip() for c in reader.fieldnames or []]
            return header, [(reader.line_num, {(k or "").strip(): v.strip() if isinstance(v, str) else ""
                                               for k, v in row.items()}) for row in reader]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ScoresError(f"{path}: not a CSV file of text ({exc})") from None


def read_scores(path: Path, points: float, known: Collection[str] | None = None) -> dict[str, Score]:
    """The scores in ``path`` by student: :class:`ScoresError` naming the file and line of a score that is not a
    number from 0 to ``points``, of a student not in ``known`` (when given), or of a student given twice."""
    header, rows = _read_csv(path)
    if "student" not in header or "points" not in header:
        raise ScoresError(f"{path}: needs the columns {', '.join(SCORES_COLUMNS)}; it has {', '.join(header) or 'none'}")
    found: dict[str, Score] = {}
    for line, row in rows:
        where, student, given = f"{path}, line {line}", row.get("student", ""), row.get("points", "")
        if known is not None and student not in known:
            raise ScoresError(f"{where}: no student {student!r} in this class handed in this notebook "
                              "(a typo, or a row of another class?)")
        if student in found:
            raise ScoresError(f"{where}: {student} has a score already, on an earlier line")
        score = None
        if given:
            try:
                score = float(given)
            except ValueError:
                raise ScoresError(f"{where}: {student}'s points {given!r} is not a number") from None
            if not math.isfinite(score) or score < 0 or score > points:
                raise ScoresError(f"{where}: {student}'s points {given} is not between 0 and {points:g}, "
                                  "the points the question is worth")
        found[student] = Score(score, row.get("comment", "")[:MAX_COMMENT])
    return found


def update_scores(path: Path, students: Iterable[str], points: float) -> bool:
    """Add a row to fill for each of ``students`` that ``path`` lacks (the file made if need be), every row already
    there kept as it is; whether the file was written."""
    header, numbered = _read_csv(path) if path.is_file() else (list(SCORES_COLUMNS), [])
    header += [c for c in SCORES_COLUMNS if c not in header]
    rows = [row for _, row in numbered]
    have = {row.get("student", "") for row in rows}
    new = [s for s in sorted(set(students)) if s not in have]
    if path.is_file() and not new:
        return False
    rows += [{"student": s, "points": "", "max_points": f"{points:g}", "comment": ""} for s in new]
    with open_replacement(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return True


def written_row(student: str, question: Question, answer: Answer, score: Score | None, note: str = "") -> Row:
    """The row of one student's written answer: the TA's score, else not answered, else awaiting a TA."""
    base = Row(student, question.notebook, question.label, 0.0, question.points, AWAITING, NOT_SCORED, 0.0,
               note=note)
    if score is not None and score.points is not None:
        status: Status = ("passed" if score.points >= question.points else "partial" if score.points > 0
                          else "failed")
        return replace(base, points=round(score.points, 2), status=status,
                       reason=SCORED + (f": {score.comment}" if score.comment else ""))
    if answer.status is not None:
        return replace(base, status=answer.status, reason=answer.reason)
    return base


def _pairs(rows: Sequence[Row]) -> dict[tuple[str, str], str]:
    """(student, notebook) -> the notebook's note, for each notebook the rows grade."""
    return {(r.student, r.notebook): r.note for r in rows if r.exercise}


def add_rows(rows: Sequence[Row], submissions: Path, notebooks: Path, folder: Path) -> list[Row]:
    """``rows`` with each graded notebook's written exercises as rows after its others (rows of them already there
    are made again): the answers read from ``submissions``, the scores from ``folder``'s scores CSVs."""
    pairs = _pairs(rows)
    asked = {name: read_questions(notebooks, name) for name in {notebook for _, notebook in pairs}}
    labels = {(name, q.label) for name, found in asked.items() for q in found}
    kept = [r for r in rows if (r.notebook, r.exercise) not in labels]
    last = {(r.student, r.notebook): i for i, r in enumerate(kept) if r.exercise}
    scores = {(name, q.label): read_scores(path, q.points) if (path := scores_path(folder, name, q.label)).is_file()
              else {} for name, found in asked.items() for q in found}
    out = []
    for i, row in enumerate(kept):
        out.append(row)
        pair = (row.student, row.notebook)
        if row.exercise and last.get(pair) == i and asked.get(row.notebook):
            found = answers_in(submissions / row.student / row.notebook, [q.label for q in asked[row.notebook]])
            out += [written_row(row.student, q, found[q.label], scores[(row.notebook, q.label)].get(row.student),
                                pairs[pair]) for q in asked[row.notebook]]
    return out


def check(submissions: Path, notebooks: Path, folder: Path) -> None:
    """:class:`ScoresError` for the first scores CSV in ``folder`` that cannot be merged (before any grading)."""
    for source in sorted(notebooks.glob("*.ipynb")):
        for question in read_questions(notebooks, source.name):
            path = scores_path(folder, source.name, question.label)
            if path.is_file():
                read_scores(path, question.points, known_students(submissions, source.name))


def export(rows: Sequence[Row], submissions: Path, notebooks: Path, folder: Path) -> dict[str, Path]:
    """Write each written exercise's page of answers and scores CSV (new students added, filled rows kept) into
    ``folder``, for the notebooks ``rows`` grade; their paths by kind. Every scores CSV is checked first."""
    by_notebook: dict[str, list[str]] = {}
    for student, notebook in _pairs(rows):
        by_notebook.setdefault(notebook, []).append(student)
    work = [(q, sorted(students)) for notebook, students in sorted(by_notebook.items())
            for q in read_questions(notebooks, notebook)]
    scores = {}
    for question, students in work:  # all checked before any file is written
        path = scores_path(folder, question.notebook, question.label)
        known = known_students(submissions, question.notebook) | set(students)
        scores[question.label, question.notebook] = read_scores(path, question.points, known) if path.is_file() else {}
    paths = {}
    for question, students in work:
        answers = {s: answers_in(submissions / s / question.notebook, [question.label])[question.label] for s in students}
        path = scores_path(folder, question.notebook, question.label)
        if update_scores(path, [s for s, a in answers.items() if a.status is None], question.points):
            scores[question.label, question.notebook] = read_scores(path, question.points)
        shown = page_path(folder, question.notebook, question.label)
        shown.write_text(page(question, answers, scores[question.label, question.notebook], path.name))
        stem = f"{Path(question.notebook).stem} {question.label}"
        paths[f"written answers {stem}"], paths[f"scores to fill {stem}"] = shown, path
    return paths


STYLE = FEEDBACK_STYLE + ".answer{white-space:pre-wrap;font-family:serif}td{vertical-align:top}"


def page(question: Question, answers: Mapping[str, Answer], scores: Mapping[str, Score], scores_file: str) -> str:
    """The TA's page of one written exercise, as standalone HTML: a row per student who wrote an answer, a line for those who did not."""
    title = f"{question.notebook}: {question.label} (written, {question.points:g} points)"
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>Fill the points (0 to {question.points:g}) and a comment for each student in "
             f"<code>{html.escape(scores_file)}</code>, beside this page; then grade again "
             "(<code>make grade ... SCORES_ONLY=1</code> merges the scores without running any notebook).</p>",
             "<h2>The question</h2>", markdown_html(question.statement),
             "<h2>Model answer</h2>", markdown_html(question.model),
             "<h2>Rubric</h2>", markdown_html(question.rubric or "(the instructor notebook's folded solution is empty)"),
             "<h2>Answers</h2>",
             "<table><tr><th>student</th><th>answer</th><th>points</th><th>comment</th></tr>"]
    for student, answer in sorted(answers.items()):
        if answer.status is not None:
            continue
        score = scores.get(student)
        points = "" if score is None or score.points is None else f"{score.points:g}"
        comment = "" if score is None else score.comment
        parts.append(f"<tr><td>{html.escape(student)}</td><td class='answer'>{html.escape(answer.text)}</td>"
                     f"<td>{points}</td><td>{html.escape(comment)}</td></tr>")
    parts.append("</table>")
    others = sorted((s, a) for s, a in answers.items() if a.status is not None)
    if others:
        parts.append("<h2>No answer to score</h2><ul>")
        parts += [f"<li>{html.escape(s)}: {html.escape(a.reason)}</li>" for s, a in others]
        parts.append("</ul>")
    return standalone_html(title, "\n".join(parts) + "\n", STYLE)


def awaiting(rows: Iterable[Row]) -> int:
    """How many written answers of ``rows`` no TA has scored yet."""
    return sum(r.status == AWAITING for r in rows)
