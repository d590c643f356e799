"""Grade a class: every ``SUBMISSIONS/<student>/*.ipynb``, one or several at a time, into the grades CSV.

Whatever happens to one submission (an error, a hang, a deleted check, a file that is not a
notebook, a cap passed) becomes rows with a reason, and the batch goes on. Each submission is graded
by a Python process of its own (``python -m iolab.homework.batch``) under a time limit, still in
sandboxes of its own, ``jobs`` at a time; the rows come back in the order of the submissions,
whatever order they finish in.
"""

from __future__ import annotations

import contextlib
import csv
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, fields
from pathlib import Path

import nbformat
import psutil

from iolab.homework import cgroups, grading, markup
from iolab.homework.execution import kill_tree
from iolab.homework.grading import GradingOptions, Row
from iolab.kit import guard


def _error_rows(student: str, notebook: str, source: object | None, reason: str) -> list[Row]:
    """Rows that say a submission could not be graded at all: one per graded exercise, or one for the file."""
    graded = [e for e in markup.exercises(source) if e.graded] if source is not None else []
    if not graded:
        return [Row(student, notebook, "", 0.0, 0.0, "error", reason, 0.0)]
    return [Row(student, notebook, e.label, 0.0, e.points, "error", reason, 0.0) for e in graded]


def grade_file(path: Path, student: str, sources: Path, options: GradingOptions = GradingOptions()) -> list[Row]:
    """The rows of one submitted notebook, graded against the notebook of the same name in ``sources``."""
    source_path = sources / path.name
    if not source_path.is_file():
        return _error_rows(student, path.name, None, f"no instructor notebook named {path.name} in {sources}")
    source = nbformat.read(source_path, as_version=4)
    if not any(e.graded for e in markup.exercises(source)):
        return [Row(student, path.name, "", 0.0, 0.0, "not graded", "this notebook has no graded exercises yet", 0.0)]
    try:
        submission = nbformat.read(path, as_version=4)
    except Exception as exc:  # not JSON, not a notebook: the student's problem, reported as such
        return _error_rows(student, path.name, source, f"cannot read the notebook: {type(exc).__name__}: {exc}")
    before = {proc.pid for proc in psutil.Process().children()}
    try:
        rows = grading.grade(submission, source, student, path.name, options)
    except Exception as exc:  # a kernel that will not start, say: this submission's rows say so, the batch goes on
        rows = _error_rows(student, path.name, source, f"grading failed: {type(exc).__name__}: {exc}")
    if options.sandbox != "bwrap":
        # Without a PID namespace, a double-forked daemon is re-parented to this process (a subreaper,
        # see adopt_orphans): end it here, so that it neither runs through the rest of the batch nor
        # turns the guard's verdict red. In a sandbox the namespace's end has killed it already.
        for proc in psutil.Process().children():
            if proc.pid not in before:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
                    proc.wait(2)
    return rows


def adopt_orphans(kind: str) -> None:
    """Each grading process adopts the orphans of the submissions it grades, when there is no sandbox to end them."""
    if kind != "bwrap":
        guard.become_subreaper()


def submissions(folder: Path) -> Iterator[tuple[str, Path]]:
    """(student, notebook) for every ``folder/<student>/**/*.ipynb``, in order (checkpoints and the feedback folder skipped)."""
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                              and p.name != "feedback"):
        for path in sorted(student_dir.rglob("*.ipynb")):
            if ".ipynb_checkpoints" not in path.parts:
                yield student_dir.name, path


def _grade_in_process(path: Path, student: str, sources: Path, options: GradingOptions,
                      limit: float | None = None) -> list[Row]:
    """``grade_file`` in a fresh Python process of its own (``python -m iolab.homework.batch``): its rows.

    The process has a time limit for the whole of it (``limit`` seconds; by default the notebook's
    limit, the checker's and 80 s more), so that nothing a submission does (a kernel that will not
    start, a grader stuck in a kill) holds up the batch; past it, the process, everything below it and
    the cgroups it made (``cgroups.sweep``) are killed, and the submission gets a row that says so.
    """
    task = json.dumps({"path": str(path), "student": student, "sources": str(sources), "options": asdict(options)})
    if limit is None:  # generous: the submission's own limit, the checker's, the start of both and the kills after
        limit = options.time_limit + grading.CHECKER_TIME_LIMIT + 60 + 2 * cgroups.KILL_SECONDS
    with subprocess.Popen([sys.executable, "-m", "iolab.homework.batch"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            out, err = process.communicate(task, timeout=limit)
        except subprocess.TimeoutExpired:
            # Its kernels and checker run in sessions of their own: killed as its descendants, not as a group.
            kill_tree(process.pid)
            process.communicate()
            return [Row(student, path.name, "", 0.0, 0.0, "error",
                        f"grading this notebook took over {limit:g} s and was stopped", 0.0)]
        finally:
            cgroups.sweep(process.pid)
    try:
        return [Row(**row) for row in json.loads(out.strip().splitlines()[-1])]
    except (ValueError, IndexError, TypeError) as exc:
        said = err.strip().splitlines()[-1] if err.strip() else type(exc).__name__
        return [Row(student, path.name, "", 0.0, 0.0, "error",
                    f"the grading process failed (exit status {process.returncode}): {said}", 0.0)]


def solo(source: Path) -> bool:
    """Whether the instructor notebook ``source`` needs the machine to itself (its metadata says
    ``"iolab": {"solo": true}``), in ``make test`` and when graded: it measures CPU scaling or
    throughput, which a neighbour on the same cores changes, or fills a per-user kernel limit that a
    neighbour shares (notebook 02's thousand pipes count against the pipe buffers of one user)."""
    try:
        return bool(nbformat.read(source, as_version=4).metadata.get("iolab", {}).get("solo"))
    except Exception:  # no such notebook: grade_file says so in its rows
        return False


def grade_folder(folder: Path, sources: Path, options: GradingOptions = GradingOptions(),
                 jobs: int = 1) -> Iterator[Row]:
    """The rows of every submission in ``folder`` (one sub-folder per student), ``jobs`` at a time.

    Each submission is graded by a process of its own, under a time limit (:func:`_grade_in_process`;
    threads here only wait for them), so nothing is shared between two submissions but the machine.
    With ``jobs`` > 1, the submissions of *solo* notebooks (:func:`solo`) are graded one at a time,
    after the others, since a neighbour would change what their checks measure. Rows come in the
    order of the submissions within each of the two groups.
    """
    tasks = [(path, student, sources, options) for student, path in submissions(folder)]
    if jobs <= 1:
        for task in tasks:
            yield from _grade_in_process(*task)
        return
    alone = {name for name in {path.name for path, *_ in tasks} if solo(sources / name)}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for rows in pool.map(lambda task: _grade_in_process(*task), [t for t in tasks if t[0].name not in alone]):
            yield from rows
    for task in (t for t in tasks if t[0].name in alone):
        yield from _grade_in_process(*task)


def write_csv(rows: Iterable[Row], path: Path) -> list[Row]:
    """Write ``rows`` to CSV at ``path`` as they come (a crash keeps those done); the rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[field.name for field in fields(Row)])
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))
            f.flush()
            written.append(row)
    return written


def _main() -> int:
    """Grade the one submission described on standard input; print its rows as JSON on the last line."""
    task = json.loads(sys.stdin.read())
    options = GradingOptions(**task["options"])
    adopt_orphans(options.sandbox)
    rows = grade_file(Path(task["path"]), task["student"], Path(task["sources"]), options)
    print(json.dumps([asdict(row) for row in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
