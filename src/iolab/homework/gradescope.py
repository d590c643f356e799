"""Gradescope's autograder format: a package that grades one notebook (or several) with this course's grader.

Gradescope unzips ``autograder.zip`` into ``/autograder/source``, runs its ``setup.sh`` once when
the image is built, and for each submission copies the student's files into
``/autograder/submission``, runs ``/autograder/run_autograder`` and reads
``/autograder/results/results.json``: ``{"score", "tests": [{"name", "score", "max_score",
"output", "visibility"}], ...}`` (https://gradescope-autograders.readthedocs.io/en/latest/specs/). Here
one test is one exercise; its output is the row's reason (never quoting a hidden test), the parameters
the student was graded on and the row's note. A test whose score tells how the exercise's hidden
checks went is shown to the student only at the package's ``visibility`` (``after_published`` unless
the instructor chose otherwise), so that a fixed-choice prediction cannot be found by resubmitting;
a test that failed on its public checks alone tells nothing of them and stays visible.

The student's course id, which seeds their parameters, comes from the roster packed with the
autograder (``roster.csv``, the format ``homework intake`` reads), looked up by the submitter's email,
then sid, then Gradescope user id (a key ``gradescope:<id>``): ``submission_metadata.json`` promises
each user's ``email``, ``id`` and ``name``, not a student id
(https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/).
A submitter the roster does not name is not graded, and results.json says why. Without a roster the
id is the ``sid`` Gradescope may add, else the email.

Gradescope runs the grader as root in a Docker container of its own. Where bubblewrap can build
its sandbox there (``setup.sh`` installs it; Docker's default seccomp profile usually refuses the
user namespace it needs), each submission's kernel and checker get one as under ``make grade``.
Where it cannot, the submission's kernel runs as ``nobody`` and the checker as another user
(``sandbox.Unprivileged``), so that the kernel can neither read nor signal the checker (nor its
folder and pipes through ``/proc``); job and verdict cross over the checker's pipes, never files;
and the instructor notebooks and private checks are made readable by root only first: the
student's code cannot read the key it is graded against. Which of these ran is said in
``results.json``'s output; :func:`confinement` falls back to no sandbox only when neither works
(this grader not root, or another user cannot run its Python), and says so there too.

An upload is data, never a path to follow: a notebook is read only if it is a regular file within
``batch``'s size limit, never through a symbolic link (a repository can hold one to the
instructor's notebook), and a notebook in a sub-folder is graded only when it is the only one.

``AUTOGRADER_ROOT`` names another root than ``/autograder`` (the tests build a fake tree),
``AUTOGRADER_PYTHON`` another Python than the one ``setup.sh`` installs, and ``AUTOGRADER_SANDBOX``
(``bwrap``, ``nobody`` or ``none``) overrides the choice :func:`confinement` makes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import batch, contract, markup, private, reruns, sandbox
from iolab.homework.contract import VISIBILITIES, SandboxKind, Visibility
from iolab.homework.scratch import open_folder
from iolab.homework.grading import GradingOptions, Row
from iolab.homework.intake import Roster, graded_as, read_roster
from iolab.kit.paths import COURSE_DATA

COURSE = COURSE_DATA.parent
# What the package carries from the course: the kit, the lock it installs from, and the data it reads.
PACKAGED = ("pyproject.toml", "requirements.lock", "src/iolab", "data/published.csv", "data/reference")
ROSTER = "roster.csv"  # in the package: Gradescope's identities to the course's ids
SETTINGS = "gradescope.json"  # in the package: what the instructor chose when building it

SETUP_SH = """#!/usr/bin/env bash
# Runs once, when Gradescope builds the autograder's image (Ubuntu 22.04 or 24.04).
set -euo pipefail
cd /autograder/source
apt-get update -qq && apt-get install -y -qq python3-venv util-linux bubblewrap >/dev/null
# uv in a virtual environment of its own: Ubuntu 24.04's Python refuses a system-wide pip (PEP 668).
python3 -m venv /autograder/uv
/autograder/uv/bin/pip install --quiet "uv==$(sed -n 's/^uv==//p' requirements.lock)"
# Python 3.11 as uv provides it (Ubuntu ships 3.10 or 3.12), installed where other users can run it
# (the submissions run as nobody), then the course's pinned packages.
export UV_PYTHON_INSTALL_DIR=/usr/local/share/uv-python
/autograder/uv/bin/uv venv --quiet --python 3.11 .venv
# Compiled to bytecode here: the kernels run as nobody, who cannot write Python's caches into root's folders,
# and would otherwise compile every import (the kit's plotting stack: 7 s) from source in every grading.
/autograder/uv/bin/uv pip sync --quiet --compile-bytecode --python .venv/bin/python requirements.lock
.venv/bin/python -m compileall -q src/iolab
chmod -R a+rX /usr/local/share/uv-python .venv src
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission; results land in $ROOT/results/results.json.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/source/.venv/bin/python}"
cd "$ROOT/source"
PYTHONPATH="$ROOT/source/src" exec "$PYTHON" -m iolab.homework.gradescope "$ROOT"
"""


def _add_tree(archive: zipfile.ZipFile, path: Path, name: str) -> None:
    if path.is_dir():
        for child in sorted(path.rglob("*")):
            if child.is_file() and "__pycache__" not in child.parts:
                archive.write(child, f"{name}/{child.relative_to(path)}")
    elif path.is_file():
        archive.write(path, name)


def _script(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16  # executable once unzipped
    archive.writestr(info, text)


def build_package(notebooks: Sequence[Path], out: Path, checks: Path | None = None, roster: Path | None = None,
                  visibility: Visibility = "after_published") -> Path:
    """Write ``out`` (an autograder.zip) that grades ``notebooks`` (instructor editions); its path.

    ``checks``, the instructor's private folder (``private``), goes in as ``private/``: its secret and
    the checks of these notebooks. ``roster`` (read first: ``intake.RosterError`` when it names nobody)
    goes in as ``roster.csv``; ``visibility`` is that of the tests hidden checks score.
    """
    if roster is not None:
        read_roster(roster)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        _script(archive, "setup.sh", SETUP_SH)
        _script(archive, "run_autograder", RUN_AUTOGRADER)
        for name in PACKAGED:
            _add_tree(archive, COURSE / name, name)
        for path in notebooks:
            archive.write(path, f"notebooks/{path.name}")
            if checks is not None and (checks / path.stem).is_dir():
                _add_tree(archive, checks / path.stem, f"private/{path.stem}")
        if checks is not None and (checks / private.SECRET).is_file():
            archive.write(checks / private.SECRET, f"private/{private.SECRET}")
        if roster is not None:
            archive.write(roster, ROSTER)
        archive.writestr(SETTINGS, json.dumps({"visibility": visibility}))
    return out


def submitter(root: Path) -> dict[str, Any]:
    """The first user of Gradescope's ``submission_metadata.json`` (documented: email, id, name); {} if none."""
    try:
        users = json.loads((root / "submission_metadata.json").read_text()).get("users") or [{}]
    except (OSError, ValueError, AttributeError):
        users = [{}]
    return users[0] if isinstance(users[0], dict) else {}


def _lookups(roster: Roster) -> list[tuple[str, dict[str, str]]]:
    """Where each of Gradescope's identities is looked up, lower-cased, to the course id: the email among every
    name the roster knows (no number is an email); the sid among the school's ids alone, and the Gradescope user
    id only as a key written ``gradescope:<id>``, so that neither meets another student's LMS user id."""
    school = {p[c].lower(): s for s, p in roster.people.items()
              for c in ("id", "sis_user_id", "sis_login_id") if p.get(c)}
    return [("email", school | roster.keys), ("sid", school), ("id", roster.keys)]


def student_id(root: Path, roster: Roster | None = None) -> str | None:
    """The submitter's course id: from ``roster`` by email, then sid, then Gradescope user id (None when it names
    none of them); without a roster, the sid Gradescope may add, else the email."""
    user = submitter(root)
    if roster is None:
        return str(user.get("sid") or user.get("email") or user.get("id") or "student")
    for field, known in _lookups(roster):
        value = str(user.get(field) or "").strip().lower()
        key = f"gradescope:{value}" if field == "id" else value
        if value and key in known:
            return known[key]
    return None


def not_in_roster(root: Path) -> Row:
    """The one row of a submitter the packed roster does not name: nothing graded, and why."""
    user = submitter(root)
    who = str(user.get("email") or user.get("sid") or user.get("id") or "unknown")
    return Row(who, "", "", 0.0, 0.0, "error",
               f"not graded: your Gradescope account ({who}) is not in the course's roster, so the numbers you "
               "were given cannot be drawn again; ask your instructor to add you, then resubmit", 0.0)


def hidden_exercises(sources: Path, checks: Path | None) -> set[tuple[str, str]]:
    """(notebook stem, exercise) for every exercise of ``sources``' notebooks a hidden check scores (all of a
    notebook's when its private checks name no check cell of it: which would be hidden cannot be told)."""
    found = set()
    for path in sorted(sources.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        try:
            nb, _ = private.with_private_checks(nb, checks, path.name)
        except ValueError:
            found |= {(path.stem, exercise.label) for exercise in markup.exercises(nb)}
            continue
        for exercise in markup.exercises(nb):
            if any(markup.BEGIN_HIDDEN in nb.cells[i].source for i in exercise.checks):
                found.add((path.stem, exercise.label))
    return found


def package_visibility(source: Path) -> Visibility:
    """The visibility the package was built with (``after_published`` when it says none)."""
    try:
        chosen = json.loads((source / SETTINGS).read_text()).get("visibility")
    except (OSError, ValueError, AttributeError):
        chosen = None
    return next((v for v in VISIBILITIES if v == chosen), "after_published")


def _submitted(root: Path, sources: Path, student: str) -> tuple[list[tuple[Path, str]], list[Row]]:
    """The submitted notebooks to grade, each with the name it is graded as; a row for each one that is not.

    Gradescope copies an upload into ``submission/`` as it came: files at the top, a zip unpacked
    with its folders, a repository with its own. A single notebook, anywhere and under any name, is
    taken for the single notebook graded. Otherwise the notebooks at the top are graded, each as
    itself, and one deeper down is not (a row says so), so that no notebook counts twice. Whatever
    kind of file each is, ``batch.read_notebook`` reads only a regular one, never through a link.
    """
    folder = root / "submission"
    if not folder.is_dir() or folder.is_symlink():
        return [], []
    top, deeper = batch.top_notebooks(folder), batch.deeper_notebooks(folder)
    graded = sorted(sources.glob("*.ipynb"))
    if len(top) + len(deeper) == 1:
        only = (top + deeper)[0]
        return [(only, graded_as(only.name, [path.name for path in graded]))], []
    names = {path.name for path in top}
    return [(path, path.name) for path in top], [Row(student, path.name, "", 0.0, 0.0, "error",
                                                     batch.why_not_graded(path, folder, names), 0.0) for path in deeper]


def _output(row: Row) -> str:
    """What the student reads under a test: the status and reason, their parameters, the row's note."""
    lines = [row.status + (f": {row.reason}" if row.reason else "")]
    lines += [f"graded with your parameters: {row.parameters}"] * bool(row.parameters)
    return "\n".join(lines + [f"note: {row.note}"] * bool(row.note))


def _visibility(row: Row, hidden: set[tuple[str, str]], visibility: Visibility) -> Visibility:
    """``visibility`` for a test whose score depends on hidden checks; visible for one failed on public checks alone."""
    if (Path(row.notebook).stem, row.exercise) not in hidden:
        return "visible"
    public_failure = row.status != "passed" and row.points == 0 and "hidden check" not in row.reason
    return "visible" if public_failure else visibility


def results(rows: Sequence[Row], hidden: set[tuple[str, str]] | None = None,
            visibility: Visibility = "after_published") -> dict[str, Any]:
    """Gradescope's results.json for ``rows``; the tests of ``hidden`` exercises shown at ``visibility``."""
    tests = [{"name": f"{Path(r.notebook).stem}: {r.exercise or 'notebook'}", "score": r.points,
              "max_score": r.max_points, "output": _output(r),
              "visibility": _visibility(r, hidden or set(), visibility)} for r in rows]
    return {"score": round(sum(r.points for r in rows), 2), "tests": tests, "stdout_visibility": "hidden",
            "output": "Graded at quick scale; each exercise's checks ran in a separate process on your answers."}


SANDBOX_SAID = {
    "bwrap": "Your notebook ran in a bubblewrap sandbox, and its checks in another.",
    "nobody": "Your notebook ran as user nobody, and its checks as another user.",
    "none": ("Your notebook ran as the grader's own user (this grader is not root, or no other user can run "
             "its Python): only the container kept it from the instructor's files."),
}


def confinement() -> SandboxKind:
    """How to confine submissions here: ``bwrap`` where it builds its sandbox, else ``nobody`` where this grader
    is root and other users can run its Python, else ``none``."""
    if override := os.environ.get("AUTOGRADER_SANDBOX"):
        return contract.sandbox_kind(override)
    if sandbox.usable() is None:
        return "bwrap"
    if os.geteuid() != 0:
        return "none"
    with open_folder("iolab-probe-") as folder:
        scratch = folder / "scratch"
        scratch.mkdir()
        for uid in (sandbox.NOBODY, sandbox.CHECKER_UID):
            argv = sandbox.Unprivileged(scratch, uid=uid).wrap([sys.executable, "-c", "import iolab.homework"])
            if subprocess.run(argv, capture_output=True, timeout=60).returncode != 0:
                return "none"
    return "nobody"


def _graded(root: Path, sources: Path, student: str, options: GradingOptions) -> list[Row]:
    """The rows of ``student``'s submission: each notebook graded, and each one that was not."""
    rows: list[Row] = []
    submitted, not_graded = _submitted(root, sources, student)
    for path, name in submitted:
        grade = partial(batch.grade_file, path, student, sources, options, name)
        rows += reruns.settle(grade(), grade, options.reruns)
    if not submitted:
        rows = [Row(student, "", "", 0.0, 0.0, "missing", "no notebook (.ipynb) was submitted"
                    + (" at the top of the upload, where the grader looks" if not_graded else ""), 0.0)]
    return rows + not_graded


def run(root: Path, options: GradingOptions | None = None) -> Path:
    """Grade ``root``/submission against ``root``/source/notebooks; write and return ``root``/results/results.json."""
    sources = root / "source" / "notebooks"
    private_dir = root / "source" / "private"
    options = options or GradingOptions(sandbox=confinement(), private=str(private_dir) if private_dir.is_dir() else None)
    roster_file = root / "source" / ROSTER
    if options.sandbox != "none":
        for folder in (sources, private_dir):  # the key and the secret: root's only, not the submission's
            if folder.is_dir():
                os.chmod(folder, 0o700)
        if roster_file.is_file():  # the class's emails: not the submission's either
            os.chmod(roster_file, 0o600)
    batch.adopt_orphans(options.sandbox)
    student = student_id(root, read_roster(roster_file) if roster_file.is_file() else None)
    rows = [not_in_roster(root)] if student is None else _graded(root, sources, student, options)
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = results(rows, hidden_exercises(sources, Path(options.private) if options.private else None),
                     package_visibility(root / "source"))
    report["output"] += " " + SANDBOX_SAID[options.sandbox]
    out.write_text(json.dumps(report, indent=2))
    return out


DEFAULT_ROOT = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))


def main(argv: list[str]) -> int:
    """``python -m iolab.homework.gradescope ROOT``, what ``run_autograder`` runs: grade ROOT's submission."""
    print(f"results: {run(Path(argv[1]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
