"""How long grading a class takes, one submission at a time and several at once, and whether the grades agree.

Builds a synthetic class: each student hands in notebooks 02 and 04 (by default), some honest (the
instructor's solutions pasted into the student edition), some blank (the edition as handed out)
and some partly wrong (honest but for their first answer, left unanswered). Then grades it with the
command an instructor types, ``python -m iolab homework grade SUBMISSIONS --jobs N``, for each N,
and prints the wall time of each and every graded check whose points or status differ between them.

    python benchmarks/grading.py                    # 40 students, notebooks 02 and 04, JOBS=1 and 2
    python benchmarks/grading.py --students 4 --jobs 1 2 --notebooks 02-blocking   # a quick look
"""

from __future__ import annotations

import argparse
import copy
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from iolab.homework import editions, markup

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KINDS = ("honest", "blank", "partly-wrong")


def solved(edition, instructor):
    """The edition with every solution cell holding the instructor's solution again."""
    nb = copy.deepcopy(edition)
    sources = {markup.grade_id(c): c.source for c in instructor.cells if markup.role(c) == "code"}
    for cell in nb.cells:
        if markup.role(cell) == "code":
            cell.source = sources[markup.grade_id(cell)]
    return nb


def make_class(folder: Path, students: int, stems: list[str]) -> dict[str, str]:
    """Write ``students`` students' submissions of ``stems`` into ``folder``; each student's kind."""
    kinds = {}
    for k in range(students):
        student, kind = f"s{k:03d}", KINDS[k % len(KINDS)]
        kinds[student] = kind
        for stem in stems:
            instructor = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
            edition = editions.student_edition(instructor)
            nb = edition if kind == "blank" else solved(edition, instructor)
            if kind == "partly-wrong":
                first = next(c for c in nb.cells if markup.role(c) == "code")
                first.source = editions.CODE_STUB
            (folder / student).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / student / f"{stem}.ipynb")
    return kinds


def grade(folder: Path, jobs: int, out: Path) -> float:
    """Grade ``folder`` with ``jobs`` at a time into ``out``; the wall time in seconds."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "iolab", "homework", "grade", str(folder), "--jobs", str(jobs),
                    "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def rows(path: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    with path.open() as f:
        return {(r["student"], r["notebook"], r["exercise"]): (r["points"], r["status"]) for r in csv.DictReader(f)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--notebooks", nargs="+", default=["02-blocking", "04-prefork"])
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="iolab-class-") as tmp:
        folder = Path(tmp) / "submissions"
        kinds = make_class(folder, args.students, args.notebooks)
        print(f"{args.students} students ({', '.join(f'{sum(v == k for v in kinds.values())} {k}' for k in KINDS)}), "
              f"notebooks {', '.join(args.notebooks)}: {args.students * len(args.notebooks)} submissions", flush=True)
        results = {}
        for jobs in args.jobs:
            out = Path(tmp) / f"grades-{jobs}.csv"
            seconds = grade(folder, jobs, out)
            results[jobs] = rows(out)
            total = sum(float(points) for points, _ in results[jobs].values())
            print(f"JOBS={jobs}: {seconds:.0f} s ({seconds / 60:.1f} min, {seconds / len(kinds) / len(args.notebooks):.1f} s "
                  f"per submission), {total:g} points in all", flush=True)
        first = args.jobs[0]
        for jobs in args.jobs[1:]:
            differ = sorted(key for key in results[first] if results[first][key] != results[jobs].get(key))
            print(f"checks graded differently at JOBS={first} and JOBS={jobs}: {len(differ)} of {len(results[first])}")
            for key in differ:
                print(f"  {' '.join(key)}: {results[first][key]} vs {results[jobs].get(key)} ({kinds[key[0]]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
