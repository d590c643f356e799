"""From an LMS's zip of submissions to SUBMISSIONS/<student id>/, using the instructor's roster.

The Canvas files (its gradebook export as the roster, its download's file names, anonymous ones
too) come from ``canvas_files``, whose docstring cites where in Canvas's source each shape is made.
"""

from __future__ import annotations

import copy
import stat
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

import canvas_files
import moodle_files
from iolab.commands import main
from iolab.homework import batch
from iolab.homework.intake import (EARLIER, MAX_MIB_ENV, MAX_RATIO_ENV, IntakeLimits, RosterError, intake,
                                   limits_from_environment, read_people, read_roster)

MIB = 1 << 20
ROSTER = "id,key,name\nada,12345,Ada Lovelace\ngrace,777,Grace Hopper\nalan,4242,Alan Turing\nbob,999,Bob\n"
NOTEBOOKS = {"02-blocking.ipynb", "04-prefork.ipynb"}


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _roster(tmp_path: Path) -> Path:
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    return roster


def _zeros_member(zf: zipfile.ZipFile, name: str, mib: int) -> None:
    """A member of ``mib`` MiB of zeros, written a MiB at a time so that making it costs no memory."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED  # a bare ZipInfo is stored
    with zf.open(info, "w", force_zip64=True) as f:
        for _ in range(mib):
            f.write(bytes(MIB))


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_canvas_and_moodle_names_land_in_the_students_folders_by_roster(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {
        "lovelaceada_12345_998877_02-blocking.ipynb": "{}",
        "hopper_LATE_777_112233_02-blocking-1.ipynb": "{}",
        "Alan Turing_4242_assignsubmission_file_/04-prefork.ipynb": "{}",
        "stranger_555_1_02-blocking.ipynb": "{}",
        "lovelaceada_12345_998877_notes.txt": "not a notebook",
        "evil_12345_1_..%2f..%2fescape.ipynb": "{}",
    })
    out = tmp_path / "submissions"
    done = intake(archive, _roster(tmp_path), out, NOTEBOOKS)
    assert (out / "ada" / "02-blocking.ipynb").is_file()
    assert (out / "grace" / "02-blocking.ipynb").is_file()  # Canvas's -1 suffix and _LATE mark undone
    assert (out / "alan" / "04-prefork.ipynb").is_file()
    assert done.unmatched == ["stranger_555_1_02-blocking.ipynb"]
    assert (out / ".unmatched" / "stranger_555_1_02-blocking.ipynb").is_file()
    assert not any(p.suffix == ".txt" for p in out.rglob("*"))
    assert all(out in p.parents for p in out.rglob("*"))
    assert (out / "names.csv").read_text().splitlines()[:2] == ["id,name,canvas_id,sis_user_id,sis_login_id,section",
                                                               "ada,Ada Lovelace,12345,,,"]
    assert set(done.names) - set(done.placed) == {"bob"}
    assert done.refused == [] and done.earlier == {}


def test_moodles_download_in_folders_without_them_or_anonymous_lands_by_the_participant_number(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(moodle_files.ROSTER)
    out = tmp_path / "submissions"
    done = intake(_zip(tmp_path / "subs.zip", moodle_files.DOWNLOAD), roster, out, {"hw.ipynb"})
    assert {s: [p.relative_to(out).as_posix() for p in paths] for s, paths in done.placed.items()} == {
        "ada": ["ada/hw.ipynb"], "grace": ["grace/hw.ipynb"], "alan": ["alan/hw.ipynb"]}
    assert (out / "grace" / "hw.ipynb").read_text() == "grace's, renamed"
    assert done.renamed == [("grace", "my_hw.ipynb", "hw.ipynb")]
    assert done.unmatched == [] and done.refused == []


def test_a_member_inflating_past_the_cap_is_refused_in_little_memory_and_the_rest_is_placed(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_RATIO_ENV, "1000000")  # zeros: only the size cap is left to stop them
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        _zeros_member(zf, "lovelaceada_12345_1_02-blocking.ipynb", 300)
        zf.writestr("hopper_777_2_02-blocking.ipynb", "{}")
    assert archive.stat().st_size < 5 * MIB
    out = tmp_path / "submissions"
    tracemalloc.start()
    try:
        start = time.monotonic()
        done = intake(archive, _roster(tmp_path), out, NOTEBOOKS)
        seconds = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * MIB, f"intake held {peak / MIB:.0f} MiB for a member of 300 MiB"
    assert seconds < 20
    assert done.refused == [("lovelaceada_12345_1_02-blocking.ipynb", f"inflates past 20 MiB ({MAX_MIB_ENV})")]
    assert _files(out) == {"grace/02-blocking.ipynb", "names.csv", "canvas-uploads.csv"}  # no partial file left
    assert done.placed == {"grace": [out / "grace" / "02-blocking.ipynb"]}


def test_a_member_that_inflates_too_many_times_its_size_is_refused(tmp_path):
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        _zeros_member(zf, "lovelaceada_12345_1_02-blocking.ipynb", 5)  # under 20 MiB, about 1000:1
        zf.writestr("hopper_777_2_02-blocking.ipynb", b"{}" + bytes(MIB // 2))  # as compressible, but under 1 MiB
    done = intake(archive, _roster(tmp_path), tmp_path / "out", NOTEBOOKS)
    assert done.refused == [("lovelaceada_12345_1_02-blocking.ipynb",
                             f"inflates more than 100 times its size in the zip ({MAX_RATIO_ENV})")]
    assert _files(tmp_path / "out") == {"grace/02-blocking.ipynb", "names.csv", "canvas-uploads.csv"}


def test_the_caps_come_from_the_environment_and_a_bad_value_names_its_variable(monkeypatch):
    assert limits_from_environment() == IntakeLimits(max_bytes=20 * MIB, max_ratio=100)
    monkeypatch.setenv(MAX_MIB_ENV, "1.5")
    monkeypatch.setenv(MAX_RATIO_ENV, "7")
    assert limits_from_environment() == IntakeLimits(max_bytes=int(1.5 * MIB), max_ratio=7)
    monkeypatch.setenv(MAX_MIB_ENV, "lots")
    with pytest.raises(ValueError, match=MAX_MIB_ENV):
        limits_from_environment()


def test_a_lower_cap_from_the_environment_refuses_a_smaller_notebook(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_MIB_ENV, "1")
    archive = _zip(tmp_path / "subs.zip", {"lovelaceada_12345_1_02-blocking.ipynb": bytes(2 * MIB)})  # stored
    done = intake(archive, _roster(tmp_path), tmp_path / "out", NOTEBOOKS)
    assert [why for _, why in done.refused] == [f"inflates past 1 MiB ({MAX_MIB_ENV})"]
    assert done.placed == {}


@pytest.mark.parametrize(("kind", "why"), [(stat.S_IFLNK, "a symbolic link"),
                                           (stat.S_IFIFO, "not a regular file (mode prw-r--r--)")])
def test_a_member_that_is_not_a_regular_file_is_refused(tmp_path, kind, why):
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        odd = zipfile.ZipInfo("lovelaceada_12345_1_02-blocking.ipynb")
        odd.create_system = 3  # Unix: the high 16 bits of external_attr are the mode
        odd.external_attr = (kind | 0o644) << 16
        zf.writestr(odd, "/etc/passwd")
        zf.writestr("hopper_777_2_02-blocking.ipynb", "{}")
    out = tmp_path / "out"
    done = intake(archive, _roster(tmp_path), out, NOTEBOOKS)
    assert done.refused == [("lovelaceada_12345_1_02-blocking.ipynb", why)]
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert _files(out) == {"grace/02-blocking.ipynb", "names.csv", "canvas-uploads.csv"}


def test_bzip2_members_and_overlapping_members_are_refused(tmp_path):
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("lovelaceada_12345_1_02-blocking.ipynb", "{}", compress_type=zipfile.ZIP_BZIP2)
        zf.writestr("hopper_777_2_02-blocking.ipynb", "{}")
        zf.filelist.append(copy.copy(zf.filelist[-1]))  # a second directory entry for the same bytes
    done = intake(archive, _roster(tmp_path), tmp_path / "out", NOTEBOOKS)
    assert [(name, why.split(";")[0]) for name, why in done.refused] == [
        ("lovelaceada_12345_1_02-blocking.ipynb", "compressed with method 12"),
        ("hopper_777_2_02-blocking.ipynb", "shares its bytes in the zip with another member (an overlap zip bomb)"),
        ("hopper_777_2_02-blocking.ipynb", "shares its bytes in the zip with another member (an overlap zip bomb)"),
    ]
    assert done.placed == {} and _files(tmp_path / "out") == {"names.csv"}


def test_three_canvas_uploads_by_one_student_are_all_kept_and_the_highest_submission_is_graded(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {  # the newest is not the last in the zip: the submission id decides
        "lovelaceada_12345_456_02-blocking.ipynb": "first",
        "lovelaceada_12345_901_02-blocking-2.ipynb": "third",
        "lovelaceada_12345_789_02-blocking-1.ipynb": "second",
        "hopper_777_5_02-blocking.ipynb": "grace's only",
    })
    out = tmp_path / "submissions"
    done = intake(archive, _roster(tmp_path), out, NOTEBOOKS)
    assert (out / "ada" / "02-blocking.ipynb").read_text() == "third"
    earlier = out / EARLIER / "ada"
    assert {p.name: p.read_text() for p in earlier.iterdir()} == {"456-02-blocking.ipynb": "first",
                                                                  "789-02-blocking.ipynb": "second"}
    assert done.placed == {"ada": [out / "ada" / "02-blocking.ipynb"], "grace": [out / "grace" / "02-blocking.ipynb"]}
    assert sorted(done.earlier["ada"]) == sorted(earlier.iterdir()) and set(done.earlier) == {"ada"}
    assert [(s, p.name) for s, p in batch.submissions(out)] == [("ada", "02-blocking.ipynb"),
                                                                ("grace", "02-blocking.ipynb")]


@pytest.mark.filterwarnings("ignore:Duplicate name")  # the same name twice is the case under test
def test_without_submission_ids_the_later_date_then_the_later_place_in_the_zip_is_graded(tmp_path):
    folder = "Ada Lovelace_12345_assignsubmission_file_/"
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zipfile.ZipInfo(folder + "02-blocking.ipynb", (2024, 3, 2, 9, 0, 0)), "newer by date")
        zf.writestr(zipfile.ZipInfo(folder + "02-blocking.ipynb", (2024, 3, 1, 9, 0, 0)), "older by date")
        zf.writestr(zipfile.ZipInfo(folder + "04-prefork.ipynb", (2024, 3, 1, 9, 0, 0)), "earlier in the zip")
        zf.writestr(zipfile.ZipInfo(folder + "04-prefork.ipynb", (2024, 3, 1, 9, 0, 0)), "later in the zip")
    out = tmp_path / "submissions"
    done = intake(archive, _roster(tmp_path), out, NOTEBOOKS)
    assert (out / "ada" / "02-blocking.ipynb").read_text() == "newer by date"
    assert (out / "ada" / "04-prefork.ipynb").read_text() == "later in the zip"
    assert {p.name: p.read_text() for p in done.earlier["ada"]} == {"2-02-blocking.ipynb": "older by date",
                                                                    "3-04-prefork.ipynb": "earlier in the zip"}


def test_unmatched_files_of_the_same_name_are_all_kept(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {
        "Someone_1_assignsubmission_file_/02-blocking.ipynb": "one",
        "Someone Else_2_assignsubmission_file_/02-blocking.ipynb": "two",
    })
    out = tmp_path / "submissions"
    done = intake(archive, _roster(tmp_path), out, NOTEBOOKS)
    assert len(done.unmatched) == 2
    assert sorted(p.read_text() for p in (out / ".unmatched").iterdir()) == ["one", "two"]


def _canvas_export(tmp_path: Path, text: str = canvas_files.EXPORT) -> Path:
    export = tmp_path / "Grades-IO_101.csv"
    export.write_text(text)
    return export


def test_canvas_gradebook_export_is_a_roster_keyed_by_canvas_id_with_the_course_id_from_its_column(tmp_path):
    out = tmp_path / "submissions"
    done = intake(_zip(tmp_path / "subs.zip", canvas_files.DOWNLOAD), _canvas_export(tmp_path), out, NOTEBOOKS)
    assert done.roster is not None and done.roster.kind == "Canvas gradebook export"
    assert done.roster.used == ["Student", "ID", "SIS Login ID", "SIS User ID", "Section"]
    assert done.roster.lacking == [] and done.unmatched == []
    assert sorted(done.placed) == ["agarcia", "alovelace", "cdoe"]  # "    Points Possible" is nobody
    assert read_people(out / "names.csv")["alovelace"] == {
        "id": "alovelace", "name": "Lovelace, Ada", "canvas_id": "1001", "sis_user_id": "S0001",
        "sis_login_id": "alovelace", "section": "Section A"}
    by_sis = intake(_zip(tmp_path / "subs.zip", canvas_files.DOWNLOAD), _canvas_export(tmp_path), tmp_path / "b",
                    NOTEBOOKS, id_column="SIS User ID")
    assert sorted(by_sis.placed) == ["S0001", "S0003", "S0009"]


def test_a_roster_without_the_columns_it_needs_names_them_and_the_command_exits_2(tmp_path, capsys):
    no_login = "\n".join(line.replace(",alovelace,", ",,") for line in canvas_files.EXPORT.splitlines())
    header_only = _canvas_export(tmp_path, no_login.replace("SIS Login ID", "Login"))
    with pytest.raises(RosterError, match="its columns are Student, ID, SIS User ID, Login, Section, HW2 Blocking"
                                          r" \(4321\).*needs ID and SIS Login ID"):
        read_roster(header_only)
    emails = tmp_path / "emails.csv"
    emails.write_text("email,name\nada@example.edu,Ada\n")
    with pytest.raises(RosterError, match="columns are email, name; the course's roster needs id and key"):
        read_roster(emails)
    archive = _zip(tmp_path / "subs.zip", canvas_files.DOWNLOAD)
    assert main(["homework", "intake", str(archive), "--roster", str(emails), "--out", str(tmp_path / "out")]) == 2
    assert "not unpacked" in capsys.readouterr().out and not (tmp_path / "out").exists()


def test_canvas_anonymous_names_match_the_anonymous_ids_in_the_roster(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,key,name\nada,1001;k3x9p,Ada\ncyd,anon_q7w2e,Cyd\ndee,1004,Dee\n")
    out = tmp_path / "submissions"
    done = intake(_zip(tmp_path / "subs.zip", canvas_files.ANONYMOUS), roster, out, NOTEBOOKS)
    assert done.unmatched == []
    assert {s: (out / s / "02-blocking.ipynb").read_text() for s in done.placed} == {
        "ada": "k3x9p's", "cyd": "q7w2e's, late", "dee": "1004's, late, older Canvas"}
    assert read_people(out / "names.csv")["ada"]["canvas_id"] == "1001"  # the one numeric key


def test_a_lone_notebook_a_student_renamed_is_placed_as_the_assignments_and_said(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {**canvas_files.DOWNLOAD,
                                           "garciaana_1009_5550010_hw2 final-1.ipynb": "ana's, later"})
    out = tmp_path / "submissions"
    done = intake(archive, _canvas_export(tmp_path), out, NOTEBOOKS)
    assert (out / "agarcia" / "02-blocking.ipynb").read_text() == "ana's, later"  # her latest upload
    assert [p.name for p in done.earlier["agarcia"]] == ["5550009-02-blocking.ipynb"]
    assert done.renamed == [("agarcia", "hw2 final.ipynb", "02-blocking.ipynb")]
    assert [(s, p.name) for s, p in batch.submissions(out)] == [
        ("agarcia", "02-blocking.ipynb"), ("alovelace", "02-blocking.ipynb"), ("cdoe", "02-blocking.ipynb")]


def test_a_renamed_notebook_keeps_its_name_when_the_assignment_is_not_known(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {"lovelaceada_1001_1_02-blocking.ipynb": "{}",
                                           "doecyd_1003_2_04-prefork.ipynb": "{}",
                                           "garciaana_1009_3_hw2 final.ipynb": "{}"})
    done = intake(archive, _canvas_export(tmp_path), tmp_path / "a", NOTEBOOKS)
    assert done.renamed == [] and done.placed["agarcia"] == [tmp_path / "a" / "agarcia" / "hw2 final.ipynb"]
    named = intake(archive, _canvas_export(tmp_path), tmp_path / "b", NOTEBOOKS, assignment="02-blocking.ipynb")
    assert named.renamed == [("agarcia", "hw2 final.ipynb", "02-blocking.ipynb")]


def test_the_intake_command_says_which_columns_it_used_what_it_renamed_and_which_upload_it_kept(tmp_path, capsys):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in NOTEBOOKS:
        (notebooks / name).write_text("{}")
    archive = _zip(tmp_path / "subs.zip", {**canvas_files.DOWNLOAD, "doecyd_LATE_1003_5550013_02-blocking-1.ipynb": "2"})
    out = tmp_path / "out"
    assert main(["homework", "intake", str(archive), "--roster", str(_canvas_export(tmp_path)), "--out", str(out),
                 "--notebooks", str(notebooks)]) == 0
    said = capsys.readouterr().out
    assert "read as a Canvas gradebook export: columns Student, ID, SIS Login ID, SIS User ID, Section used" in said
    assert "agarcia's only notebook, hw2 final.ipynb, placed as 02-blocking.ipynb" in said
    assert "1 earlier uploads of 1 students kept" in said and "(the latest upload is graded): cdoe (1)" in said
    assert (out / "canvas-gradebook.csv").read_text() == canvas_files.EXPORT
