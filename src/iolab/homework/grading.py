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
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iolab.homework import answers, checks, markup, private, sandbox, untrusted
from iolab.homework.execution import Execution, execute_cells
from iolab.kit import scale as scales
from iolab.kit import student as students

# Generous for notebook 1 (about 15 s of exercises at quick scale); a hang costs this much, once.
DEFAULT_TIME_LIMIT = 300.0
CHECKER_TIME_LIMIT = 120.0  # the checker re-runs given cells, a few of which measure for seconds
GRADING_ENV = {scales.ENV: "quick"}
NEEDS_ROOT = "iolab.netlab"  # a notebook whose setup imports this runs its lab in network namespaces
CHECKER_MAIN = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from iolab.homework.checker import main; "
                "sys.exit(main(sys.argv[1:]))")
STATUSES = ("passed", "partial", "failed", "not run", "missing", "tampered", "error", "not graded")


@dataclass(frozen=True)
class GradingOptions:
    """How to grade: the time limit per notebook, every cell or the exercises', in which sandbox, hidden messages shown.

    ``sandbox`` is one of ``sandbox.KINDS``: ``"bwrap"`` (the default), ``"nobody"`` (as user nobody,
    where the grader is root in a container of its own, as on Gradescope) or ``"none"`` (trusted code).
    ``private`` names a folder of the instructor's own checks and course secret (``private``).
    """

    time_limit: float = DEFAULT_TIME_LIMIT
    whole: bool = False
    sandbox: str = "bwrap"
    release_hidden: bool = False
    private: str | None = None  # a folder of the instructor's own checks and secret (``private``)


@dataclass(frozen=True)
class Row:
    """One student's result on one exercise: a row of the grades CSV."""

    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    status: str  # one of STATUSES
    reason: str
    seconds: float
    parameters: str = ""  # the exercise's parameters as the grader drew them: "pipe_bytes=262144"
    note: str = ""  # about the whole notebook: it ran under another student id than it was graded with


def restore_instructor_cells(nb: Any, source: Any) -> set[str]:
    """Replace ``nb``'s locked and check cells with ``source``'s, by grade_id; the grade_ids ``nb`` lacks."""
    kept = {gid: cell for cell in source.cells
            if (gid := markup.grade_id(cell)) and (markup.nbgrader(cell).get("locked") or markup.nbgrader(cell).get("grade"))}
    found = set()
    for index, cell in enumerate(nb.cells):
        gid = markup.grade_id(cell)
        if gid in kept:
            nb.cells[index] = copy.deepcopy(kept[gid])
            found.add(gid)
    return set(kept) - found


def _belongs(cell: Any, label: str) -> bool:
    """True for a cell of exercise ``label``: its statement, or a cell whose grade_id is ``label-<role>``."""
    if cell.cell_type == "markdown":
        return "{exercise-start}" in cell.source and re.search(rf"^\s*:label:\s*{re.escape(label)}\s*$",
                                                               cell.source, re.MULTILINE) is not None
    return markup.role(cell) != "" and markup.cell_label(markup.grade_id(cell))[0] == label


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


def _check_job(source: Any, exercise: markup.Exercise) -> dict[str, Any]:
    """The checker's job for one exercise, without the answers: its parameters, and its checks with the names they read.

    ``given`` holds the given cells without their measured statements (``checks.parameters``); the
    names a check reads that neither the setup cell nor those bind come from the student's run.
    """
    given = [checks.parameters(source.cells[i].source)[0] for i in exercise.given]
    provided = [_setup_source(source), *given]
    return {"label": exercise.label, "given": given,
            "checks": [{"grade_id": markup.grade_id(source.cells[i]), "source": source.cells[i].source,
                        "points": float(markup.nbgrader(source.cells[i]).get("points", 0)),
                        "names": sorted(checks.answer_names(source.cells[i].source, provided)), "answers": None}
                       for i in exercise.checks]}


class Checker:
    """The checker process (``checker``), started before the submission runs so that its imports and setup
    overlap the submission's; :meth:`finish` hands it the answers and returns its verdict.

    It runs in a fresh scratch folder of its own (and sandbox), which the submission never sees.
    """

    def __init__(self, job: dict[str, Any], env: dict[str, str], kind: str) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="iolab-check-")
        scratch = Path(self._folder.name) / "scratch"
        scratch.mkdir()
        (scratch / "job.json").write_text(json.dumps(job))
        self.verdict_path = scratch / "verdict.json"
        # -I: no current folder, PYTHONPATH or user site on the path; the kit is put first by hand, from
        # the folder this grader imported it from (an installed kit, or Gradescope's copy).
        argv = [sys.executable, "-I", "-c", CHECKER_MAIN, str(sandbox.kit_source()), str(scratch / "job.json"),
                str(self.verdict_path)]
        box = sandbox.confine(kind, scratch, env)
        if box is not None:
            argv, run_env = box.wrap(argv), None
        else:
            run_env = os.environ | env | {"MPLBACKEND": "Agg"}
        # A session of its own: a timeout kills the checker with whatever its given cells started.
        self.process = subprocess.Popen(argv, env=run_env, cwd=scratch, stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)

    def finish(self, answers_by_check: dict[str, str | None], time_limit: float = CHECKER_TIME_LIMIT) -> dict[str, Any]:
        """The verdict on ``answers_by_check`` (check cell -> answers file text). RuntimeError if the checker fails."""
        try:
            _, err = self.process.communicate(json.dumps(answers_by_check), timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
            raise RuntimeError(f"the checker took over {time_limit:g} s") from None
        finally:
            verdict = self.verdict_path.read_text() if self.verdict_path.exists() else None
            self.close()
        if self.process.returncode != 0 or verdict is None:
            raise RuntimeError(f"the checker failed: {err.strip().splitlines()[-1] if err.strip() else self.process.returncode}")
        return json.loads(verdict)

    def close(self) -> None:
        """Stop the checker if it still runs, and remove its folder."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 9)
            self.process.wait()
        self._folder.cleanup()


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
    errors = [run.cells[i] for i in block if i in run.cells and run.cells[i].error
              and markup.role(nb.cells[i]) != "check"]
    if not errors:
        return None
    if errors[0].error.startswith("NotImplementedError"):
        return "not answered: the solution cell still raises NotImplementedError"
    return f"cell {errors[0].index} raised {errors[0].error}"


def _explain(verdict: dict[str, Any], release_hidden: bool) -> str:
    """A check's result in the student's terms; hidden asserts' own messages only with ``release_hidden``."""
    why = []
    for name, status in verdict["answers"].items():
        if status == "missing":
            why.append(f"`{name}` is not defined")
        elif status != "ok":
            why.append(f"`{name}` was not accepted: {status.removeprefix('refused: ')}")
    outcomes = verdict["outcomes"]
    gate_failed = [m for hidden, passed, m in outcomes if not hidden and not passed]
    hidden = [(passed, m) for h, passed, m in outcomes if h]
    if gate_failed and not why:
        why.append(f"the check failed: {gate_failed[0]}")
    elif hidden and not gate_failed:
        failed = [(k, m) for k, (passed, m) in enumerate(hidden, 1) if not passed]
        for k, message in failed:
            why.append(f"hidden check {k} of {len(hidden)} failed" + (f": {message}" if release_hidden else ""))
    return "; ".join(why)


def _exercise_row(nb: Any, block: range, run: Execution, job: dict[str, Any], verdict: dict[str, Any] | None,
                  tampered: str | None, base: Row, release_hidden: bool) -> Row:
    """The row of one exercise from the student's run and the checker's verdict on it."""
    check_cells = [i for i in block if markup.role(nb.cells[i]) == "check"]
    cut = [i for i in check_cells if i not in run.cells or (run.stopped and run.cells[i].error == run.stopped)]
    if cut:
        return replace(base, status="not run", reason=run.stopped or "its check cell did not run")
    if tampered:
        return replace(base, status="tampered", reason=tampered)
    assert verdict is not None
    setup_error = verdict.get("setup_error") or verdict["exercises"][job["label"]]["given_error"]
    if setup_error:
        return replace(base, status="error", reason=f"the instructor's setup or given cell raised {setup_error} in the checker")
    earned, reasons, statuses = 0.0, [], []
    for check in job["checks"]:
        result = verdict["exercises"][job["label"]]["checks"][check["grade_id"]]
        if result.get("error"):  # the checker refused the answers file as a whole: "tampered answers: why"
            return replace(base, status="tampered", reason=result["error"])
        points, status = checks.score([checks.Outcome(*o) for o in result["outcomes"]], check["points"])
        earned += points
        statuses.append(status)
        if status != "passed":
            reasons.append(_explain(result, release_hidden))
    if all(s == "passed" for s in statuses):
        return replace(base, points=round(earned, 2), status="passed")
    own = _before_failure(nb, block, run)
    reason = "; ".join(r for r in [own, *reasons] if r)
    return replace(base, points=round(earned, 2), status="partial" if earned > 0 else "failed", reason=reason)


def _run_submission(nb: Any, source: Any, blocks: dict[str, range], jobs: dict[str, dict[str, Any]],
                    env: dict[str, str], options: GradingOptions) -> tuple[Execution, dict[str, str]]:
    """Run the submission with an answer-writing cell in place of each check; its run, and the exercises it tampered with.

    Each check's ``answers`` is filled in (the file's text, or None if the cell wrote none).
    """
    with tempfile.TemporaryDirectory(prefix="iolab-grade-") as folder:
        scratch = Path(folder) / "scratch"  # the submission's files land there; its -etc sibling is the sandbox's
        (scratch / "answers").mkdir(parents=True)
        where: dict[str, tuple[int, Path]] = {}
        for label, job in jobs.items():
            for check in job["checks"]:
                index = next(i for i in blocks[label] if markup.grade_id(nb.cells[i]) == check["grade_id"])
                where[check["grade_id"]] = index, scratch / "answers" / f"{check['grade_id']}.json"
                nb.cells[index].source = answers.export_cell(check["names"], str(where[check["grade_id"]][1]))
        # Chapter 12's lab makes network namespaces: its kernel gets a root of its own inside the sandbox.
        box = sandbox.confine(options.sandbox, scratch, nested_root=NEEDS_ROOT in _setup_source(source))
        run = execute_cells(nb, cells_to_run(nb, list(blocks.values()), options.whole), options.time_limit, env,
                            cwd=str(scratch), sandbox=box)
        tampered: dict[str, str] = {}
        for label, job in jobs.items():
            for check in job["checks"]:
                index, path = where[check["grade_id"]]
                check["answers"] = _read_answers(path)
                ran = run.cells.get(index)
                if check["answers"] is None and ran is not None and not (run.stopped and ran.error == run.stopped):
                    tampered[label] = ("tampered: the grader's cell that collects your answers "
                                       + (f"raised {ran.error}" if ran.error else "ran but wrote nothing")
                                       + ": an earlier cell changed how the kernel runs code")
    return run, tampered


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
    missing = restore_instructor_cells(nb, source)
    rows: dict[str, Row] = {}
    blocks: dict[str, range] = {}
    for exercise in graded:
        lost = sorted(g for i in exercise.checks if (g := markup.grade_id(source.cells[i])) in missing)
        if lost:
            rows[exercise.label] = Row(student, notebook, exercise.label, 0.0, exercise.points, "missing",
                                       f"the check cell {lost[0]} is not in the submission (deleted, or its "
                                       "metadata lost): 0 points", 0.0)
        else:
            blocks[exercise.label] = exercise_block(nb, exercise.label)
    jobs = {e.label: _check_job(source, e) for e in graded if e.label in blocks}
    env = GRADING_ENV | {students.ENV: seed_id}
    verdict, checker_error = None, None
    # The checker starts first: its imports and setup overlap the submission's run.
    checker = Checker({"exercises": list(jobs.values()), "setup": _setup_source(source)}, env, options.sandbox) \
        if jobs else None
    try:
        run, tampered = _run_submission(nb, source, blocks, jobs, env, options)
        if checker is not None:
            try:
                verdict = checker.finish({c["grade_id"]: c["answers"] for label, job in jobs.items()
                                          if label not in tampered for c in job["checks"]})
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
        if verdict is not None and exercise.label in verdict["exercises"]:
            base = replace(base, parameters=verdict["exercises"][exercise.label].get("parameters", ""))
        rows[exercise.label] = _exercise_row(nb, block, run, jobs[exercise.label], verdict,
                                             tampered.get(exercise.label), base, options.release_hidden)
    return [replace(rows[e.label], note=note) for e in graded]
