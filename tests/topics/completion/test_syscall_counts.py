"""``iolab.topics.completion.syscall_counts``: strace's summary read right, its absence named."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from iolab.topics.completion import syscall_counts

SUMMARY = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.10    0.031000           2     15029        10 recvfrom
 40.00    0.024000           1     15019           sendto
  7.90    0.004700           2      1652           epoll_wait
------ ----------- ----------- --------- --------- ----------------
100.00    0.059700           1     31700        10 total
"""


def test_the_summary_gives_calls_per_system_call_without_the_total() -> None:
    assert syscall_counts.parse_summary(SUMMARY) == {"recvfrom": 15029, "sendto": 15019, "epoll_wait": 1652}


def test_without_strace_the_reason_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "apt install strace" in (syscall_counts.strace_missing() or "")
    with pytest.raises(RuntimeError, match="strace is not installed"):
        with syscall_counts.open_syscall_count(os.getpid()):
            pass


@pytest.mark.skipif(syscall_counts.strace_missing() is not None, reason="strace is not here")
def test_a_process_that_calls_getppid_a_thousand_times_is_counted_so() -> None:
    code = "import os, sys, time\nsys.stdin.readline()\nfor _ in range(1000): os.getppid()\ntime.sleep(30)"
    with subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True) as child:
        try:
            with syscall_counts.open_syscall_count(child.pid) as counted:
                child.stdin.write("go\n")  # type: ignore[union-attr]
                child.stdin.flush()  # type: ignore[union-attr]
                time.sleep(0.5)
            assert counted.calls.get("getppid") == 1000
        finally:
            child.kill()
