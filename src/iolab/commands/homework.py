"""``python -m iolab homework student|grade|ids|intake|gradescope|gradescope-run|times|solo|measurements``: hand
the notebooks out as homework, grade what comes back, draw what the class's submissions measured, and measure
how long each notebook runs (the instructor notes quote it).

Each action is an ``add_*`` that builds its parser and a ``run_*`` that calls into
:mod:`iolab.homework` and prints (otter's shape: the work is in the package, here only the words).
A ``run_*`` refuses a bad setting with ``args.parser.error``, its own action's usage.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from iolab.commands.table import Subparsers, add_action
from iolab.homework.contract import VISIBILITIES
from iolab.homework.intake import CANVAS_ID_COLUMNS, Intake, RosterError
from iolab.kit.paths import COURSE_DATA
from iolab.kit.scale import SCALES

# The instructor notebooks: the course's own, next to its data/ folder.
NOTEBOOKS = COURSE_DATA.parent / "notebooks"

Actions = Subparsers  # the registry of the homework command's own actions

# Each action's --help description, by action.
DESCRIPTIONS = {
    "student": (
        "Write the student edition of every notebook: solutions stubbed, hidden tests and folded explanations "
        "removed, predictions as questions."),
    "grade": (
        "Grade every SUBMISSIONS/<student>/*.ipynb against the instructor notebook of the same name, at "
        "IOLAB_SCALE=quick with IOLAB_STUDENT=<student>, each submission in a sandbox (bubblewrap) and its "
        "checks in a separate checker process. Writes the grades CSV (one row per student and exercise: student, "
        "notebook, exercise, points, max_points, status, reason, seconds), SUBMISSIONS/gradebook.csv (Canvas's "
        "import format), SUBMISSIONS/pass-rates.csv, SUBMISSIONS/feedback/<student>/<notebook>.md (and .html), and "
        "what the submissions' runs measured, class-measurements.csv beside the grades CSV with a page of figures, "
        "class-measurements.html (see the measurements action), and for each written exercise a page of the class's "
        "answers and a scores CSV for a TA to fill (<notebook>-<label>-answers.html, <notebook>-<label>-scores.csv), "
        "whose filled scores merge into the grades, gradebook and feedback when grading again (--scores-only: "
        "without grading). A "
        "submission that fails, hangs, tampers, lost a check or passed a cap (processes, memory, file size, its "
        "folder, /tmp, output: the IOLAB_GRADE_* variables, see book/instructors.md, 'Caps') gets its rows with the reason; the batch "
        "goes on, and the exit status is 0 once every submission has its rows."),
    "ids": (
        "Print, for each student id, the id they work with (IOLAB_STUDENT): the id and a token that only the "
        "course secret (CHECKS/secret) makes, so that nobody can work out a student's numbers from the public "
        "code."),
    "intake": (
        "Unpack the zip of submissions that Canvas or Moodle downloads into "
        "SUBMISSIONS/<student id>/<notebook>.ipynb, using a roster: the course's CSV with columns id (the id "
        "students work with), key (the LMS's user id, anonymous id or the name in its file names) and name, or Canvas's own gradebook "
        "export (the course's id in --id-column). Files whose submitter is not in the roster go to "
        "SUBMISSIONS/.unmatched/; a student's earlier uploads to SUBMISSIONS/.earlier/; a student's lone "
        "notebook under another name is placed as the assignment's notebook. Exit status 2 when the roster names "
        "nobody."),
    "gradescope": (
        "Write an autograder.zip (setup.sh, run_autograder, the kit, the lock and the instructor notebooks) that "
        "grades the named notebooks on Gradescope, one test per exercise. Without NOTEBOOK, the package grades "
        "any of the course's notebooks. With --roster, each submitter's course id comes from it (by email, then "
        "sid, then gradescope:<user id>; one it does not name is told so and not graded). Exit status 2 when "
        "the roster names nobody."),
    "gradescope-run": (
        "Grade ROOT/submission/*.ipynb against ROOT/source/notebooks and write ROOT/results/results.json, as "
        "Gradescope's run_autograder does."),
    "times": (
        "Run each notebook top to bottom in a fresh kernel at the given scale, one at a time, and record its run "
        "time (and machine, date, first error) in data/homework/run-times.csv, which the book's instructor notes "
        "read. Run it on a quiet machine: the notebooks measure."),
    "measurements": (
        "Draw the class's measurements again from the CSV that grading wrote beside grades.csv "
        "(SUBMISSIONS/class-measurements.csv): one HTML page, a figure per exercise and measured name, the class's "
        "values as a box with every value over it and the reference run as a dashed line labelled with its "
        "machine. The page names no student; a value that is not a finite number, or is over 30x from the "
        "class's median, is left out and counted in its caption."),
    "solo": (
        "Print, on one line, those of the notebooks whose metadata says \"iolab\": {\"solo\": true}: they measure "
        "CPU scaling or throughput, or fill a per-user kernel limit, so `make test` runs them one at a time and "
        "the grader grades them alone (iolab.homework.batch.solo)."),
}


def _add(actions: Actions, name: str, run: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
    """Register the action ``name``, with its line in ``--help`` and its description from ``DESCRIPTIONS``."""
    return add_action(actions, name, run, help=help_, description=DESCRIPTIONS[name])


def _notebooks_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="the instructor notebooks (default: %(default)s)")


def _checks_option(p: argparse.ArgumentParser, help_: str, required: bool = False) -> None:
    p.add_argument("--checks", type=Path, default=None, required=required, metavar="DIR", help=help_)


def add_homework(sub: Subparsers) -> None:
    """Register ``python -m iolab homework`` and its actions."""
    p = sub.add_parser("homework", help="student editions of the notebooks; grade submitted ones into a CSV")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for add in (add_student, add_grade, add_ids, add_intake, add_gradescope, add_gradescope_run, add_times,
                add_solo, add_measurements):
        add(actions)


def add_student(actions: Actions) -> None:
    student = _add(actions, "student", run_student, "write the student edition of every notebook into OUT_DIR")
    student.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    _notebooks_option(student)
    student.add_argument("--force", action="store_true", help="replace notebooks in OUT_DIR that were changed (answers are lost)")


def run_student(args: argparse.Namespace) -> int:
    from iolab.homework.editions import write_student_editions

    written, kept = write_student_editions(args.notebooks, args.out_dir, force=args.force)
    print(f"{len(written)} student notebooks in {args.out_dir.resolve()}")
    if kept:
        print(f"kept {len(kept)} notebooks that differ from their student edition (answers written in them, or an "
              f"older course's): {', '.join(p.name for p in kept)}; --force (make homework FORCE=1) replaces them")
        return 1
    return 0


def add_grade(actions: Actions) -> None:
    grade = _add(actions, "grade", run_grade, "grade SUBMISSIONS/<student>/*.ipynb into a CSV, a gradebook and feedback")
    grade.add_argument("submissions", type=Path, metavar="SUBMISSIONS", help="one folder per student, named by id")
    grade.add_argument("--out", type=Path, default=None, help="the CSV to write (default: SUBMISSIONS/grades.csv)")
    grade.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="time limit per notebook, in seconds, from its kernel ready (default: 300)")
    grade.add_argument("--jobs", type=int, default=1, metavar="N", help="grade N submissions at once (default: 1)")
    grade.add_argument("--reruns", type=int, default=1, metavar="N",
                       help="grade a notebook up to N times more while it loses points on a hidden check alone, "
                       "every answer accepted (a measurement crossing its bound on a busy machine); the best counts "
                       "(default: 1; 0: once)")
    grade.add_argument("--whole", action="store_true",
                       help="run every cell of a submission, not only the setup cell and the exercises")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="run submissions without bubblewrap, as this user: only for trusted submissions")
    grade.add_argument("--release-hidden", action="store_true",
                       help="quote the hidden checks' messages in reasons and feedback (they state the answers)")
    grade.add_argument("--names", type=Path, default=None, metavar="CSV",
                       help="a CSV of id,name[,canvas_id,sis_user_id,sis_login_id,section] for the gradebook's Student, "
                       "ID, SIS and Section columns (default: SUBMISSIONS/names.csv, as `homework intake` writes it)")
    grade.add_argument("--canvas-gradebook", type=Path, default=None, metavar="CSV",
                       help="Canvas's gradebook export: each notebook's column is then titled as its assignment there, "
                       "'Name (assignment id)', so that importing gradebook.csv fills that assignment (default: "
                       "SUBMISSIONS/canvas-gradebook.csv, which intake keeps when its roster is such an export)")
    grade.add_argument("--canvas-assignment", action="append", default=[], metavar="NOTEBOOK=NAME",
                       help="the Canvas assignment a notebook goes to, where its name does not say (repeatable)")
    grade.add_argument("--moodle-worksheet", type=Path, default=None, metavar="CSV",
                       help="Moodle's grading worksheet as downloaded (Download grading worksheet): written back "
                       "beside the grades as moodle-worksheet.csv, Grade and Feedback comments filled, to upload")
    grade.add_argument("--total", action=argparse.BooleanOptionalAction, default=None,
                       help="a Total column in gradebook.csv (default: only without a Canvas gradebook export, "
                       "since Canvas makes an unknown column a new assignment)")
    grade.add_argument("--due", default=None, metavar="WHEN",
                       help="the due date, an ISO date-time (UTC unless it names a zone): a notebook's file time after it is late")
    grade.add_argument("--late-policy", default="none", metavar="POLICY",
                       help="'none' (lateness shown, nothing taken off; the default) or 'PCT-per-day', e.g. 10-per-day")
    grade.add_argument("--late-cap", type=float, default=None, metavar="PCT", help="at most PCT %% off for lateness (default: 100)")
    grade.add_argument("--extensions", type=Path, default=None, metavar="CSV",
                       help="a CSV of student,notebook,due: a later due date for that student and notebook")
    grade.add_argument("--students", default=None, metavar="ID,ID",
                       help="regrade only these students, merging their rows into the existing grades CSV (history.csv says what changed)")
    grade.add_argument("--scores-only", action="store_true",
                       help="grade nothing: merge the TA's filled scores of written answers into the grades CSV, "
                       "gradebook and feedback (give the other flags as when grading)")
    grade.add_argument("--reason", default="regrade", help="why, in history.csv, for --students (default: %(default)s)")
    _checks_option(grade, "the instructor's own checks and course secret, outside the repository (see iolab.homework.private)")
    _notebooks_option(grade)


def run_grade(args: argparse.Namespace) -> int:
    from iolab.homework import classes, sandbox

    try:
        plan = classes.prepare(args.submissions, args.notebooks, checks=args.checks, time_limit=args.timeout,
                               whole=args.whole, sandboxed=not args.no_sandbox, release_hidden=args.release_hidden,
                               jobs=args.jobs, reruns=args.reruns, out=args.out, names=args.names, canvas_gradebook=args.canvas_gradebook,
                               canvas_assignments=args.canvas_assignment, total=args.total,
                               late=classes.LateSettings(args.late_policy, args.late_cap, args.due, args.extensions),
                               students=(args.students or "").split(","), reason=args.reason,
                               moodle_worksheet=args.moodle_worksheet, scores_only=args.scores_only)
    except classes.SettingRefused as exc:
        args.parser.error(str(exc))
    except sandbox.SandboxMissing as exc:
        print(f"not grading: {exc}")
        return 2
    print("\n".join(plan.announce()), flush=True)
    try:
        summary = classes.grade_class(plan)
    except classes.written.ScoresError as exc:  # a scores CSV changed during grading: the grades CSV is kept
        print(f"not merged: {exc}")
        return 1
    if not summary.rows:
        print(f"no notebooks found in {args.submissions}/<student>/")
        return 1
    print("\n".join(summary.lines()))
    return 0


def add_ids(actions: Actions) -> None:
    ids = _add(actions, "ids", run_ids, "the ids to hand students when the course has a secret")
    ids.add_argument("students", nargs="+", metavar="ID")
    _checks_option(ids, "the folder that holds the secret", required=True)


def run_ids(args: argparse.Namespace) -> int:
    from iolab.homework import private
    from iolab.kit import student as students

    secret = private.read_secret(args.checks)
    if secret is None:
        args.parser.error(f"no secret in {args.checks / private.SECRET}: write one line of random text there first")
    for name in args.students:
        print(f"{name},{students.with_token(name, secret)}")
    return 0


def add_intake(actions: Actions) -> None:
    take = _add(actions, "intake", run_intake, "unpack an LMS's zip of submissions into SUBMISSIONS/<student id>/")
    take.add_argument("archive", type=Path, metavar="ZIP")
    take.add_argument("--roster", type=Path, required=True,
                      help="CSV with columns id, key[, name], or Canvas's gradebook export")
    take.add_argument("--id-column", default="SIS Login ID", choices=CANVAS_ID_COLUMNS,
                      help="the column of a Canvas gradebook export that holds the course's ids (default: %(default)s)")
    take.add_argument("--assignment", default=None, metavar="NOTEBOOK",
                      help="the notebook a lone notebook under another name is graded as (default: the one course "
                      "notebook the other uploads name)")
    take.add_argument("--out", type=Path, required=True, metavar="SUBMISSIONS")
    _notebooks_option(take)


def run_intake(args: argparse.Namespace) -> int:
    import shutil

    from iolab.homework import intake, moodle

    assignment = f"{args.assignment.removesuffix('.ipynb')}.ipynb" if args.assignment else None
    notebooks = {p.name for p in args.notebooks.glob("*.ipynb")}
    if assignment and assignment not in notebooks:
        args.parser.error(f"--assignment {args.assignment}: no such notebook in {args.notebooks}")
    try:
        done = intake.intake(args.archive, args.roster, args.out, notebooks, assignment=assignment,
                             id_column=args.id_column)
    except intake.RosterError as exc:
        print(f"not unpacked: {exc}")
        return 2
    except ValueError as exc:  # an IOLAB_INTAKE_* cap that is not a number
        args.parser.error(str(exc))
    roster = done.roster
    assert roster is not None
    moodle.keep_keys(roster.keys, args.out)  # for `homework grade --moodle-worksheet`: the participant numbers
    print(f"roster: {args.roster} read as a {roster.kind}: columns {', '.join(roster.used)} used"
          + (f"; no {', '.join(roster.lacking)} (left empty in gradebook.csv)" if roster.lacking else ""))
    if roster.kind == "Canvas gradebook export":  # kept for `homework grade`: its assignment columns
        shutil.copyfile(args.roster, args.out / intake.CANVAS_GRADEBOOK)
        print(f"kept as {args.out / intake.CANVAS_GRADEBOOK}: `homework grade` titles gradebook.csv's columns "
              "as its assignments")
    print("\n".join(_placed(done, args.out)))
    return 0


def _placed(done: Intake, out: Path) -> list[str]:
    """Where intake put the notebooks in ``out``, and what it did not place, as lines."""
    lines = [f"{sum(map(len, done.placed.values()))} notebooks of {len(done.placed)} students in {out.resolve()}"]
    lines += [f"{student}'s only notebook, {uploaded}, placed as {graded}" for student, uploaded, graded in done.renamed]
    lines += [f"not in the roster, kept in {out / '.unmatched'}: {name}" for name in done.unmatched]
    if done.refused:
        lines.append(f"{len(done.refused)} files refused, not placed: "
                     + "; ".join(f"{name} ({why})" for name, why in done.refused))
    if done.earlier:
        lines.append(f"{sum(map(len, done.earlier.values()))} earlier uploads of {len(done.earlier)} students kept in "
                     f"{out / '.earlier'} (the latest upload is graded): "
                     + ", ".join(f"{student} ({len(paths)})" for student, paths in sorted(done.earlier.items())))
    missing = sorted(set(done.names) - set(done.placed))
    if missing:
        lines.append(f"no submission from {len(missing)} students in the roster: {', '.join(missing)}")
    return lines


def add_gradescope(actions: Actions) -> None:
    scope = _add(actions, "gradescope", run_gradescope, "an autograder.zip in Gradescope's format for one notebook or all")
    scope.add_argument("notebook", nargs="*", metavar="NOTEBOOK", help="a notebook's stem, e.g. 02-blocking")
    scope.add_argument("--out", type=Path, default=Path("_build/gradescope"), help="folder for the package (default: %(default)s)")
    _checks_option(scope, "the instructor's own checks and course secret, packed in as private/")
    scope.add_argument("--roster", type=Path, default=None, metavar="FILE",
                       help="the roster homework intake reads, its keys holding each student's Gradescope email "
                       "(or gradescope:<user id>): packed in, it gives each submitter their course id")
    scope.add_argument("--visibility", default="after_published", choices=VISIBILITIES,
                       help="when students see the tests hidden checks score (default: %(default)s)")
    _notebooks_option(scope)


def run_gradescope(args: argparse.Namespace) -> int:
    from iolab.homework import gradescope

    paths = [args.notebooks / f"{stem.removesuffix('.ipynb')}.ipynb" for stem in args.notebook]
    unknown = [p.stem for p in paths if not p.is_file()]
    if unknown:
        args.parser.error(f"no notebook called {', '.join(unknown)} in {args.notebooks}")
    paths = paths or sorted(args.notebooks.glob("*.ipynb"))
    name = paths[0].stem if len(args.notebook) == 1 else "all" if not args.notebook else "-".join(p.stem[:2] for p in paths)
    try:
        out = gradescope.build_package(paths, args.out / name / "autograder.zip", args.checks, args.roster,
                                       args.visibility)
    except RosterError as exc:
        print(f"not packed: {exc}")
        return 2
    print(f"autograder for {len(paths)} notebook{'s' * (len(paths) > 1)}: {out.resolve()}")
    return 0


def add_gradescope_run(actions: Actions) -> None:
    scope_run = _add(actions, "gradescope-run", run_gradescope_run, "grade a Gradescope submission (as run_autograder does)")
    scope_run.add_argument("--root", type=Path, default=None, help="the autograder's root (default: $AUTOGRADER_ROOT or /autograder)")


def run_gradescope_run(args: argparse.Namespace) -> int:
    from iolab.homework import gradescope

    out = gradescope.run(args.root or gradescope.DEFAULT_ROOT)
    print(f"results: {out}")
    return 0


def add_times(actions: Actions) -> None:
    times_ = _add(actions, "times", run_times, "run notebooks top to bottom at a scale; record their run times")
    times_.add_argument("notebooks", type=Path, nargs="*", metavar="NOTEBOOK",
                        help="the notebooks to run (default: every notebook in notebooks/)")
    times_.add_argument("--scale", choices=SCALES, default="quick", help="IOLAB_SCALE for the runs")


def run_times(args: argparse.Namespace) -> int:
    from iolab.homework import times

    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    runs = []
    for k, path in enumerate(paths, 1):
        print(f"[{k}/{len(paths)}] {path.name} at {args.scale} scale ...", end=" ", flush=True)
        run = times.measure(path, args.scale)
        print(f"{run.seconds:.0f} s" + (f" (failed: {run.error})" if run.error else ""), flush=True)
        runs.append(run)
    times.record(runs)
    print(f"run times: {times.RUN_TIMES}")
    return 1 if any(r.error for r in runs) else 0


def add_solo(actions: Actions) -> None:
    solo = _add(actions, "solo", run_solo, "print which of the notebooks need the machine to themselves")
    solo.add_argument("notebooks", type=Path, nargs="*", metavar="NOTEBOOK")


def run_solo(args: argparse.Namespace) -> int:
    from iolab.homework.batch import solo

    print(" ".join(str(path) for path in args.notebooks if solo(path)))
    return 0


def add_measurements(actions: Actions) -> None:
    shown = _add(actions, "measurements", run_measurements, "draw the class's measurements (a CSV grading wrote) as a page")
    shown.add_argument("csv", type=Path, metavar="CSV", help="class-measurements.csv, as grading wrote it")
    shown.add_argument("--out", type=Path, default=None, metavar="HTML",
                       help="the page to write (default: class-measurements.html beside CSV)")


def run_measurements(args: argparse.Namespace) -> int:
    from iolab.homework.measurements_page import figures, write_page

    if not args.csv.is_file():
        args.parser.error(f"{args.csv}: no such file (grading writes class-measurements.csv beside grades.csv)")
    out = write_page(args.csv, args.out)
    print(f"{figures(out.read_text())} figures: {out.resolve()}")
    return 0
