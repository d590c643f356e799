"""Per-student parameters: ``IOLAB_STUDENT=<id>`` gives every student their own numbers.

In the style of OSTEP's homework simulators (``-s SEED``): an exercise whose answer one student
could hand to another draws its parameters (a size, a count, a fraction) from a seed. The seed is
derived from the student id *and* the exercise's label, so one id gets the same numbers on every
run and on the grader's machine, while two ids differ in general, exercise by exercise.

With no student set, ``pick`` returns the first choice: the book's canonical value, the one its
prose and published solutions use. A student never draws it when there are others, so the book's
folded solutions are never a student's answer to copy.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import math
from collections.abc import Sequence
from typing import Any, TypeVar

from iolab.kit.magnitudes import numbers

T = TypeVar("T")
ENV = "IOLAB_STUDENT"
# The output type a student edition's record() writes: Jupyter keeps it in the notebook and shows nothing for it.
RECORD_MIME = "application/vnd.iolab.measured+json"


def student_id() -> str | None:
    """The student id named by ``IOLAB_STUDENT``, or None when it is unset or blank (the book)."""
    return os.environ.get(ENV, "").strip() or None


def seed(label: str, student: str) -> int:
    """A 64-bit seed for one student and one exercise (the same on every machine and Python)."""
    # sha256, not hash(): str hashes are salted per process (PYTHONHASHSEED).
    digest = hashlib.sha256(f"{student}\x00{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def pick(label: str, choices: Sequence[T], student: str | None = None) -> T:
    """The student's choice for exercise ``label``; ``choices[0]`` (the book's) when no student is set.

    ``student`` defaults to ``IOLAB_STUDENT``. A student draws among ``choices[1:]`` when there are any.
    """
    if not choices:
        raise ValueError(f"exercise {label!r}: pick() needs at least one choice")
    student = student if student is not None else student_id()
    if not student or len(choices) == 1:
        return choices[0]
    others = choices[1:]
    return others[seed(label, student) % len(others)]


def describe() -> str:
    """One line for a notebook's setup cell: whose numbers its exercises draw (the grader reads it back)."""
    who = student_id()
    return f"IOLAB_STUDENT={who}: your numbers" if who else "no IOLAB_STUDENT: the book's numbers"


def token(secret: str, student: str) -> str:
    """The part of a student's id that only a course secret makes: 8 hex digits of HMAC-SHA256(secret, student)."""
    return hmac.new(secret.encode(), student.encode(), hashlib.sha256).hexdigest()[:8]


def with_token(student: str, secret: str | None) -> str:
    """The id a student works with: ``ada.3f9a1c2b`` when the course has a secret, ``ada`` when it has none.

    The seeds come from the whole id, so without the secret nobody can work out another student's
    numbers, or their own, from the public code: the instructor hands each student theirs.
    """
    return f"{student}.{token(secret, student)}" if secret else student


def recorded(**values: Any) -> dict[str, dict[str, float]]:
    """The finite magnitudes (:func:`iolab.kit.magnitudes.numbers`) of each value, by name: what :func:`record` keeps."""
    kept = {}
    for name, value in values.items():
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a numpy scalar: share = a / (a + b)
            value = value.item()
        found = {key: number for key, number in (numbers(value) or {}).items() if math.isfinite(number)}
        if found:
            kept[name] = found
    return kept


def record(**values: Any) -> None:
    """Keep the numbers this run measured in the notebook's output, shown as nothing.

    A student edition's given cells end with a call to it (``homework.editions``): the notebook a
    student hands in then carries what their own machine measured, which grading collects into the
    class's measurements beside what the grader measured running it (``homework.measurements``).
    """
    from IPython.display import display  # only in a notebook's kernel

    display({RECORD_MIME: recorded(**values), "text/plain": ""}, raw=True)
