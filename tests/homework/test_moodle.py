"""Moodle's grading worksheet, downloaded, filled from the grades, and handed back in Moodle's own shape.

The worksheet and the submissions download are those of ``moodle_files``, whose docstring cites where in
Moodle's source (moodle/moodle: ``mod/assign/gradingtable.php``, ``mod/assign/lang/en/assign.php``,
``mod/assign/feedback/offline/importgradeslib.php``, ``lib/classes/dataformat/spout_base.php``) each part
of the shape is made: header, "Participant N", dates, quoting and byte order mark.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import moodle_files
from homework_notebooks import paste_solutions, tiny_course, write
from iolab.commands import main
from iolab.homework import editions, moodle, sandbox
from iolab.homework.grading import Row
from iolab.homework.lateness import Late

SANDBOX_FLAG = [] if sandbox.usable() is None else ["--no-sandbox"]


def _rows(student: str, a: float, b: float) -> list[Row]:
    return [Row(student, "hw.ipynb", "ex-a", a, 1.0, "passed" if a == 1 else "failed", "hidden check 1 of 1 failed", 1.0),
            Row(student, "hw.ipynb", "ex-b", b, 2.0, "passed" if b == 2 else "partial", "", 1.0)]


def _worksheet(tmp_path: Path, text: str = moodle_files.WORKSHEET) -> Path:
    path = tmp_path / "worksheet.csv"
    path.write_bytes(text.encode())
    return path


def test_the_worksheet_comes_back_in_moodles_bytes_with_grade_and_feedback_for_each_matched_student(tmp_path):
    rows = _rows("ada", 1, 2) + _rows("alan", 0, 1) + _rows("bob", 1, 0)
    out = tmp_path / "moodle-worksheet.csv"
    done = moodle.fill(rows, _worksheet(tmp_path), out, keys={"1001": "ada", "1003": "alan"},
                       late={("alan", "hw.ipynb"): Late(1, 10.0)})
    text = out.read_bytes().decode()
    assert text.startswith(moodle_files.BOM) and "\r" not in text
    header, ada, grace, alan = text.removeprefix(moodle_files.BOM).splitlines()
    assert header == moodle_files.HEADER
    assert ada == ('"Participant 1001","Ada Lovelace",ada@example.edu,"Submitted for grading",3.00,3.00,Yes,'
                   '"Friday, 7 November 2025, 9:05 AM",-,"hw: 3 of 3 points (ex-a 1/1, ex-b 2/2)"')
    assert grace == moodle_files.ROWS[1]  # not graded: as Moodle wrote it
    assert alan.split(",")[4:7] == ["0.90", "3.00", "No"]  # 1 of 3 points, 10 % off for a day late
    assert alan.endswith('"hw: 1 of 3 points (ex-a 0/1, ex-b 1/2); submitted 1 day late: -10 %"')
    assert "hidden check" not in text
    assert done.filled == {"ada": "Participant 1001", "alan": "Participant 1003"}
    assert done.not_graded == ["Participant 1002 (Grace Hopper)"]
    assert done.not_in_worksheet == ["bob"]
    lines = done.lines()
    assert lines[0] == f"Moodle worksheet: 2 grades filled in {out.resolve()}"
    assert any("not graded here" in line and "Participant 1002 (Grace Hopper)" in line for line in lines)
    assert any("in no row of the worksheet" in line and line.endswith("bob") for line in lines)
    assert any("Grade can be changed is No" in line and "Participant 1003 (Alan Turing)" in line for line in lines)
    assert not any("Maximum Grade" in line for line in lines)  # 3.00 in Moodle, 3 points in the notebook


def test_without_intakes_keys_a_row_is_matched_by_the_email_or_the_name_and_never_twice(tmp_path):
    duplicate = moodle_files.ROWS[0].replace("Participant 1001", "Participant 1009")
    sheet = _worksheet(tmp_path, moodle_files.WORKSHEET + duplicate + "\n")
    rows = _rows("ada", 1, 2) + _rows("g.hopper", 1, 1)
    done = moodle.fill(rows, sheet, tmp_path / "out.csv", people={"g.hopper": {"name": "Grace Hopper"}})
    assert done.filled == {"ada": "Participant 1001", "g.hopper": "Participant 1002"}
    assert done.twice == ["Participant 1009 (Ada Lovelace) -> ada, already matched"]
    assert done.not_graded == ["Participant 1003 (Alan Turing)", "Participant 1009 (Ada Lovelace)"]
    assert (tmp_path / "out.csv").read_text(encoding="utf-8-sig").splitlines()[-1] == duplicate


def test_a_maximum_grade_other_than_the_points_possible_is_said_with_the_fix(tmp_path):
    sheet = _worksheet(tmp_path, moodle_files.WORKSHEET.replace(",3.00,", ",100.00,"))
    done = moodle.fill(_rows("ada", 1, 2), sheet, tmp_path / "out.csv", keys={"1001": "ada"})
    assert any("Maximum Grade is 100.00 and the notebooks are out of 3" in line
               and "set the assignment's Maximum grade to 3" in line for line in done.lines())


def test_a_file_that_is_not_moodles_worksheet_is_refused_naming_the_columns_moodle_needs(tmp_path):
    canvas = tmp_path / "canvas.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section,HW2 Blocking (4321)\n")
    with pytest.raises(moodle.WorksheetError, match=r"no Identifier, Grade, Last modified \(grade\); its columns are "
                       r"Student, ID"):
        moodle.read_worksheet(canvas)
    with pytest.raises(moodle.WorksheetError, match="graded on a scale"):
        moodle.read_worksheet(_worksheet(tmp_path, moodle_files.WORKSHEET.replace('"Maximum Grade"', "Scale")))
    no_feedback = _worksheet(tmp_path, moodle_files.WORKSHEET.replace(',"Feedback comments"', ""))
    done = moodle.fill(_rows("ada", 1, 2), no_feedback, tmp_path / "out.csv", keys={"1001": "ada"})
    assert done.filled == {"ada": "Participant 1001"}
    assert any("no Feedback comments column" in line for line in done.lines())


@pytest.mark.timeout(300)
def test_moodles_download_and_worksheet_round_trip_through_intake_and_the_grade_command(tmp_path, capsys):
    instructor = tiny_course()
    write(instructor, tmp_path / "notebooks" / "hw.ipynb")
    solved = write(paste_solutions(editions.student_edition(instructor), instructor), tmp_path / "solved.ipynb")
    unsolved = write(editions.student_edition(instructor), tmp_path / "unsolved.ipynb")
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(solved, "Ada Lovelace_1001_assignsubmission_file_/hw.ipynb")
        zf.write(unsolved, "Alan Turing_1003_assignsubmission_file_/hw.ipynb")
        zf.write(solved, "Bob Late_1004_assignsubmission_file_/hw.ipynb")  # enrolled after the download
    roster = tmp_path / "roster.csv"
    roster.write_text(moodle_files.ROSTER + "bob,1004,Bob Late\n")
    subs = tmp_path / "submissions"
    notebooks = ["--notebooks", str(tmp_path / "notebooks")]
    assert main(["homework", "intake", str(archive), "--roster", str(roster), "--out", str(subs), *notebooks]) == 0
    assert moodle.read_keys(subs) == {"1001": "ada", "1002": "grace", "1003": "alan", "1004": "bob"}
    sheet = _worksheet(tmp_path)
    with pytest.raises(SystemExit):
        main(["homework", "grade", str(subs), *notebooks, "--moodle-worksheet", str(roster), *SANDBOX_FLAG])
    assert "--moodle-worksheet" in capsys.readouterr().err and not (subs / "grades.csv").exists()
    assert main(["homework", "grade", str(subs), *notebooks, "--moodle-worksheet", str(sheet), "--jobs", "2",
                 *SANDBOX_FLAG]) == 0
    said = capsys.readouterr().out
    assert f"moodle worksheet: {(subs / 'moodle-worksheet.csv').resolve()}" in said
    assert "Moodle worksheet: 2 grades filled" in said
    assert "Participant 1002 (Grace Hopper)" in said and "in no row of the worksheet (not handed to Moodle): bob" in said
    lines = (subs / "moodle-worksheet.csv").read_text(encoding="utf-8-sig").splitlines()
    assert lines[0] == moodle_files.HEADER and lines[2] == moodle_files.ROWS[1]
    assert lines[1].split(",")[4] == "3.00" and lines[3].split(",")[4] == "0.00"
    assert len(lines) == 4
