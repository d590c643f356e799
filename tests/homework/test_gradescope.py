"""The Gradescope package: built by the command, run as Gradescope runs it, on an honest and a blank submission.

A fake ``/autograder`` tree (``AUTOGRADER_ROOT``) holds the unzipped package, the submission and
its metadata; ``run_autograder`` runs with the test's Python (``AUTOGRADER_PYTHON``), as the
``setup.sh`` of a real image would have installed it, and the kit comes from the package itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from homework_notebooks import cell_index, paste_solutions, tiny_course, write
from iolab.commands import main
from iolab.homework import batch, editions, gradescope, reruns
from iolab.homework.grading import Row
from iolab.homework.intake import read_roster


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope")
    write(tiny_course(), folder / "notebooks" / "hw.ipynb")
    assert main(["homework", "gradescope", "hw", "--notebooks", str(folder / "notebooks"), "--out", str(folder)]) == 0
    return folder / "hw" / "autograder.zip"


ROSTER = ("id,key,name,sis_user_id\nada-7,ada@uni.edu;gradescope:123,Ada Lovelace,\n"
          "grace-3,grace@uni.edu;555,Grace Hopper,\nalan-1,alan@uni.edu,Alan Turing,s42\n")


@pytest.fixture(scope="module")
def package_with_roster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope-roster")
    write(tiny_course(), folder / "notebooks" / "hw.ipynb")
    (folder / "roster.csv").write_text(ROSTER)
    assert main(["homework", "gradescope", "hw", "--notebooks", str(folder / "notebooks"), "--out", str(folder),
                 "--roster", str(folder / "roster.csv"), "--visibility", "after_due_date"]) == 0
    return folder / "hw" / "autograder.zip"


def _fake_autograder(package, tmp_path, nb=None, upload: str = "my upload.ipynb", place=None, user=None):
    """A fake /autograder: the unzipped package, and ``nb`` uploaded as ``upload`` or what ``place(root)`` puts in
    the submission, by ``user`` (Ada, with a sid); its root and run_autograder's environment."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(package) as zf:
        zf.extractall(root / "source")
    if nb is not None:
        write(nb, root / "submission" / upload)
    if place is not None:
        (root / "submission").mkdir(parents=True, exist_ok=True)
        place(root)
    user = user or {"email": "ada@uni.edu", "sid": "s1"}
    (root / "submission_metadata.json").write_text(json.dumps({"users": [user]}))
    os.chmod(root / "source" / "run_autograder", 0o755)  # zipfile keeps no modes; Gradescope's unzip does
    return root, os.environ | {"AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}


def _results(root, argv, env) -> dict:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((root / "results" / "results.json").read_text())


def _autograde(package, tmp_path, nb=None, place=None, env=None, user=None) -> dict:
    """Gradescope's run on ``nb`` uploaded as "my upload.ipynb", or on what ``place(root)`` puts in the submission."""
    root, base = _fake_autograder(package, tmp_path, nb, place=place, user=user)
    return _results(root, ["bash", str(root / "source" / "run_autograder")], base | (env or {}))


def test_the_package_has_gradescopes_layout_and_the_kit(package):
    names = zipfile.ZipFile(package).namelist()
    assert {"setup.sh", "run_autograder", "requirements.lock", "notebooks/hw.ipynb", "src/iolab/__init__.py"} <= set(names)
    mode = zipfile.ZipFile(package).getinfo("run_autograder").external_attr >> 16
    assert mode & 0o111, "run_autograder must be executable"


def test_the_packages_scripts_are_bash_and_setup_compiles_what_nobodys_kernels_import(package, tmp_path):
    for script in ("setup.sh", "run_autograder"):
        path = tmp_path / script
        path.write_bytes(zipfile.ZipFile(package).read(script))
        checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, f"{script}: {checked.stderr}"
    setup = (tmp_path / "setup.sh").read_text()
    # The kernels run as nobody, who cannot write Python's caches into root's folders: compiled at setup, or never.
    assert "--compile-bytecode" in setup and "compileall -q src/iolab" in setup


def test_an_honest_submission_gets_full_marks_one_test_per_exercise(package, tmp_path):
    instructor = tiny_course()
    report = _autograde(package, tmp_path, paste_solutions(editions.student_edition(instructor), instructor))
    assert report["score"] == 3.0
    # ex-a's score tells how its hidden check went: shown once the grades are published (the default)
    assert [(t["name"], t["score"], t["max_score"], t["visibility"]) for t in report["tests"]] == [
        ("hw: ex-a", 1.0, 1.0, "after_published"), ("hw: ex-b", 2.0, 2.0, "visible")]


def test_a_blank_submission_gets_zero_with_the_reason_and_no_hidden_test(package, tmp_path):
    report = _autograde(package, tmp_path, editions.student_edition(tiny_course()))
    assert report["score"] == 0
    assert all(t["output"].startswith("failed: not answered") for t in report["tests"])
    assert "answer == 42" not in json.dumps(report)
    assert {t["visibility"] for t in report["tests"]} == {"visible"}  # failed before any hidden check counted


# Gradescope documents each user's email, id and name, no student id:
# https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/
def _metadata(tmp_path, **user) -> Path:
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"id": 1, "users": [user]}))
    return tmp_path


def test_without_a_roster_the_student_id_is_the_sid_else_the_email(tmp_path):
    assert gradescope.student_id(_metadata(tmp_path, email="a@b.c", sid="s9", id=5)) == "s9"
    assert gradescope.student_id(_metadata(tmp_path, email="a@b.c", id=5, name="A")) == "a@b.c"


def test_with_a_roster_the_student_id_is_the_course_id_by_email_then_sid_then_gradescope_id(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    roster = read_roster(tmp_path / "roster.csv")
    assert gradescope.student_id(_metadata(tmp_path, email="Grace@Uni.edu", id=9, name="G"), roster) == "grace-3"
    assert gradescope.student_id(_metadata(tmp_path, email="alan@other.org", sid="s42", id=8), roster) == "alan-1"
    assert gradescope.student_id(_metadata(tmp_path, email="ada@old.edu", id=123, name="A"), roster) == "ada-7"
    assert gradescope.student_id(_metadata(tmp_path, email="eve@uni.edu", id=666, name="E"), roster) is None
    # Grace's 555 is an LMS user id: a Gradescope user id or sid that happens to equal it is not Grace
    assert gradescope.student_id(_metadata(tmp_path, email="eve@uni.edu", sid="555", id=555), roster) is None


def test_a_submitter_the_packed_roster_does_not_name_is_told_so_and_not_graded(package_with_roster, tmp_path):
    assert "roster.csv" in zipfile.ZipFile(package_with_roster).namelist()
    report = _autograde(package_with_roster, tmp_path, editions.student_edition(tiny_course()),
                        user={"email": "eve@uni.edu", "id": 666, "name": "Eve"})
    assert report["score"] == 0 and len(report["tests"]) == 1
    assert report["tests"][0]["output"].startswith(
        "error: not graded: your Gradescope account (eve@uni.edu) is not in the course's roster")


def test_a_submitter_in_the_roster_is_graded_and_hidden_checks_show_at_the_chosen_visibility(package_with_roster,
                                                                                             tmp_path):
    instructor = tiny_course()
    report = _autograde(package_with_roster, tmp_path, paste_solutions(editions.student_edition(instructor), instructor),
                        user={"email": "ada@uni.edu", "id": 123, "name": "Ada Lovelace"})
    assert report["score"] == 3.0
    assert [t["visibility"] for t in report["tests"]] == ["after_due_date", "visible"]


def test_a_roster_that_names_nobody_is_refused_before_anything_is_packed(tmp_path):
    write(tiny_course(), tmp_path / "notebooks" / "hw.ipynb")
    (tmp_path / "roster.csv").write_text("email,student\na@b.c,1\n")
    assert main(["homework", "gradescope", "hw", "--notebooks", str(tmp_path / "notebooks"), "--out", str(tmp_path),
                 "--roster", str(tmp_path / "roster.csv")]) == 2
    assert not (tmp_path / "hw").exists()


def _row(status, points, reason="", **more) -> Row:
    return Row("ada-7", "hw.ipynb", "ex-a", points, 1.0, status, reason, 0.1, **more)


def test_the_student_reads_their_parameters_and_the_rows_note_under_each_test():
    row = _row("failed", 0.0, "the check failed: too slow", parameters="pipe_bytes=262144",
               note="it ran under another student id")
    [test] = gradescope.results([row])["tests"]
    assert test["output"] == ("failed: the check failed: too slow\ngraded with your parameters: pipe_bytes=262144\n"
                              "note: it ran under another student id")


@pytest.mark.parametrize("row, visibility", [
    (_row("passed", 1.0), "after_due_date"),
    (_row("failed", 0.0, "hidden check 1 of 1 failed"), "after_due_date"),
    (_row("partial", 0.5, "the check failed: x"), "after_due_date"),  # a point earned tells of a hidden check
    (_row("failed", 0.0, "the check failed: isinstance"), "visible"),
    (_row("failed", 0.0, "not answered"), "visible"),
], ids=["passed", "hidden check failed", "partial", "public check failed", "not answered"])
def test_a_test_whose_score_tells_of_hidden_checks_waits_for_the_chosen_visibility(row, visibility):
    [test] = gradescope.results([row], {("hw", "ex-a")}, "after_due_date")["tests"]
    assert test["visibility"] == visibility
    assert gradescope.results([row], set(), "after_due_date")["tests"][0]["visibility"] == "visible"


def test_the_exercises_hidden_checks_score_are_found_in_the_packed_notebooks(tmp_path):
    write(tiny_course(), tmp_path / "hw.ipynb")
    assert gradescope.hidden_exercises(tmp_path, None) == {("hw", "ex-a")}
    (tmp_path / "private" / "hw").mkdir(parents=True)
    (tmp_path / "private" / "hw" / "ex-b-check.add.py").write_text("assert total == 6\n")
    assert gradescope.hidden_exercises(tmp_path, tmp_path / "private") == {("hw", "ex-a"), ("hw", "ex-b")}
    (tmp_path / "private" / "hw" / "ex-b-check.add.py").unlink()
    (tmp_path / "private" / "hw" / "ex-z-check.py").write_text("assert False\n")  # a typo: none can be told
    assert gradescope.hidden_exercises(tmp_path, tmp_path / "private") == {("hw", "ex-a"), ("hw", "ex-b")}


# Run as Gradescope runs it, with the choice the grader makes there: root, no bubblewrap, so the kernel runs as
# nobody and the checker as another user. Here Python and the course may sit below folders other users cannot
# enter (/root is 0700): in a mount namespace of the test's own, each such folder is covered by an open tmpfs
# into which its entries are bound again, and bwrap is covered by /dev/null, so `which` finds none.
OPEN_UP = r"""
import os, shutil, subprocess, sys, tempfile
sep = sys.argv.index("--")
closed, argv = sys.argv[1:sep], sys.argv[sep + 1:]
def mount(*args):
    subprocess.run(["mount", *args], check=True)
for folder in closed:
    stash = tempfile.mkdtemp(prefix="iolab-stash-", dir="/dev/shm")
    mount("--bind", folder, stash)
    mount("-t", "tmpfs", "-o", "mode=0755", "tmpfs", folder)
    for entry in os.scandir(stash):
        target = os.path.join(folder, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
            continue
        os.mkdir(target) if entry.is_dir(follow_symlinks=False) else open(target, "w").close()
        mount("--bind", entry.path, target)
if shutil.which("bwrap"):
    mount("--bind", "/dev/null", shutil.which("bwrap"))
os.execvp(argv[0], argv)
"""


def _closed_folders(paths) -> list[str]:
    """The folders above ``paths`` that other users cannot enter, shallowest first."""
    closed = set()
    for path in paths:
        for folder in [*reversed(Path(path).resolve().parents), Path(path).resolve()]:
            if folder.is_dir() and not folder.stat().st_mode & 0o001:
                closed.add(str(folder))
    return sorted(closed, key=lambda f: f.count("/"))


needs_root_and_unshare = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None
                                            or shutil.which("setpriv") is None,
                                            reason="grading as Gradescope does needs root, unshare and setpriv")


def _autograde_as_gradescope(package, tmp_path, nb) -> dict:
    root, env = _fake_autograder(package, tmp_path, nb, "hw.ipynb")
    env.pop("AUTOGRADER_SANDBOX", None)  # the grader's own choice
    closed = _closed_folders([sys.base_prefix, sys.prefix, sys.executable, root])
    return _results(root, ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", OPEN_UP, *closed,
                           "--", "bash", str(root / "source" / "run_autograder")], env)


@needs_root_and_unshare
def test_graded_as_gradescope_would_the_kernel_runs_as_nobody_and_honest_work_scores_full(package, tmp_path):
    instructor = tiny_course()
    honest = paste_solutions(editions.student_edition(instructor), instructor)
    honest.cells[cell_index(honest, "ex-a-code")].source += "\nimport os\nassert os.getuid() == 65534, os.getuid()"
    report = _autograde_as_gradescope(package, tmp_path, honest)
    assert gradescope.SANDBOX_SAID["nobody"] in report["output"], report["output"]
    assert report["score"] == 3.0, report


@needs_root_and_unshare
def test_graded_as_gradescope_a_blank_submission_and_a_forger_score_zero(package, tmp_path):
    blank = editions.student_edition(tiny_course())
    assert _autograde_as_gradescope(package, tmp_path / "blank", blank)["score"] == 0
    forger = editions.student_edition(tiny_course())
    forger.cells[cell_index(forger, "ex-a-code")].source = FORGE_THE_VERDICT
    report = _autograde_as_gradescope(package, tmp_path / "forger", forger)
    assert gradescope.SANDBOX_SAID["nobody"] in report["output"]
    assert report["score"] == 0, report
    assert "answer == 42" not in json.dumps(report) and "HIDDEN" not in json.dumps(report)


@needs_root_and_unshare
def test_graded_as_gradescope_a_wrong_answer_is_graded_twice_and_the_student_reads_so(package, tmp_path):
    wrong = paste_solutions(editions.student_edition(tiny_course()), tiny_course())
    wrong.cells[cell_index(wrong, "ex-a-code")].source = "answer = 41"  # an int: only the hidden assert fails
    report = _autograde_as_gradescope(package, tmp_path, wrong)
    assert report["score"] == 2.0, report
    assert reruns.SAID in json.dumps(report) and "2, then 2 points; the best counts" in json.dumps(report), report

# What a kernel in the checker's PID space and container would try: find the checker through /proc, read its
# job (hidden tests) and replace its verdict, or stop it; and read the instructor notebook.
FORGE_THE_VERDICT = """
import glob, json, os, signal, time
seen = []
for _ in range(20):
    for proc in glob.glob("/proc/[0-9]*"):
        if proc == f"/proc/{os.getpid()}":
            continue
        try:
            named = [a for a in open(proc + "/cmdline").read().split("\\0") if a.startswith("/")]
        except OSError:
            named = []
        for folder in {os.path.dirname(a) for a in named if "iolab-" in a} | {proc + "/cwd"}:
            try:
                with open(folder + "/verdict.json", "w") as f:
                    f.write('{"setup_error": null, "exercises": {}}')
            except OSError:
                pass
        for path in [*named, *glob.glob(proc + "/cwd/*"), *glob.glob(proc + "/fd/*")]:
            try:
                if os.path.isfile(path):  # a pipe would block
                    seen.append(open(path).read(100_000))
            except OSError:
                pass
    time.sleep(0.1)
for path in glob.glob("/autograder/source/notebooks/*") + glob.glob(os.environ.get("AUTOGRADER_ROOT", "/") + "/source/notebooks/*"):
    try:
        seen.append(open(path).read())
    except OSError:
        pass
answer = 42 if any("answer == 42" in text for text in seen) else None
"""


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
