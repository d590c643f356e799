"""Caps on a submission: read from the environment, kept by a cgroup or a watchdog, and turned into rows.

The cells that pass each cap, run by ``execute_cells``, are in ``test_execution.py``; here, the parts
(sizes, the folder's measure, the launcher, the cgroup) and a class graded two at a time in which
a fork bomb and a memory hog sit beside honest neighbours.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from homework_notebooks import SANDBOX, cell_index, paste_solutions, tiny_course, write
from iolab.homework import batch, caps, cgroups, editions, grading
from iolab.homework.caps import Caps, GiB, MiB

CGROUP, NO_CGROUP = cgroups.make_cgroup(Caps().processes, Caps().memory_bytes)
if CGROUP is not None:
    CGROUP.remove()
needs_cgroup = pytest.mark.skipif(CGROUP is None, reason=f"needs a cgroup of its own (root): {NO_CGROUP}")
MARK = "618.5"  # what the bombs' children sleep: easy to look for afterwards
BOMB = f"""
import os
n = 0
try:
    while n < 5000:  # bounded, should the cap fail
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "{MARK}"])
        n += 1
except OSError:
    pass
answer = 42
"""
HOG = "hoard = [b'1' * (64 << 20) for _ in range(64)]\nanswer = 42"  # 4 GiB, touched


def marked() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", MARK]]


def test_caps_read_their_variables_in_binary_units_and_a_typo_names_its_variable():
    read = Caps.from_env({"IOLAB_GRADE_MEMORY": "512M", "IOLAB_GRADE_PROCESSES": "300", "IOLAB_GRADE_TMP": "1.5GiB",
                          "IOLAB_GRADE_OUTPUT": " ", "PATH": "/bin"})
    assert (read.memory_bytes, read.processes, read.tmp_bytes) == (512 * MiB, 300, 3 * GiB // 2)
    assert read.output_bytes_per_cell == Caps().output_bytes_per_cell  # blank: the default
    with pytest.raises(ValueError, match="IOLAB_GRADE_FILE='2 gigs'"):
        Caps.from_env({"IOLAB_GRADE_FILE": "2 gigs"})
    with pytest.raises(ValueError, match="IOLAB_GRADE_SCRATCH"):
        Caps.from_env({"IOLAB_GRADE_SCRATCH": "0"})


def test_the_defaults_leave_room_over_the_honest_peaks_measured():
    # Measured grading the instructor notebooks' solutions at quick scale (book/instructors.md points here): 6,027 tasks (ex-05-stack), 523 MB
    # of memory (01), 40 MB in /tmp (PostgreSQL, 09), 131 KiB in the folder, 1.5 KB of output per cell.
    defaults = Caps()
    assert defaults.processes >= 2.5 * 6_027 and defaults.memory_bytes >= 3 * 523e6
    assert defaults.tmp_bytes >= 3 * 40e6 and defaults.scratch_bytes >= 1 * GiB
    assert defaults.file_bytes >= 256 * MiB  # chapter 13's test file, when every cell is graded
    assert defaults.output_bytes_per_cell >= 100_000  # a figure, if every cell is graded


def test_a_folder_counts_what_its_files_hold_a_hard_link_once_and_no_link_followed(tmp_path):
    folder = tmp_path / "scratch"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "data").write_bytes(os.urandom(MiB))
    os.link(folder / "sub" / "data", folder / "again")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(4 * MiB))
    (folder / "link").symlink_to(outside, target_is_directory=True)
    with open(folder / "sparse", "wb") as f:
        f.truncate(GiB)  # 1 GiB long, nothing in it
    assert MiB <= caps.folder_bytes(folder) < MiB + 64 * 1024
    assert caps.folder_bytes(folder, stop_above=1) >= 1  # stops early, past the cap


def test_a_tree_counts_its_threads_and_memory_shared_by_forks_once():
    # 256 MiB touched, then three forked children that share it and each start 10 threads.
    code = ("import os, sys, threading, time\ndata = b'1' * (256 << 20)\nfor _ in range(3):\n    if os.fork() == 0:\n"
            "        [threading.Thread(target=time.sleep, args=(30,), daemon=True).start() for _ in range(10)]\n"
            "        time.sleep(30)\nprint('ready', flush=True)\ntime.sleep(30)")
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout.readline() == "ready\n"
            time.sleep(0.5)  # the children's threads
            threads, rss = caps.tree_usage(parent.pid)
            _, pss = caps.tree_usage(parent.pid, memory_cap=MiB)  # past the cap: PSS
            assert threads == 1 + 3 * 11
            assert rss > 4 * 256 * MiB and 256 * MiB < pss < 2 * 256 * MiB
        finally:
            for child in psutil.Process(parent.pid).children():
                child.kill()
            parent.kill()


def test_the_launcher_sets_the_file_limits_for_what_it_execs():
    argv = caps.launcher(Caps(file_bytes=8 * MiB), None)
    code = "import resource as r; print(r.getrlimit(r.RLIMIT_FSIZE)[0], r.getrlimit(r.RLIMIT_CORE)[0])"
    done = subprocess.run([*argv, sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == [str(8 * MiB), "0"], done.stderr


def _class(tmp_path):
    instructor = tiny_course()
    sources = tmp_path / "notebooks"
    write(instructor, sources / "hw.ipynb")
    subs = tmp_path / "submissions"
    for student, code in [("a-bomb", BOMB), ("b-honest", None), ("c-hog", HOG), ("d-honest", None)]:
        solved = paste_solutions(editions.student_edition(instructor), instructor)
        if code:
            solved.cells[cell_index(solved, "ex-a-code")].source = code
        write(solved, subs / student / "hw.ipynb")
    return subs, sources


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "watchdog"])
def test_a_fork_bomb_and_a_memory_hog_get_rows_with_their_caps_and_their_neighbours_full_marks(
        tmp_path, monkeypatch, cgroup):
    if cgroup and CGROUP is None:
        pytest.skip(f"needs a cgroup of its own (root): {NO_CGROUP}")
    # Low caps, inherited by the grading processes; they are far above what the tiny course needs.
    monkeypatch.setenv("IOLAB_GRADE_PROCESSES", "300")
    monkeypatch.setenv("IOLAB_GRADE_MEMORY", "768M")
    if not cgroup:  # as on a machine without one: the watchdog alone
        monkeypatch.setenv(cgroups.ENV, "0")
    subs, sources = _class(tmp_path)
    rows = {(r.student, r.exercise): r for r in batch.grade_folder(
        subs, sources, grading.GradingOptions(time_limit=120, sandbox=SANDBOX), jobs=2)}
    for student in ("b-honest", "d-honest"):
        assert [(rows[student, e].status, rows[student, e].points) for e in ("ex-a", "ex-b")] == [
            ("passed", 1.0), ("passed", 2.0)]
    for student, reason in [("a-bomb", "started more than 300 processes and threads in cell"),
                            ("c-hog", "used more than 768 MiB of memory in cell")]:
        for exercise in ("ex-a", "ex-b"):
            assert (rows[student, exercise].status, rows[student, exercise].points) == ("not run", 0.0)
            assert reason in rows[student, exercise].reason, rows[student, exercise].reason
    deadline = time.monotonic() + 10  # a sandbox's namespace takes a moment to be torn down
    while marked() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marked() == []
