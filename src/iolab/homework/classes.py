"""Grade a class from start to end, as ``python -m iolab homework grade`` does: check the settings
(:func:`prepare`), grade every submission into the grades CSV (``batch``), write the gradebook, pass
rates and feedback (``reports``), the class's measurements with their page (``measurements``,
``measurements_page``) and the written answers for a TA with the scores a TA filled (``written``), and sum each
student's points per notebook (:func:`grade_class`). With ``scores_only``, nothing is graded: the TA's scores
are merged into the grades CSV as it is, and the reports written again.

A setting that cannot work is refused before the first submission runs, not after an hour of
grading: a folder of private checks that names no check cell, a Canvas export whose columns fit no
notebook, a cap that is not a number (:class:`SettingRefused`, whose message names the flag), or no working
sandbox (``sandbox.SandboxMissing``, whose message says what to install).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from iolab.homework import (batch, canvas_feedback, caps, grading, intake, lateness, measurements, measurements_page,
                            moodle, private, regrade, reports, sandbox, written)


class SettingRefused(ValueError):
    """A setting of the class's grading that cannot work; the message names it (by its flag)."""


@dataclass(frozen=True)
class ClassGrading:
    """A class's grading, its settings checked: what to grade, how, and where the results go."""

    submissions: Path  # one folder per student, named by id
    notebooks: Path  # the instructor notebooks
    options: grading.GradingOptions
    jobs: int
    out: Path  # the grades CSV
    held_to: caps.Caps
    names: Path  # names.csv of the roster, read if it is there
    assignments: dict[str, str] | None = None  # a Canvas export's assignment columns, with points possible
    chosen: dict[str, str] = field(default_factory=dict)  # notebook stem -> its Canvas assignment
    total: bool | None = None  # a Total column in gradebook.csv (None: only without a Canvas export)
    rules: lateness.Rules = lateness.Rules()  # what late work costs
    students: tuple[str, ...] = ()  # a regrade of these students only (none: the whole class)
    reason: str = regrade.REASON  # why, in history.csv
    moodle_worksheet: Path | None = None  # Moodle's grading worksheet, to write back filled
    scores_only: bool = False  # grade nothing: merge the TA's scores of written answers into the grades CSV

    def announce(self) -> list[str]:
        """What is about to happen, in two lines: how many at a time, in which sandbox, under which caps."""
        if self.scores_only:
            return [f"grading nothing: merging the written answers' scores into {self.out}"]
        where = "without a sandbox" if self.options.sandbox == "none" else "each in a sandbox"
        together, alone = batch.plan(self.submissions, self.notebooks, self.jobs)
        if self.students:  # a regrade grades only these students' notebooks
            together, alone = ([t for t in tasks if t[0] in self.students] for tasks in (together, alone))
        return [batch.progress(together, alone, self.jobs) + ", " + where,
                f"each held to {self.held_to.summary()} ({caps.enforcement()})"]


@dataclass(frozen=True)
class GradeSummary:
    """What grading a class wrote: the rows (none if no notebook was found) and the files, with the totals."""

    rows: list[grading.Row]
    out: Path  # the grades CSV
    columns: dict[str, str] | None = None  # notebook stem -> Canvas assignment column
    assignments: dict[str, str] | None = None  # Canvas column -> its points possible
    reports: dict[str, Path] = field(default_factory=dict)  # gradebook, pass rates, feedback
    table: Any = None  # a DataFrame: points, max_points and seconds per student and notebook
    moodle: moodle.Filled | None = None  # the Moodle worksheet written, and what it could not match

    def lines(self) -> list[str]:
        """The summary as the command prints it: the Canvas columns, the totals, and where each file is."""
        lines = []
        if waiting := written.awaiting(self.rows):
            lines.append(f"{waiting} written answers await a TA (their scores CSVs below): the gradebook leaves "
                         "those students' notebooks empty until they are scored")
        if self.columns is not None and self.assignments is not None:
            lines.append("Canvas columns: " + ", ".join(
                f"{stem} -> {column} ({self.assignments[column] or '?'} points in Canvas)"
                for stem, column in self.columns.items()))
        if self.table is not None:
            lines.append(self.table.round(1).to_string())
        lines.append(f"grades: {self.out.resolve()}")
        lines += [f"{kind}: {path.resolve()}" for kind, path in self.reports.items()]
        return lines + (self.moodle.lines() if self.moodle is not None else [])


def _check_private(checks: Path, notebooks: Path) -> None:
    """:class:`SettingRefused` if ``checks`` is no folder or names a check cell no instructor notebook has."""
    if not checks.is_dir():
        raise SettingRefused(f"--checks {checks}: no such folder")
    problems = private.problems(checks, notebooks)  # now, not once per submission
    if problems:
        raise SettingRefused(problems[0])


def _canvas(submissions: Path, canvas_gradebook: Path | None,
            chosen: dict[str, str]) -> dict[str, str] | None:
    """The assignment columns of the Canvas export (given, or kept by intake), checked against the
    submitted notebooks' names; None without an export."""
    canvas = canvas_gradebook or submissions / intake.CANVAS_GRADEBOOK
    if canvas_gradebook is not None and not canvas.is_file():
        raise SettingRefused(f"--canvas-gradebook {canvas}: no such file")
    if not canvas.is_file():
        return None
    assignments = reports.canvas_assignments(canvas)
    try:  # now, not after an hour of grading
        reports.assignment_columns({p.name for _, p in batch.submissions(submissions)}, assignments, chosen)
    except ValueError as exc:
        raise SettingRefused(f"{exc} (the columns of {canvas})") from None
    return assignments


@dataclass(frozen=True)
class LateSettings:
    """The late-work flags as given: ``--late-policy``, ``--late-cap``, ``--due``, ``--extensions``."""

    policy: str = "none"
    cap: float | None = None
    due: str | None = None
    extensions: Path | None = None


def _rules(submissions: Path, given: LateSettings) -> lateness.Rules:
    """The late-work rules the flags give, with the marks intake kept; :class:`SettingRefused` naming a bad flag."""
    if given.extensions is not None and not given.extensions.is_file():
        raise SettingRefused(f"--extensions {given.extensions}: no such file")
    try:
        return lateness.Rules(lateness.Policy.parse(given.policy, given.cap),
                              lateness.parse_due(given.due) if given.due else None,
                              lateness.read_extensions(given.extensions) if given.extensions else None,
                              frozenset(lateness.read_marks(submissions / lateness.MARKS)))
    except ValueError as exc:
        raise SettingRefused(str(exc) if str(exc).startswith("--") else f"--due {exc}") from None


def prepare(submissions: Path, notebooks: Path, *, checks: Path | None = None, time_limit: float | None = None,
            whole: bool = False, sandboxed: bool = True, release_hidden: bool = False, jobs: int = 1, reruns: int = 1,
            out: Path | None = None, names: Path | None = None, canvas_gradebook: Path | None = None,
            canvas_assignments: Iterable[str] = (), total: bool | None = None, late: LateSettings | None = None,
            students: Iterable[str] = (), reason: str = regrade.REASON,
            moodle_worksheet: Path | None = None, scores_only: bool = False) -> ClassGrading:
    """The grading of the class in ``submissions`` with these settings (the command's flags), checked.

    :class:`SettingRefused` for a setting that cannot work, ``sandbox.SandboxMissing`` when ``sandboxed`` and
    bubblewrap cannot run here. ``out`` defaults to ``SUBMISSIONS/grades.csv``, ``names`` to the
    ``names.csv`` that ``homework intake`` writes, ``canvas_gradebook`` to the export intake keeps;
    ``late`` is how late work is judged (:func:`_rules`); ``students`` regrades only them (``regrade``);
    ``moodle_worksheet`` is Moodle's grading worksheet, written back filled beside the grades (``moodle``);
    ``scores_only`` grades nothing, and merges the TA's scores of written answers (``written``) into ``out``;
    ``reruns`` is how many times more a notebook that lost points on a hidden check alone is graded (``reruns``).
    """
    if reruns < 0:
        raise SettingRefused(f"--reruns {reruns}: give 0 (grade each notebook once) or more")
    if checks is not None:
        _check_private(checks, notebooks)
    if not submissions.is_dir():
        raise SettingRefused(f"{submissions} is not a folder (it should hold one folder per student)")
    if moodle_worksheet is not None:
        if not moodle_worksheet.is_file():
            raise SettingRefused(f"--moodle-worksheet {moodle_worksheet}: no such file")
        try:  # now, not after an hour of grading
            moodle.read_worksheet(moodle_worksheet)
        except (UnicodeDecodeError, moodle.WorksheetError) as exc:
            raise SettingRefused(f"--moodle-worksheet {exc}") from None
    if sandboxed and not scores_only:
        sandbox.check()
    try:
        held_to = caps.Caps.from_env()  # read again by each grading process: a typo fails here, once
    except ValueError as exc:
        raise SettingRefused(str(exc)) from None
    options = grading.GradingOptions(time_limit=grading.DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
                                     whole=whole, sandbox="bwrap" if sandboxed else "none",
                                     release_hidden=release_hidden, private=str(checks.resolve()) if checks else None,
                                     reruns=reruns)
    chosen = dict(pair.split("=", 1) for pair in canvas_assignments if "=" in pair)
    out = out or submissions / "grades.csv"
    try:
        students = regrade.check(submissions, out, students)
    except ValueError as exc:
        raise SettingRefused(f"--students: {exc}") from None
    if scores_only and not out.is_file():
        raise SettingRefused(f"--scores-only: no {out} to merge into: grade the class first")
    try:  # now, not after an hour of grading
        written.check(submissions, notebooks, out.parent)
    except written.ScoresError as exc:
        raise SettingRefused(str(exc)) from None
    return ClassGrading(submissions, notebooks, options, jobs, out, held_to,
                        names or submissions / intake.NAMES, _canvas(submissions, canvas_gradebook, chosen),
                        chosen, total, _rules(submissions, late or LateSettings()), students, reason, moodle_worksheet,
                        scores_only)


def grade_class(plan: ClassGrading) -> GradeSummary:
    """Grade every submission of ``plan`` into its grades CSV, then write the reports beside the submissions."""
    scores = plan.out.parent  # the TA's scores CSVs and pages of answers, beside grades.csv

    def graded(folder: Path) -> list[grading.Row]:  # a regrade's students, with their written answers
        return written.add_rows(list(batch.grade_folder(folder, plan.notebooks, plan.options, plan.jobs)),
                                folder, plan.notebooks, scores)

    if plan.scores_only:
        rows = regrade.read_rows(plan.out)
    elif plan.students:
        rows = regrade.regrade(plan.submissions, plan.out, plan.students, plan.reason, graded)
    else:
        rows = batch.write_csv(batch.grade_folder(plan.submissions, plan.notebooks, plan.options, plan.jobs), plan.out)
    if not rows:
        return GradeSummary(rows, plan.out)
    exported = written.export(rows, plan.submissions, plan.notebooks, scores)
    rows = regrade.write_rows(written.add_rows(rows, plan.submissions, plan.notebooks, scores), plan.out)
    late = lateness.lateness(plan.submissions, ((r.student, r.notebook) for r in rows), plan.rules)
    if plan.rules.given:
        lateness.annotate(plan.out, late)
    people = intake.read_people(plan.names) if plan.names.is_file() else None
    columns = None
    if plan.assignments is not None:
        columns = reports.assignment_columns({r.notebook for r in rows if r.exercise}, plan.assignments, plan.chosen)
    paths = reports.write_reports(rows, plan.submissions, people, plan.options.release_hidden, columns, plan.total,
                                  late, plan.students or None)
    if not plan.scores_only:  # rows read back from the CSV hold no measurements: the last grading's stay
        paths["measurements"] = plan.out.with_name(measurements.CSV_NAME)  # beside grades.csv
        measurements.write(rows, plan.submissions, paths["measurements"], plan.students)
        paths["measurements page"] = measurements_page.write_page(paths["measurements"])
    paths |= exported
    filled = None
    if plan.moodle_worksheet is not None:
        filled = moodle.fill(rows, plan.moodle_worksheet, plan.out.with_name(moodle.FILLED),
                             moodle.read_keys(plan.submissions), people, late)
        paths["moodle worksheet"] = filled.path
    if canvas_feedback.bundle(plan.submissions):
        paths["canvas feedback"] = plan.submissions / canvas_feedback.FEEDBACK / canvas_feedback.FOLDER
    table = pd.DataFrame(rows).groupby(["student", "notebook"])[["points", "max_points", "seconds"]].sum()
    return GradeSummary(rows, plan.out, columns, plan.assignments, paths, table, filled)
