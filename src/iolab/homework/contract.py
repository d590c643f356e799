"""What the grader's processes hand each other: one typed contract, checked by mypy (``make unit``).

The grader (``grading``) sends the checker (``checker``) a :class:`NotebookJob` (the instructor's setup
cell and, per exercise, its given cells and checks) and, once the submission has run, the answers
each check cell's stand-in wrote (:data:`Answers`); the checker sends back a :class:`Verdict`. All
of it crosses as JSON over pipes the grader owns: nothing is written where the submission could
read or replace it. :data:`Status` and :data:`SandboxKind` are the words a row and an option may use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from iolab.homework.checks import Outcome

Status = Literal["passed", "partial", "failed", "not run", "missing", "tampered", "error", "not graded"]
STATUSES: tuple[Status, ...] = get_args(Status)
# bwrap: a bubblewrap sandbox; nobody: another uid where the grader is root in a container (Gradescope);
# none: the grader's own user, for trusted submissions only.
SandboxKind = Literal["bwrap", "nobody", "none"]
SANDBOX_KINDS: tuple[SandboxKind, ...] = get_args(SandboxKind)
# Check cell's grade_id -> the text its stand-in wrote in the submission's kernel (None: it wrote nothing).
Answers = dict[str, str | None]


class ContractError(ValueError):
    """A message between the grader's processes that is not of the contract's shape."""


def sandbox_kind(word: str) -> SandboxKind:
    """``word`` as a sandbox kind; ValueError naming the kinds if it is none of them."""
    for kind in SANDBOX_KINDS:
        if word == kind:
            return kind
    raise ValueError(f"no sandbox called {word!r}: one of {', '.join(SANDBOX_KINDS)}")


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
class NotebookJob:
    """All the checker is asked to do for one submitted notebook, less the answers."""

    setup: str
    exercises: tuple[ExerciseJob, ...]
    # A solo notebook needs the machine to itself: the checker measures again only after the submission ran.
    solo: bool = True

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> NotebookJob:
        """The job in ``text``; :class:`ContractError` if it is not one."""
        with _shape("a job"):
            raw = _object(json.loads(text))
            return cls(_str(raw["setup"]), tuple(_exercise_job(_object(e)) for e in _list(raw["exercises"])),
                       _bool(raw["solo"]))


def _exercise_job(raw: dict[str, Any]) -> ExerciseJob:
    return ExerciseJob(_str(raw["label"]), tuple(_str(g) for g in _list(raw["given"])),
                       tuple(_check_job(_object(c)) for c in _list(raw["checks"])),
                       tuple(_str(m) for m in _list(raw["measured"])))


def _check_job(raw: dict[str, Any]) -> CheckJob:
    return CheckJob(_str(raw["grade_id"]), _str(raw["source"]), float(raw["points"]),
                    tuple(_str(n) for n in _list(raw["names"])))


@dataclass(frozen=True)
class CheckVerdict:
    """What one check cell made of the answers: how each name arrived ("ok", "missing", "refused: why"),
    each part's outcome, and why it could not run at all (None if it ran)."""

    answers: dict[str, str]
    outcomes: tuple[Outcome, ...]
    error: str | None = None


@dataclass(frozen=True)
class ExerciseVerdict:
    """One exercise's checks, the error of its given cells (None if none) and the parameters they drew."""

    given_error: str | None
    parameters: str
    checks: dict[str, CheckVerdict]


@dataclass(frozen=True)
class Verdict:
    """The checker's answer: the setup cell's error (None if none) and each exercise's verdict, by label."""

    setup_error: str | None
    exercises: dict[str, ExerciseVerdict]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Verdict:
        """The verdict in ``text``; :class:`ContractError` if it is not one."""
        with _shape("a verdict"):
            raw = _object(json.loads(text))
            return cls(_optional_str(raw["setup_error"]),
                       {_str(label): _exercise_verdict(_object(e)) for label, e in _object(raw["exercises"]).items()})


def _exercise_verdict(raw: dict[str, Any]) -> ExerciseVerdict:
    return ExerciseVerdict(_optional_str(raw["given_error"]), _str(raw["parameters"]),
                           {_str(gid): _check_verdict(_object(c)) for gid, c in _object(raw["checks"]).items()})


def _check_verdict(raw: dict[str, Any]) -> CheckVerdict:
    outcomes = (_object(o) for o in _list(raw["outcomes"]))
    return CheckVerdict({_str(k): _str(v) for k, v in _object(raw["answers"]).items()},
                        tuple(Outcome(_bool(o["hidden"]), _bool(o["passed"]), _str(o["message"])) for o in outcomes),
                        _optional_str(raw["error"]))


def answers_to_json(answers: Answers) -> str:
    return json.dumps(answers)


def answers_from_json(text: str) -> Answers:
    """The answers by check cell; :class:`ContractError` if the text is not of that shape."""
    with _shape("answers"):
        raw = _object(json.loads(text or "{}"))
        return {_str(k): _optional_str(v) for k, v in raw.items()}


@contextmanager
def _shape(what: str) -> Iterator[None]:
    try:
        yield
    except ContractError:
        raise
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise ContractError(f"not {what}: {type(exc).__name__}: {exc}") from None


def _object(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise ContractError(f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise ContractError(f"expected a list, got {type(value).__name__}")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise ContractError(f"expected a string, got {type(value).__name__}")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise ContractError(f"expected true or false, got {type(value).__name__}")
    return value
