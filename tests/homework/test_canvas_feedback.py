"""Feedback back through Canvas: each student's page in a zip whose names Canvas's re-upload reads back.

``canvas_reads`` is Canvas's own reading of a re-uploaded file's name, transcribed from instructure/canvas-lms
``app/models/abstract_assignment.rb`` (``infer_comment_context_from_filename``, read at commit
028f76bb2b8c2a7769c717674304c54283fb5de2): the base name split at ``_`` less every ``LATE`` part; ``anon`` first
means ``anon_<anonymous id>_<attachment id>``; otherwise the first two all-digit parts are the user id and the
attachment id; a name starting ``._`` or whose last part starts ``link`` has no attachment. Canvas then requires that
attachment to be one of the submission's own files: a feedback file must name the upload it answers.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import canvas_files
from homework_notebooks import paste_solutions, tiny_course, write
from iolab.homework import canvas_feedback, classes, editions
from iolab.homework.intake import intake


def canvas_reads(name: str) -> tuple[str, str, str] | None:
    """("user" or "anon", the id, the attachment id) as Canvas reads them from ``name``; None if it reads none."""
    parts = [p for p in name.split("_") if p != "LATE"]
    if parts and parts[0] == "anon":
        kind, who, attachment = "anon", *(parts[1:3] + [None, None])[:2]
    else:
        numbers = [p for p in parts if p.isdigit()][:2]
        kind, who, attachment = "user", *(numbers + [None, None])[:2]
    if parts and parts[-1].startswith("link") or name.startswith("._"):
        attachment = None
    # Canvas looks the attachment up by its integer id: "x.ipynb" finds none.
    return (kind, who, attachment) if who and attachment and attachment.isdigit() else None


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _pages(out: Path, students: list[str], notebook: str = "02-blocking") -> None:
    for student in students:
        page = out / "feedback" / student / f"{notebook}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<p>{student}'s feedback</p>")


def test_every_feedback_file_names_the_upload_canvas_gave_that_student(tmp_path: Path) -> None:
    roster = tmp_path / "export.csv"
    roster.write_text(canvas_files.EXPORT)
    out = tmp_path / "submissions"
    intake(_zip(tmp_path / "hw2.zip", canvas_files.DOWNLOAD), roster, out, {"02-blocking.ipynb"})
    _pages(out, ["alovelace", "cdoe", "agarcia"])
    [bundle] = canvas_feedback.bundle(out)
    assert bundle == out / "feedback" / "canvas" / "02-blocking.zip"
    with zipfile.ZipFile(bundle) as zf:
        sent = {canvas_reads(name): zf.read(name).decode() for name in zf.namelist()}
    uploaded = {canvas_reads(name): name for name in canvas_files.DOWNLOAD}
    assert set(sent) == set(uploaded)  # late Cyd's and renamed Ana's too
    assert sent[canvas_reads("lovelaceada_1001_5550001_02-blocking.ipynb")] == "<p>alovelace's feedback</p>"


def test_anonymous_uploads_get_their_feedback_under_the_anonymous_id(tmp_path: Path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("id,key,name\nada,1001;k3x9p,Ada\ncyd,anon_q7w2e,Cyd\ndee,1004,Dee\n")
    out = tmp_path / "submissions"
    intake(_zip(tmp_path / "hw2.zip", canvas_files.ANONYMOUS), roster, out, {"02-blocking.ipynb"})
    _pages(out, ["ada", "cyd"])  # dee's page is not written: dee gets no file, not another's
    with zipfile.ZipFile(canvas_feedback.bundle(out)[0]) as zf:
        assert sorted(canvas_reads(name) for name in zf.namelist()) == [("anon", "k3x9p", "5550006"),
                                                                      ("anon", "q7w2e", "5550007")]


def test_names_canvas_would_not_read_back_are_not_recorded() -> None:
    assert canvas_feedback.canvas_prefix("lovelaceada_LATE_1001_55501_02-blocking.ipynb") == "lovelaceada_LATE_1001_55501"
    for name in ("02-blocking.ipynb", "ada_1001_02-blocking.ipynb", "._lovelaceada_1001_55501_x.ipynb", "anon_k3x9p_x.ipynb"):
        assert canvas_feedback.canvas_prefix(name) is None, name
        assert canvas_reads(name) is None, name


def test_a_class_graded_from_a_canvas_zip_gets_a_feedback_zip_and_a_folder_class_none(tmp_path: Path) -> None:
    notebooks, subs = tmp_path / "notebooks", tmp_path / "submissions"
    write(tiny_course(), notebooks / "hw.ipynb")
    solved = tmp_path / "solved.ipynb"
    write(paste_solutions(editions.student_edition(tiny_course()), tiny_course()), solved)
    roster = tmp_path / "roster.csv"
    roster.write_text("id,key,name\nada,1001,Ada\n")
    intake(_zip(tmp_path / "hw.zip", {"lovelaceada_LATE_1001_777_hw.ipynb": solved.read_text()}), roster, subs,
           {"hw.ipynb"})
    summary = classes.grade_class(classes.prepare(subs, notebooks, sandboxed=False, time_limit=60))
    assert summary.reports["canvas feedback"] == subs / "feedback" / "canvas"
    with zipfile.ZipFile(subs / "feedback" / "canvas" / "hw.zip") as zf:
        [name] = zf.namelist()
        assert canvas_reads(name) == ("user", "1001", "777") and "3 of 3 points" in zf.read(name).decode()
    (subs / canvas_feedback.UPLOADS).unlink()  # as a class handed in as folders, not through Canvas
    assert canvas_feedback.bundle(subs) == []
