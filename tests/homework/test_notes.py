"""The instructor notes' figures: points from the markup, run times as recorded, reading time from the student's text."""

from __future__ import annotations

import nbformat
import pandas as pd
import pytest

from homework_notebooks import tiny_course, write
from iolab.homework import notes, times


def _run(notebook: str, scale: str, seconds: float, error: str = "") -> times.RunTime:
    return times.RunTime(notebook, scale, seconds, error, "test machine", "2026-11-25")


def test_words_leaves_out_myst_roles_and_directive_lines():
    text = "```{figure} x.png\n:name: fig-a\n```\nThe file took {glue:text}`nb.ipynb::ms:.0f` ms to read."
    assert notes.words(text) == 6  # The file took ms to read


def test_the_student_reads_the_statements_not_the_folded_explanations(tmp_path):
    path = write(tiny_course(), tmp_path / "hw.ipynb")
    counted = notes.student_words(path)
    explanation = notes.words("Six sevens make forty-two, said the mice.")
    everything = sum(notes.words(c.source) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    assert 0 < counted <= everything - explanation


def test_the_exercise_table_lists_graded_exercises_with_their_points(tmp_path):
    path = write(tiny_course(), tmp_path / "hw.ipynb")
    table = notes.exercise_table([path])
    assert table[["exercise", "kind", "points"]].values.tolist() == [["ex-a", "exercise", 1.0], ["ex-b", "exercise", 2.0]]


def test_recording_a_run_replaces_the_older_one_of_the_same_notebook_and_scale(tmp_path):
    csv = tmp_path / "run-times.csv"
    times.record([_run("a.ipynb", "quick", 10), _run("a.ipynb", "full", 100)], csv)
    table = times.record([_run("a.ipynb", "quick", 12)], csv)
    assert table[["notebook", "scale", "seconds"]].values.tolist() == [["a.ipynb", "full", 100], ["a.ipynb", "quick", 12]]
    assert times.run_seconds("a.ipynb", "quick", times.load(csv)) == 12


def test_a_chapters_run_time_sums_its_notebooks_and_is_unknown_if_one_is_unmeasured_or_failed(tmp_path):
    a = write(tiny_course(), tmp_path / "a.ipynb")
    b = write(tiny_course(), tmp_path / "b.ipynb")
    prose = tmp_path / "chapter.md"
    prose.write_text("word " * 400)
    recorded = pd.DataFrame([vars(r) for r in (_run("a.ipynb", "quick", 10), _run("b.ipynb", "quick", 5),
                                                _run("a.ipynb", "full", 60), _run("b.ipynb", "full", 9, "cell raised X"))])
    chapter = notes.chapter_time(prose, [a, b], recorded)
    assert chapter.run_s == {"quick": 15.0, "full": None}
    assert chapter.work_min == 4 * notes.MINUTES_PER["exercise"]
    assert chapter.reading_min >= 400 / notes.WORDS_PER_MINUTE


def test_measuring_a_notebook_runs_every_cell_and_reports_the_first_error(tmp_path):
    good = times.measure(write(tiny_course(), tmp_path / "good.ipynb"), "quick")
    assert (good.notebook, good.scale, good.error) == ("good.ipynb", "quick", "")
    assert good.seconds > 0
    broken = tiny_course()
    broken.cells[2].source = "1 / 0"
    bad = times.measure(write(broken, tmp_path / "bad.ipynb"), "quick")
    assert bad.error == "cell raised ZeroDivisionError: division by zero"


def test_measuring_at_a_scale_the_kit_does_not_know_is_refused_before_any_kernel_starts(tmp_path):
    with pytest.raises(ValueError, match="quick, full"):
        times.measure(write(tiny_course(), tmp_path / "a.ipynb"), "huge")
