"""From an LMS's zip of submissions to SUBMISSIONS/<student id>/, using the instructor's roster."""

from __future__ import annotations

import zipfile

from iolab.homework.intake import intake


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_canvas_and_moodle_names_land_in_the_students_folders_by_roster(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {
        "lovelaceada_12345_998877_02-blocking.ipynb": "{}",
        "hopper_LATE_777_112233_02-blocking-1.ipynb": "{}",
        "Alan Turing_4242_assignsubmission_file_/04-prefork.ipynb": "{}",
        "stranger_555_1_02-blocking.ipynb": "{}",
        "lovelaceada_12345_998877_notes.txt": "not a notebook",
        "evil_12345_1_..%2f..%2fescape.ipynb": "{}",
    })
    roster = tmp_path / "roster.csv"
    roster.write_text("id,key,name\nada,12345,Ada Lovelace\ngrace,777,Grace Hopper\nalan,4242,Alan Turing\nbob,999,Bob\n")
    out = tmp_path / "submissions"
    done = intake(archive, roster, out, {"02-blocking.ipynb", "04-prefork.ipynb"})
    assert (out / "ada" / "02-blocking.ipynb").is_file()
    assert (out / "grace" / "02-blocking.ipynb").is_file()  # Canvas's -1 suffix and _LATE mark undone
    assert (out / "alan" / "04-prefork.ipynb").is_file()
    assert done.unmatched == ["stranger_555_1_02-blocking.ipynb"]
    assert (out / ".unmatched" / "stranger_555_1_02-blocking.ipynb").is_file()
    assert not any(p.suffix == ".txt" for p in out.rglob("*"))
    assert all(out in p.parents for p in out.rglob("*"))
    assert (out / "names.csv").read_text().splitlines()[0] == "id,name"
    assert set(done.names) - set(done.placed) == {"bob"}
