"""System calls counted from outside: ``strace -c`` attached to a running process for a while.

``strace`` stops the traced process at every system call's entry and exit (``ptrace``), so the
process runs several times slower while it is counted: the counts are right, the rates measured
at the same time are not. Chapter 13 therefore runs each server twice under the same load, once
counted and once not, and shows both rates, the measurement's own cost beside its result.
``strace`` is optional (Debian's ``strace`` package; the course's image has it): without it,
:func:`strace_missing` says so and the cells that need it skip.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from iolab.kit import procs

# A row of strace's summary: "% time  seconds  usecs/call  calls  [errors]  syscall".
_ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)\s*$")
ATTACH_SECONDS = 5.0


def strace_missing() -> str | None:
    """Why calls cannot be counted here (no ``strace``, or no permission to trace), or None."""
    if shutil.which("strace") is None:
        return "strace is not installed (Debian/Ubuntu: apt install strace; the course's image has it)"
    scope = Path("/proc/sys/kernel/yama/ptrace_scope")
    if scope.exists() and scope.read_text().strip() == "3":
        return "kernel.yama.ptrace_scope is 3: no process may trace another on this machine"
    return None


def parse_summary(text: str) -> dict[str, int]:
    """The calls per system call name in ``strace -c``'s summary table (without its ``total`` row)."""
    calls = {}
    for line in text.splitlines():
        row = _ROW.match(line)
        if row and row[3] != "total":
            calls[row[3]] = int(row[1])
    return calls


class Counted:
    """What :func:`open_syscall_count` counted: filled in when its block ends."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    @property
    def total(self) -> int:
        """Every system call counted."""
        return sum(self.calls.values())


@contextlib.contextmanager
def open_syscall_count(pid: int) -> Iterator[Counted]:
    """Count the system calls of process ``pid`` (and threads it starts) while the block runs."""
    if (missing := strace_missing()) is not None:
        raise RuntimeError(missing)
    counted = Counted()
    with tempfile.TemporaryDirectory(prefix="iolab-strace-") as folder:
        summary = Path(folder) / "summary.txt"
        argv = ["strace", "-c", "-f", "-o", str(summary), "-p", str(pid)]
        with procs.open_process(argv) as tracer:
            tracer.wait_for_line(r"attached", timeout=ATTACH_SECONDS)
            yield counted
            os.kill(tracer.pid, signal.SIGINT)  # strace detaches and writes its summary on SIGINT
            tracer.wait(timeout=ATTACH_SECONDS)
        counted.calls = parse_summary(summary.read_text())
