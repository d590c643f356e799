"""Running a notebook's cells: per-student parameters (the same id draws the same numbers everywhere, two ids
differ, no id gets the book's), and the caps a submission's run is held to (``caps``)."""

from __future__ import annotations

import ast
import copy
import json
import sys
import time

import nbformat
import psutil
import pytest

from homework_notebooks import COURSE_NOTEBOOKS, read
from iolab.homework import cgroups, markup, sandbox
from iolab.homework.caps import Caps, MiB
from iolab.homework.execution import execute_cells
from iolab.kit import student

CHOICES = [256, 128, 512, 64]


def test_the_same_id_draws_the_same_choice_and_no_id_the_books(monkeypatch):
    assert student.pick("ex-x", CHOICES, "ada") == student.pick("ex-x", CHOICES, "ada")
    monkeypatch.delenv(student.ENV, raising=False)
    assert student.pick("ex-x", CHOICES) == 256
    monkeypatch.setenv(student.ENV, "ada")
    assert student.pick("ex-x", CHOICES) == student.pick("ex-x", CHOICES, "ada")
    monkeypatch.setenv(student.ENV, "  ")
    assert student.pick("ex-x", CHOICES) == 256  # blank is no student


def test_the_seed_is_the_same_in_every_process_and_on_every_machine():
    # The first 8 bytes of sha256(b"ada\0ex-x"): a str hash() would change from one process to the next.
    assert student.seed("ex-x", "ada") == 0xA54FCAB2A5F2BD56
    assert student.seed("ex-x", "grace") != student.seed("ex-x", "ada") != student.seed("ex-y", "ada")


def test_students_never_draw_the_books_value_and_draw_every_other():
    drawn = {student.pick("ex-x", CHOICES, f"student-{i}") for i in range(200)}
    assert drawn == {128, 512, 64}


def test_one_student_draws_independently_for_each_exercise():
    by_label = {label: student.pick(label, CHOICES, "ada") for label in (f"ex-{i}" for i in range(30))}
    assert len(set(by_label.values())) == 3


def test_a_single_choice_is_everyone_s_and_no_choice_is_an_error():
    assert student.pick("ex-x", [7], "ada") == 7
    with pytest.raises(ValueError, match="ex-x"):
        student.pick("ex-x", [], "ada")


def picks(nb) -> list[tuple[str, list]]:
    """Every ``student.pick(label, [choices...])`` call of the notebook's given cells, its arguments evaluated."""
    found = []
    for index in (i for e in markup.exercises(nb) for i in e.given):
        for node in ast.walk(ast.parse(nb.cells[index].source)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "student.pick":
                # Choices are constants or arithmetic on them ([1 / 4, 1 / 8]): evaluated with no names in scope.
                choices = eval(compile(ast.Expression(node.args[1]), "<choices>", "eval"), {"__builtins__": {}})
                found.append((ast.literal_eval(node.args[0]), list(choices)))
    return found


SEEDED = [p for p in COURSE_NOTEBOOKS if picks(read(p))]


def test_most_notebooks_draw_per_student_parameters():
    assert len(SEEDED) >= len(COURSE_NOTEBOOKS) // 2, [p.stem for p in SEEDED]


@pytest.mark.parametrize("path", SEEDED, ids=lambda p: p.stem)
def test_two_students_get_different_parameters_and_neither_the_books(path):
    calls = picks(read(path))
    ada, *others = ([student.pick(label, choices, who) for label, choices in calls] for who in ("ada", "grace", "alan", "barbara"))
    book = [choices[0] for _, choices in calls]
    # Two students may draw alike where a notebook has one parameter of a few choices (chapter 13 has one, of 6):
    # a class's draws differ, not every pair's.
    assert any(ada != other for other in others)
    assert all(a != b for a, b, (_, choices) in zip(ada, book, calls) if len(choices) > 1)
    assert ada == [student.pick(label, choices, "ada") for label, choices in calls]  # the same id, the same draw


def test_the_kernel_draws_as_this_process_does():
    # The pilot's setup and parameter cells, run by a kernel with IOLAB_STUDENT=ada, print what pick() gives ada here.
    nb = copy.deepcopy(read(COURSE_NOTEBOOKS[0]))
    given = [i for e in markup.exercises(nb) for i in e.given]
    run = execute_cells(nb, [markup.setup_cell(nb), *given], 120, {student.ENV: "ada", "IOLAB_SCALE": "quick"})
    assert run.stopped is None and [c.error for c in run.cells.values() if c.error] == []
    printed = "".join(o.get("text", "") for o in nb.cells[given[0]].outputs)
    assert printed == f"the parent holds {student.pick('pred-cow', CHOICES, 'ada')} MiB\n"


def test_a_kernel_slow_to_start_costs_the_cells_none_of_their_time_limit(tmp_path, monkeypatch):
    # A busy machine can take seconds to start a kernel (CI's did, and an honest cell ran out of 6 s): the
    # limit is the cells'. This kernel sleeps 4 s before it starts; the notebook's limit is 3 s.
    spec = tmp_path / "kernels" / "slow-start"
    spec.mkdir(parents=True)
    argv = ["sh", "-c", f"sleep 4; exec {sys.executable} -m ipykernel_launcher -f {{connection_file}}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "slow", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7"), nbformat.v4.new_code_cell("x")])
    nb.metadata["kernelspec"] = {"name": "slow-start", "display_name": "slow", "language": "python"}
    began = time.monotonic()
    run = execute_cells(nb, [0, 1], 3, cwd=str(tmp_path))
    assert time.monotonic() - began > 4  # it did start slowly
    assert run.stopped is None and [c.error for c in run.cells.values()] == [None, None]
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "42"
    assert run.seconds < 3


# --- caps: each cell that passes one, run as the grader runs a submission -----------------------------

SANDBOX = sandbox.usable() is None
CGROUP, NO_CGROUP = cgroups.make_cgroup(Caps().processes, Caps().memory_bytes)
if CGROUP is not None:
    CGROUP.remove()
KEEPERS = ["cgroup", "watchdog"]
MARK = "619.5"
# Forks children that sleep (MARK) until refused, or 5,000 of them should the cap fail.
BOMB = f"""
import os
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "{MARK}"])
        n += 1
except OSError:
    pass
import time; time.sleep(5)
"""


def _keeper(keeper: str, monkeypatch) -> None:
    """The caps kept by a cgroup (skipped where there is none), or by the watchdog alone."""
    if keeper == "cgroup" and CGROUP is None:
        pytest.skip(f"needs a cgroup of its own (root): {NO_CGROUP}")
    if keeper == "watchdog":
        monkeypatch.setenv(cgroups.ENV, "0")


def _run_capped(tmp_path, code: str, limits: Caps, time_limit: float = 60):
    """``code`` as the middle of three cells, in a sandbox when there is one, held to ``limits``: (run, notebook)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in ("print('before')", code, "print('after')")]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    box = sandbox.Sandbox(scratch) if SANDBOX else None
    return execute_cells(nb, [0, 1, 2], time_limit, cwd=str(scratch), sandbox=box, caps=limits), nb


def _marked() -> list[psutil.Process]:
    deadline = time.monotonic() + 10  # a sandbox's namespace takes a moment to be torn down
    while (found := [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", MARK]]) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


@pytest.mark.parametrize("keeper", KEEPERS)
def test_a_fork_bomb_is_stopped_at_the_process_cap_and_leaves_nothing_behind(tmp_path, monkeypatch, keeper):
    _keeper(keeper, monkeypatch)
    run, _ = _run_capped(tmp_path, BOMB, Caps(processes=200))
    assert run.stopped == "started more than 200 processes and threads in cell 1"
    assert run.cells[1].error == run.stopped and 2 not in run.cells  # and the cells after it do not run
    assert _marked() == []


@pytest.mark.parametrize("keeper", KEEPERS)
def test_a_cell_that_allocates_past_the_memory_cap_is_stopped_with_that_reason(tmp_path, monkeypatch, keeper):
    _keeper(keeper, monkeypatch)
    run, _ = _run_capped(tmp_path, "hoard = [b'1' * (64 << 20) for _ in range(32)]", Caps(memory_bytes=400 * MiB))
    assert run.stopped == "used more than 400 MiB of memory in cell 1"


def test_a_file_past_the_file_cap_fails_to_write_with_efbig_and_the_cap_named(tmp_path):
    run, _ = _run_capped(tmp_path, "open('big', 'wb').write(b'x' * (20 << 20))", Caps(file_bytes=8 * MiB))
    assert run.stopped is None
    assert run.cells[1].error == ("OSError: [Errno 27] File too large (a file may hold at most 8 MiB when graded)")
    assert (tmp_path / "scratch" / "big").stat().st_size == 8 * MiB and run.cells[2].error is None


def test_a_folder_past_the_scratch_cap_stops_the_run(tmp_path):
    writes = "import time\nfor i in range(20):\n    open(f'part-{i}', 'wb').write(b'x' * (8 << 20))\ntime.sleep(5)"
    run, _ = _run_capped(tmp_path, writes, Caps(scratch_bytes=64 * MiB))
    assert run.stopped == "wrote more than 64 MiB to its folder in cell 1"


@pytest.mark.skipif(not SANDBOX, reason=sandbox.usable() or "")
def test_the_sandboxs_tmp_holds_at_most_its_cap(tmp_path):
    run, _ = _run_capped(tmp_path, "open('/tmp/big', 'wb').write(b'x' * (20 << 20))", Caps(tmp_bytes=8 * MiB))
    assert run.cells[1].error.startswith("OSError: [Errno 28] No space left on device (/tmp and /dev/shm hold at most 8 MiB")


@pytest.mark.solo  # 200 MB through the kernel's socket: beside the whole parallel stage it failed once
def test_a_cell_that_prints_200_mb_keeps_only_the_cap_in_the_grader(tmp_path):
    flood = "for _ in range(2000):\n    print('y' * 100_000)\nraise ValueError('z' * 10_000_000)"
    run, nb = _run_capped(tmp_path, flood, Caps(output_bytes_per_cell=MiB))
    kept = nb.cells[1].outputs
    assert MiB <= sum(len(o.get("text", "")) for o in kept if o.output_type == "stream") <= MiB + 200
    assert "[the grader kept the first 1 MiB of this cell's output]" in "".join(o.get("text", "") for o in kept)
    error = [o for o in kept if o.output_type == "error"]  # kept past the cap, cut short
    assert len(error) == 1 and len(error[0].evalue) + sum(map(len, error[0].traceback)) < 10_000
    assert run.cells[1].error.startswith("ValueError: zzz") and run.cells[2].error is None
    assert nb.cells[2].outputs[0].text == "after\n"


def test_an_honest_notebook_runs_as_before_under_the_default_caps(tmp_path):
    run, nb = _run_capped(tmp_path, "import threading\nthreads = [threading.Thread(target=sum, args=([1],)) "
                          "for _ in range(100)]\n[t.start() for t in threads]\nprint(len(threads))", Caps())
    assert run.stopped is None and [c.error for c in run.cells.values()] == [None, None, None]
    assert [nb.cells[i].outputs[0].text for i in range(3)] == ["before\n", "100\n", "after\n"]
