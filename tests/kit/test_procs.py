import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from iolab.kit import procfs
from iolab.kit.procs import ProcessFailed, ProcessTimeout, open_fork, open_process, python_argv, read_exactly


def _gone(pid: int, timeout: float = 5.0) -> bool:
    """True once ``pid`` has exited (a zombie counts: it runs nothing); SIGKILL lands asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def test_open_process_reads_lines_and_stops_the_whole_group():
    script = "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); print('ready', flush=True); time.sleep(60)"
    with open_process(python_argv("-c", script)) as proc:
        proc.wait_for_line("^ready$", timeout=10)
        grandchildren = psutil.Process(proc.pid).children()
        assert len(grandchildren) == 1
    assert _gone(proc.pid)
    assert all(_gone(g.pid) for g in grandchildren)


def test_open_process_ends_the_group_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with open_process(["sleep", "60"]) as proc:
            raise RuntimeError("a failing cell")
    assert _gone(proc.pid)


def test_open_process_ends_the_group_on_keyboard_interrupt():
    with pytest.raises(KeyboardInterrupt):
        with open_process(["sleep", "60"]) as proc:
            raise KeyboardInterrupt
    assert _gone(proc.pid)


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace_period():
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    start = time.monotonic()
    with open_process(python_argv("-c", script), grace=0.5) as proc:
        proc.wait_for_line("up")
    assert proc.poll() == -signal.SIGKILL
    assert time.monotonic() - start < 10


def test_wait_for_line_names_the_pattern_and_the_output_on_timeout():
    with open_process(python_argv("-c", "print('hello'); import time; time.sleep(60)")) as proc:
        with pytest.raises(ProcessTimeout, match=r"listening.*within 0\.5 s(.|\n)*hello"):
            proc.wait_for_line("listening", timeout=0.5)


def test_wait_for_line_reports_an_early_exit_with_its_output():
    with open_process(python_argv("-c", "print('port in use'); raise SystemExit(3)")) as proc:
        with pytest.raises(ProcessFailed, match=r"code 3(.|\n)*port in use"):
            proc.wait_for_line("listening", timeout=10)


def test_a_last_line_still_on_its_way_when_the_process_exits_is_found():
    # The race, made certain: the reading thread needs the lock we hold to hand over the line, so
    # the process is gone before its last line arrives. It must be found, not reported missing.
    with open_process(python_argv("-c", "print('RESULT 42')")) as proc:
        with proc._new_line:
            proc.popen.wait()
            assert proc.wait_for_line("^RESULT (\\d+)$", timeout=10)[1] == "42"


def test_open_fork_returns_the_exit_code_and_reaps_the_child():
    with open_fork(lambda: 42) as child:
        assert child.wait(timeout=5) == 42
    assert not procfs.exists(child.pid)


def test_open_fork_child_exception_exits_with_code_1():
    def fails():
        raise ValueError("boom")

    with open_fork(fails) as child:
        assert child.wait(timeout=5) == 1


def test_open_fork_kills_a_running_child_and_its_children_on_exit():
    def sleeps_with_a_grandchild():
        subprocess.Popen(["sleep", "60"])
        time.sleep(60)

    with open_fork(sleeps_with_a_grandchild) as child:
        deadline = time.monotonic() + 5
        while not (grandchildren := psutil.Process(child.pid).children(recursive=True)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert grandchildren
    assert not procfs.exists(child.pid)
    assert all(_gone(g.pid) for g in grandchildren)


def test_forked_wait_times_out_with_a_clear_error():
    with open_fork(time.sleep, 60) as child:
        with pytest.raises(ProcessTimeout, match="still running after 0.2 s"):
            child.wait(timeout=0.2)


def test_read_exactly_loops_over_short_writes():
    r, w = os.pipe()
    try:
        with open_fork(lambda: [os.write(w, b"ab"), time.sleep(0.05), os.write(w, b"cd")] and 0) as child:
            assert read_exactly(r, 4) == b"abcd"
            child.wait(timeout=5)
    finally:
        os.close(r)
        os.close(w)


def test_python_argv_runs_this_interpreter():
    assert python_argv("-c", "pass")[0] == sys.executable
