"""From an LMS's download to the grader's folders: ``SUBMISSIONS/<student id>/<notebook>.ipynb``.

An LMS hands the instructor one zip of every submission, each file renamed after its submitter.
Canvas names a file ``<name>[_LATE]_<user id>_<submission id>_<original name>`` and adds ``-1``,
``-2`` to a name it has seen; Moodle puts each submitter's files in a folder
``<Full Name>_<participant id>_assignsubmission_file_``. The roster (a CSV the instructor exports)
maps what the LMS wrote to the course's student id: columns ``id`` (the id students work with,
which seeds their parameters), ``key`` (the LMS's user id, or the name as it appears in the file
names) and optionally ``name``.

A file whose submitter cannot be found in the roster is not dropped: it goes to
``SUBMISSIONS/.unmatched/``, which the grader skips, and :func:`intake` reports it.
"""

from __future__ import annotations

import csv
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

CANVAS = re.compile(r"^(?P<name>[^_]+?)(?:_LATE)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assign\w*?_?$")
DUPLICATE = re.compile(r"^(?P<stem>.+?)-\d+$")  # Canvas's "02-blocking-1.ipynb"


@dataclass
class Intake:
    """What an intake did: files placed per student id, files it could not place, and the names it learned."""

    placed: dict[str, list[Path]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


def read_roster(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(LMS key, lower-cased -> student id, student id -> name) from a roster CSV with columns id, key[, name]."""
    keys, names = {}, {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            student = (row.get("id") or "").strip()
            if not student:
                continue
            for key in (row.get("key") or "").split(";"):
                if key.strip():
                    keys[key.strip().lower()] = student
            names[student] = (row.get("name") or student).strip()
    return keys, names


def _who_and_file(member: str) -> tuple[list[str], str]:
    """The tokens that may name the submitter, and the file's original name, for one member of the zip."""
    parts = PurePosixPath(member).parts
    if len(parts) > 1 and (match := MOODLE.match(parts[0])):
        return [match["user"], match["name"]], parts[-1]
    name = parts[-1]
    if match := CANVAS.match(name):
        return [match["user"], match["name"]], match["file"]
    return [parts[0]] if len(parts) > 1 else [], name


def _course_name(name: str, notebooks: set[str]) -> str:
    """``name`` as the course calls the notebook: Canvas's ``-1`` suffix dropped when that gives a course notebook."""
    stem, suffix = name.rsplit(".", 1) if "." in name else (name, "")
    if name not in notebooks and (match := DUPLICATE.match(stem)) and f"{match['stem']}.{suffix}" in notebooks:
        return f"{match['stem']}.{suffix}"
    return name


def intake(archive: Path, roster: Path, out: Path, notebooks: set[str] | None = None) -> Intake:
    """Unpack the LMS's ``archive`` into ``out/<student id>/``, using ``roster``; what was placed and what was not."""
    keys, names = read_roster(roster)
    result = Intake(names=names)
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            if member.is_dir() or not member.filename.endswith(".ipynb"):
                continue
            tokens, original = _who_and_file(member.filename)
            student = next((keys[t.lower()] for t in tokens if t.lower() in keys), None)
            safe = PurePosixPath(original).name  # never a path from the archive: no ../ escapes
            if student is None:
                target = out / ".unmatched" / PurePosixPath(member.filename).name
                result.unmatched.append(member.filename)
            else:
                target = out / student / _course_name(safe, notebooks or set())
                result.placed.setdefault(student, []).append(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(member))
    with (out / "names.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "name"])
        writer.writerows(sorted(names.items()))
    return result
