"""Moodle's offline grading worksheet, filled from the grades: the CSV an assignment downloads, handed back.

The teacher downloads the worksheet from the assignment (Download grading worksheet), and uploads it
filled (Upload grading worksheet). Its shape is Moodle's own (moodle/moodle, ``mod/assign/gradingtable.php``
at 1494620bfbb33538251bc1a222027f665b7da2ea, the columns when downloading; strings from
``mod/assign/lang/en/assign.php`` at 0085741f6f10a6c62f66ce4389fb1095d256f807):

- columns ``Identifier``, ``Full name``, the site's identity fields (``Email address``...), ``Status``,
  ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified (submission)``, then
  ``Last modified (grade)`` and a column per feedback editor (``Feedback comments``);
- ``Identifier`` is ``Participant <n>``: the assignment's participant number, the one Moodle's submissions
  download puts in each folder's name (``Full Name_<n>_assignsubmission_file_``), which intake matches
  against the roster's ``key``;
- written by OpenSpout's CSV writer (``lib/classes/dataformat/spout_base.php``): a UTF-8 byte order mark,
  then PHP's ``fputcsv``, which encloses a field holding a space, a comma, a quote or a line break;
- Moodle's upload (``mod/assign/feedback/offline/importgradeslib.php`` at
  9762977c028cbd1884ed311a94c49efbae87591b) finds ``Identifier``, ``Grade`` and ``Last modified (grade)`` by
  name, takes the participant number after ``Participant ``, and reads each feedback column by its title; it
  skips a grade that is empty, unchanged, above the maximum, or locked (``locallib.php``, ``process_import_grades``).

:func:`fill` writes the worksheet back in that same shape, each row where it was, with ``Grade`` (the student's
points, late penalty taken off, summed over the notebooks graded: a worksheet is one assignment, so grade one
notebook with it; as Moodle writes a grade, two decimals) and ``Feedback comments`` (the points per
notebook and exercise, never a check's message) for each student it matched; every other cell as Moodle wrote it.
A row is matched by the roster's keys kept at intake (:func:`keep_keys`: the participant number, a name, an
email), else by the student's id or name as ``Email address`` or ``Full name`` holds it. What it could not match
is said, both ways (:class:`Filled`), never dropped.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iolab.homework import reports
from iolab.homework.grading import Row
from iolab.homework.intake import POINTS_POSSIBLE
from iolab.homework.lateness import Late

IDENTIFIER = "Identifier"  # assign.php 'recordid'
FULL_NAME = "Full name"
EMAIL = "Email address"
GRADE = "Grade"
MAXIMUM = "Maximum Grade"  # assign.php 'maxgrade', as redefined there
SCALE = "Scale"  # in its place when the assignment is graded on a scale
CHANGEABLE = "Grade can be changed"
GRADE_MODIFIED = "Last modified (grade)"
FEEDBACK = "Feedback comments"  # assignfeedback_comments' editor field
NEEDED = (IDENTIFIER, GRADE, GRADE_MODIFIED)  # without any of these Moodle's upload refuses the file
PARTICIPANT = "Participant "  # assign.php 'hiddenuser', before the participant number
FILLED = "moodle-worksheet.csv"  # beside grades.csv
KEYS = "lms-keys.csv"  # intake's roster keys (what the LMS calls each student), kept for grading
BOM = "\ufeff"
ENCLOSED = frozenset(',"\n\r\t ')  # what makes PHP's fputcsv enclose a field (OpenSpout passes no escape char)
Lateness = Mapping[tuple[str, str], Late]


class WorksheetError(ValueError):
    """A file that is not Moodle's grading worksheet: the columns it has and those Moodle's upload needs."""


@dataclass(frozen=True)
class Worksheet:
    """Moodle's grading worksheet as read: its header and its rows, every cell as written."""

    header: list[str]
    rows: list[list[str]]

    def column(self, name: str) -> int | None:
        """The place of column ``name``, or None."""
        return self.header.index(name) if name in self.header else None

    def cell(self, row: list[str], name: str) -> str:
        """``row``'s cell in column ``name``, empty where there is none."""
        at = self.column(name)
        return row[at] if at is not None and at < len(row) else ""


def read_worksheet(path: Path) -> Worksheet:
    """The worksheet at ``path`` (its byte order mark dropped); :class:`WorksheetError` without Moodle's columns."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        table = list(csv.reader(f))
    header = table[0] if table else []
    lacking = [c for c in NEEDED if c not in header]
    if SCALE in header:  # gradingtable.php writes Scale in place of Maximum Grade for a scale
        raise WorksheetError(f"{path}: the assignment is graded on a scale (its worksheet has {SCALE}, no {MAXIMUM}); "
                             "the grader hands back points: set its Grade type to Point in Moodle and download it again")
    if lacking:
        raise WorksheetError(f"{path} is not Moodle's grading worksheet (Download grading worksheet, in English): "
                             f"no {', '.join(lacking)}; its columns are {', '.join(header) or 'none'}")
    return Worksheet(header, [row for row in table[1:] if any(row)])


def php_csv_line(cells: Sequence[str]) -> str:
    """One line as PHP's ``fputcsv`` writes it: a field holding a space, comma, quote or line break enclosed."""
    return ",".join(f'"{c.replace(chr(34), 2 * chr(34))}"' if ENCLOSED & set(c) else c for c in cells) + "\n"


def keep_keys(keys: Mapping[str, str], folder: Path) -> Path:
    """``folder/lms-keys.csv``: each roster key (lower-cased, as intake matched it) and the student id it names."""
    path = folder / KEYS
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["key", "id"])
        writer.writerows(sorted(keys.items()))
    return path


def read_keys(folder: Path) -> dict[str, str]:
    """The keys :func:`keep_keys` kept in ``folder``; none when intake kept none."""
    path = folder / KEYS
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8-sig") as f:
        return {row["key"].strip().lower(): row["id"] for row in csv.DictReader(f) if row.get("key") and row.get("id")}


def _who(sheet: Worksheet, row: list[str]) -> str:
    """A row as the console names it: ``Participant 1005 (Ada Lovelace)``."""
    name = sheet.cell(row, FULL_NAME)
    return sheet.cell(row, IDENTIFIER) + (f" ({name})" if name else "")


def match(sheet: Worksheet, students: Sequence[str], keys: Mapping[str, str],
          people: Mapping[str, Mapping[str, str]]) -> tuple[dict[int, str], list[str]]:
    """Each row's student (row index -> id) among ``students``, and the rows that named a student a row before
    them had already named. Tried in order: the roster's ``keys`` (participant number, identifier, email, full
    name), the student's id as the email or its part before ``@``, the student's name in ``people``."""
    ids = {s.lower(): s for s in students}
    names: dict[str, list[str]] = {}
    for one in students:
        names.setdefault(people.get(one, {}).get("name", "").strip().lower(), []).append(one)
    found: dict[int, str] = {}
    twice: list[str] = []
    for at, row in enumerate(sheet.rows):
        identifier, email = sheet.cell(row, IDENTIFIER).strip(), sheet.cell(row, EMAIL).strip().lower()
        name = sheet.cell(row, FULL_NAME).strip().lower()
        tokens = [identifier.removeprefix(PARTICIPANT).strip(), identifier.lower(), email, name]
        by_key = [keys[t] for t in tokens if t and t in keys]
        by_id = [ids[t] for t in (email, email.partition("@")[0]) if t and t in ids]
        by_name = names.get(name, []) if name else []
        student = next(iter([s for s in by_key if s in ids] + by_id + (by_name if len(by_name) == 1 else [])), None)
        if student is None:
            continue
        if student in found.values():
            twice.append(f"{_who(sheet, row)} -> {student}, already matched")
        else:
            found[at] = student
    return found, twice


@dataclass
class Filled:
    """What :func:`fill` wrote, and what it could not match, both ways."""

    path: Path
    filled: dict[str, str] = field(default_factory=dict)  # student id -> the row's identifier
    not_graded: list[str] = field(default_factory=list)  # rows no graded student matched
    not_in_worksheet: list[str] = field(default_factory=list)  # graded students no row matched
    twice: list[str] = field(default_factory=list)  # rows naming a student an earlier row named
    locked: list[str] = field(default_factory=list)  # filled rows whose Grade can be changed is No
    maximum: str = ""  # the worksheet's Maximum Grade
    possible: float = 0.0  # the notebooks' points possible
    feedback: bool = True  # a Feedback comments column to write into

    def lines(self) -> list[str]:
        """As the command says it: what was filled, each thing left out, and what Moodle will refuse."""
        lines = [f"Moodle worksheet: {len(self.filled)} grades filled in {self.path.resolve()}"]
        if self.not_graded:
            lines.append(f"  in the worksheet, not graded here (Grade left as Moodle wrote it): "
                         f"{'; '.join(self.not_graded)}")
        if self.not_in_worksheet:
            lines.append(f"  graded, in no row of the worksheet (not handed to Moodle): {', '.join(self.not_in_worksheet)}")
        if self.twice:
            lines.append(f"  rows naming a student an earlier row named (left as Moodle wrote them): {'; '.join(self.twice)}")
        if self.locked:
            lines.append(f"  Grade can be changed is No, so Moodle's upload skips them: {', '.join(self.locked)}")
        if not self.feedback:
            lines.append(f"  no {FEEDBACK} column: turn on Feedback comments in the assignment's settings and "
                         "download the worksheet again to hand back the points per exercise")
        try:
            top = float(self.maximum)
        except ValueError:
            return lines
        if abs(top - self.possible) > 1e-9:
            lines.append(f"  Moodle's {MAXIMUM} is {self.maximum} and the notebooks are out of {self.possible:g}: Moodle "
                         f"reads each Grade out of {self.maximum} and skips one above it; set the assignment's "
                         f"Maximum grade to {self.possible:g} to hand back the points as they are")
        return lines


def _feedback(student: str, rows: Sequence[Row], late: Lateness) -> str:
    """The plain summary for Feedback comments: per notebook its points, per exercise its points; no reasons."""
    parts = []
    for notebook in dict.fromkeys(r.notebook for r in rows):
        mine = [r for r in rows if r.notebook == notebook]
        earned, possible = sum(r.points for r in mine), sum(r.max_points for r in mine)
        text = f"{notebook.removesuffix('.ipynb')}: {earned:g} of {possible:g} points"
        text += " (" + ", ".join(f"{r.exercise} {r.points:g}/{r.max_points:g}" for r in mine) + ")"
        if (when := late.get((student, notebook))) is not None and when.days:
            text += f"; {when.words()}"
        parts.append(text)
    return "; ".join(parts)


def fill(rows: Sequence[Row], worksheet: Path, out: Path, keys: Mapping[str, str] | None = None,
         people: Mapping[str, Mapping[str, str]] | None = None, late: Lateness | None = None) -> Filled:
    """Write ``out``: the ``worksheet`` with Grade and Feedback comments filled for each graded student it matches
    (:func:`match`, with ``keys`` from intake and ``people`` from names.csv); what was filled and what was not."""
    sheet = read_worksheet(worksheet)
    graded = [r for r in rows if r.exercise]
    book = reports.gradebook(graded, None, None, True, late).set_index("Student")
    students = [str(s) for s in book.index if s != POINTS_POSSIBLE]
    found, twice = match(sheet, students, keys or {}, people or {})
    result = Filled(out, twice=twice, feedback=sheet.column(FEEDBACK) is not None,
                    possible=float(book.loc[POINTS_POSSIBLE, "Total"]) if students else 0.0,
                    maximum=sheet.cell(sheet.rows[0], MAXIMUM) if sheet.rows else "")
    grade, comments = sheet.column(GRADE), sheet.column(FEEDBACK)
    assert grade is not None  # read_worksheet refuses a worksheet without it
    written = []
    for at, row in enumerate(sheet.rows):
        row = row + [""] * (len(sheet.header) - len(row))
        student = found.get(at)
        if student is None:
            result.not_graded.append(_who(sheet, row))
        else:
            total = float(book.loc[student, "Total"])  # NaN while a written answer awaits a TA: left empty
            row[grade] = "" if math.isnan(total) else f"{total:.2f}"
            if comments is not None:
                row[comments] = _feedback(student, [r for r in graded if r.student == student], late or {})
            result.filled[student] = sheet.cell(row, IDENTIFIER)
            if sheet.cell(row, CHANGEABLE) == "No":
                result.locked.append(_who(sheet, row))
        written.append(row)
    result.not_in_worksheet = [s for s in students if s not in result.filled]
    out.write_text(BOM + "".join(php_csv_line(r) for r in [sheet.header, *written]), encoding="utf-8")
    return result
