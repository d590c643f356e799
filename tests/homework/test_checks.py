"""A check cell read as the grader reads it: the answers it needs, its public gate, its scored parts."""

from __future__ import annotations

from iolab.homework import checks

CELL = """assert isinstance(answer, int), "an integer"
### BEGIN HIDDEN TESTS
expected = 6 * 7
assert answer == expected, "forty-two"
for k in range(2):
    assert k < answer
assert answer > 0
### END HIDDEN TESTS"""


def test_a_check_cell_splits_into_its_public_gate_and_one_part_per_hidden_assert():
    found = checks.parts(CELL)
    assert [(p.hidden, p.line) for p in found] == [(False, 1), (True, 4), (True, 5), (True, 7)]
    assert "expected = 6 * 7" in found[1].source  # a statement belongs to the assert after it


def test_the_answer_names_are_what_the_check_reads_and_nothing_else_provides():
    assert checks.answer_names(CELL, []) == {"answer"}
    assert checks.answer_names("assert np.isclose(ratio, given)", ["import numpy as np", "given = 3"]) == {"ratio"}


def _outcomes(answer):
    return checks.run_parts(checks.parts(CELL), {"answer": answer}, "<check>")


def test_every_part_passed_earns_the_points():
    assert checks.score(_outcomes(42), 3) == (3, "passed")


def test_some_hidden_parts_passed_earn_their_share():
    outcomes = _outcomes(41)  # an int, positive, above 1, but not 42
    assert [o.passed for o in outcomes] == [True, False, True, True]
    assert outcomes[1].message == "forty-two"
    assert checks.score(outcomes, 3) == (2.0, "partial")


def test_a_failed_public_gate_earns_nothing():
    outcomes = _outcomes("42")
    assert checks.score(outcomes, 3) == (0.0, "failed")
    assert outcomes[0].message == "an integer"


def test_a_cell_without_hidden_asserts_shares_its_points_among_the_public_ones():
    found = checks.parts("assert a == 1\nassert b == 2")
    outcomes = checks.run_parts(found, {"a": 1, "b": 3}, "<check>")
    assert checks.score(outcomes, 2) == (1.0, "partial")


def test_an_error_in_one_part_fails_that_part_only_and_names_the_error():
    outcomes = checks.run_parts(checks.parts("assert x == 1\nassert y == 2"), {"x": 1}, "<check>")
    assert [(o.passed, o.message) for o in outcomes] == [(True, ""), (False, "NameError: name 'y' is not defined")]


def test_a_given_cells_measured_lines_are_left_to_the_students_run_and_the_rest_runs_in_the_checker():
    given = ('faster = student.pick("ex", [2, 3])\n'
             'baseline = amdahl.sweep([1], wait_ms=90)  # measured\n'
             'share = baseline.wait / 2  # measured: from the baseline\n'
             'print(faster)')
    code, measured = checks.parameters(given)
    assert code == 'faster = student.pick("ex", [2, 3])\nprint(faster)'
    assert measured == {"baseline", "share"}
    assert checks.answer_names("assert abs(gain - share * faster) < 1", [code]) == {"gain", "share"}
