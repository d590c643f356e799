"""A check cell read as the grader reads it: the answers it needs, its public gate and its scored parts.

A check cell holds top-level ``assert`` statements, some public and some between
``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``. How it scores (partial credit, as nbgrader
gives points per graded cell, here per assert):

- the **public** asserts are the gate: they test the answer's shape (a type, a set of choices), the
  student saw them pass or fail in their own notebook, and if one fails the cell scores nothing;
- each **hidden** assert is one *part*, worth an equal share of the cell's points; a cell without
  hidden asserts shares its points among its public ones instead;
- a statement that is not an assert (``expected = ...``) belongs to the part after it, and a
  compound statement (a ``for`` loop of asserts) is one part. An instructor who wants "all or
  nothing" for two facts writes them in one assert, joined by ``and``.

:func:`run_parts` runs them in order in a namespace; it runs in the checker, never in the student's kernel.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from iolab.homework import markup


@dataclass(frozen=True)
class Part:
    """Statements of a check cell that pass or fail together: ``source`` (with the cell's line numbers kept)."""

    source: str
    hidden: bool
    line: int


@dataclass(frozen=True)
class Outcome:
    """How one part went: passed, and if not, the message (an assert's own text, or the error)."""

    hidden: bool
    passed: bool
    message: str


def _hidden_lines(source: str) -> tuple[str, set[int]]:
    """``source`` with the hidden-test delimiters blanked (lines kept), and the 1-based lines inside them."""
    out, hidden, inside = [], set(), False
    for number, line in enumerate(source.split("\n"), 1):
        if line.strip() in (markup.BEGIN_HIDDEN, markup.END_HIDDEN):
            inside = line.strip() == markup.BEGIN_HIDDEN
            out.append("")
            continue
        out.append(line)
        if inside:
            hidden.add(number)
    return "\n".join(out), hidden


def _has_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def parts(source: str) -> list[Part]:
    """The parts of check cell ``source``, in order (SyntaxError if it is not Python)."""
    code, hidden = _hidden_lines(source)
    lines = code.split("\n")
    found: list[Part] = []
    pending: list[ast.stmt] = []
    for stmt in ast.parse(code).body:
        pending.append(stmt)
        if _has_assert(stmt):
            first, last = pending[0].lineno, pending[-1].end_lineno or pending[-1].lineno
            # Blank lines keep the cell's numbering, so a traceback names the cell's own line.
            text = "\n" * (first - 1) + "\n".join(lines[first - 1:last])
            found.append(Part(text, stmt.lineno in hidden, stmt.lineno))
            pending = []
    if pending and found:  # trailing statements: run them with the last part
        last_part = found[-1]
        end = pending[-1].end_lineno or pending[-1].lineno
        found[-1] = Part("\n" * (last_part.line - 1) + "\n".join(lines[last_part.line - 1:end]), last_part.hidden,
                         last_part.line)
    return found


def bound_names(source: str) -> set[str]:
    """The names a cell binds at any level (assignments, imports, defs, loop targets); empty if it does not parse."""
    names: set[str] = set()
    for node in _nodes(source):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def drawn_names(source: str) -> set[str]:
    """The names a cell binds from a ``student.pick(...)`` call: the exercise's parameters for this student."""
    names: set[str] = set()
    for node in _nodes(source):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _picks(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _nodes(source: str) -> Iterator[ast.AST]:
    """Every node of the cell's syntax tree; none if it does not parse."""
    try:
        return ast.walk(ast.parse(source))
    except SyntaxError:
        return iter(())


def _picks(value: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "pick"
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "student" for n in ast.walk(value))


MEASURED = re.compile(r"#\s*measured\b")  # the comment of a given cell's line whose value the student's run measures


def parameters(given: str) -> tuple[str, set[str]]:
    """A given cell as the checker runs it, and the names it leaves to the student's run.

    A given cell draws the exercise's parameters (``student.pick``): the checker runs it with the
    student's id, so a parameter is always the grader's, never the student's. A statement of it
    whose last line's comment starts ``# measured`` measures something instead (``baseline = amdahl.sweep(...)
    # measured``): the checker skips it and takes the names it binds from the student's run, like
    answers, so that a check compares an answer with the measurement it came from (and measures
    again only to see that those values are plausible: ``measurements``, ``plausible``). A later
    statement that reads a measured name (a ``print`` of it) is skipped too.
    """
    kept, _, measured = _split(given)
    return kept, measured


def measurements(given: str) -> str:
    """The statements of a given cell that :func:`parameters` leaves out: what the checker runs to measure again."""
    return _split(given)[1]


def _split(given: str) -> tuple[str, str, set[str]]:
    kept: list[str] = []
    skipped: list[str] = []
    measured: set[str] = set()
    lines = given.split("\n")
    for stmt in ast.parse(given).body:
        text = lines[stmt.lineno - 1:(stmt.end_lineno or stmt.lineno)]
        reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if MEASURED.search(text[-1]) or reads & measured:  # a measurement, or a line that uses one
            measured |= bound_names(ast.unparse(stmt))
            skipped.append("\n".join(text))
        else:
            kept.append("\n".join(text))
    return "\n".join(kept), "\n".join(skipped), measured


def answer_names(check: str, provided: list[str]) -> set[str]:
    """The names check cell ``check`` reads that neither it, the ``provided`` cells (setup, given) nor builtins bind."""
    loaded = {node.id for node in ast.walk(ast.parse(_hidden_lines(check)[0]))
              if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    known = bound_names(check) | set(dir(builtins)) | {n for source in provided for n in bound_names(source)}
    return loaded - known


def error_line(exc: BaseException) -> str:
    """``Name: message`` (its first line) for an error."""
    text = str(exc).strip().split("\n")[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _message(exc: BaseException) -> str:
    """An assert's own message, or ``Name: message`` for any other error (first line)."""
    if isinstance(exc, AssertionError):
        return str(exc).strip().split("\n")[0] or "AssertionError"
    return error_line(exc)


def run_parts(found: list[Part], namespace: dict[str, Any], filename: str) -> list[Outcome]:
    """Run each part in ``namespace`` in order; how each went (an error fails its part, not the next)."""
    outcomes = []
    for part in found:
        try:
            exec(compile(part.source, filename, "exec"), namespace)
        except Exception as exc:
            outcomes.append(Outcome(part.hidden, False, _message(exc)))
        else:
            outcomes.append(Outcome(part.hidden, True, ""))
    return outcomes


def score(outcomes: list[Outcome], points: float) -> tuple[float, str]:
    """(points earned, ``"passed"``, ``"partial"`` or ``"failed"``) for one check cell's outcomes."""
    hidden = [o for o in outcomes if o.hidden]
    gate = [o for o in outcomes if not o.hidden] if hidden else []
    scored = hidden or outcomes
    if not scored or any(not o.passed for o in gate):
        return 0.0, "failed"
    passed = sum(o.passed for o in scored)
    earned = round(points * passed / len(scored), 2)
    return earned, "passed" if passed == len(scored) else ("partial" if passed else "failed")
