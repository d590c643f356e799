"""An instructor's own checks and course secret, kept outside the public repository.

An open course publishes its hidden tests with its notebooks (anyone can read ``notebooks/``). An
instructor who grades a class can keep checks of their own in a folder the students never see,
and pass it to the grader (``make grade CHECKS=~/course-private``)::

    ~/course-private/
        secret                          a line of text: mixed into every student's id (kit.student.with_token)
        02-blocking/
            pred-states-check.py        replaces the hidden tests of that check cell
            ex-02-eof-check.add.py      is added after them

A file holds plain Python asserts, as a hidden-test block would; the public asserts of the cell
stay, as the students saw them. With a ``secret``, each student works with the id the instructor
hands them (``ada.3f9a1c2b``, from ``python -m iolab homework ids``), and the grader seeds each
submission from the id that the folder's name and the secret make.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat

from iolab.homework import markup

SECRET = "secret"
ADD_SUFFIX = ".add.py"


def read_secret(folder: Path | None) -> str | None:
    """The course secret in ``folder``/secret (its first line), or None."""
    if folder is None or not (folder / SECRET).is_file():
        return None
    return (folder / SECRET).read_text().strip().split("\n")[0] or None


def _hidden_block(text: str) -> list[str]:
    return [markup.BEGIN_HIDDEN, *text.rstrip("\n").split("\n"), markup.END_HIDDEN]


def with_private_checks(source: Any, folder: Path | None, notebook: str) -> tuple[Any, list[str]]:
    """``source`` with its check cells' hidden tests replaced or extended from ``folder``/<notebook stem>/.

    Returns the notebook (a copy, when anything changed) and the grade_ids changed. A file that names
    no check cell of the notebook raises ValueError: a typo must not leave a check unreplaced.
    """
    where = folder / Path(notebook).stem if folder is not None else None
    if where is None or not where.is_dir():
        return source, []
    nb = copy.deepcopy(source)
    checks = {gid: c for c in nb.cells if markup.role(c) == "check" and (gid := markup.grade_id(c))}
    changed = []
    for path in sorted(where.glob("*.py")):
        add = path.name.endswith(ADD_SUFFIX)
        gid = path.name.removesuffix(ADD_SUFFIX if add else ".py")
        if gid not in checks:
            raise ValueError(f"{path}: no check cell {gid!r} in {notebook} (one of {', '.join(sorted(checks))})")
        lines = checks[gid].source.split("\n")
        if not add:  # keep the public asserts, drop the published hidden tests
            inside, kept = False, []
            for line in lines:
                if line.strip() in (markup.BEGIN_HIDDEN, markup.END_HIDDEN):
                    inside = line.strip() == markup.BEGIN_HIDDEN
                elif not inside:
                    kept.append(line)
            lines = kept
        checks[gid].source = "\n".join([*lines, *_hidden_block(path.read_text())]).strip("\n")
        changed.append(gid)
    return nb, changed


def problems(folder: Path, notebooks: Path) -> list[str]:
    """What in ``folder`` names no check cell of the instructor notebooks in ``notebooks`` (nothing if all is well)."""
    found = []
    for path in sorted(notebooks.glob("*.ipynb")):
        try:
            with_private_checks(nbformat.read(path, as_version=4), folder, path.name)
        except ValueError as exc:
            found.append(str(exc))
    return found
