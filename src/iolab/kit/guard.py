"""Run a command and fail if it leaves any process behind.

``python -m iolab guard -- CMD ...`` makes this process a *child subreaper* (Linux's
``PR_SET_CHILD_SUBREAPER``): a process orphaned anywhere below it is re-parented to it instead of
to PID 1. So when CMD has ended, every process still below the guard is one CMD, or something CMD
started, left running. The guard names each, kills it, and exits non-zero. ``make test`` and
``make book`` run under it: that is how the course checks its promise to leave nothing behind.
Off Linux (macOS) there is no subreaper: the guard still finds what runs below it, but an orphan has
gone to PID 1 and escapes it, which the guard says when it starts.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

import psutil

from iolab.kit import platforms

PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
# Orphans reach the subreaper asynchronously; wait this long for stragglers before judging.
SETTLE_SECONDS = 0.5


def become_subreaper() -> None:
    """Adopt the orphans of all descendants (Linux only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def running_descendants(reap: bool = False) -> list[psutil.Process]:
    """The processes below this one that still run; with ``reap``, zombies are reaped on the way."""
    alive = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
            elif reap:
                proc.wait(0)
        except (psutil.NoSuchProcess, psutil.TimeoutExpired):
            pass
    return alive


def leftovers() -> list[psutil.Process]:
    """The processes still running below this one once stragglers have settled (zombies reaped)."""
    time.sleep(SETTLE_SECONDS)
    return running_descendants(reap=True)


def describe(proc: psutil.Process) -> str:
    """'pid: command line' for a report."""
    try:
        return f"{proc.pid}: {' '.join(proc.cmdline())[:120]}"
    except psutil.Error:
        return f"{proc.pid}: (gone)"


def run_guarded(argv: Sequence[str]) -> int:
    """Run ``argv``; its exit code, or 1 if it left processes behind (they are killed)."""
    if platforms.missing("subreaper") is None:
        become_subreaper()
    else:
        needs = platforms.FACILITIES["subreaper"].needs
        print(f"guard: no {needs} on {platforms.system_name()}: an orphan escapes this check", file=sys.stderr)
    child = subprocess.Popen(list(argv))
    # Pass a Ctrl-C or a CI cancellation on to the command instead of dying before it.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    code = child.wait()
    left = leftovers()
    if left:
        print(f"guard: `{' '.join(argv)}` left {len(left)} process(es) running:", file=sys.stderr)
        for proc in left:
            print(f"  {describe(proc)}", file=sys.stderr)
            proc.kill()
        psutil.wait_procs(left, timeout=5)
        return code or 1
    return code
