"""Per-student parameters: the same id draws the same numbers everywhere, two ids differ, no id gets the book's."""

from __future__ import annotations

import copy

import pytest

from homework_notebooks import COURSE_NOTEBOOKS, read
from iolab.homework import markup
from iolab.homework.execution import execute_cells
from iolab.kit import student

CHOICES = [256, 128, 512, 64]


def test_the_same_id_draws_the_same_choice_and_no_id_the_books(monkeypatch):
    assert student.pick("ex-x", CHOICES, "ada") == student.pick("ex-x", CHOICES, "ada")
    monkeypatch.delenv(student.ENV, raising=False)
    assert student.pick("ex-x", CHOICES) == 256
    monkeypatch.setenv(student.ENV, "ada")
    assert student.pick("ex-x", CHOICES) == student.pick("ex-x", CHOICES, "ada")
    monkeypatch.setenv(student.ENV, "  ")
    assert student.pick("ex-x", CHOICES) == 256  # blank is no student


def test_the_seed_is_the_same_in_every_process_and_on_every_machine():
    # The first 8 bytes of sha256(b"ada\0ex-x"): a str hash() would change from one process to the next.
    assert student.seed("ex-x", "ada") == 0xA54FCAB2A5F2BD56
    assert student.seed("ex-x", "grace") != student.seed("ex-x", "ada") != student.seed("ex-y", "ada")


def test_students_never_draw_the_books_value_and_draw_every_other():
    drawn = {student.pick("ex-x", CHOICES, f"student-{i}") for i in range(200)}
    assert drawn == {128, 512, 64}


def test_one_student_draws_independently_for_each_exercise():
    by_label = {label: student.pick(label, CHOICES, "ada") for label in (f"ex-{i}" for i in range(30))}
    assert len(set(by_label.values())) == 3


def test_a_single_choice_is_everyone_s_and_no_choice_is_an_error():
    assert student.pick("ex-x", [7], "ada") == 7
    with pytest.raises(ValueError, match="ex-x"):
        student.pick("ex-x", [], "ada")


def _given_outputs(nb, student_id: str) -> list[str]:
    """What the pilot's setup and parameter cells print when ``student_id`` runs them."""
    nb = copy.deepcopy(nb)
    given = [i for e in markup.exercises(nb) for i in e.given]
    run = execute_cells(nb, [markup.setup_cell(nb), *given], 120, {student.ENV: student_id, "IOLAB_SCALE": "quick"})
    assert run.stopped is None and all(c.error is None for c in run.cells.values())
    return ["".join(o.get("text", "") for o in nb.cells[i].outputs) for i in given]


def test_two_students_get_different_parameters_in_the_pilot():
    pilot = read(COURSE_NOTEBOOKS[0])
    ada, grace = _given_outputs(pilot, "ada"), _given_outputs(pilot, "grace")
    assert len(ada) >= 3 and all(ada) and ada != grace
    # ... and what each gets is what pick() gives that id here: the kernel draws as this process does.
    assert f"the parent holds {student.pick('pred-cow', CHOICES, 'ada')} MiB" in ada[0]
