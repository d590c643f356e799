"""Shared fixtures: every test must leave no child process behind."""

from __future__ import annotations

import psutil
import pytest


@pytest.fixture(autouse=True)
def no_children_left_behind():
    """Fail a test that leaves a child process of the test runner running."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    left = []
    for proc in psutil.Process().children(recursive=True):
        if proc.pid in before:
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            left.append(f"{proc.pid}: {' '.join(proc.cmdline())}")
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    assert not left, f"the test left processes running: {left}"
