"""Grade a class: every ``SUBMISSIONS/<student>/*.ipynb``, one or several at a time, into the grades CSV.

Whatever happens to one submission (an error, a hang, a deleted check, a file that is not a
notebook, a cap passed) becomes rows with a reason, and the batch goes on. Each submission is graded
by a process of its own (forked from a server that imported the grader once) under a time limit,
still in sandboxes of its own, ``jobs`` at a time; the
rows come back in the order of the submissions, whatever order they finish in.

Submissions are data, never paths to follow. A student's notebook is ``<student>/<name>.ipynb`` at
the top of the student's folder, and it is read only if it is a regular file of at most
``MAX_NOTEBOOK_BYTES`` (20 MiB; the environment variable ``IOLAB_MAX_NOTEBOOK_BYTES`` sets another
number of bytes): a link to a classmate's notebook, a FIFO or a link to ``/dev/zero`` gets an error
row, not a score and not a hang (``untrusted``). A notebook found deeper in the folder is never
graded, so that the same notebook cannot count twice; it gets a row of 0 of 0 points that says so. A
student folder that is a symbolic link is not followed, and gets a row too.

A script that grades through this module (rather than ``python -m iolab homework grade``) needs an
``if __name__ == "__main__":`` guard: the forkserver the grading processes come from imports the
script's main module again, as multiprocessing's ``spawn`` does.
"""

from __future__ import annotations

import contextlib
import csv
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import nbformat
import psutil

from iolab.homework import cgroups, grading, markup, reruns, untrusted
from iolab.homework.execution import STARTUP_SECONDS, kill_tree
from iolab.homework.grading import GradingOptions, Row
from iolab.kit import guard

# A notebook with its outputs is a few MiB at most; a cap keeps a hostile one from filling the grader's memory.
MAX_NOTEBOOK_BYTES = 20 * 2**20
MAX_NOTEBOOK_BYTES_ENV = "IOLAB_MAX_NOTEBOOK_BYTES"
# Not a student's folder: the grader's own feedback (``reports``); hidden ones (``intake``'s ``.unmatched``) neither.
NOT_STUDENTS = ("feedback",)


def max_notebook_bytes() -> int:
    """The largest submitted notebook the grader reads, in bytes: ``IOLAB_MAX_NOTEBOOK_BYTES`` if set, else 20 MiB."""
    given = os.environ.get(MAX_NOTEBOOK_BYTES_ENV)
    if not given:
        return MAX_NOTEBOOK_BYTES
    if not given.isdigit():
        raise ValueError(f"{MAX_NOTEBOOK_BYTES_ENV} must be a number of bytes, like {MAX_NOTEBOOK_BYTES}; "
                         f"got {given!r}")
    return int(given)


def read_notebook(path: Path) -> Any:
    """The submitted notebook at ``path``, read as data (``untrusted.read``, then ``nbformat.reads``).

    :class:`untrusted.Refused` for a file that is not a regular one within :func:`max_notebook_bytes`,
    ``OSError`` for one that cannot be opened, and nbformat's or JSON's errors for one that is no notebook.
    """
    return nbformat.reads(untrusted.read(path, max_notebook_bytes()).decode(), as_version=4)


def _error_rows(student: str, notebook: str, source: object | None, reason: str) -> list[Row]:
    """Rows that say a submission could not be graded at all: one per graded exercise, or one for the file."""
    graded = [e for e in markup.exercises(source) if e.graded] if source is not None else []
    if not graded:
        return [Row(student, notebook, "", 0.0, 0.0, "error", reason, 0.0)]
    return [Row(student, notebook, e.label, 0.0, e.points, "error", reason, 0.0) for e in graded]


def grade_file(path: Path, student: str, sources: Path, options: GradingOptions = GradingOptions(),
               name: str | None = None) -> list[Row]:
    """The rows of one submitted notebook, graded as the notebook ``name`` (default: its own) in ``sources``."""
    name = name or path.name
    source_path = sources / name
    if not source_path.is_file():
        return _error_rows(student, name, None, f"no instructor notebook named {name} in {sources}")
    source = nbformat.read(source_path, as_version=4)
    if not any(e.graded for e in markup.exercises(source)):
        return [Row(student, name, "", 0.0, 0.0, "not graded", "this notebook has no graded exercises yet", 0.0)]
    try:
        submission = read_notebook(path)
    except untrusted.TooBig as exc:
        return _error_rows(student, name, source, f"{path.name} was not read: {exc} (clearing its outputs makes "
                           f"a notebook smaller; {MAX_NOTEBOOK_BYTES_ENV} sets the grader's limit)")
    except untrusted.Refused as exc:
        return _error_rows(student, name, source, f"{path.name} was not read: {exc}")
    except Exception as exc:  # not JSON, not a notebook: the student's problem, reported as such
        return _error_rows(student, name, source, f"cannot read the notebook: {type(exc).__name__}: {str(exc)[:200]}")
    before = {proc.pid for proc in psutil.Process().children()}
    try:
        rows = grading.grade(submission, source, student, name, options)
    except Exception as exc:  # a kernel that will not start, say: this submission's rows say so, the batch goes on
        rows = _error_rows(student, name, source, f"grading failed: {type(exc).__name__}: {exc}")
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


def _hidden(name: str) -> bool:
    """Jupyter's checkpoints, macOS's ``._`` copies, a version control folder: never a submission."""
    return name.startswith(".") or name == "__MACOSX"


def top_notebooks(folder: Path) -> list[Path]:
    """The notebooks at the top of ``folder``, in order, whatever kind of file each is (``read_notebook`` checks)."""
    return sorted(p for p in folder.iterdir() if p.name.endswith(".ipynb") and not _hidden(p.name))


def deeper_notebooks(folder: Path) -> list[Path]:
    """The notebooks in the sub-folders of ``folder`` (not at its top), in order; links are listed, never followed."""
    found = []
    for here, dirs, files in os.walk(folder):  # os.walk does not descend into a link to a folder
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        if Path(here) != folder:
            found += [Path(here) / f for f in sorted(files) if f.endswith(".ipynb") and not _hidden(f)]
    return found


def why_not_graded(path: Path, folder: Path, graded: set[str], shown: str = "") -> str:
    """Why ``path``, a notebook deeper in ``folder``, is not graded; ``graded`` names those at the top,
    and ``shown`` is what to call ``folder`` in the message."""
    prefix = f"{shown}/" if shown else ""
    where = f"{prefix}{path.relative_to(folder)}"
    if path.name in graded:
        return f"a second copy of {path.name} ({where}) was not graded: only {prefix}{path.name} is"
    return f"{where} was not graded: only a notebook at the top of the folder is ({prefix}{path.name})"


def _survey(folder: Path) -> Iterator[tuple[str, Path | None, str]]:
    """(student, notebook, why it is not graded) for each notebook in ``folder``, "" for one to grade;
    (student, None, why) for a student folder that is not followed."""
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if _hidden(entry.name) or entry.name in NOT_STUDENTS:
            continue
        if entry.is_symlink():
            if entry.is_dir():  # stat only: nothing in it is opened or listed
                yield entry.name, None, (f"{entry.name} is a symbolic link to a folder, not a student's folder: "
                                         "not followed, nothing in it graded")
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue  # the grader's own files (grades.csv, names.csv)
        student_dir = Path(entry.path)
        top = top_notebooks(student_dir)
        yield from ((entry.name, path, "") for path in top)
        names = {path.name for path in top}
        for path in deeper_notebooks(student_dir):
            yield entry.name, path, why_not_graded(path, student_dir, names, entry.name)


def submissions(folder: Path) -> Iterator[tuple[str, Path]]:
    """(student, notebook) for every ``folder/<student>/<name>.ipynb`` to grade, in order (hidden files and
    the feedback folder skipped; sub-folders are not searched)."""
    for student, path, why in _survey(folder):
        if path is not None and not why:
            yield student, path


def not_graded(folder: Path) -> list[Row]:
    """A row of 0 of 0 points, with the reason, for each notebook in ``folder`` that is not graded
    (one deeper than the top of a student's folder) and for each student folder that is a link."""
    return [Row(student, path.name if path is not None else "", "", 0.0, 0.0, "error", why, 0.0)
            for student, path, why in _survey(folder) if why]


# Each submission's grading process is forked from a server that imported the grader once: a fresh Python
# would spend about 1.9 s importing it (nbformat's validator alone 1.3 s) for every submission.
_PROCESSES = multiprocessing.get_context("forkserver")
_PROCESSES.set_forkserver_preload([__name__])


def _graded_in_child(path: Path, student: str, sources: Path, options: GradingOptions, sender: Connection) -> None:
    """The grading process's work: adopt what the submission leaves behind, grade it, send the rows back."""
    adopt_orphans(options.sandbox)
    sender.send([asdict(row) for row in grade_file(path, student, sources, options)])


def _grade_in_process(path: Path, student: str, sources: Path, options: GradingOptions,
                      limit: float | None = None) -> list[Row]:
    """``grade_file`` in a process of its own (forked from the grader's server, :data:`_PROCESSES`): its rows.

    The process has a time limit for the whole of it (``limit`` seconds; by default the notebook's
    limit, the checker's, a kernel's start and two kills more), so that nothing a submission does (a
    kernel that will not start, a grader stuck in a kill) holds up the batch; past it, the process,
    everything below it and the cgroups it made (``cgroups.sweep``) are killed, and the submission gets
    a row that says so.
    """
    if limit is None:  # generous: the submission's own limit, the checker's, the start of both and the kills after
        limit = options.time_limit + grading.CHECKER_TIME_LIMIT + STARTUP_SECONDS + 2 * cgroups.KILL_SECONDS
    receiver, sender = _PROCESSES.Pipe(duplex=False)
    process = _PROCESSES.Process(target=_graded_in_child, args=(path, student, sources, options, sender))
    process.start()
    pid = process.pid
    assert pid is not None
    sender.close()
    try:
        if not receiver.poll(limit):
            # Its kernels and checker run in sessions of their own: killed as its descendants, not as a group.
            kill_tree(pid)
            return [Row(student, path.name, "", 0.0, 0.0, "error",
                        f"grading this notebook took over {limit:g} s and was stopped", 0.0)]
        return [Row(**row) for row in receiver.recv()]
    except (EOFError, OSError, TypeError) as exc:
        process.join(5)
        return [Row(student, path.name, "", 0.0, 0.0, "error",
                    f"the grading process failed (exit status {process.exitcode}): {type(exc).__name__}", 0.0)]
    finally:
        receiver.close()
        process.join(5)
        cgroups.sweep(pid)


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
    order of the submissions within each of the two groups, after a row for each notebook that is not
    graded (:func:`not_graded`). A notebook that lost points on a hidden check alone is graded again at
    once, in its slot, up to ``options.reruns`` times, and its best grading counts (:mod:`reruns`).
    """
    max_notebook_bytes()  # a mistyped IOLAB_MAX_NOTEBOOK_BYTES stops the batch before it starts
    yield from not_graded(folder)
    together, alone = plan(folder, sources, jobs)

    def settled(task: tuple[str, Path]) -> list[Row]:  # graded again at once, in its slot, if need be
        grade = partial(_grade_in_process, task[1], task[0], sources, options)
        return reruns.settle(grade(), grade, options.reruns)

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for rows in pool.map(settled, together):
                yield from rows
        for task in alone:
            yield from settled(task)
    finally:
        stop_server()


def plan(folder: Path, sources: Path, jobs: int) -> tuple[list[tuple[str, Path]], list[tuple[str, Path]]]:
    """The submissions (student, notebook) :func:`grade_folder` grades ``jobs`` at a time, and those it grades
    one at a time after them: with ``jobs`` > 1, those of solo notebooks (:func:`solo`)."""
    tasks = list(submissions(folder))
    alone = {name for name in {path.name for _, path in tasks} if solo(sources / name)} if jobs > 1 else set()
    return [t for t in tasks if t[1].name not in alone], [t for t in tasks if t[1].name in alone]


def progress(together: list[tuple[str, Path]], alone: list[tuple[str, Path]], jobs: int) -> str:
    """What :func:`plan` decided, in words: how many are graded how many at a time, and why some alone."""
    count = len(together) + len(alone)
    notebooks = f"{count} notebook{'' if count == 1 else 's'}"
    if jobs <= 1 or not count:
        return f"grading {notebooks}, one at a time"
    said = [f"{len(together)} of them {jobs} at a time"] if together else []
    if alone:
        solos = sorted({path.name for _, path in alone})
        said.append(f"{len(alone)} one at a time{' after those' if together else ''}: {', '.join(solos)} "
                    f"{'is' if len(solos) == 1 else 'are'} solo (a neighbour on the same cores would change what "
                    f"{'its' if len(solos) == 1 else 'their'} checks measure)")
    return f"grading {notebooks}, " + "; ".join(said)


def stop_server() -> None:
    """End the server the grading processes fork from, and multiprocessing's resource tracker that came with it
    (else both live on until this process exits, as processes a guard or a test would count as left behind)."""
    for module, name in ((multiprocessing.forkserver, "_forkserver"), (multiprocessing.resource_tracker, "_resource_tracker")):
        with contextlib.suppress(Exception):  # private to multiprocessing: a later Python may name them otherwise
            getattr(module, name)._stop()


def write_csv(rows: Iterable[Row], path: Path) -> list[Row]:
    """Write ``rows`` to CSV at ``path`` as they come (a crash keeps those done); the rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=grading.GRADES_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))
            f.flush()
            written.append(row)
    return written
