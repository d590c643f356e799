"""The one descriptor budget (``machine.reserve_descriptors``) and its one wording."""

import resource
import subprocess
import sys

import pytest

from iolab.kit import machine

SPARE = machine.SPARE_DESCRIPTORS


def _limits(monkeypatch: pytest.MonkeyPatch, soft: int, hard: int) -> None:
    monkeypatch.setattr(machine, "open_files_limit", lambda: (soft, hard))


def test_a_budget_past_the_hard_limit_names_the_need_the_limit_and_both_fixes(monkeypatch) -> None:
    _limits(monkeypatch, 100, 1000)
    with pytest.raises(machine.DescriptorLimit) as info:
        machine.reserve_descriptors(2000, what="2,000 connections", fewer=lambda room: f"use at most {room} connections",
                                    here=False)
    message = str(info.value)
    assert message.startswith(f"2,000 connections need {2000 + SPARE:,} descriptors in one process")
    assert "its hard limit (ulimit -Hn) allows 1,000" in message
    assert f"Raise it with `ulimit -n {2000 + SPARE}`" in message
    assert message.endswith(f"or use at most {1000 - SPARE} connections.")


def test_a_program_that_keeps_its_soft_limit_is_judged_by_the_soft_limit(monkeypatch) -> None:
    _limits(monkeypatch, 100, 1000)
    assert machine.reserve_descriptors(500, what="500 readers", fewer=str, here=False) == 500 + SPARE
    with pytest.raises(machine.DescriptorLimit, match=r"its limit \(ulimit -n\) allows 100\. Raise it with `ulimit -n 564`"):
        machine.reserve_descriptors(500, what="500 readers", fewer=str, here=False, soft=True)


def test_no_hard_limit_refuses_nothing(monkeypatch) -> None:
    _limits(monkeypatch, 1024, resource.RLIM_INFINITY)
    assert machine.reserve_descriptors(10**9, what="a lot", fewer=str, here=False) == 10**9 + SPARE


def test_a_budget_that_fits_raises_this_process_soft_limit_to_it() -> None:
    code = (
        "import resource; from iolab.kit import machine\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))\n"
        "machine.reserve_descriptors(100, what='x', fewer=str, here=False)\n"
        "a = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
        "total = machine.reserve_descriptors(100, what='x', fewer=str)\n"
        "print(a, resource.getrlimit(resource.RLIMIT_NOFILE)[0] == total)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["64", "True"]  # left alone for a child's descriptors, raised for this process's own
