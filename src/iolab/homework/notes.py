"""The figures of a chapter's instructor notes, computed from the notebooks and the recorded run times.

An instructor deciding what to assign wants the points of every exercise, how long the notebook
runs at each scale, and how long a student will spend. The first come from the markup, the second
from ``times`` (measured); the third is an estimate, and says what it assumes: reading at
``WORDS_PER_MINUTE`` (the chapter's prose and the student edition's markdown) and a fixed time per
prediction and per exercise. The book's ``instructor-notes`` directive renders these as tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pandas as pd

from iolab.homework import editions, markup, times

WORDS_PER_MINUTE = 200  # a common figure for careful reading of technical prose
# Thinking, writing and running one (a written answer: running the experiment again and explaining it); an
# assumption, stated.
MINUTES_PER = {"prediction": 5, "exercise": 20, "written": 15}
SCALES = ("quick", "full")
# MyST roles and directives ({glue:text}`...`, ```{figure}```) are markup, not words a reader reads.
_MARKUP = re.compile(r"\{[\w:-]+\}`[^`]*`|^\s*(```|:::).*$|^\s*:[\w-]+:.*$", re.MULTILINE)


@dataclass(frozen=True)
class ChapterTime:
    """What one chapter asks of a student: reading, exercises (estimates), running its notebooks (measured)."""

    reading_min: float
    work_min: float
    run_s: dict[str, float | None]  # scale -> seconds of all its notebooks; None if one is unmeasured


def words(text: str) -> int:
    """The words of markdown ``text``, MyST roles and directive lines left out."""
    return len(re.findall(r"[A-Za-z0-9][\w'’-]*", _MARKUP.sub(" ", text)))


def student_words(nb_path: Path) -> int:
    """The words of the markdown a student reads in the notebook's student edition (no folded solutions)."""
    edition = editions.student_edition(nbformat.read(nb_path, as_version=4))
    return sum(words(cell.source) for cell in edition.cells if cell.cell_type == "markdown" and cell.id != editions.PREFACE_ID)


def exercise_table(nb_paths: list[Path]) -> pd.DataFrame:
    """One row per graded exercise of the notebooks (written ones, which a TA scores, too): notebook, exercise
    label, kind (``written`` for those), points."""
    rows = [{"notebook": path.name, "exercise": e.label, "kind": "written" if e.written else e.kind, "points": e.points}
            for path in nb_paths for e in markup.exercises(nbformat.read(path, as_version=4)) if e.graded or e.written]
    return pd.DataFrame(rows, columns=["notebook", "exercise", "kind", "points"])


def chapter_time(prose: Path, nb_paths: list[Path], run_times: pd.DataFrame | None = None) -> ChapterTime:
    """Reading and work estimates for a chapter (its prose page and notebooks), and its measured run times."""
    run_times = times.load() if run_times is None else run_times
    reading = (words(prose.read_text()) + sum(student_words(p) for p in nb_paths)) / WORDS_PER_MINUTE
    kinds = exercise_table(nb_paths).kind
    work = sum(MINUTES_PER[kind] for kind in kinds)
    run_s: dict[str, float | None] = {}
    for scale in SCALES:
        seconds = [times.run_seconds(p.name, scale, run_times) for p in nb_paths]
        run_s[scale] = None if None in seconds else sum(s for s in seconds if s is not None)
    return ChapterTime(round(reading), work, run_s)


def measured_on(nb_paths: list[Path], run_times: pd.DataFrame | None = None) -> list[str]:
    """The machines and dates the notebooks' recorded run times come from, for the table's caption."""
    run_times = times.load() if run_times is None else run_times
    mine = run_times[run_times.notebook.isin([p.name for p in nb_paths])]
    return sorted({f"{row.machine}, {row.measured}" for row in mine.itertuples()})
