"""A submission's cgroup: its limits, the launcher that joins it, and its removal with what runs in it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from iolab.homework import caps, cgroups
from iolab.homework.caps import Caps

CGROUP, NO_CGROUP = cgroups.make_cgroup(50, 64 << 20)
if CGROUP is not None:
    CGROUP.remove()
needs_cgroup = pytest.mark.skipif(CGROUP is None, reason=f"needs a cgroup of its own (root): {NO_CGROUP}")
MARK = "620.5"  # what the children here sleep: easy to look for afterwards


def _start_in(cgroup: cgroups.Cgroup) -> subprocess.Popen:
    """``sleep MARK`` started by the launcher, once it has joined ``cgroup``."""
    child = subprocess.Popen([*caps.launcher(Caps(), cgroup), "sleep", MARK])
    deadline = time.monotonic() + 10
    while child.pid not in cgroup.pids_inside() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.pid in cgroup.pids_inside()
    return child


@needs_cgroup
def test_the_launcher_joins_the_cgroup_and_its_removal_kills_what_runs_in_it():
    with cgroups.open_cgroup(50, 64 << 20) as cgroup:
        child = _start_in(cgroup)
        assert (cgroup.pids / "pids.max").read_text().strip() == "50"
    assert child.wait(10) == -9
    assert not cgroup.pids.exists() and not cgroup.memory.exists()


@needs_cgroup
def test_sweep_removes_the_cgroups_a_killed_grading_process_left():
    cgroup, _ = cgroups.make_cgroup(50, 64 << 20)
    child = _start_in(cgroup)
    cgroups.sweep(os.getpid())
    assert child.wait(10) == -9
    assert not cgroup.pids.exists() and not cgroup.memory.exists()


def test_cgroups_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(cgroups.ENV, "0")
    assert cgroups.make_cgroup(50, 64 << 20) == (None, f"turned off ({cgroups.ENV}=0)")


# Forks children that sleep until a fork is refused, or 40 of them.
FORKS = """
import os, time
for _ in range(40):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
    except OSError:
        break
"""


@needs_cgroup
def test_a_cgroup_says_which_limit_the_kernel_enforced():
    with cgroups.open_cgroup(20, 64 << 20) as cgroup:
        assert cgroup.refused() is None
        subprocess.run([*caps.launcher(Caps(), cgroup), sys.executable, "-c", FORKS], timeout=30)
        assert cgroup.refused() == "processes"
    with cgroups.open_cgroup(50, 64 << 20) as cgroup:
        done = subprocess.run([*caps.launcher(Caps(), cgroup), sys.executable, "-c", "x = b'1' * (256 << 20)"],
                              timeout=30)
        assert done.returncode == -9 and cgroup.refused() == "memory"
