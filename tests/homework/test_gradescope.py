"""The Gradescope package: built by the command, run as Gradescope runs it, on an honest and a blank submission.

A fake ``/autograder`` tree (``AUTOGRADER_ROOT``) holds the unzipped package, the submission and
its metadata; ``run_autograder`` runs with the test's Python (``AUTOGRADER_PYTHON``), as the
``setup.sh`` of a real image would have installed it, and the kit comes from the package itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile

import pytest

from homework_notebooks import paste_solutions, tiny_course, write
from iolab.commands import main
from iolab.homework import batch, editions, gradescope


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope")
    write(tiny_course(), folder / "notebooks" / "hw.ipynb")
    assert main(["homework", "gradescope", "hw", "--notebooks", str(folder / "notebooks"), "--out", str(folder)]) == 0
    return folder / "hw" / "autograder.zip"


def _autograde(package, tmp_path, nb=None, place=None, env=None) -> dict:
    """Gradescope's run on ``nb`` uploaded as "my upload.ipynb", or on what ``place(root)`` puts in the submission."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(package) as zf:
        zf.extractall(root / "source")
    if nb is not None:
        write(nb, root / "submission" / "my upload.ipynb")
    if place is not None:
        (root / "submission").mkdir(parents=True, exist_ok=True)
        place(root)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "ada@uni.edu", "sid": "s1"}]}))
    script = root / "source" / "run_autograder"
    os.chmod(script, 0o755)  # zipfile keeps no modes; Gradescope's unzip does
    env = os.environ | {"AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": os.sys.executable} | (env or {})
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((root / "results" / "results.json").read_text())


def test_the_package_has_gradescopes_layout_and_the_kit(package):
    names = zipfile.ZipFile(package).namelist()
    assert {"setup.sh", "run_autograder", "requirements.lock", "notebooks/hw.ipynb", "src/iolab/__init__.py"} <= set(names)
    mode = zipfile.ZipFile(package).getinfo("run_autograder").external_attr >> 16
    assert mode & 0o111, "run_autograder must be executable"


def test_an_honest_submission_gets_full_marks_one_test_per_exercise(package, tmp_path):
    instructor = tiny_course()
    report = _autograde(package, tmp_path, paste_solutions(editions.student_edition(instructor), instructor))
    assert report["score"] == 3.0
    assert [(t["name"], t["score"], t["max_score"], t["visibility"]) for t in report["tests"]] == [
        ("hw: ex-a", 1.0, 1.0, "visible"), ("hw: ex-b", 2.0, 2.0, "visible")]


def test_a_blank_submission_gets_zero_with_the_reason_and_no_hidden_test(package, tmp_path):
    report = _autograde(package, tmp_path, editions.student_edition(tiny_course()))
    assert report["score"] == 0
    assert all(t["output"].startswith("failed: not answered") for t in report["tests"])
    assert "answer == 42" not in json.dumps(report)


def test_the_student_id_comes_from_the_submission_metadata(tmp_path):
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "a@b.c", "sid": "s9"}]}))
    assert gradescope.student_id(tmp_path) == "s9"
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "a@b.c"}]}))
    assert gradescope.student_id(tmp_path) == "a@b.c"


# --- what an upload holds is data, never a path to follow -------------------------------------------


def _tree(tmp_path, *names):
    """A submission folder with a notebook at each of ``names``; the graded notebooks (one, hw.ipynb)."""
    sources = tmp_path / "source" / "notebooks"
    write(tiny_course(), sources / "hw.ipynb")
    for name in names:
        write(tiny_course(), tmp_path / "submission" / name)
    return sources


def test_a_single_notebook_anywhere_in_the_upload_is_graded_as_the_single_notebook(tmp_path):
    sources = _tree(tmp_path, "hw2/my upload.ipynb", "__MACOSX/hw2/._my upload.ipynb",
                    "hw2/.ipynb_checkpoints/my upload-checkpoint.ipynb")
    graded, not_graded = gradescope._submitted(tmp_path, sources, "s1")
    assert graded == [(tmp_path / "submission" / "hw2" / "my upload.ipynb", "hw.ipynb")] and not_graded == []
    assert (tmp_path / "submission" / "hw2" / "my upload.ipynb").is_file()  # not renamed: graded under that name


def test_a_second_copy_in_a_sub_folder_is_not_graded_and_says_so(tmp_path):
    sources = _tree(tmp_path, "hw.ipynb", "old/hw.ipynb")
    graded, not_graded = gradescope._submitted(tmp_path, sources, "s1")
    assert graded == [(tmp_path / "submission" / "hw.ipynb", "hw.ipynb")]
    assert [(r.student, r.notebook, r.points, r.max_points, r.status, r.reason) for r in not_graded] == [
        ("s1", "hw.ipynb", 0.0, 0.0, "error",
         "a second copy of hw.ipynb (old/hw.ipynb) was not graded: only hw.ipynb is")]


def test_several_notebooks_in_sub_folders_are_none_of_them_graded(tmp_path):
    sources = _tree(tmp_path, "a/hw.ipynb", "b/hw.ipynb")
    graded, not_graded = gradescope._submitted(tmp_path, sources, "s1")
    assert graded == [] and [r.reason.split(" was")[0] for r in not_graded] == ["a/hw.ipynb", "b/hw.ipynb"]


def _link_to_the_key(root):
    (root / "submission" / "hw.ipynb").symlink_to(root / "source" / "notebooks" / "hw.ipynb")


def _link_to_dev_zero(root):
    (root / "submission" / "hw.ipynb").symlink_to("/dev/zero")


def _fifo(root):
    os.mkfifo(root / "submission" / "hw.ipynb")


def _a_folder_linked_to_the_key(root):
    (root / "submission" / "hw2").symlink_to(root / "source" / "notebooks")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("place, reason", [
    (_link_to_the_key, "error: hw.ipynb was not read: not a regular file: a symbolic link"),
    (_link_to_dev_zero, "error: hw.ipynb was not read: not a regular file: a symbolic link"),
    (_fifo, "error: hw.ipynb was not read: not a regular file: a FIFO"),
    (_a_folder_linked_to_the_key, "missing: no notebook (.ipynb) was submitted"),
], ids=["link to the instructor's notebook", "link to /dev/zero", "FIFO", "folder linked to the key"])
def test_an_upload_that_is_not_a_regular_notebook_scores_zero_with_the_reason(package, tmp_path, place, reason):
    report = _autograde(package, tmp_path, place=place)
    assert report["score"] == 0
    assert report["tests"] and all(t["output"].startswith(reason) for t in report["tests"])


def test_an_upload_over_the_size_limit_scores_zero_with_its_size(package, tmp_path):
    instructor = tiny_course()
    report = _autograde(package, tmp_path, paste_solutions(editions.student_edition(instructor), instructor),
                        env={batch.MAX_NOTEBOOK_BYTES_ENV: "1000"})
    assert report["score"] == 0
    assert all("bytes, over the limit of 1,000" in t["output"] for t in report["tests"])
