"""Grade a notebook again when it lost points on a hidden check alone: one run of a measurement decides nothing.

Many hidden checks hold a measurement to a bound (a rate within 10 % of the law's, a ratio above
0.85). A wrong answer crosses the bound every time; an honest one can cross it once, on a machine
busy with other work (a class graded two at a time, a CPU-hungry neighbour). pyperf's habit applies:
before a verdict, measure again. A notebook in which an exercise lost points only on hidden asserts
(its answers were accepted and its visible asserts passed: ``Row.lost_on_hidden``) is graded again,
up to ``GradingOptions.reruns`` times (1 by default), and the grading with the most points counts.
Its rows say so in their note, which the student sees, with the points of every grading.

A wrong answer costs one more grading and gains nothing. A blank or broken notebook, whose answers
were not accepted or whose visible asserts failed, is never graded again. A notebook whose predictions
are drawn at random gains no second draw: a grading counts only if its chosen answers (the words,
truth values and whole numbers handed in, measurements left out: ``answers.chosen``) are the first
grading's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from iolab.homework.grading import Row

SAID = "since a hidden check failed where every answer was accepted"  # in the note of a notebook graded again


def lost_on_hidden(rows: list[Row]) -> bool:
    """Whether some exercise of these rows (one notebook's) lost points on hidden asserts alone."""
    return any(row.lost_on_hidden and row.points < row.max_points for row in rows)


def points(rows: list[Row]) -> float:
    """The points of one grading of a notebook."""
    return round(sum(row.points for row in rows), 2)


def settle(rows: list[Row], again: Callable[[], list[Row]], reruns: int) -> list[Row]:
    """``rows``, or, while they lost points on a hidden check alone, the best of up to ``reruns`` more gradings
    (``again()``): the first grading with the most points, its note saying what each grading scored."""
    gradings = [rows]
    while len(gradings) <= reruns and lost_on_hidden(gradings[-1]):
        gradings.append(again())
    if len(gradings) == 1:
        return rows
    same = [g for g in gradings if [r.chosen for r in g] == [r.chosen for r in rows]]
    best = max(same, key=points)  # the first of equals: a rerun that changes nothing changes no row
    scored = ", then ".join(f"{points(g):g}" for g in gradings)
    said = (f"graded {len(gradings)} times, {SAID} (a measurement can cross its bound on a busy machine): "
            f"{scored} points; the best counts")
    if len(same) < len(gradings):
        said += (f", of the {len(same)} whose chosen answers (words, truth values, whole numbers) were those of "
                 "the first grading")
    return [replace(row, note="; ".join(n for n in (row.note, said) if n)) for row in best]
