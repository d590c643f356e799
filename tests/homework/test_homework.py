"""The adversarial corpus (``cheats.py``) graded as a class: every cheat scores 0, honest work full marks.

One batch, graded by the command an instructor types (`--jobs 2`; notebook 02 is solo, so one at a time,
each in a sandbox): an honest
submission of notebook 02, a blank one, and one per cheat. It checks the scores, the reasons, that
nothing a cheat started is still running, that no file outside a submission's scratch folder was
written, that no server on the grader's loopback was reached, and that the batch exits 0.

Next to them, files that attack the grader before any code runs (``HOSTILE_FILES``): a notebook that
is a FIFO, a link to ``/dev/zero``, to the honest notebook or to the instructor's, one over the size
limit, a student folder that links to the honest one, and a second copy of an honest notebook.

And honest work scores full every time (the ``honest`` mark, ``make honest``, 10 to 16 minutes on 2
cores): every graded notebook's solutions, handed in ``IOLAB_HONEST_ROUNDS`` times (2) as as many
students (their ``student.pick`` parameters differ), graded at ``--jobs 2`` while a process burns a
core, or, in `make test`, while the unit stage's two workers run and a burner after them (``Busy``). An exercise whose check depends on a measurement can lose points to a busy machine: any point
lost fails the test, with the rows that lost it; a written answer awaits a TA, which is not a point lost.
The grader's own remedy counts: a notebook that lost points on a hidden check alone is graded again, and
its best grading counts (``iolab.homework.reruns``); each such notebook is named in a warning.
The same batch hands in every student edition blank, as handed out: each of its checks and written answers
scores 0, as not answered.
"""

from __future__ import annotations

import copy
import csv
import os
import socket
import subprocess
import sys
import threading
import time
import warnings

import psutil
import pytest

from cheats import CHEATS, DAEMON_SECONDS, NOT_DATA
from busy import BESIDE_TO_THE_END_S, Busy
from homework_notebooks import ROOT, cell_index, graded_notebooks, paste_solutions, read, write
from iolab.commands import main
from iolab.homework import batch, editions, markup, reruns, sandbox, written
from iolab.homework.contract import AWAITING

NOTEBOOK = ROOT / "notebooks" / "02-blocking.ipynb"
# Notebook 02's written exercise: a TA scores it (its row awaits a TA, or is not answered); the checks score 13.
WRITTEN = "ex-02-why-placed"
CHECKED, WRITTEN_POINTS = 13, 3
# The states swapped, the CPU figures right: one of pred-states' three hidden asserts fails.
WRONG_STATES = 'reader_state, looper_state = "R", "S"\nreader_cpu_percent, looper_cpu_percent = 0, 100'
# Solo: notebook 02's honest answers measure pipes and selectors, which a neighbouring test's pipes would
# change (they count against the same user's pipe buffers).
pytestmark = [pytest.mark.skipif(sandbox.usable() is not None, reason=sandbox.usable() or ""),
              pytest.mark.solo]


class Listener:
    """A server on the grader's loopback that counts the connections it gets."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.sock.close()


# Student -> (how its notebook is placed in the class folder, what its rows' reason says).
HOSTILE_FILES = {
    "file-fifo": (lambda path, subs: os.mkfifo(path), "not a regular file: a FIFO"),
    "file-dev-zero": (lambda path, subs: path.symlink_to("/dev/zero"), "not a regular file: a symbolic link"),
    "file-link-to-honest": (lambda path, subs: path.symlink_to(subs / "honest" / NOTEBOOK.name),
                            "not a regular file: a symbolic link"),
    "file-link-to-key": (lambda path, subs: path.symlink_to(NOTEBOOK), "not a regular file: a symbolic link"),
    "file-too-big": (lambda path, subs: path.touch() or os.truncate(path, batch.MAX_NOTEBOOK_BYTES + 1),  # sparse
                     "bytes, over the limit of 20,971,520"),
}


def _daemons() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", DAEMON_SECONDS]]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The corpus graded by `homework grade --jobs 2`: (rows by student, the exit status, the folder, the listener)."""
    folder = tmp_path_factory.mktemp("class")
    subs = folder / "submissions"
    instructor = read(NOTEBOOK)
    edition = editions.student_edition(instructor)
    first = next(i for i, cell in enumerate(edition.cells) if markup.role(cell) == "code")
    listener = Listener()
    write(paste_solutions(edition, instructor), subs / "honest" / NOTEBOOK.name)
    write(edition, subs / "blank" / NOTEBOOK.name)
    wrong = paste_solutions(edition, instructor)
    wrong.cells[cell_index(wrong, "pred-states-code")].source = WRONG_STATES
    write(wrong, subs / "partly-wrong" / NOTEBOOK.name)
    for name, code in CHEATS.items():
        cheat = copy.deepcopy(edition)
        cheat.cells[first].source = (code.replace("{marker!r}", repr(str(subs / "planted.txt")))
                                     .replace("{port!r}", repr(listener.port)))
        write(cheat, subs / f"cheat-{name}" / NOTEBOOK.name)
    for student, (place, _) in HOSTILE_FILES.items():
        (subs / student).mkdir()
        place(subs / student / NOTEBOOK.name, subs)
    (subs / "file-linked-folder").symlink_to(subs / "honest")
    write(paste_solutions(edition, instructor), subs / "file-second-copy" / NOTEBOOK.name)
    write(paste_solutions(edition, instructor), subs / "file-second-copy" / "old" / NOTEBOOK.name)
    # A check cell pasted twice: it would have run the instructor's hidden tests in the student's kernel.
    twice = paste_solutions(edition, instructor)
    check = cell_index(twice, "pred-states-check")
    twice.cells.insert(check + 1, copy.deepcopy(twice.cells[check]))
    write(twice, subs / "cheat-check-twice" / NOTEBOOK.name)
    # The fork bomb meets a lower process cap than the default (notebook 02 needs a few dozen), so that it
    # is stopped in seconds and costs the machine little; every other cap is the default. The time limit is
    # what the kernel whose run_cell was replaced costs the batch (it never answers): an honest 02 takes
    # about 4 s here, so 25 s leaves it six times its time.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("IOLAB_GRADE_PROCESSES", "1000")
        status = main(["homework", "grade", str(subs), "--jobs", "2", "--timeout", "25",
                       "--notebooks", str(NOTEBOOK.parent)])
    listener.close()
    by_student: dict[str, list[dict[str, str]]] = {}
    for row in csv.DictReader((subs / "grades.csv").open()):
        by_student.setdefault(row["student"], []).append(row)
    return by_student, status, subs, listener


def _total(rows):
    return sum(float(r["points"]) for r in rows)


def _checked(rows):
    """The rows the grader scores (not the written answer a TA scores)."""
    return [r for r in rows if r["exercise"] != WRITTEN]


def test_the_batch_exits_0_and_the_honest_submission_scores_full_marks(graded):
    rows, status, _, _ = graded
    assert status == 0
    assert _total(rows["honest"]) == sum(float(r["max_points"]) for r in _checked(rows["honest"])) == CHECKED
    assert {r["status"] for r in _checked(rows["honest"])} == {"passed"}
    [answer] = [r for r in rows["honest"] if r["exercise"] == WRITTEN]
    assert (answer["status"], float(answer["max_points"])) == (AWAITING, WRITTEN_POINTS)


def test_the_blank_submission_scores_zero_as_not_answered(graded):
    rows, _, _, _ = graded
    assert _total(rows["blank"]) == 0
    assert all(r["reason"].startswith("not answered") for r in rows["blank"])


@pytest.mark.parametrize("name", list(CHEATS))
def test_every_cheat_scores_zero_with_a_reason(graded, name):
    rows, _, _, _ = graded
    mine = rows[f"cheat-{name}"]
    assert len(mine) == len(rows["honest"])
    assert _total(mine) == 0, [(r["exercise"], r["points"], r["reason"]) for r in mine if float(r["points"])]
    assert all(r["reason"] for r in mine)


def test_a_check_cell_pasted_twice_is_tampered_and_the_other_exercises_still_count(graded):
    rows, _, _, _ = graded
    states = next(r for r in rows["cheat-check-twice"] if r["exercise"] == "pred-states")
    assert (states["status"], float(states["points"])) == ("tampered", 0.0) and "more than once" in states["reason"]
    assert _total(rows["cheat-check-twice"]) == CHECKED - 2


def test_a_memory_hog_and_a_fork_bomb_are_stopped_at_their_caps_with_the_cap_as_the_reason(graded):
    rows, _, _, _ = graded
    assert "memory" in rows["cheat-memory-hog"][0]["reason"], rows["cheat-memory-hog"][0]
    assert "processes" in rows["cheat-fork-bomb"][0]["reason"], rows["cheat-fork-bomb"][0]


def test_cheats_that_change_how_the_kernel_runs_code_are_marked_tampered_or_not_run(graded):
    rows, _, _, _ = graded
    assert {r["status"] for r in _checked(rows["cheat-empty-later-cells"])} == {"tampered"}
    assert {r["status"] for r in _checked(rows["cheat-exit-kernel"])} == {"not run"}
    assert {r["status"] for r in _checked(rows["cheat-replace-run-cell"])} == {"not run"}


def test_a_cheat_cannot_read_the_instructor_notebook_nor_pass_objects_for_answers(graded):
    rows, _, _, _ = graded
    assert "FileNotFoundError" in rows["cheat-read-the-key"][0]["reason"]
    assert "not plain data" in rows["cheat-always-equal"][0]["reason"]


def test_nothing_a_cheat_started_runs_on_and_nothing_outside_its_folder_was_touched(graded):
    rows, _, subs, listener = graded
    assert _daemons() == []
    assert not (subs / "planted.txt").exists()
    assert "me,180" not in (subs / "grades.csv").read_text()
    assert listener.accepted == 0


def test_a_partly_wrong_answer_gets_partial_credit_per_hidden_assert(graded):
    rows, _, _, _ = graded
    states = next(r for r in rows["partly-wrong"] if r["exercise"] == "pred-states")
    assert (states["status"], float(states["points"]), float(states["max_points"])) == ("partial", 1.33, 2.0)
    assert states["reason"] == "hidden check 1 of 3 failed"
    assert _total(rows["partly-wrong"]) == CHECKED - 2 + 1.33


def test_feedback_files_and_the_gradebook_are_written_without_the_hidden_messages(graded):
    rows, _, subs, _ = graded
    feedback = (subs / "feedback" / "blank" / "02-blocking.md").read_text()
    assert f"0 of {CHECKED + WRITTEN_POINTS} points" in feedback and "pred-states" in feedback
    gradebook = list(csv.reader((subs / "gradebook.csv").open()))
    assert gradebook[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert gradebook[1][0] == "Points Possible" and float(gradebook[1][-1]) == CHECKED + WRITTEN_POINTS
    honest = next(r for r in gradebook if r[0] == "honest")  # no roster: the course's id is the Student column
    assert honest[-1] == ""  # its written answer awaits a TA: not 13 of 16, not 0
    assert float(next(r for r in gradebook if r[0] == "blank")[-1]) == 0
    page = (subs / f"02-blocking-{WRITTEN}-answers.html").read_text()
    assert "<td>honest</td>" in page and "<td>blank</td>" not in page and "blank: " + written.NOT_ANSWERED in page
    # A hidden assert's message states the answer: it appears in no reason, no feedback file and not in the
    # gradebook, only in grades.csv's withheld column, for the instructor.
    hidden_message = "the reader sleeps in the kernel; the loop always runs"
    texts = [(subs / "gradebook.csv").read_text()] + [p.read_text() for p in (subs / "feedback").rglob("*.*")]
    assert not any(hidden_message in text for text in texts)
    assert not any(hidden_message in r["reason"] for r in rows["partly-wrong"])
    states = next(r for r in rows["partly-wrong"] if r["exercise"] == "pred-states")
    assert hidden_message in states["withheld"], states


def test_answers_that_are_not_data_are_tampered_with_the_reason_never_the_graders_error(graded):
    rows, _, _, _ = graded
    for name in NOT_DATA:
        assert {r["status"] for r in _checked(rows[f"cheat-{name}"])} == {"tampered"}, name
        assert all(r["reason"].startswith("tampered answers: ") for r in _checked(rows[f"cheat-{name}"])), name


@pytest.mark.parametrize("student", list(HOSTILE_FILES))
def test_a_notebook_that_is_no_regular_file_within_the_limit_gets_rows_of_zero_with_the_reason(graded, student):
    rows, _, _, _ = graded
    mine = rows[student]
    assert [(r["exercise"], r["status"]) for r in mine] == [(r["exercise"], "error") for r in rows["honest"]]
    assert _total(mine) == 0 and all(HOSTILE_FILES[student][1] in r["reason"] for r in mine)


def test_a_linked_folder_is_not_followed_and_a_second_copy_counts_once(graded):
    rows, _, subs, _ = graded
    [linked] = rows["file-linked-folder"]
    assert (float(linked["points"]), float(linked["max_points"]), linked["status"]) == (0.0, 0.0, "error")
    assert "not followed" in linked["reason"]
    copy_rows = [r for r in rows["file-second-copy"] if not r["exercise"]]
    assert [(float(r["points"]), float(r["max_points"])) for r in copy_rows] == [(0.0, 0.0)]
    assert copy_rows[0]["reason"].startswith("a second copy of 02-blocking.ipynb")
    assert _total(rows["file-second-copy"]) == CHECKED
    gradebook = {r[0]: r for r in csv.reader((subs / "gradebook.csv").open())}
    assert float(gradebook["Points Possible"][-1]) == CHECKED + WRITTEN_POINTS  # not twice that


# Two rounds: three took 13 minutes on the Intel Xeon CI machine, beside a burner; a release runs more.
ROUNDS = int(os.environ.get("IOLAB_HONEST_ROUNDS", "2"))
BLANK = "blank"


@pytest.mark.honest  # a stage of its own (`make honest`): the unit stages leave this mark out
@pytest.mark.timeout(3600)
def test_every_notebooks_solutions_score_full_every_time_beside_a_cpu_burner(tmp_path):
    """Also the round trip of every graded notebook: its student edition, as handed out, scores 0 on every check."""
    notebooks = graded_notebooks()
    submissions = tmp_path / "submissions"
    points = {}
    for path in notebooks:
        instructor = read(path)
        points[path.name] = sum(e.points for e in markup.exercises(instructor))
        edition = editions.student_edition(instructor)
        write(edition, submissions / BLANK / path.name)
        honest = paste_solutions(edition, instructor)
        for k in range(ROUNDS):
            write(honest, submissions / f"honest-{k + 1}" / path.name)
    with Busy(os.environ.get("IOLAB_HONEST_BESIDE")) as busy:
        rc = main(["homework", "grade", str(submissions), "--jobs", "2", "--notebooks", str(ROOT / "notebooks")])
    alone = busy.wall - busy.beside
    assert busy.was_busy(), \
        f"the burner had {busy.burnt:.0f} s of CPU in the {alone:.0f} s the batch had no stage beside it: the machine was not busy"
    assert rc == 0
    rows = [r for r in csv.DictReader((submissions / "grades.csv").open()) if r["exercise"]]
    blank = [r for r in rows if r["student"] == BLANK]
    rows = [r for r in rows if r["student"] != BLANK]
    assert {r["notebook"] for r in blank} == set(points), "every blank edition was graded"
    not_answered = ("not answered: the solution cell still raises NotImplementedError", written.NOT_ANSWERED)
    scored = [f'{r["notebook"]} {r["exercise"]}: {r["points"]} ({r["reason"]})' for r in blank
              if float(r["points"]) or not r["reason"].startswith(not_answered)]
    assert not scored, "the student edition as handed out scored, or failed for another reason than no answer:\n" + "\n".join(scored)
    assert not [r for r in blank if reruns.SAID in r["note"]], "a blank edition lost nothing on a hidden check alone: graded once"
    graded = {(r["student"], r["notebook"]) for r in rows}
    assert len(graded) == ROUNDS * len(notebooks), "every submission was graded"
    for (student, notebook) in sorted(graded):
        most = sum(float(r["max_points"]) for r in rows if (r["student"], r["notebook"]) == (student, notebook))
        assert most == points[notebook] > 0, f"{student} {notebook}: rows worth {most}, the notebook's exercises {points[notebook]}"
    # A written answer awaits a TA: not scored, and not lost (the model answer was handed in).
    lost = [f'{r["student"]} {r["notebook"]} {r["exercise"]}: {r["points"]} of {r["max_points"]} ({r["reason"]}'
            f'{"; withheld: " + r["withheld"] if r["withheld"] else ""})'
            for r in rows if float(r["points"]) < float(r["max_points"]) and r["status"] != AWAITING]
    assert not lost, f"{len(lost)} of {len(rows)} honest checks lost points:\n" + "\n".join(lost)
    # Graded again after a hidden check failed (iolab.homework.reruns): not a point lost, but a bound to look at.
    for note in sorted({f'{r["student"]} {r["notebook"]}: {r["note"]}' for r in rows if reruns.SAID in r["note"]}):
        warnings.warn(note)


# The busy machine itself (busy.Busy): its burner waits while the stage beside it runs.
def _burner_of(busy: Busy) -> psutil.Process:
    return psutil.Process(busy._burner.pid)


def test_alone_the_burner_runs_from_the_start():
    with Busy(None) as busy:
        assert _burner_of(busy).status() != psutil.STATUS_STOPPED
    assert busy.beside == 0


def test_beside_a_running_stage_the_burner_waits_until_that_stage_ends():
    stage = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        with Busy(str(stage.pid)) as busy:
            for _ in range(100):  # the watcher stops it at once; allow it 10 s on a busy machine
                if _burner_of(busy).status() == psutil.STATUS_STOPPED:
                    break
                time.sleep(0.1)
            assert _burner_of(busy).status() == psutil.STATUS_STOPPED
            stage.stdin.close()  # the stage ends, a zombie until waited for, as under make's shell
            for _ in range(100):
                if _burner_of(busy).status() != psutil.STATUS_STOPPED:
                    break
                time.sleep(0.1)
            assert _burner_of(busy).status() != psutil.STATUS_STOPPED
        assert 0 < busy.beside < busy.wall
    finally:
        stage.wait()


def test_a_stage_that_is_gone_or_not_a_process_id_leaves_the_burner_running():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for beside in (str(gone.pid), "not-a-pid"):
        with Busy(beside) as busy:
            assert _burner_of(busy).status() != psutil.STATUS_STOPPED
        assert busy.beside == 0


def test_a_batch_that_ends_before_the_stage_beside_it_had_a_busy_machine_and_one_without_a_burner_did_not():
    stage = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        with Busy(str(stage.pid)) as busy:
            for _ in range(100):
                if _burner_of(busy).status() == psutil.STATUS_STOPPED:
                    break
                time.sleep(0.1)
        assert busy.wall - busy.beside < 1 and busy.was_busy()  # make test's honest stage when it ends first
    finally:
        stage.stdin.close()
        stage.wait()
    with Busy(None) as idle:
        _burner_of(idle).suspend()  # no stage beside it, and no burner: an idle machine
        time.sleep(BESIDE_TO_THE_END_S + 1)
    assert not idle.was_busy()
