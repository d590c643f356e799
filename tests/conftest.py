"""Shared fixtures: every test must leave no child process behind."""

from __future__ import annotations

import contextlib

import psutil
import pytest

from iolab.kit.guard import describe, running_descendants


@pytest.fixture(autouse=True)
def no_children_left_behind():
    """Fail a test that leaves a child process of the test runner running."""
    before = {p.pid for p in running_descendants()}
    yield
    left = [p for p in running_descendants() if p.pid not in before]
    described = [describe(p) for p in left]
    for proc in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    assert not left, f"the test left processes running: {described}"
