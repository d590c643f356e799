"""The checker process's core, in-process: which exercises it measures again, and what that decides; and a wrong verdict, as the grader sees it."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.homework import answers, checker
from iolab.homework.contract import CheckJob, ExerciseJob, NotebookJob

# The student's answer, and the value the given cell measured (its statement marked # measured).
EXERCISE = ExerciseJob("ex", ("",), (CheckJob("ex-check", "assert answer == 2 * value", 1.0, ("answer", "value")),),
                       ("value = 21  # measured",))
ONLY_MEASURED = ExerciseJob("only", ("",), (CheckJob("only-check", "assert value > 0", 1.0, ("value",)),),
                            ("value = 21  # measured",))


def _answers(tmp_path: Path, check: CheckJob, **namespace: object) -> str:
    path = tmp_path / f"{check.grade_id}.json"
    answers.dump(check.names, namespace, str(path))
    return path.read_text()


@pytest.fixture
def remeasured(monkeypatch):
    """The labels of the exercises the checker measured again."""
    labels: list[str] = []
    real = checker.remeasure

    def counting(exercise, namespace):
        labels.append(exercise.label)
        return real(exercise, namespace)

    monkeypatch.setattr(checker, "remeasure", counting)
    return labels


def test_a_solo_notebooks_blank_exercise_is_not_measured_again_and_an_answered_one_is(tmp_path, remeasured):
    job = NotebookJob("", (EXERCISE,), solo=True)
    blank = checker.run_job(job, lambda: {"ex-check": _answers(tmp_path, EXERCISE.checks[0], value=21)})
    assert remeasured == [] and blank.exercises["ex"].checks["ex-check"].answers == {"answer": "missing", "value": "ok"}
    answered = checker.run_job(job, lambda: {"ex-check": _answers(tmp_path, EXERCISE.checks[0], answer=42, value=21)})
    assert remeasured == ["ex"] and all(o.passed for o in answered.exercises["ex"].checks["ex-check"].outcomes)


def test_a_value_far_from_the_checkers_own_is_still_refused_where_an_answer_arrived(tmp_path, remeasured):
    job = NotebookJob("", (EXERCISE,), solo=True)
    verdict = checker.run_job(job, lambda: {"ex-check": _answers(tmp_path, EXERCISE.checks[0], answer=42_000, value=21_000)})
    assert verdict.exercises["ex"].checks["ex-check"].answers["value"].startswith("refused")


def test_a_check_on_measured_names_alone_and_a_tampered_file_are_measured_again(tmp_path, remeasured):
    job = NotebookJob("", (ONLY_MEASURED, EXERCISE), solo=True)
    checker.run_job(job, lambda: {"only-check": _answers(tmp_path, ONLY_MEASURED.checks[0], value=21),
                                  "ex-check": answers.unreadable("is a FIFO")})
    assert remeasured == ["only", "ex"]


def test_a_notebook_that_tolerates_a_neighbour_measures_again_before_the_answers_arrive(tmp_path, remeasured):
    job = NotebookJob("", (EXERCISE,), solo=False)
    checker.run_job(job, lambda: {"ex-check": None})
    assert remeasured == ["ex"]


def test_the_parameters_shown_are_the_drawn_ones_whole_or_cut_at_a_comma():
    given = ['limit_s, job_s = student.pick("ex", [(0.1, 0.5)])\nname = None\nreasons = ("a", "b")\n',
             'settings = student.pick("ex-2", [{"a": 1}])\nempty = student.pick("ex-3", [None])\n'
             'many = student.pick("ex-4", [tuple(range(100))])\n']
    namespace = {"limit_s": 0.1, "job_s": 0.5, "name": None, "reasons": ("a", "b"), "settings": {"a": 1},
                 "empty": None, "many": tuple(range(100))}
    shown = checker.parameters(given, namespace)
    assert shown.startswith("job_s=0.5, limit_s=0.1, many=(0, 1, 2,")
    assert "name=" not in shown and "reasons=" not in shown and "empty=" not in shown  # not drawn, or nothing drawn
    assert shown.endswith("settings={'a': 1}") and ", …, settings" in shown


# A checker that reads its job and answers and writes a verdict of the wrong shape (a broken or hostile one).
WRONG_VERDICT = ("import sys; sys.argv.pop(1); sys.stdin.readline(); sys.stdin.readline(); "
                 "print('{\"setup_error\": 5, \"exercises\": {}}')")


def test_a_verdict_of_the_wrong_shape_is_the_checkers_failure_in_words_not_a_crash(monkeypatch):
    monkeypatch.setattr(checker, "CHECKER_MAIN", WRONG_VERDICT)
    process = checker.CheckerProcess(NotebookJob("", (EXERCISE,)), {}, "none")
    with pytest.raises(RuntimeError, match="the checker's verdict is not one: .*setup_error"):
        process.finish({"ex-check": None}, time_limit=30)
