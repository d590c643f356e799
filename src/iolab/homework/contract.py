"""What the grader's processes hand each other: one typed contract, checked by mypy (``make unit``).

The grader (``grading``) sends the checker (``checker``) a :class:`NotebookJob` (the instructor's setup
cell and, per exercise, its given cells and checks) and, once the submission has run, the answers
each check cell's stand-in wrote (:data:`Answers`); the checker sends back a :class:`Verdict`. All
of it crosses as JSON over pipes the grader owns: nothing is written where the submission could
read or replace it. :data:`Status`, :data:`SandboxKind` and :data:`Visibility` are the words a row and an option may use.

Each message is a :class:`~iolab.kit.channel.Spec`, so the kit's strict reader builds it back: a
missing, unknown or wrongly typed field, at any depth, is a :class:`ContractError` that names it,
never a value the grader goes on with (the answers came from a student's run, and the verdict from a
process that read them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Self, get_args

from iolab.homework.checks import Outcome
from iolab.kit.channel import Spec, SpecError

# "awaiting a TA": a written answer no TA has scored yet (``written``): not lost, not counted yet.
Status = Literal["passed", "partial", "failed", "not run", "missing", "tampered", "error", "not graded", "awaiting a TA"]
AWAITING: Status = "awaiting a TA"
STATUSES: tuple[Status, ...] = get_args(Status)
# bwrap: a bubblewrap sandbox; nobody: another uid where the grader is root in a container (Gradescope);
# none: the grader's own user, for trusted submissions only.
SandboxKind = Literal["bwrap", "nobody", "none"]
SANDBOX_KINDS: tuple[SandboxKind, ...] = get_args(SandboxKind)
# When Gradescope shows a student the tests hidden checks score (results.json's per-test visibility); its
# "hidden" would hide them for good, which a course that publishes its grades does not want.
Visibility = Literal["after_published", "after_due_date", "visible"]
VISIBILITIES: tuple[Visibility, ...] = get_args(Visibility)
# Check cell's grade_id -> the text its stand-in wrote in the submission's kernel (None: it wrote nothing).
Answers = dict[str, str | None]


class ContractError(SpecError):
    """A message between the grader's processes that is not of the contract's shape (a ValueError)."""


def sandbox_kind(word: str) -> SandboxKind:
    """``word`` as a sandbox kind; ValueError naming the kinds if it is none of them."""
    for kind in SANDBOX_KINDS:
        if word == kind:
            return kind
    raise ValueError(f"no sandbox called {word!r}: one of {', '.join(SANDBOX_KINDS)}")


class _Message(Spec):
    """A Spec whose reader says :class:`ContractError`: what the grader's rows and tests know."""

    @classmethod
    def from_json(cls, text: str) -> Self:
        """The message in ``text``; :class:`ContractError`, naming the field, if it is not one."""
        try:
            return super().from_json(text)
        except SpecError as exc:
            raise ContractError(str(exc)) from None


@dataclass(frozen=True)
class CheckJob:
    """One check cell: its grade_id, source (hidden tests included), points, and the names it reads from the answers."""

    grade_id: str
    source: str
    points: float
    names: tuple[str, ...]


@dataclass(frozen=True)
class ExerciseJob:
    """One exercise: its label, its given cells (measured statements left out), its check cells, and the
    given cells' measured statements, which the checker runs again once the answers are in."""

    label: str
    given: tuple[str, ...]
    checks: tuple[CheckJob, ...]
    measured: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotebookJob(_Message):
    """All the checker is asked to do for one submitted notebook, less the answers.

    It goes to the checker on its standard input, not as ``open_child``'s argument: it holds the
    hidden tests, and a process's arguments are readable by every user of the machine (the
    submission's too, under the ``nobody`` sandbox), and longer than an argument may be.
    """

    ENTRY = "iolab.homework.checker"

    setup: str
    exercises: tuple[ExerciseJob, ...]
    # A solo notebook needs the machine to itself: the checker measures again only after the submission ran.
    solo: bool = True


@dataclass(frozen=True)
class AnswersSent(_Message):
    """The answers, by check cell, as they cross to the checker once the submission has run."""

    answers: dict[str, str | None]


@dataclass(frozen=True)
class CheckVerdict:
    """What one check cell made of the answers: how each name arrived ("ok", "missing", "refused: why"),
    each part's outcome, and why it could not run at all (None if it ran)."""

    answers: dict[str, str]
    outcomes: tuple[Outcome, ...]
    error: str | None = None


@dataclass(frozen=True)
class ExerciseVerdict:
    """One exercise's checks, the error of its given cells (None if none) and the parameters they drew, and
    what the submission's run measured (``checker.measured_values``: a name, or ``name:column`` for a table's median)."""

    given_error: str | None
    parameters: str
    checks: dict[str, CheckVerdict]
    measured: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict(_Message):
    """The checker's answer: the setup cell's error (None if none) and each exercise's verdict, by label."""

    setup_error: str | None
    exercises: dict[str, ExerciseVerdict]


def answers_to_json(answers: Answers) -> str:
    """The answers as the one line the checker reads (:func:`answers_from_json`)."""
    return AnswersSent(answers).to_json()


def answers_from_json(text: str) -> Answers:
    """The answers by check cell (none for an empty line: the grader ended first); :class:`ContractError`
    if the text is not of that shape."""
    return dict(AnswersSent.from_json(text).answers) if text.strip() else {}
