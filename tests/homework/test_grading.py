"""The grader: what a submission scores, and a batch that survives errors, hangs and deleted checks.

The batch tests grade a tiny course built in code (a kernel start each, no measurement); the round
trip grades the course's graded notebooks as students would hand them in.
"""

from __future__ import annotations

import copy
import csv
import os

import psutil
import pytest

from homework_notebooks import SANDBOX, cell_index, paste_solutions, solved, tiny_course, write
from iolab.commands import main
from iolab.homework import batch as class_batch
from iolab.homework import answers, cgroups, editions, grading


HANG_SECONDS = "611.5"
# The batch's limit per notebook: the hang waits it out; the tiny course's few cells take a fraction of a
# second, with room for a neighbour that stalls the machine for seconds (CI's did, at 6 s, beside make test's
# honest stage).
TIME_LIMIT = 12

@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """A folder of submissions that go wrong in every way, one good one last, graded by the command; its CSV rows."""
    tmp_path = tmp_path_factory.mktemp("batch")
    sources = tmp_path / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    subs = tmp_path / "submissions"
    write(solved(**{"ex-a-code": "answer = 6 * 7 / 0"}), subs / "a-raises" / "hw.ipynb")
    hang = f"pid = os.fork()\nif pid == 0:\n    os.execvp('sleep', ['sleep', '{HANG_SECONDS}'])\nos.waitpid(pid, 0)"
    write(solved(**{"ex-a-code": hang}), subs / "b-hangs" / "hw.ipynb")
    deleted = solved()
    del deleted.cells[cell_index(deleted, "ex-b-check")]
    write(deleted, subs / "c-deleted-check" / "hw.ipynb")
    (subs / "d-not-a-notebook").mkdir()
    (subs / "d-not-a-notebook" / "hw.ipynb").write_text("my homework, as a text file")
    write(solved(), subs / "e-unknown-notebook" / "essay.ipynb")
    write(solved(), subs / "f-good" / "hw.ipynb")
    ungraded = tiny_course()
    for cell in ungraded.cells:
        cell.metadata.pop("nbgrader", None)
    write(ungraded, sources / "plain.ipynb")
    write(ungraded, subs / "f-good" / "plain.ipynb")
    out = tmp_path / "grades.csv"
    assert main(["homework", "grade", str(subs), "--out", str(out), "--timeout", str(TIME_LIMIT),
                 "--notebooks", str(sources), *(["--no-sandbox"] if SANDBOX == "none" else [])]) == 0
    rows = list(csv.DictReader(out.open()))
    return {(r["student"], r["exercise"]): r for r in rows}, None


def test_a_submission_that_raises_fails_that_exercise_with_the_error_and_the_others_still_count(batch):
    rows, _ = batch
    assert rows["a-raises", "ex-a"]["status"] == "failed"
    assert "ZeroDivisionError: division by zero" in rows["a-raises", "ex-a"]["reason"]
    assert "`answer` is not defined" in rows["a-raises", "ex-a"]["reason"]  # and so the check could not find it
    row = rows["a-raises", "ex-b"]
    assert (row["status"], float(row["points"])) == ("passed", 2.0), row["reason"]


def test_a_submission_that_hangs_is_stopped_at_the_time_limit_with_everything_it_started(batch):
    rows, _ = batch
    for exercise in ("ex-a", "ex-b"):
        row = rows["b-hangs", exercise]
        assert (row["status"], float(row["points"])) == ("not run", 0.0)
        assert f"time limit ({TIME_LIMIT} s) ran out in cell" in row["reason"]
    assert 1 <= float(rows["b-hangs", "ex-a"]["seconds"]) <= TIME_LIMIT + 1  # the hanging cell got what was left
    # The child it forked (`sleep HANG_SECONDS`, run by the sandbox's user) ended with the kernel.
    assert [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", HANG_SECONDS]] == []


def test_a_deleted_check_cell_is_a_row_with_a_reason_and_no_points(batch):
    rows, _ = batch
    row = rows["c-deleted-check", "ex-b"]
    assert (row["status"], float(row["points"]), float(row["max_points"])) == ("missing", 0.0, 2.0)
    assert "ex-b-check is not in the submission" in row["reason"]
    assert rows["c-deleted-check", "ex-a"]["status"] == "passed", rows["c-deleted-check", "ex-a"]["reason"]


def test_a_file_that_is_not_a_notebook_and_an_unknown_notebook_get_error_rows(batch):
    rows, _ = batch
    assert rows["d-not-a-notebook", "ex-a"]["status"] == rows["d-not-a-notebook", "ex-b"]["status"] == "error"
    assert rows["d-not-a-notebook", "ex-a"]["reason"].startswith("cannot read the notebook")
    assert rows["e-unknown-notebook", ""]["reason"].startswith("no instructor notebook named essay.ipynb")


def test_the_batch_goes_on_to_grade_the_good_submission_after_all_that(batch):
    rows, _ = batch
    good = [rows["f-good", e] for e in ("ex-a", "ex-b")]
    assert [(r["status"], float(r["points"])) for r in good] == [("passed", 1.0), ("passed", 2.0)], \
        [r["reason"] for r in good]
    assert rows["f-good", ""]["status"] == "not graded"  # a notebook without graded exercises, seen


def test_an_edited_check_cell_is_replaced_by_the_instructors_with_its_hidden_tests():
    instructor = tiny_course()
    cheat = solved(**{"ex-a-code": "answer = 41", "ex-a-check": "pass"})
    before = {p.pid for p in psutil.Process().children()}
    rows = grading.grade(cheat, instructor, "mallory", "hw.ipynb", grading.GradingOptions(time_limit=60, sandbox=SANDBOX))
    # Not even a zombie: the kernel's process (bwrap's, in the sandbox) and the checker's are reaped.
    assert [p for p in psutil.Process().children() if p.pid not in before] == []
    assert (rows[0].status, rows[0].points) == ("failed", 0.0)
    assert rows[0].reason == "hidden check 1 of 1 failed"


def test_a_check_cell_pasted_twice_is_tampered_and_no_check_source_reaches_the_students_kernel():
    instructor = tiny_course()
    twice = solved(**{"ex-a-code": "answer = 41"})
    check = cell_index(twice, "ex-a-check")
    twice.cells.insert(check + 1, copy.deepcopy(twice.cells[check]))
    # A cell after it that would hand in whatever the kernel was given as a check's source, as ex-b's answer.
    twice.cells[cell_index(twice, "ex-b-code")].source = "total = 2 * n if 'answer ' + '== 42' not in str(In) else -1"
    rows = grading.grade(twice, instructor, "mallory", "hw.ipynb", grading.GradingOptions(time_limit=60, sandbox=SANDBOX))
    assert (rows[0].status, rows[0].points) == ("tampered", 0.0) and "more than once" in rows[0].reason
    assert (rows[1].status, rows[1].points) == ("passed", 2.0)  # ex-b's cells never held a hidden test
    assert "answer == 42" not in repr(rows)


def _measuring_course():
    """The tiny course with a measurement in ex-b's given cell, which its check compares the answer with."""
    nb = tiny_course()
    nb.cells[cell_index(nb, "ex-b-given")].source = 'n = 3\nentries = len(os.listdir("/"))  # measured'
    nb.cells[cell_index(nb, "ex-b-code")].source = "### BEGIN SOLUTION\ntotal = n + n\ncounted = entries\n### END SOLUTION"
    nb.cells[cell_index(nb, "ex-b-check")].source = "assert total == 2 * n\nassert counted == entries"
    return nb


def test_a_measured_value_the_student_typed_is_refused_when_the_checkers_own_measurement_disagrees():
    instructor = _measuring_course()
    honest = paste_solutions(editions.student_edition(instructor), instructor)
    typed = copy.deepcopy(honest)
    typed.cells[cell_index(typed, "ex-b-code")].source = "total = n + n\nentries = counted = 1000"
    options = grading.GradingOptions(time_limit=60, sandbox=SANDBOX)
    assert [r.status for r in grading.grade(honest, instructor, "ada", "hw.ipynb", options)] == ["passed", "passed"]
    row = grading.grade(typed, instructor, "mallory", "hw.ipynb", options)[1]
    assert (row.status, row.points) == ("partial", 1.0)  # total's assert passed; counted's cannot
    assert "`entries` was not accepted: not what this notebook measures" in row.reason and "1,000 in your run" in row.reason


# A solution cell that replaces how the kernel writes its answers (the kit's module is the student's to
# patch in their own kernel): every answers file after it is one no grader's cell writes.
WRITES_ANSWERS = "import os, iolab.homework.answers as a\na.dump = lambda names, namespace, path: {}\nanswer = 42"
FORGED_ANSWERS = {
    "a dict key that is a list": "open(path, 'w').write('{\"answer\": {\"$value\": {\"$dict\": [[[1], 2]]}}}')",
    "a FIFO": "os.mkfifo(path)",
    "a link to /dev/zero": "os.symlink('/dev/zero', path)",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("forged", FORGED_ANSWERS.values(), ids=FORGED_ANSWERS.keys())
def test_answers_no_graders_cell_writes_are_tampered_with_a_reason_never_the_graders_error(forged):
    cheat = solved(**{"ex-a-code": WRITES_ANSWERS.format(forged)})
    options = grading.GradingOptions(time_limit=60, sandbox=SANDBOX)
    rows = grading.grade(cheat, tiny_course(), "mallory", "hw.ipynb", options)
    assert [(r.exercise, r.status, r.points) for r in rows] == [("ex-a", "tampered", 0.0),
                                                                ("ex-b", "tampered", 0.0)]
    assert all(r.reason.startswith("tampered answers: ") for r in rows), [r.reason for r in rows]


def test_grading_runs_the_setup_and_exercise_cells_and_a_students_own_cells_among_them():
    nb = tiny_course()
    nb.cells.insert(5, copy.deepcopy(nb.cells[2]))  # a cell the student added inside ex-a's solution
    blocks = [grading.exercise_block(nb, "ex-a"), grading.exercise_block(nb, "ex-b")]
    assert blocks == [range(3, 8), range(8, 14)]
    assert grading.cells_to_run(nb, blocks) == [1, 4, 5, 7, 9, 11, 13]  # not the experiment, cell 2
    assert grading.cells_to_run(nb, blocks, whole=True) == [1, 2, 4, 5, 7, 9, 11, 13]


# The round trip on the course's graded notebooks (the student edition as handed out scores 0, its
# solutions pasted back score full marks) is the honest stage's batch: tests/homework/test_homework.py.


def test_grading_two_at_a_time_gives_the_same_rows_as_one_at_a_time(tmp_path):
    sources = tmp_path / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    subs = tmp_path / "submissions"
    write(solved(), subs / "a-good" / "hw.ipynb")
    write(solved(**{"ex-a-code": "answer = 41"}), subs / "b-wrong" / "hw.ipynb")
    write(editions.student_edition(tiny_course()), subs / "c-blank" / "hw.ipynb")
    one = list(class_batch.grade_folder(subs, sources, grading.GradingOptions(time_limit=60, sandbox=SANDBOX), jobs=1))
    two = list(class_batch.grade_folder(subs, sources, grading.GradingOptions(time_limit=60, sandbox=SANDBOX), jobs=2))
    assert [(r.student, r.exercise, r.points, r.status, r.reason) for r in one] == \
        [(r.student, r.exercise, r.points, r.status, r.reason) for r in two]
    assert [r.points for r in one] == [1.0, 2.0, 0.0, 2.0, 0.0, 0.0]


def test_with_jobs_the_submissions_of_solo_notebooks_are_graded_one_at_a_time_after_the_others(tmp_path):
    sources = tmp_path / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    alone = tiny_course()
    alone.metadata["iolab"] = {"solo": True}
    write(alone, sources / "measures.ipynb")
    subs = tmp_path / "submissions"
    for student in ("a", "b"):
        write(solved(), subs / student / "hw.ipynb")
        write(solved(), subs / student / "measures.ipynb")
    assert class_batch.solo(sources / "measures.ipynb") and not class_batch.solo(sources / "hw.ipynb")
    rows = list(class_batch.grade_folder(subs, sources, grading.GradingOptions(time_limit=60, sandbox=SANDBOX), jobs=2))
    assert [(r.student, r.notebook) for r in rows[::2]] == [("a", "hw.ipynb"), ("b", "hw.ipynb"),
                                                            ("a", "measures.ipynb"), ("b", "measures.ipynb")]
    assert {r.status for r in rows} == {"passed"}


def test_a_grading_process_past_its_time_limit_is_stopped_with_a_row_and_nothing_it_started_left(tmp_path):
    sources = tmp_path / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    path = write(solved(**{"ex-a-code": f"import subprocess\nsubprocess.run(['sleep', '{HANG_SECONDS}'])"}),
                 tmp_path / "submissions" / "slow" / "hw.ipynb")
    try:
        rows = class_batch._grade_in_process(path, "slow", sources,
                                             grading.GradingOptions(time_limit=120, sandbox=SANDBOX), limit=8)
    finally:
        class_batch.stop_server()
    assert [(r.status, r.reason) for r in rows] == [("error", "grading this notebook took over 8 s and was stopped")]
    cgroup, _ = cgroups.make_cgroup(64, 1 << 30)
    if cgroup is not None:
        cgroup.remove()
    elif SANDBOX == "none":
        pytest.skip("without a sandbox or a cgroup, the kernel of a killed grading process outlives it")
    hanging = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", HANG_SECONDS]]
    psutil.wait_procs(hanging, timeout=10)  # a sandbox dies with its grading process; a cgroup is swept
    assert [p for p in hanging if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []


# --- the answers file: the kernel wrote it, so the grader reads it as data ----------------------


def test_the_answers_file_is_read_as_text_and_no_file_is_none(tmp_path):
    (tmp_path / "a.json").write_text('{"x": {"$missing": true}}')
    assert grading._read_answers(tmp_path / "a.json") == '{"x": {"$missing": true}}'
    assert grading._read_answers(tmp_path / "absent.json") is None


@pytest.mark.timeout(10)
@pytest.mark.parametrize("make, why", [
    (lambda path: os.mkfifo(path), "is not a regular file: a FIFO"),
    (lambda path: path.symlink_to("/dev/zero"), "is not a regular file: a symbolic link"),
    (lambda path: path.symlink_to(path.with_name("key.json")), "is not a regular file: a symbolic link"),
    (lambda path: path.write_bytes(b" " * (answers.MAX_BYTES + 1)), "is 1,000,001 bytes, over the limit"),
], ids=["FIFO", "link to /dev/zero", "link to another file", "too big"])
def test_an_answers_file_that_is_no_regular_file_within_the_limit_is_handed_on_as_not_data(tmp_path, make, why):
    (tmp_path / "key.json").write_text('{"x": {"$value": 42}}')
    make(tmp_path / "a.json")
    with pytest.raises(answers.NotData, match=f"the answers file {why}"):
        answers.load(grading._read_answers(tmp_path / "a.json"))
