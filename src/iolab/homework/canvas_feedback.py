"""Feedback back to students through Canvas: one zip per notebook for its "Re-Upload Submissions".

Canvas's re-upload attaches each file of a zip to one student's submission, as a comment "See attached
file". It reads nothing but the file's name (instructure/canvas-lms, ``app/models/abstract_assignment.rb``,
``infer_comment_context_from_filename``): the name split at ``_``, every ``LATE`` part dropped;
``anon_<anonymous id>_<attachment id>_...`` names an anonymous submission; otherwise the first two parts
that are all digits are the user id and the attachment id. The attachment must be one of that
submission's own files, so a feedback file can only be named after the student's upload as Canvas named
it in its download: intake keeps those names (:func:`record`, ``canvas-uploads.csv``), and
:func:`bundle` names each student's ``feedback/<student>/<notebook>.html`` with the upload's prefix, up to
its attachment id. Canvas shows the attached file under the display name of the student's own upload
(``02-blocking.ipynb``), with the comment hidden while the grade is. Files it cannot place it lists as ignored.
"""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from iolab.homework.lateness import open_replacement

UPLOADS = "canvas-uploads.csv"  # student, notebook, uploaded_as: the graded notebooks' names in Canvas's zip
FOLDER = "canvas"  # feedback/canvas/<notebook stem>.zip
FEEDBACK = "feedback"


def canvas_prefix(name: str) -> str | None:
    """The part of Canvas's name ``name`` that Canvas reads back: up to its attachment id; None if it reads none.

    >>> canvas_prefix("lovelaceada_LATE_1001_55501_02-blocking.ipynb")
    'lovelaceada_LATE_1001_55501'
    >>> canvas_prefix("LATE_anon_x7Kp2_55503_hw.ipynb")
    'LATE_anon_x7Kp2_55503'
    >>> canvas_prefix("02-blocking.ipynb") is None
    True
    """
    parts = name.split("_")
    kept = [i for i, part in enumerate(parts) if part != "LATE"]
    if len(kept) >= 3 and parts[kept[0]] == "anon":
        return "_".join(parts[:kept[2] + 1]) if parts[kept[2]].isdigit() else None
    numbers = [i for i in kept if parts[i].isdigit() and parts[i].isascii()]
    return "_".join(parts[:numbers[1] + 1]) if len(numbers) >= 2 and not name.startswith("._") else None


def record(out: Path, placed: Iterable[tuple[str | None, Path, zipfile.ZipInfo]]) -> None:
    """Keep, in ``out/canvas-uploads.csv``, the Canvas name of each graded notebook intake placed in ``out``."""
    rows = sorted({(student, path.name, name) for student, path, member in placed
                   if student and path.parent == out / student and path.is_file()  # placed, not refused
                   and canvas_prefix(name := PurePosixPath(member.filename).name)})
    if not rows:  # not a Canvas zip: no file, and none left from an earlier intake into this folder
        (out / UPLOADS).unlink(missing_ok=True)
        return
    with open_replacement(out / UPLOADS) as temporary, temporary.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "notebook", "uploaded_as"])
        writer.writerows(rows)


def bundle(submissions: Path) -> list[Path]:
    """Write ``feedback/canvas/<notebook>.zip`` for each notebook intake took from Canvas; the zips written.

    Each holds ``<Canvas's prefix>_<notebook>-feedback.html`` for every student whose feedback page exists,
    the class's as it stands (a regrade of two students rebuilds it whole).
    """
    if not (submissions / UPLOADS).is_file():
        return []
    with (submissions / UPLOADS).open(newline="") as f:
        uploads = list(csv.DictReader(f))
    by_notebook: dict[str, list[tuple[str, Path]]] = {}
    for row in uploads:
        stem = Path(row["notebook"]).stem
        page = submissions / FEEDBACK / row["student"] / f"{stem}.html"
        prefix = canvas_prefix(row["uploaded_as"])
        if prefix and page.is_file():
            by_notebook.setdefault(stem, []).append((f"{prefix}_{stem}-feedback.html", page))
    written = []
    for stem, files in sorted(by_notebook.items()):
        target = submissions / FEEDBACK / FOLDER / f"{stem}.zip"
        target.parent.mkdir(parents=True, exist_ok=True)
        with open_replacement(target) as temporary, zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, page in sorted(files):
                zf.write(page, name)
        written.append(target)
    return written
