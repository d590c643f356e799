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
from iolab.homework import editions, gradescope


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope")
    write(tiny_course(), folder / "notebooks" / "hw.ipynb")
    assert main(["homework", "gradescope", "hw", "--notebooks", str(folder / "notebooks"), "--out", str(folder)]) == 0
    return folder / "hw" / "autograder.zip"


def _autograde(package, tmp_path, nb) -> dict:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(package) as zf:
        zf.extractall(root / "source")
    write(nb, root / "submission" / "my upload.ipynb")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "ada@uni.edu", "sid": "s1"}]}))
    script = root / "source" / "run_autograder"
    os.chmod(script, 0o755)  # zipfile keeps no modes; Gradescope's unzip does
    env = os.environ | {"AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": os.sys.executable}
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
