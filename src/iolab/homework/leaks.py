"""Where a student could read a graded answer before answering: a key's words above its question.

A *fixed-choice* key is a string the solution stores (``uvloop_x = "1x to 2x"``): one of the choices the
question lists. :func:`fixed_choice_keys` finds them in an exercise's solution cells; :func:`leaks` looks
for each, as a phrase, in what a student reads before the question: the chapter's prose page (the book
puts it before the notebook) and the student edition's cells above the ``{exercise-start}``. A hit is a
sentence to move after the question or into the folded solution.

A written exercise's model answer and rubric (``written``: its answer cell and folded solution) are for the
TA: :func:`written_leaks` finds any of their sentences in the student edition, anywhere in it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import editions, markup, written


@dataclass(frozen=True)
class Leak:
    """A key's words found above its question: which exercise, which key, where, and the sentence."""

    label: str
    key: str
    where: str
    sentence: str


def _strings(node: ast.AST) -> list[str]:
    """The value of a string constant, or of a tuple, list or set of them (else nothing)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        found = [_strings(e) for e in node.elts]
        return [s for part in found for s in part] if all(found) else []
    return []


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def fixed_choice_keys(nb: Any, exercise: markup.Exercise) -> list[str]:
    """The exercise's fixed-choice keys: strings its solution stores in a name that its check offers as choices.

    ``uvloop_x = "1x to 2x"`` in the solution, with ``"1x to 2x"`` among the check's strings, makes
    ``"1x to 2x"`` a key; a string the solution passes to a function is not one.
    """
    offered = set()
    for index in exercise.checks:
        tree = _tree(editions.drop_hidden_tests(nb.cells[index].source))
        offered |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)} if tree else set()
    keys = []
    for index in exercise.solutions:
        tree = _tree(nb.cells[index].source)
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
                keys += [s for s in _strings(node.value) if s in offered and s.strip()]
    return list(dict.fromkeys(keys))


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (at ., ! or ? before a space, and at blank lines), whitespace joined."""
    flat = re.sub(r"\s+", " ", text)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n\s*\n", flat) if s.strip()]


def _phrase(key: str) -> re.Pattern[str]:
    """The key as a phrase; a key of one to three characters (``S``, ``yes``) only quoted or in backticks."""
    if len(key) < 4:
        return re.compile(r"[`'\"]" + re.escape(key) + r"[`'\"]")
    return re.compile(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", re.IGNORECASE)


def above(student_nb: Any, label: str) -> str:
    """The prose a student reads above exercise ``label``: markdown cells before its ``{exercise-start}``,
    without the statements of earlier questions (they list choices, not answers) or the edition's preface."""
    statements = markup.exercise_regions(student_nb)
    start = statements[label]
    text = []
    for index, cell in enumerate(student_nb.cells[: start.first_cell + 1]):
        if cell.cell_type != "markdown" or cell.get("id") == editions.PREFACE_ID:
            continue
        lines = markup.lines(cell)
        inside = {i for region in statements.values() for i in region.lines_in(index, len(lines))}
        stop = start.first_line if index == start.first_cell else len(lines)
        text.append("\n".join(line for i, line in enumerate(lines[:stop]) if i not in inside))
    return "\n\n".join(text)


# A sentence of a rubric this short ("1 point.", "Full marks:") may well be in the question too: not a leak.
SHORTEST_SENTENCE = 24


def written_leaks(nb: Any, student_nb: Any) -> list[Leak]:
    """Each sentence of a written exercise's model answer or rubric (instructor notebook ``nb``) that its student
    edition ``student_nb`` holds, in any cell."""
    text = re.sub(r"\s+", " ", "\n".join(str(cell.source) for cell in student_nb.cells))
    found = []
    for question in written.questions(nb, ""):
        for key in ("model answer", "rubric"):
            said = question.model if key == "model answer" else question.rubric
            found += [Leak(question.label, key, "the student edition", s) for s in sentences(said)
                      if len(s) >= SHORTEST_SENTENCE and s in text]
    return found


def leaks(notebook: Path, prose: Path | None) -> list[Leak]:
    """Each fixed-choice key of ``notebook``'s graded exercises found in a sentence above its question, and each
    sentence of a written exercise's model answer or rubric found in the student edition."""
    nb = nbformat.read(notebook, as_version=4)
    student_nb = editions.student_edition(nb)
    page = prose.read_text() if prose is not None else ""
    found = written_leaks(nb, student_nb)
    for exercise in markup.exercises(nb):
        if not exercise.graded:
            continue
        keys = fixed_choice_keys(nb, exercise)
        places = [(prose.name if prose else "", page), (f"{notebook.name} above the question", above(student_nb, exercise.label))]
        for key in keys:
            for where, text in places:
                found += [Leak(exercise.label, key, where, s) for s in sentences(text) if _phrase(key).search(s)]
    return found
