"""Per-student parameters: the same id draws the same numbers everywhere, two ids differ, no id gets the book's."""

from __future__ import annotations

import ast
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


def picks(nb) -> list[tuple[str, list]]:
    """Every ``student.pick(label, [choices...])`` call of the notebook's given cells, its arguments evaluated."""
    found = []
    for index in (i for e in markup.exercises(nb) for i in e.given):
        for node in ast.walk(ast.parse(nb.cells[index].source)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "student.pick":
                # Choices are constants or arithmetic on them ([1 / 4, 1 / 8]): evaluated with no names in scope.
                choices = eval(compile(ast.Expression(node.args[1]), "<choices>", "eval"), {"__builtins__": {}})
                found.append((ast.literal_eval(node.args[0]), list(choices)))
    return found


SEEDED = [p for p in COURSE_NOTEBOOKS if picks(read(p))]


def test_most_notebooks_draw_per_student_parameters():
    assert len(SEEDED) >= len(COURSE_NOTEBOOKS) // 2, [p.stem for p in SEEDED]


@pytest.mark.parametrize("path", SEEDED, ids=lambda p: p.stem)
def test_two_students_get_different_parameters_and_neither_the_books(path):
    calls = picks(read(path))
    ada, grace = ([student.pick(label, choices, who) for label, choices in calls] for who in ("ada", "grace"))
    book = [choices[0] for _, choices in calls]
    assert ada != grace
    assert all(a != b for a, b, (_, choices) in zip(ada, book, calls) if len(choices) > 1)
    assert ada == [student.pick(label, choices, "ada") for label, choices in calls]  # the same id, the same draw


def test_the_kernel_draws_as_this_process_does():
    # The pilot's setup and parameter cells, run by a kernel with IOLAB_STUDENT=ada, print what pick() gives ada here.
    nb = copy.deepcopy(read(COURSE_NOTEBOOKS[0]))
    given = [i for e in markup.exercises(nb) for i in e.given]
    run = execute_cells(nb, [markup.setup_cell(nb), *given], 120, {student.ENV: "ada", "IOLAB_SCALE": "quick"})
    assert run.stopped is None and [c.error for c in run.cells.values() if c.error] == []
    printed = "".join(o.get("text", "") for o in nb.cells[given[0]].outputs)
    assert printed == f"the parent holds {student.pick('pred-cow', CHOICES, 'ada')} MiB\n"
