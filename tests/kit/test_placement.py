"""``iolab.kit.placement``: halves of the cores, and pinning inherited by the processes started meanwhile."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from iolab.kit import placement, platforms


def test_halves_are_disjoint_and_cover_this_process_cpus() -> None:
    split = placement.halves()
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        assert split is None
        return
    assert split is not None and split.server and split.load
    assert not split.server & split.load
    assert split.server | split.load == cpus
    assert max(split.load) < min(split.server)


def test_halves_of_one_cpu_is_none() -> None:
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})
        assert placement.halves() is None
    finally:
        os.sched_setaffinity(0, before)


def test_halves_is_none_where_affinity_cannot_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    assert placement.halves() is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_child_started_inside_on_cpus_keeps_them_after_the_block() -> None:
    split = placement.halves()
    assert split is not None
    before = os.sched_getaffinity(0)
    with placement.on_cpus(split.server):
        assert os.sched_getaffinity(0) == split.server
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert os.sched_getaffinity(0) == before  # restored
        assert os.sched_getaffinity(child.pid) == split.server  # inherited, and kept
    finally:
        child.communicate(b"")


def test_on_cpus_none_changes_nothing() -> None:
    before = os.sched_getaffinity(0)
    with placement.on_cpus(None):
        assert os.sched_getaffinity(0) == before


def test_on_cpus_none_asks_nothing_of_a_kernel_without_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("sched_getaffinity", "sched_setaffinity"):  # as on macOS, which has neither
        monkeypatch.delattr(os, name)
    with placement.on_cpus(placement.halves()):
        pass
