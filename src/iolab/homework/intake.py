"""From an LMS's download to the grader's folders: ``SUBMISSIONS/<student id>/<notebook>.ipynb``.

An LMS hands the instructor one zip of every submission, each file renamed after its submitter. Canvas
names a file ``<name>[_LATE]_<user id>_<attachment id>_<original name>`` and adds ``-1``, ``-2`` to a name it has
seen; with anonymous grading, ``[LATE_]anon_<anonymous id>_<attachment id>_<original name>`` (and, in older
Canvas, no name at all: ``[LATE_]<user id>_...``). Moodle puts each submitter's files in a folder
``<Full Name>_<participant id>_assignsubmission_file_`` (or that before each name).

The roster maps what the LMS wrote to the course's student id (the id students work with, which
seeds their parameters). It is either the course's own CSV, columns ``id``, ``key`` (the LMS's user
id, the anonymous id, or the name as it appears in the file names; several separated by ``;``) and
optionally ``name``, ``sis_user_id``, ``sis_login_id``, ``section``; or Canvas's own gradebook export
(``Student,ID,SIS User ID,SIS Login ID,Section,...``, its "Points Possible" row skipped), where the
course's id is the column ``id_column`` names (default ``SIS Login ID``) and the key is ``ID``, the
Canvas user id. Either way ``names.csv`` keeps, per student, what the gradebook hands back to Canvas
(:data:`PEOPLE_COLUMNS`). A roster with neither set of columns is refused with :class:`RosterError`,
which names the columns it has and those it lacks.

A student's single notebook under a name that is not the course's (``hw2 final.ipynb``) is placed as the assignment's
notebook (:func:`graded_as`, as the Gradescope grader does): ``assignment``, else the one course notebook the others name.
Kept for later: Canvas's ``LATE`` marks and each file's time in the zip (``lateness.record``), Canvas's names of the
graded notebooks, which feedback is sent back under (``canvas_feedback.record``).

Nothing is dropped silently, and nothing in the zip is trusted:

- A file whose submitter is not in the roster goes to ``SUBMISSIONS/.unmatched/``, which the grader skips; intake reports it.
- Several uploads by one student for one notebook: the newest is graded (the highest Canvas
  submission id, else the latest date in the zip, else the later in the archive); the others are
  kept in ``SUBMISSIONS/.earlier/<student id>/<submission id or place in the zip>-<notebook>``.
  When the newest is refused, nothing is graded for that notebook: no earlier upload is graded in its place.
- Each member is inflated to disk 64 KiB at a time, counting what it inflates to (the size a
  header claims is never believed), and refused, its partial file deleted, when it passes either
  cap: ``MAX_MIB`` (20 MiB, ``IOLAB_INTAKE_MAX_MIB``; a notebook with outputs is a few MB) or,
  once past 1 MiB, ``MAX_RATIO`` (100 bytes inflated per byte in the zip, ``IOLAB_INTAKE_MAX_RATIO``).
  Symbolic links, anything else that is not a regular file, encrypted members, members compressed
  other than stored or deflated (bzip2 and lzma inflate without a bound per read) and members that
  share their bytes in the zip with another (an overlap zip bomb) are refused too. A refused member is reported with why; the rest of the zip is still placed.
"""

from __future__ import annotations

import csv
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from iolab.homework import canvas_feedback, lateness

# content_zipper.rb's get_filename: [sortable name, "LATE" if late, user id] joined by "_", then
# "_<attachment id>_<display name>"; an anonymous assignment's "anon_<anonymous id>" in place of name and id.
CANVAS = re.compile(r"^(?:(?:LATE_)?anon_(?P<anon>[A-Za-z0-9]+)|(?:(?P<name>[^_]+?)_)?(?:LATE_)?(?P<user>\d+))"
                    r"_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assign\w*?_?$")
MOODLE_FILE = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_file_(?P<file>.+)$")  # not "in folders"
DUPLICATE = re.compile(r"^(?P<stem>.+?)-\d+$")  # Canvas's "02-blocking-1.ipynb"

MAX_MIB = 20  # a notebook with plots in its outputs is a few MB
MAX_MIB_ENV = "IOLAB_INTAKE_MAX_MIB"
MAX_RATIO = 100  # deflate rarely beats 20:1 on a notebook's JSON and base64 images; zeros give 1000:1
MAX_RATIO_ENV = "IOLAB_INTAKE_MAX_RATIO"
RATIO_AFTER = 1 << 20  # a small member may compress well (a long repeated output): no harm below 1 MiB
CHUNK = 64 * 1024
UNMATCHED = ".unmatched"
EARLIER = ".earlier"
INFLATABLE = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
NAMES = "names.csv"
CANVAS_GRADEBOOK = "canvas-gradebook.csv"  # a Canvas gradebook export given as the roster, kept for grading
# names.csv: per student, what the gradebook hands back to Canvas (reports.gradebook reads it).
PEOPLE_COLUMNS = ["id", "name", "canvas_id", "sis_user_id", "sis_login_id", "section"]
COURSE_ROSTER = ("id", "key")  # the course's own roster needs both
CANVAS_EXPORT = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_ID_COLUMNS = ("SIS Login ID", "SIS User ID", "ID")  # where a Canvas export may hold the course's id
POINTS_POSSIBLE = "Points Possible"  # Canvas's second row ("    Points Possible"), not a student


class RosterError(ValueError):
    """A roster that names nobody: the columns it has and those it lacks."""


@dataclass
class Roster:
    """Who is who: the LMS's keys (lower-cased) to the course's id, each student's columns, and which were read."""

    keys: dict[str, str]
    people: dict[str, dict[str, str]]  # student id -> PEOPLE_COLUMNS
    kind: str  # "course roster" or "Canvas gradebook export"
    used: list[str]
    lacking: list[str]


@dataclass
class Intake:
    """What an intake did: files placed per student id (``placed``: the one graded per notebook; ``earlier``: the older
    uploads, in ``.earlier``), files it could not place or would not (``refused``: with why), and the names it learned."""

    placed: dict[str, list[Path]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)
    earlier: dict[str, list[Path]] = field(default_factory=dict)
    renamed: list[tuple[str, str, str]] = field(default_factory=list)  # (student, as uploaded, as graded)
    roster: Roster | None = None


@dataclass(frozen=True)
class IntakeLimits:
    """How large one member of the zip may inflate: in bytes, and in bytes per byte in the zip."""

    max_bytes: int = MAX_MIB << 20
    max_ratio: float = MAX_RATIO


def limits_from_environment() -> IntakeLimits:
    """The caps, with ``IOLAB_INTAKE_MAX_MIB`` and ``IOLAB_INTAKE_MAX_RATIO`` where they are set."""
    values = {}
    for variable, default in ((MAX_MIB_ENV, MAX_MIB), (MAX_RATIO_ENV, MAX_RATIO)):
        text = os.environ.get(variable, "").strip()
        try:
            values[variable] = float(text) if text else default
        except ValueError:
            raise ValueError(f"{variable}={text!r} is not a number; set it to a number (default {default})") from None
        if values[variable] <= 0:
            raise ValueError(f"{variable}={text} must be above 0 (default {default})")
    return IntakeLimits(max_bytes=int(values[MAX_MIB_ENV] * (1 << 20)), max_ratio=values[MAX_RATIO_ENV])


@dataclass
class _Upload:
    """One notebook member of the zip, with whose it is and where it sorts among that student's uploads."""

    member: zipfile.ZipInfo
    place: int  # its place in the zip, from 1
    student: str | None
    notebook: str
    submission: int | None

    def age(self) -> tuple[int, tuple[int, ...], int]:
        """The sort key of newness: submission id, then the date in the zip, then the place in it."""
        return (self.submission if self.submission is not None else -1, self.member.date_time, self.place)


def _table(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV (Excel's byte order mark dropped), every value stripped."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        rows = [{k.strip(): (v or "").strip() for k, v in row.items() if k is not None} for row in reader]
        return [c.strip() for c in reader.fieldnames or []], rows


def read_roster(path: Path, id_column: str = "SIS Login ID") -> Roster:
    """Who is who, from the course's roster (id, key[, name, ...]) or Canvas's gradebook export.

    :class:`RosterError` when the file has neither's columns, naming those it has and those it lacks.
    """
    header, rows = _table(path)
    keys: dict[str, str] = {}
    people: dict[str, dict[str, str]] = {}
    if all(c in header for c in COURSE_ROSTER):
        kind, used = "course roster", [c for c in PEOPLE_COLUMNS + ["key"] if c in header]
        lacking = [c for c in PEOPLE_COLUMNS if c not in header and c != "canvas_id"]
        for row in rows:
            if not (student := row.get("id", "")):
                continue
            found = [k.strip() for k in row.get("key", "").split(";") if k.strip()]
            keys |= {k.lower(): student for k in found}
            numbers = [k for k in found if k.isdigit()]  # the Canvas user id, when the key holds one
            people[student] = {c: row.get(c, "") for c in PEOPLE_COLUMNS} | {
                "id": student, "name": row.get("name") or student,
                "canvas_id": numbers[0] if len(numbers) == 1 else ""}
    elif "ID" in header and id_column in header:
        kind = "Canvas gradebook export"
        used = [c for c in dict.fromkeys(["Student", "ID", id_column, *CANVAS_EXPORT]) if c in header]
        lacking = [c for c in CANVAS_EXPORT if c not in header]
        for row in rows:
            student, canvas_id = row.get(id_column, ""), row.get("ID", "")
            if not student or not canvas_id or row.get("Student", "") == POINTS_POSSIBLE:
                continue
            keys[canvas_id.lower()] = student
            people[student] = {"id": student, "name": row.get("Student") or student, "canvas_id": canvas_id,
                               "sis_user_id": row.get("SIS User ID", ""),
                               "sis_login_id": row.get("SIS Login ID", ""), "section": row.get("Section", "")}
    else:
        canvas = "ID" in header
        needs = (f"a Canvas gradebook export needs ID and {id_column} (the course's id; --id-column names "
                 f"another of {', '.join(CANVAS_ID_COLUMNS)})" if canvas else
                 f"the course's roster needs {' and '.join(COURSE_ROSTER)} (name optional); a Canvas gradebook "
                 f"export needs ID and {id_column}")
        raise RosterError(f"{path}: no one can be matched: its columns are {', '.join(header) or 'none'}; {needs}")
    return Roster(keys, people, kind, used, lacking)


def write_people(people: dict[str, dict[str, str]], path: Path) -> None:
    """``names.csv``: a row of :data:`PEOPLE_COLUMNS` per student, by id."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=PEOPLE_COLUMNS)
        writer.writeheader()
        writer.writerows(people[s] for s in sorted(people))


def read_people(path: Path) -> dict[str, dict[str, str]]:
    """``names.csv`` as :func:`write_people` wrote it (an older one, ``id,name``, too): student id -> columns."""
    _, rows = _table(path)
    return {row["id"]: {c: row.get(c, "") for c in PEOPLE_COLUMNS} for row in rows if row.get("id")}


def graded_as(name: str, notebooks: Collection[str]) -> str:
    """The notebook a student's lone notebook ``name`` is graded as: the one of ``notebooks`` when there is one, else itself."""
    only = sorted(notebooks)
    return only[0] if len(only) == 1 else name


def _who_and_file(member: str) -> tuple[list[str], str, int | None]:
    """The tokens that may name the submitter, the file's original name and the submission id, for one member."""
    parts = PurePosixPath(member).parts
    if len(parts) > 1 and (match := MOODLE.match(parts[0])) or (match := MOODLE_FILE.match(parts[-1])):
        return [match["user"], match["name"]], match.groupdict().get("file") or parts[-1], None
    name = parts[-1]
    if match := CANVAS.match(name):
        tokens = [match["anon"], f"anon_{match['anon']}"] if match["anon"] else [match["user"], match["name"]]
        return [t for t in tokens if t], match["file"], int(match["submission"])
    return [parts[0]] if len(parts) > 1 else [], name, None


def _course_name(name: str, notebooks: set[str]) -> str:
    """``name`` as the course calls the notebook: Canvas's ``-1`` suffix dropped when that gives a course notebook."""
    return original if name not in notebooks and (original := _uploaded_as(name)) in notebooks else name


def _uploaded_as(name: str) -> str:
    """``name`` without the ``-1``, ``-2`` Canvas adds to a name it has seen."""
    stem, suffix = name.rsplit(".", 1) if "." in name else (name, "")
    return f"{match['stem']}.{suffix}" if (match := DUPLICATE.match(stem)) else name


def _refusal(member: zipfile.ZipInfo) -> str | None:
    """Why ``member`` is not to be inflated at all, from its header alone, or None."""
    mode = member.external_attr >> 16  # Unix mode bits, where the zip was made on Unix; 0 elsewhere
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return f"not a regular file (mode {stat.filemode(mode)})"
    if member.flag_bits & 0x1:
        return "encrypted"
    if member.compress_type not in INFLATABLE:
        return f"compressed with method {member.compress_type}; only stored and deflated members are read"
    return None


def _extract(zf: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, caps: IntakeLimits) -> str | None:
    """Inflate ``member`` to ``target`` within ``caps``: None, or why it was refused (and nothing written)."""
    if reason := _refusal(member):
        return reason
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a refused member never leaves half a notebook where the grader looks.
    partial = target.with_name(f".{target.name}.part")
    written, reason = 0, None
    try:
        with zf.open(member) as source, partial.open("wb") as sink:
            while chunk := source.read(CHUNK):
                written += len(chunk)
                if written > caps.max_bytes:
                    reason = f"inflates past {caps.max_bytes / (1 << 20):g} MiB ({MAX_MIB_ENV})"
                elif written > RATIO_AFTER and written > caps.max_ratio * max(member.compress_size, 1):
                    reason = f"inflates more than {caps.max_ratio:g} times its size in the zip ({MAX_RATIO_ENV})"
                if reason:
                    break
                sink.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        reason = f"damaged: {exc}"
    if reason:
        partial.unlink(missing_ok=True)
        return reason
    partial.replace(target)
    return None


def _overlapping(members: list[zipfile.ZipInfo]) -> set[int]:
    """The positions in ``members`` of those whose bytes in the zip overlap another's (an overlap zip bomb)."""
    # 30 bytes of local header is the least a member takes before its data: a member that starts before that much
    # past the previous one's start plus its compressed size shares its bytes. Python checks it from 3.11.8 (CVE-2024-0450).
    spans = sorted((m.header_offset, m.header_offset + 30 + m.compress_size, i) for i, m in enumerate(members))
    found, reach, owner = set(), -1, -1
    for start, end, i in spans:
        if start < reach:
            found |= {i, owner}
        if end > reach:
            reach, owner = end, i
    return found


def _uploads(zf: zipfile.ZipFile, keys: dict[str, str], notebooks: set[str]) -> list[_Upload]:
    """The notebook members of the zip, each with its student (None when not in the roster)."""
    found = []
    for place, member in enumerate(zf.infolist(), start=1):
        if member.is_dir() or not member.filename.endswith(".ipynb"):
            continue
        tokens, original, submission = _who_and_file(member.filename)
        student = next((keys[t.lower()] for t in tokens if t.lower() in keys), None)
        safe = PurePosixPath(original).name  # never a path from the archive: no ../ escapes
        found.append(_Upload(member, place, student, _course_name(safe, notebooks), submission))
    return found


def _rename_lone(uploads: list[_Upload], notebooks: set[str], assignment: str | None) -> list[tuple[str, str, str]]:
    """Give each student's lone notebook that is not the course's the assignment's name (:func:`graded_as`); what changed.

    A student whose every upload bears one name, not a course notebook's, has a lone notebook. The
    assignment's notebook is ``assignment``, else the one course notebook the other uploads name.
    """
    if not notebooks:
        return []
    named = {assignment} if assignment else {u.notebook for u in uploads if u.student and u.notebook in notebooks}
    by_student: dict[str, list[_Upload]] = {}
    for upload in uploads:
        if upload.student is not None:
            by_student.setdefault(upload.student, []).append(upload)
    renamed = []
    for student, mine in by_student.items():
        names = {_uploaded_as(u.notebook) for u in mine}  # "hw2 final-1.ipynb" is Canvas's second "hw2 final.ipynb"
        if len(names) == 1 and not names & notebooks and (new := graded_as(name := names.pop(), named)) != name:
            renamed.append((student, name, new))
            for upload in mine:
                upload.notebook = new
    return renamed


def _earlier_names(older: list[_Upload], notebook: str) -> list[str]:
    """A file name for each older upload of one notebook: ``<submission id>-<notebook>``, else its place in the zip."""
    ids = [u.submission for u in older]
    names: list[str] = []
    for upload in older:
        unique = upload.submission is not None and ids.count(upload.submission) == 1
        name = f"{upload.submission if unique else upload.place}-{notebook}"
        names.append(name if name not in names else f"{upload.place}.{name}")
    return names


def _targets(uploads: list[_Upload], out: Path) -> dict[int, Path]:
    """Where each upload goes, by place in the zip: the newest per student and notebook at the top, the rest aside."""
    targets: dict[int, Path] = {}
    groups: dict[tuple[str, str], list[_Upload]] = {}
    unmatched: set[str] = set()
    for upload in uploads:
        if upload.student is None:
            name = PurePosixPath(upload.member.filename).name
            name = f"{upload.place}-{name}" if name in unmatched else name
            unmatched.add(name)
            targets[upload.place] = out / UNMATCHED / name
        else:
            groups.setdefault((upload.student, upload.notebook), []).append(upload)
    for (student, notebook), group in groups.items():
        *older, newest = sorted(group, key=_Upload.age)
        targets[newest.place] = out / student / notebook
        for upload, name in zip(older, _earlier_names(older, notebook)):
            targets[upload.place] = out / EARLIER / student / name
    return targets


def intake(archive: Path, roster: Path, out: Path, notebooks: set[str] | None = None,
           caps: IntakeLimits | None = None, assignment: str | None = None,
           id_column: str = "SIS Login ID") -> Intake:
    """Unpack the LMS's ``archive`` into ``out/<student id>/``, using ``roster``; what was placed and what was not.

    ``caps`` defaults to :func:`limits_from_environment`; ``assignment`` names the notebook a lone
    renamed one is graded as (default: the one course notebook the other uploads name); ``id_column``
    is the column of a Canvas gradebook export that holds the course's ids (:func:`read_roster`).
    """
    who = read_roster(roster, id_column)
    caps = caps or limits_from_environment()
    result = Intake(names={s: p["name"] for s, p in who.people.items()}, roster=who)
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        overlapping = {i + 1 for i in _overlapping(members)}  # places in the zip, as _Upload.place
        uploads = _uploads(zf, who.keys, notebooks or set())
        result.renamed = _rename_lone(uploads, notebooks or set(), assignment)
        targets = _targets(uploads, out)
        for upload in uploads:
            target = targets[upload.place]
            name = upload.member.filename
            if upload.place in overlapping:
                result.refused.append((name, "shares its bytes in the zip with another member (an overlap zip bomb)"))
            elif reason := _extract(zf, upload.member, target, caps):
                result.refused.append((name, reason))
            elif upload.student is None:
                result.unmatched.append(name)
            elif target.parent.parent == out / EARLIER:
                result.earlier.setdefault(upload.student, []).append(target)
            else:
                result.placed.setdefault(upload.student, []).append(target)
    write_people(who.people, out / NAMES)
    placed = [(u.student, targets[u.place], u.member) for u in uploads if u.place in targets]
    lateness.record(out, placed)
    canvas_feedback.record(out, placed)  # the names Canvas's re-upload of feedback reads back
    return result
