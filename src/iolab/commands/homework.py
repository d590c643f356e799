"""``python -m iolab homework student|grade|times``: hand the notebooks out as homework, grade what comes back,
and measure how long each notebook runs (the instructor notes quote it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from iolab.commands.table import Subparsers
from iolab.kit.paths import COURSE_DATA

# The instructor notebooks: the course's own, next to its data/ folder.
NOTEBOOKS = COURSE_DATA.parent / "notebooks"


def add_homework(sub: Subparsers) -> None:
    p = sub.add_parser("homework", help="student editions of the notebooks; grade submitted ones into a CSV")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    student = actions.add_parser("student", help="write the student edition of every notebook into OUT_DIR",
                                 description="Write the student edition of every notebook: solutions stubbed, "
                                 "hidden tests and folded explanations removed, predictions as questions.")
    student.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    student.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="the instructor notebooks (default: %(default)s)")

    def run_student(args: argparse.Namespace) -> int:
        from iolab.homework.editions import write_student_editions

        written = write_student_editions(args.notebooks, args.out_dir)
        print(f"{len(written)} student notebooks in {args.out_dir.resolve()}")
        return 0

    student.set_defaults(run=run_student)

    grade = actions.add_parser("grade", help="grade SUBMISSIONS/<student>/*.ipynb into a CSV",
                               description="Grade every SUBMISSIONS/<student>/*.ipynb against the instructor notebook "
                               "of the same name, at IOLAB_SCALE=quick with IOLAB_STUDENT=<student>: one CSV row per "
                               "student and exercise (student, notebook, exercise, points, max_points, status, "
                               "reason, seconds). A submission that fails, hangs or lost a check gets its rows with "
                               "the reason; the batch goes on.")
    grade.add_argument("submissions", type=Path, metavar="SUBMISSIONS", help="one folder per student, named by id")
    grade.add_argument("--out", type=Path, default=Path("grades.csv"), help="the CSV to write (default: %(default)s)")
    grade.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="time limit per notebook, in seconds (default: 300)")
    grade.add_argument("--whole", action="store_true",
                       help="run every cell of a submission, not only the setup cell and the exercises")
    grade.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="the instructor notebooks (default: %(default)s)")

    def run_grade(args: argparse.Namespace) -> int:
        import pandas as pd

        from iolab.homework import grading

        if not args.submissions.is_dir():
            grade.error(f"{args.submissions} is not a folder (it should hold one folder per student)")
        limit = args.timeout if args.timeout is not None else grading.DEFAULT_TIME_LIMIT
        rows = grading.write_csv(grading.grade_folder(args.submissions, args.notebooks, limit, args.whole), args.out)
        if not rows:
            print(f"no notebooks found in {args.submissions}/<student>/")
            return 1
        table = pd.DataFrame(rows).groupby(["student", "notebook"])[["points", "max_points", "seconds"]].sum()
        print(table.round(1).to_string())
        print(f"grades: {args.out.resolve()}")
        return 0

    grade.set_defaults(run=run_grade)

    times_ = actions.add_parser("times", help="run notebooks top to bottom at a scale; record their run times",
                                description="Run each notebook top to bottom in a fresh kernel at the given scale, one "
                                "at a time, and record its run time (and machine, date, first error) in "
                                "data/homework/run-times.csv, which the book's instructor notes read. Run it on a "
                                "quiet machine: the notebooks measure.")
    times_.add_argument("notebooks", type=Path, nargs="*", metavar="NOTEBOOK",
                        help="the notebooks to run (default: every notebook in notebooks/)")
    times_.add_argument("--scale", choices=["quick", "full"], default="quick", help="IOLAB_SCALE for the runs")

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

    times_.set_defaults(run=run_times)
