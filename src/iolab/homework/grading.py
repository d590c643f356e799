"""Grade one submitted notebook against the instructor notebook, so that only answers cross and only the instructor's code judges.

The run has two sides, each in a sandbox of its own (``sandbox``):

1. **The submission's kernel** runs the setup cell and the graded exercises' cells, at quick
   scale, with the student's id in ``IOLAB_STUDENT``. The instructor's locked cells come back in
   place of the student's (by ``grade_id``), and every check cell is replaced by a cell that writes
   the names the check reads to a file (``answers``): the check's code, hidden tests included,
   never enters the student's process.
2. **The checker** (``checker``), a fresh process that runs no line of the student's, runs the
   instructor's setup, given and check cells on those answers, part by part (``checks``).

So a check scores only when the instructor's code ran to its end in a process the student's code
never touched. Whatever the submission does to its own kernel (run later cells as empty ones,
swallow exceptions, patch the kit, fork a daemon) it can at most change what it hands in as
answers; a kernel that hands in nothing after such a change is marked ``tampered``.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from iolab.homework import answers, checks, markup, private, sandbox, untrusted
from iolab.homework.caps import Caps
from iolab.homework.contract import (Answers, CheckJob, CheckVerdict, ContractError, ExerciseJob, NotebookJob,
                                     SandboxKind, Status, Verdict)
from iolab.homework.checker import CHECKER_TIME_LIMIT as CHECKER_TIME_LIMIT  # batch reads it here
from iolab.homework.checker import CheckerProcess
from iolab.homework.execution import Execution, execute_cells
from iolab.homework.scratch import open_folder
from iolab.kit import scale as scales
from iolab.kit import student as students

# Generous for notebook 1 (about 15 s of exercises at quick scale); a hang costs this much, once.
DEFAULT_TIME_LIMIT = 300.0
GRADING_ENV = {scales.ENV: "quick"}
NEEDS_ROOT = "iolab.netlab"  # a notebook whose setup imports this runs its lab in network namespaces


@dataclass(frozen=True)
class GradingOptions:
    """How to grade: the time limit per notebook, every cell or the exercises', in which sandbox, hidden messages shown.

    ``sandbox`` is ``"bwrap"`` (the default), ``"nobody"`` (as other users, where the grader is root in a
    container of its own, as on Gradescope) or ``"none"`` (trusted code): ``contract.SandboxKind``.
    ``private`` names a folder of the instructor's own checks and course secret (``private``).
    """

    time_limit: float = DEFAULT_TIME_LIMIT
    whole: bool = False
    sandbox: SandboxKind = "bwrap"
    release_hidden: bool = False
    private: str | None = None  # a folder of the instructor's own checks and secret (``private``)
    reruns: int = 1  # gradings more for a notebook that lost points on a hidden check alone (``reruns``)


@dataclass(frozen=True)
class Row:
    """One student's result on one exercise: a row of the grades CSV."""

    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    status: Status
    reason: str
    seconds: float
    parameters: str = ""  # the exercise's parameters as the grader drew them: "pipe_bytes=262144"
    note: str = ""  # about the whole notebook: it ran under another student id than it was graded with
    # The failed hidden checks' own messages, for the instructor's grades.csv only: feedback and Gradescope
    # never print this column, since a hidden message states the answer.
    withheld: str = ""
    # What the submission's run measured (``checker.measured_values``): the class's measurements, not grades.csv
    measured: dict[str, float] = field(default_factory=dict, compare=False)
    # Its answers were accepted and its visible asserts passed, and a hidden assert failed: a measured bound
    # a busy machine can cross as well as a wrong answer (``reruns`` grades such a notebook again). Not in the CSV.
    lost_on_hidden: bool = field(default=False, compare=False)
    # ``answers.chosen`` of the exercise's answers: what a rerun must hand in again to count. Not in the CSV.
    chosen: str = field(default="", compare=False)


NOT_IN_CSV = ("measured", "lost_on_hidden", "chosen")
GRADES_COLUMNS = tuple(f.name for f in fields(Row) if f.name not in NOT_IN_CSV)  # a row in the grades CSV


def restore_instructor_cells(nb: Any, source: Any) -> set[str]:
    """Replace ``nb``'s locked cells with ``source``'s, by grade_id; the locked and check grade_ids ``nb`` lacks.

    Check cells are not copied in: the grader puts a stand-in that writes the answers in their place
    (:func:`_run_submission`), so no line of a check, hidden tests included, enters the student's kernel.
    """
    kept = {gid: cell for cell in source.cells if (gid := markup.grade_id(cell)) and markup.nbgrader(cell).get("locked")}
    wanted = {gid for cell in source.cells if (gid := markup.grade_id(cell)) and markup.nbgrader(cell).get("grade")}
    found = set()
    for index, cell in enumerate(nb.cells):
        gid = markup.grade_id(cell)
        if gid in kept:
            nb.cells[index] = copy.deepcopy(kept[gid])
        if gid is not None:
            found.add(gid)
    return (set(kept) | wanted) - found


def repeated_ids(nb: Any) -> set[str]:
    """The grade_ids that more than one cell of ``nb`` carries (a check cell pasted twice, say)."""
    counts = Counter(gid for cell in nb.cells if (gid := markup.grade_id(cell)))
    return {gid for gid, n in counts.items() if n > 1}


def _belongs(cell: Any, label: str) -> bool:
    """True for a cell of exercise ``label``: its statement, or a cell whose grade_id is ``label-<role>``."""
    if cell.cell_type == "markdown":
        return "{exercise-start}" in cell.source and re.search(rf"^\s*:label:\s*{re.escape(label)}\s*$",
                                                               cell.source, re.MULTILINE) is not None
    return markup.role(cell) != "" and markup.cell_label(markup.grade_id(cell) or "")[0] == label


def exercise_block(nb: Any, label: str) -> range:
    """The cells of exercise ``label`` in a submission, from its first cell to its last check (empty without one).

    Cells a student added in between belong to it; the experiments between exercises do not.
    """
    mine = [i for i, cell in enumerate(nb.cells) if _belongs(cell, label)]
    checks_ = [i for i in mine if markup.role(nb.cells[i]) == "check"]
    return range(min(mine), max(checks_) + 1) if checks_ else range(0)


def cells_to_run(nb: Any, blocks: list[range], whole: bool = False) -> list[int]:
    """The code cells to run: the setup cell and the exercises' ``blocks``, or every code cell with ``whole``.

    Skipping the experiments between exercises is what makes grading fast, and what "an exercise
    needs only the setup cell and its own cells" promises.
    """
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    if whole:
        return code
    setup = markup.setup_cell(nb)
    wanted = {i for block in blocks for i in block} | ({setup} if setup is not None else set())
    return [i for i in code if i in wanted]


def _setup_source(source: Any) -> str:
    index = markup.setup_cell(source)
    return source.cells[index].source if index is not None else ""


def _exercise_job(source: Any, exercise: markup.Exercise) -> ExerciseJob:
    """The checker's job for one exercise: its given cells without their measured statements
    (``checks.parameters``), and its checks with the names they read from the student's run (the
    names a check reads that neither the setup cell nor those given cells bind)."""
    given = tuple(checks.parameters(source.cells[i].source)[0] for i in exercise.given)
    measured = tuple(m for i in exercise.given if (m := checks.measurements(source.cells[i].source)))
    provided = [_setup_source(source), *given]
    return ExerciseJob(exercise.label, given, tuple(
        CheckJob(markup.grade_id(source.cells[i]) or "", source.cells[i].source,
                 float(markup.nbgrader(source.cells[i]).get("points", 0)),
                 tuple(sorted(checks.answer_names(source.cells[i].source, provided))))
        for i in exercise.checks), measured)


def _read_answers(path: Path) -> str | None:
    """The answers file's text, None if there is none, or ``answers.unreadable(why)`` (which the checker
    marks tampered) if it is not a regular file of at most answers.MAX_BYTES: the kernel wrote it, and a
    FIFO there would hang the grader, a link make it read a file of the host's."""
    try:
        return untrusted.read(path, answers.MAX_BYTES).decode(errors="replace")
    except FileNotFoundError:
        return None
    except untrusted.Refused as exc:
        return answers.unreadable(f"is {exc}")
    except OSError as exc:
        return answers.unreadable(f"cannot be opened: {exc.strerror}")


def _before_failure(nb: Any, block: range, run: Execution) -> str | None:
    """Why the student's own cells left an answer undefined: the first of them that raised, in words."""
    errors = [(i, error) for i in block if i in run.cells and (error := run.cells[i].error)
              and markup.role(nb.cells[i]) != "check"]
    if not errors:
        return None
    index, error = errors[0]
    if error.startswith("NotImplementedError"):
        return "not answered: the solution cell still raises NotImplementedError"
    return f"cell {index} raised {error}"


def _withheld(verdict: CheckVerdict) -> str:
    """The failed hidden asserts' own messages: what an instructor reads to tell a wrong answer from a bound."""
    return "; ".join(o.message or "(no message)" for o in verdict.outcomes if o.hidden and not o.passed)


def _hidden_alone(verdict: CheckVerdict) -> bool:
    """Every answer accepted and every visible assert passed, and still a hidden assert failed."""
    return (not verdict.error and all(status == "ok" for status in verdict.answers.values())
            and all(o.passed for o in verdict.outcomes if not o.hidden)
            and any(not o.passed for o in verdict.outcomes if o.hidden))


def _explain(verdict: CheckVerdict, release_hidden: bool) -> str:
    """A check's result in the student's terms; hidden asserts' own messages only with ``release_hidden``."""
    why = []
    if verdict.error and verdict.error.startswith("tampered"):
        why.append(verdict.error)
    for name, status in verdict.answers.items():
        if status == "missing":
            why.append(f"`{name}` is not defined")
        elif status != "ok":
            why.append(f"`{name}` was not accepted: {status.removeprefix('refused: ')}")
    gate_failed = [o.message for o in verdict.outcomes if not o.hidden and not o.passed]
    hidden = [o for o in verdict.outcomes if o.hidden]
    if gate_failed and not why:
        why.append(f"the check failed: {gate_failed[0]}")
    elif hidden and not gate_failed:
        for k, outcome in enumerate(hidden, 1):
            if not outcome.passed:
                why.append(f"hidden check {k} of {len(hidden)} failed" + (f": {outcome.message}" if release_hidden else ""))
    return "; ".join(why)


def _exercise_row(nb: Any, block: range, run: Execution, job: ExerciseJob, verdict: Verdict | None,
                  tampered: str | None, base: Row, release_hidden: bool) -> Row:
    """The row of one exercise from the student's run and the checker's verdict on it."""
    check_cells = [i for i in block if markup.role(nb.cells[i]) == "check"]
    cut = [i for i in check_cells if i not in run.cells or (run.stopped and run.cells[i].error == run.stopped)]
    if tampered:
        return replace(base, status="tampered", reason=tampered)
    if cut:
        return replace(base, status="not run", reason=run.stopped or "its check cell did not run")
    assert verdict is not None
    mine = verdict.exercises[job.label]
    setup_error = verdict.setup_error or mine.given_error
    if setup_error:
        return replace(base, status="error", reason=f"the instructor's setup or given cell raised {setup_error} in the checker")
    earned, reasons, statuses, withheld, hidden_alone = 0.0, [], [], [], True
    for check in job.checks:
        result = mine.checks[check.grade_id]
        if result.error:  # the checker refused the answers file as a whole: "tampered answers: why"
            return replace(base, status="tampered", reason=result.error)
        points, status = checks.score(list(result.outcomes), check.points)
        earned += points
        statuses.append(status)
        if status != "passed":
            reasons.append(_explain(result, release_hidden))
            withheld.append(_withheld(result))
            hidden_alone = hidden_alone and _hidden_alone(result)
    if all(s == "passed" for s in statuses):
        return replace(base, points=round(earned, 2), status="passed")
    own = _before_failure(nb, block, run)
    reason = "; ".join(r for r in [own, *reasons] if r)
    return replace(base, points=round(earned, 2), status="partial" if earned > 0 else "failed", reason=reason,
                   withheld="; ".join(w for w in withheld if w), lost_on_hidden=hidden_alone and not own)


def _run_submission(nb: Any, source: Any, blocks: dict[str, range], jobs: dict[str, ExerciseJob],
                    env: dict[str, str], options: GradingOptions) -> tuple[Execution, Answers, dict[str, str]]:
    """Run the submission with an answer-writing stand-in in place of each check cell.

    Its run, the answers file's text by check cell (None where the stand-in wrote none), and the
    exercises it tampered with.
    """
    with open_folder("iolab-grade-") as folder:
        scratch = folder / "scratch"  # the submission's files land there; its -etc sibling is the sandbox's
        (scratch / "answers").mkdir(parents=True)
        where: dict[str, tuple[str, int, Path]] = {}
        for label, job in jobs.items():
            for check in job.checks:
                index = next(i for i in blocks[label] if markup.grade_id(nb.cells[i]) == check.grade_id)
                where[check.grade_id] = label, index, scratch / "answers" / f"{check.grade_id}.json"
                nb.cells[index].source = answers.export_cell(check.names, str(where[check.grade_id][2]))
        # Chapter 12's lab makes network namespaces: its kernel gets a root of its own inside the sandbox.
        box = sandbox.confine(options.sandbox, scratch, nested_root=NEEDS_ROOT in _setup_source(source))
        run = execute_cells(nb, cells_to_run(nb, list(blocks.values()), options.whole), options.time_limit, env,
                            cwd=str(scratch), sandbox=box, caps=Caps.from_env())
        received: Answers = {}
        tampered: dict[str, str] = {}
        for grade_id, (label, index, path) in where.items():
            received[grade_id] = _read_answers(path)
            ran = run.cells.get(index)
            if received[grade_id] is None and ran is not None and not (run.stopped and ran.error == run.stopped):
                tampered[label] = ("tampered: the grader's cell that collects your answers "
                                   + (f"raised {ran.error}" if ran.error else "ran but wrote nothing")
                                   + ": an earlier cell changed how the kernel runs code")
    return run, received, tampered


SEEDED_AS = re.compile(r"IOLAB_STUDENT=(\S+): your numbers|(no IOLAB_STUDENT)")


def seeded_as(submission: Any) -> str | None:
    """The id the submission's own run drew its numbers from, as its setup cell printed it ("" for none);
    None if the setup cell has no such output (never run)."""
    index = markup.setup_cell(submission)
    outputs = submission.cells[index].get("outputs", []) if index is not None else []
    text = "".join(str(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    match = SEEDED_AS.search(text)
    return None if match is None else (match[1] or "")


def id_note(submission: Any, seed_id: str) -> str:
    """A note when the submission ran under another student id than the one it is graded with, else ""."""
    ran_as = seeded_as(submission)
    if ran_as is None or ran_as == seed_id:
        return ""
    as_what = f"IOLAB_STUDENT={ran_as}" if ran_as else "no IOLAB_STUDENT (the book's numbers)"
    return (f"your notebook ran with {as_what} but is graded as {seed_id}: exercises marked *your numbers* "
            f"are checked with {seed_id}'s numbers")


def grade(submission: Any, source: Any, student: str, notebook: str,
          options: GradingOptions = GradingOptions()) -> list[Row]:
    """One row per graded exercise of ``source``: what ``student``'s ``submission`` of it scores."""
    folder = Path(options.private) if options.private else None
    source, _ = private.with_private_checks(source, folder, notebook)
    seed_id = students.with_token(student, private.read_secret(folder))
    note = id_note(submission, seed_id)
    graded = [e for e in markup.exercises(source) if e.graded]
    nb = copy.deepcopy(submission)
    twice = repeated_ids(nb)
    missing = restore_instructor_cells(nb, source)
    rows: dict[str, Row] = {}
    blocks: dict[str, range] = {}
    for exercise in graded:
        ids = sorted(g for i in [*exercise.checks, *exercise.given] if (g := markup.grade_id(source.cells[i])))
        if lost := sorted(g for i in exercise.checks if (g := markup.grade_id(source.cells[i])) in missing):
            rows[exercise.label] = Row(student, notebook, exercise.label, 0.0, exercise.points, "missing",
                                       f"the check cell {lost[0]} is not in the submission (deleted, or its "
                                       "metadata lost): 0 points", 0.0)
        elif doubled := [g for g in ids if g in twice]:
            rows[exercise.label] = Row(student, notebook, exercise.label, 0.0, exercise.points, "tampered",
                                       f"tampered: the cell {doubled[0]} appears more than once in the submission", 0.0)
        else:
            blocks[exercise.label] = exercise_block(nb, exercise.label)
    jobs = {e.label: _exercise_job(source, e) for e in graded if e.label in blocks}
    env = GRADING_ENV | {students.ENV: seed_id}
    verdict, checker_error = None, None
    # The checker starts first: its imports and setup overlap the submission's run.
    job = NotebookJob(_setup_source(source), tuple(jobs.values()), bool(source.metadata.get("iolab", {}).get("solo")))
    checker = CheckerProcess(job, env, options.sandbox, NEEDS_ROOT in job.setup) if jobs else None
    try:
        run, received, tampered = _run_submission(nb, source, blocks, jobs, env, options)
        if checker is not None:
            try:
                left_out = {c.grade_id for label in tampered for c in jobs[label].checks}
                verdict = checker.finish({gid: text for gid, text in received.items() if gid not in left_out})
            except RuntimeError as exc:  # the grader's problem, not the student's: said in the rows
                checker_error = str(exc)
    finally:
        if checker is not None:
            checker.close()
    for exercise in graded:
        if exercise.label in rows:
            continue
        block = blocks[exercise.label]
        seconds = round(sum(run.cells[i].seconds for i in block if i in run.cells), 2)
        base = Row(student, notebook, exercise.label, 0.0, exercise.points, "failed", "", seconds)
        if checker_error and exercise.label not in tampered:
            rows[exercise.label] = replace(base, status="error", reason=checker_error)
            continue
        if verdict is not None and exercise.label in verdict.exercises:
            mine = verdict.exercises[exercise.label]
            base = replace(base, parameters=mine.parameters, measured=dict(mine.measured))
        rows[exercise.label] = _exercise_row(nb, block, run, jobs[exercise.label], verdict,
                                             tampered.get(exercise.label), base, options.release_hidden)
    chosen = {label: answers.chosen(received.get(c.grade_id) for c in job.checks) for label, job in jobs.items()}
    return [replace(rows[e.label], note=note, chosen=chosen.get(e.label, "")) for e in graded]
