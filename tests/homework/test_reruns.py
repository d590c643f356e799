"""A notebook that lost points on a hidden check alone is graded again, and its best grading counts."""

from __future__ import annotations

import json

import pytest

from homework_notebooks import SANDBOX, solved, tiny_course, write
from iolab.commands import main
from iolab.homework import answers, batch, editions, grading, reruns
from iolab.homework.grading import Row


def _rows(points: float, lost_on_hidden: bool = True, note: str = "", chosen: str = "same") -> list[Row]:
    """One notebook's grading: ex-a scored ``points`` of 2 (hidden asserts alone, if lost), ex-b its 1."""
    status = "passed" if points == 2 else "partial"
    return [Row("ada", "hw.ipynb", "ex-a", points, 2.0, status, "", 1.0, note=note,
                lost_on_hidden=lost_on_hidden and points < 2, chosen=chosen),
            Row("ada", "hw.ipynb", "ex-b", 1.0, 1.0, "passed", "", 1.0, note=note, chosen="b")]


def _scripted(*gradings: list[Row]):
    """``again`` for :func:`reruns.settle`: these gradings in turn, and a count of the calls."""
    left = list(gradings)
    calls = []

    def again() -> list[Row]:
        calls.append(1)
        return left.pop(0)
    return again, calls


def test_a_grading_that_lost_nothing_on_a_hidden_check_is_not_graded_again():
    again, calls = _scripted()
    full = _rows(2)
    assert reruns.settle(full, again, 1) is full and calls == []
    broken = _rows(0, lost_on_hidden=False)  # a blank or broken answer: its answers refused or a visible assert failed
    assert reruns.settle(broken, again, 3) is broken and calls == []


def test_the_best_grading_counts_and_its_note_gives_every_gradings_points():
    again, calls = _scripted(_rows(2, note="ran as bob"))  # every grading of one notebook has the same id note
    settled = reruns.settle(_rows(1, note="ran as bob"), again, 1)
    assert len(calls) == 1
    assert [r.points for r in settled] == [2.0, 1.0]
    assert settled[0].note.startswith("ran as bob; graded 2 times") and "2, then 3 points; the best counts" in settled[0].note
    assert {r.note for r in settled} == {settled[0].note}, "every row of the notebook carries the note"


def test_a_rerun_that_scores_less_leaves_the_first_grading_counted():
    again, _ = _scripted(_rows(0))
    settled = reruns.settle(_rows(1), again, 1)
    assert [r.points for r in settled] == [1.0, 1.0]
    assert "2, then 1 points" in settled[0].note


def test_reruns_stop_at_the_limit_or_at_the_first_grading_that_loses_nothing_on_a_hidden_check():
    again, calls = _scripted(_rows(0), _rows(1), _rows(1))
    assert [r.points for r in reruns.settle(_rows(0), again, 2)] == [1.0, 1.0] and len(calls) == 2
    again, calls = _scripted(_rows(2), _rows(0))
    assert reruns.settle(_rows(0), again, 5)[0].points == 2.0 and len(calls) == 1
    again, calls = _scripted()
    assert reruns.settle(_rows(0), again, 0) == _rows(0) and calls == []


def test_a_rerun_whose_chosen_answers_differ_does_not_count_so_a_random_guess_gets_no_second_draw():
    again, calls = _scripted(_rows(2, chosen="other guess"))
    settled = reruns.settle(_rows(1), again, 1)
    assert len(calls) == 1 and [r.points for r in settled] == [1.0, 1.0]
    assert "2, then 3 points; the best counts, of the 1 whose chosen answers" in settled[0].note


def test_chosen_answers_are_the_words_truth_values_and_whole_numbers_not_the_measurements():
    def file(**values):
        return json.dumps({name: {"$value": value} for name, value in values.items()})
    frame = {"$frame": [["rps", "runs"], [0, 1], [[1234.5, 3], [987.6, 4]]]}
    one = answers.chosen([file(guess="about the same", keyed={"$dict": [[1000, frame]]}, rate=1.5, ok=True)])
    assert one == answers.chosen([file(guess="about the same", keyed={"$dict": [[1000, {"$frame": [["rps", "runs"], [0, 1], [[1.0, 9], [2.0, 9]]]}]]},
                                       rate=2.5, ok=True)]), "measurements left out, floats and tables alike"
    assert one != answers.chosen([file(guess="more", keyed={"$dict": [[1000, frame]]}, rate=1.5, ok=True)])
    assert one != answers.chosen([file(guess="about the same", keyed={"$dict": [[1000, frame]]}, rate=1.5, ok=False)])
    assert answers.chosen([file(n=41)]) != answers.chosen([file(n=42)])
    assert answers.chosen(["not json", None]) != answers.chosen(["not json either", None])
    deep = "[" * 5000 + "]" * 5000  # more than json.loads takes: digested whole, no RecursionError
    assert len(answers.chosen([deep, "[" * 900 + '"x"' + "]" * 900])) == 16


def test_a_notebook_changed_between_gradings_keeps_its_first_grading(tmp_path, monkeypatch):
    sources = tmp_path / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    path = write(solved(**{"ex-a-code": "answer = 41"}), tmp_path / "submissions" / "guess" / "hw.ipynb")
    real = batch._grade_in_process

    def graded_then_changed(path, student, *rest):
        rows = real(path, student, *rest)
        write(solved(**{"ex-a-code": "answer = 42"}), path)  # the second draw of a guess comes out right
        return rows
    monkeypatch.setattr(batch, "_grade_in_process", graded_then_changed)
    rows = list(batch.grade_folder(path.parent.parent, sources, grading.GradingOptions(time_limit=60, sandbox=SANDBOX)))
    assert [r.points for r in rows] == [0.0, 2.0]
    assert "2, then 3 points; the best counts, of the 1 whose" in rows[0].note


def test_a_wrong_answer_is_graded_twice_and_scores_the_same_and_a_blank_one_once(tmp_path, monkeypatch):
    sources = tmp_path / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    subs = tmp_path / "submissions"
    write(solved(**{"ex-a-code": "answer = 41"}), subs / "a-wrong" / "hw.ipynb")  # an int: the visible assert passes
    write(editions.student_edition(tiny_course()), subs / "b-blank" / "hw.ipynb")
    graded = []
    real = batch._grade_in_process
    monkeypatch.setattr(batch, "_grade_in_process", lambda path, student, *rest: graded.append(student) or real(path, student, *rest))
    rows = list(batch.grade_folder(subs, sources, grading.GradingOptions(time_limit=60, sandbox=SANDBOX), jobs=2))
    assert sorted(graded) == ["a-wrong", "a-wrong", "b-blank"]
    wrong = [r for r in rows if r.student == "a-wrong"]
    assert [(r.exercise, r.points, r.lost_on_hidden) for r in wrong] == [("ex-a", 0.0, True), ("ex-b", 2.0, False)]
    assert wrong[0].note.startswith("graded 2 times") and "2, then 2 points" in wrong[0].note
    assert [(r.student, r.note) for r in rows if r.student == "b-blank"] == [("b-blank", "")] * 2
    assert [r.student for r in rows] == ["a-wrong", "a-wrong", "b-blank", "b-blank"], "rows in the order of the submissions"


def test_the_flag_stays_out_of_the_grades_csv(tmp_path):
    path = tmp_path / "grades.csv"
    batch.write_csv(_rows(1), path)
    assert "lost_on_hidden" not in path.read_text() and "measured" not in path.read_text().splitlines()[0]


def test_a_negative_number_of_reruns_is_refused_before_any_grading(tmp_path, capsys):
    (tmp_path / "ada").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(["homework", "grade", str(tmp_path), "--reruns", "-1", "--no-sandbox"])
    assert exit_.value.code == 2 and "--reruns -1: give 0" in capsys.readouterr().err
