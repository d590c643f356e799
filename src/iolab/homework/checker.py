"""The checker: a process that runs the instructor's check cells on a submission's answers, and nothing of the student's.

``python -I -c 'from iolab.homework.checker import main; main()'`` reads a :class:`~contract.NotebookJob`
(the notebook's setup cell, and per exercise its given cells and its check cells) as the first
line of its standard input, runs the setup cell once, then for each exercise the given cells in a
copy of that namespace. Then it reads the answers the submission's kernel wrote, the next line
(check cell -> the answers file's text), so that all this can start while the submission still
runs; puts the decoded answers in, runs each check cell's parts (``checks``) and writes the
:class:`~contract.Verdict` on its standard output. Everything else written to that output (what
the given cells and the servers they start print) goes to ``/dev/null``: the grader reads one
verdict from a pipe it owns, and no job or verdict ever lies in a file the submission could reach.
The grader starts it in a sandbox of its own (in Gradescope's container, as another user than the
submission's), so its verdict does not depend on anything the student's code did, short of the answers.

``-I`` keeps the checker's imports to the installed environment: no current folder, no
``PYTHONPATH``, no user site-packages. The installed environment's site-packages stay on the path
(nbformat, dacite), but an editable ``iolab`` there may be another checkout's: :data:`CHECKER_MAIN`
puts the folder this grader imported the kit from first.

It is the one child not started by ``kit.channel.open_child``, though its job is a
:class:`~iolab.kit.channel.Spec` read by the kit's strict reader: the job holds the hidden tests,
which must not be an argument (any user of the machine can read a process's arguments, and under
the ``nobody`` sandbox the submission runs as one), the answers follow the job on the same pipe
once the submission has run, and the checker runs wrapped in a sandbox, with ``-I``, in a session
of its own. Nothing runs it as ``python -m``, hence no ``__main__`` here.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from iolab.homework import answers, checks, plausible, sandbox
from iolab.homework.scratch import open_folder
from iolab.homework.contract import (Answers, CheckJob, CheckVerdict, ContractError, ExerciseJob, ExerciseVerdict, NotebookJob,
                                     SandboxKind, Verdict, answers_from_json, answers_to_json)
from iolab.kit import magnitudes

FILENAME = "<check cell {}>"
CHECKER_TIME_LIMIT = 120.0  # the checker re-runs given cells, a few of which measure for seconds
# -I leaves the kit off the path: the grader passes the folder it imported the kit from as the first argument.
CHECKER_MAIN = (f"import sys; sys.path.insert(0, sys.argv.pop(1)); from {NotebookJob.ENTRY} import main; "
                "sys.exit(main())")


def _run_quietly(source: str, namespace: dict[str, Any], name: str) -> str | None:
    """Run a cell of the instructor's in ``namespace`` with its printing swallowed; its error, or None."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(source, name, "exec"), namespace)
    except Exception as exc:
        return checks.error_line(exc)
    return None


def check_one(check: CheckJob, text: str | None, namespace: dict[str, Any],
              remeasured: dict[str, Any] | None = None) -> CheckVerdict:
    """One check cell's verdict on the answers ``text``: how each answer arrived, and each part's outcome.

    ``remeasured`` holds the checker's own values of the names the given cells measure: a student's
    value of such a name must be plausible beside it (``plausible``), and a fact (a bool) is the checker's.
    """
    remeasured = remeasured or {}
    statuses: dict[str, str] = {}
    if text is None:
        return CheckVerdict(statuses, (), "no answers")
    try:
        received = answers.load(text)
    except answers.NotData as exc:
        return CheckVerdict(statuses, (), f"tampered answers: {exc}")
    for name in check.names:
        entry = received.get(name, {"missing": True})
        if name in remeasured and ("value" in entry or type(remeasured[name]) is bool):
            value, why = plausible.judge(name, entry.get("value"), remeasured[name])
            entry = {"value": value} if why is None else {"refused": why}
        if "value" in entry:
            namespace[name] = entry["value"]
            statuses[name] = "ok"
        else:
            namespace.pop(name, None)
            statuses[name] = "missing" if "missing" in entry else f"refused: {entry['refused']}"
    outcomes = checks.run_parts(checks.parts(check.source), namespace, FILENAME.format(check.grade_id))
    return CheckVerdict(statuses, tuple(outcomes))


def parameters(given: Sequence[str], namespace: dict[str, Any]) -> str:
    """The values the given cells drew for this student (``student.pick``), as ``name=value``, each shown whole or cut at a comma."""
    shown = []
    for name in sorted({n for source in given for n in checks.drawn_names(source)}):
        value = namespace.get(name)
        try:
            answers.encode(value)
        except answers.NotData:
            continue
        if value is not None and not name.startswith("_"):
            shown.append(f"{name}={_short(repr(value))}")
    return ", ".join(shown)


def _short(text: str, limit: int = 60) -> str:
    """``text`` if it fits, else cut after its last ", " before ``limit``, marked with an ellipsis (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(", ", 0, limit)
    return (text[:cut] if cut > 0 else text[:limit].rsplit(" ", 1)[0]) + ", …"


def run_job(job: NotebookJob, read_answers: Callable[[], Answers]) -> Verdict:
    """The verdict on every exercise of ``job``, once ``read_answers()`` has given the answers by check cell."""
    setup: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    setup_error = _run_quietly(job.setup, setup, "<setup cell>") if job.setup else None
    prepared = []
    for exercise in job.exercises:
        namespace = dict(setup)
        given_error = None
        for k, source in enumerate(exercise.given):
            given_error = given_error or _run_quietly(source, namespace, f"<given cell {k}>")
        prepared.append((exercise, namespace, given_error))
    # Beside the submission where its notebook allows a neighbour, else once it has finished.
    early = {} if job.solo else {e.label: remeasure(e, namespace) for e, namespace, _ in prepared}
    received = read_answers()
    verdicts = {}
    for exercise, namespace, given_error in prepared:
        if exercise.label in early:
            ours = early[exercise.label]
        else:  # measured again only where an answer could be graded by it (a blank submission's never is)
            ours = remeasure(exercise, namespace) if answered(exercise, received) else {}
        judged = {c.grade_id: check_one(c, received.get(c.grade_id), namespace, ours) for c in exercise.checks}
        verdicts[exercise.label] = ExerciseVerdict(given_error, parameters(exercise.given, namespace), judged,
                                                   measured_values(exercise, received, judged))
    return Verdict(setup_error, verdicts)


def measured_values(exercise: ExerciseJob, received: Answers, judged: dict[str, CheckVerdict]) -> dict[str, float]:
    """What the submission's run measured, for the class's measurements: each name its given cells measure that
    a check read and accepted (``plausible``), as ``kit.magnitudes.numbers`` sees it (a number; a table's numeric
    columns by their medians, keyed ``name:column``), finite values only. A string, a bool or a refused value
    gives nothing; nor does a table's column that holds a setting of the run (:func:`_setting`)."""
    measured = _measured_names(exercise)
    found: dict[str, float] = {}
    for check in exercise.checks:
        names = [n for n in check.names if n in measured and judged[check.grade_id].answers.get(n) == "ok"]
        text = received.get(check.grade_id)
        if not names or text is None:
            continue
        try:
            arrived = answers.load(text)
        except answers.NotData:
            continue
        for name in names:
            value = arrived.get(name, {}).get("value")
            for key, number in (magnitudes.numbers(value) or {}).items():
                if math.isfinite(number) and not (key and _setting(value, key)):
                    found.setdefault(magnitudes.key(name, key), number)
    return found


def _setting(value: Any, column: str) -> bool:
    """Whether a table's ``column`` is one of the run's settings rather than what it measured: the same in every
    row (``connections``, ``duration_s``), or the repeat's number."""
    rows = getattr(value, "get", lambda _: None)(column)
    return column == "repeat" or (rows is not None and hasattr(rows, "nunique") and rows.nunique() <= 1 < len(rows))


def _measured_names(exercise: ExerciseJob) -> set[str]:
    """The names ``exercise``'s given cells measure (their ``# measured`` statements bind)."""
    return {name for source in exercise.measured for name in checks.bound_names(source)}


def answered(exercise: ExerciseJob, received: Answers) -> bool:
    """Whether a check of ``exercise`` received one of its own answers, a name its given cells do not measure.

    A check that reads only measured names is graded on them alone, so it counts as answered: their
    values must still be held against the checker's. Where no check is, nothing the checker measures
    can change a point, and a solo notebook need not measure again (a blank submission's exercises).
    """
    measured = _measured_names(exercise)
    for check in exercise.checks:
        own = set(check.names) - measured
        text = received.get(check.grade_id)
        if not own:
            return True
        if text is None:
            continue
        try:
            arrived = answers.load(text)
        except answers.NotData:
            return True  # tampered: check_one says so, and measuring again costs only time
        if any("value" in arrived.get(name, {}) for name in own):
            return True
    return False


def remeasure(exercise: ExerciseJob, namespace: dict[str, Any]) -> dict[str, Any]:
    """The checker's own values of what ``exercise``'s given cells measure and its checks read; empty if none,
    or if measuring failed here (the student's values stand)."""
    wanted = _measured_names(exercise)
    wanted &= {name for check in exercise.checks for name in check.names}
    if not wanted:
        return {}
    mine = dict(namespace)
    if any(_run_quietly(source, mine, f"<measured {k}>") for k, source in enumerate(exercise.measured)):
        return {}
    return {name: mine[name] for name in wanted if name in mine}


def main() -> int:
    """Read the job and then the answers from standard input; write the verdict to standard output."""
    # The verdict's own copy of the output (not inherited by what the cells start); the rest goes nowhere.
    verdict_out = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(1, "w", closefd=False)
    job = NotebookJob.from_json(sys.stdin.readline())
    verdict = run_job(job, lambda: answers_from_json(sys.stdin.readline()))
    verdict_out.write(verdict.to_json())
    verdict_out.close()
    return 0


class CheckerProcess:
    """The grader's end of a checker process, started before the submission runs so that its imports and setup
    overlap the submission's; :meth:`finish` hands it the answers and returns its verdict.

    The job and the answers go in over its standard input and the verdict comes back over its standard
    output, pipes this process owns; its scratch folder (and sandbox, and user, where there is no
    bwrap) is its own, which the submission never sees.
    """

    def __init__(self, job: NotebookJob, env: dict[str, str], kind: SandboxKind, nested_root: bool = False) -> None:
        self._folder = contextlib.ExitStack()
        scratch = self._folder.enter_context(open_folder("iolab-check-")) / "scratch"
        scratch.mkdir()
        # -I: no current folder, PYTHONPATH or user site on the path; the kit is put first by hand, from
        # the folder this grader imported it from (an installed kit, or Gradescope's copy).
        argv = [sys.executable, "-I", "-c", CHECKER_MAIN, str(sandbox.kit_source())]
        # With the kernel's root of its own (chapter 12's lab), so that what it measures again, it can measure.
        box = sandbox.confine(kind, scratch, env, nested_root=nested_root, role="checker")
        if box is not None:
            argv, run_env = box.wrap(argv), None
        else:
            run_env = os.environ | env | {"MPLBACKEND": "Agg"}
        # A session of its own: a timeout kills the checker with whatever its given cells started.
        self.process = subprocess.Popen(argv, env=run_env, cwd=scratch, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        # From a thread: a job can be larger than the pipe holds while the checker is still importing.
        self._sending = threading.Thread(target=self._send, args=(job.to_json() + "\n",), daemon=True)
        self._sending.start()

    def _send(self, text: str) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):  # a checker that died says so in finish()
            self.process.stdin.write(text)
            self.process.stdin.flush()

    def finish(self, answers_by_check: Answers, time_limit: float = CHECKER_TIME_LIMIT) -> Verdict:
        """The verdict on ``answers_by_check`` (check cell -> answers file text). RuntimeError if the checker fails."""
        self._sending.join(time_limit)
        try:
            out, err = self.process.communicate(answers_to_json(answers_by_check) + "\n", timeout=time_limit)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the checker took over {time_limit:g} s") from None
        finally:
            self.close()
        if self.process.returncode != 0 or not out:
            raise RuntimeError(f"the checker failed: {err.strip().splitlines()[-1] if err.strip() else self.process.returncode}")
        try:
            return Verdict.from_json(out)
        except ContractError as exc:
            raise RuntimeError(f"the checker's verdict is not one: {exc}") from None

    def close(self) -> None:
        """Stop the checker if it still runs, and remove its folder."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 9)
            self.process.wait()
        self._folder.close()

