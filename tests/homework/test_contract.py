"""The contract between the grader's processes: what goes over the pipes comes back as it went, and nothing else passes."""

from __future__ import annotations

import json

import pytest

from iolab.homework.checks import Outcome
from iolab.homework.contract import (SANDBOX_KINDS, STATUSES, Answers, CheckJob, CheckVerdict, ContractError,
                                     ExerciseJob, ExerciseVerdict, NotebookJob, Verdict, answers_from_json, answers_to_json,
                                     sandbox_kind)

JOB = NotebookJob("import os", (ExerciseJob("ex-a", ("n = 3",), (CheckJob("ex-a-check", "assert total == 2 * n", 2.0, ("total",)),)),))
VERDICT = Verdict(None, {"ex-a": ExerciseVerdict(None, "n=3", {"ex-a-check": CheckVerdict(
    {"total": "ok"}, (Outcome(False, True, ""), Outcome(True, False, "AssertionError")))})})


def test_a_job_a_verdict_and_answers_cross_as_json_and_come_back_equal():
    assert NotebookJob.from_json(JOB.to_json()) == JOB
    assert Verdict.from_json(VERDICT.to_json()) == VERDICT
    answers: Answers = {"ex-a-check": '{"total": {"$value": 6}}', "ex-b-check": None}
    assert answers_from_json(answers_to_json(answers)) == answers


@pytest.mark.parametrize("text", ["[]", "{}", '{"setup": 1, "exercises": []}', '{"setup": "", "exercises": [{}]}',
                                  "not json", "[" * 100_000])
def test_a_job_of_another_shape_is_a_contract_error(text):
    with pytest.raises(ContractError):
        NotebookJob.from_json(text)


def test_a_verdict_whose_outcome_says_passed_with_a_string_is_refused():
    raw = json.loads(VERDICT.to_json())
    raw["exercises"]["ex-a"]["checks"]["ex-a-check"]["outcomes"][1]["passed"] = "yes"
    with pytest.raises(ContractError):
        Verdict.from_json(json.dumps(raw))
    with pytest.raises(ContractError):
        answers_from_json('{"answers": {"ex-a-check": 42}}')
    with pytest.raises(ContractError, match="setup_error"):
        Verdict.from_json('{"setup_error": 5, "exercises": {}}')


def test_statuses_and_sandbox_kinds_are_the_words_rows_and_options_use():
    assert {"passed", "partial", "failed", "tampered", "error"} <= set(STATUSES)
    assert SANDBOX_KINDS == ("bwrap", "nobody", "none")
    assert sandbox_kind("nobody") == "nobody"
    with pytest.raises(ValueError, match="one of bwrap, nobody, none"):
        sandbox_kind("docker")
