"""Watch processes while they run: their state and CPU use, sampled from ``/proc`` at a fixed interval.

The two programs a reader needs to see the difference between blocking and running are here too:
:func:`spin`, a busy loop, and :func:`block_in_read`, a read() on a pipe nobody writes to.
:func:`count_states` reads one process's state as often as it can instead, to catch states that last
only microseconds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

import pandas as pd

from iolab.kit import procfs

# The longest a busy loop here may run, whatever it is asked: a forgotten child must end on its own.
MAX_SPIN_S = 60.0


def spin(seconds: float) -> int:
    """Loop without waiting for ``seconds`` (at most MAX_SPIN_S); the number of iterations."""
    deadline = time.monotonic() + min(seconds, MAX_SPIN_S)
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n


def block_in_read(fd: int) -> int:
    """Block in one read() on ``fd`` until a byte or end-of-file arrives; the bytes read (0 or 1)."""
    return len(os.read(fd, 1))


def sample(pids: Mapping[str, int], seconds: float, interval: float = 0.1) -> pd.DataFrame:
    """Read the state and CPU time of each process every ``interval`` s for ``seconds``; one row per reading.

    Columns: ``t_s``, ``role`` (the key in ``pids``), ``pid``, ``state`` (one letter),
    ``cpu_s`` (user + system so far), ``cpu_percent`` (of one core, since the previous reading),
    ``voluntary_switches`` (times the process gave up the CPU to wait).
    """
    if interval <= 0 or seconds <= 0:
        raise ValueError("seconds and interval must be positive")
    rows = []
    previous: dict[str, tuple[float, float]] = {}
    start = time.monotonic()
    for i in range(int(seconds / interval) + 1):
        time.sleep(max(0.0, start + i * interval - time.monotonic()))
        now = time.monotonic() - start
        for role, pid in pids.items():
            reading, cpu = procfs.status(pid), procfs.cpu_seconds(pid)
            t0, cpu0 = previous.get(role, (now, cpu))
            percent = 100 * (cpu - cpu0) / (now - t0) if now > t0 else float("nan")
            previous[role] = (now, cpu)
            rows.append(
                {
                    "t_s": round(now, 3),
                    "role": role,
                    "pid": pid,
                    "state": reading.state,
                    "cpu_s": cpu,
                    "cpu_percent": percent,
                    "voluntary_switches": reading.voluntary_switches,
                }
            )
    return pd.DataFrame(rows)


def count_states(pid: int, timeout: float = MAX_SPIN_S) -> dict[str, int]:
    """Read ``pid``'s state from ``/proc`` as fast as possible until it exits; how many readings saw each letter.

    Stops at the zombie state (the process has exited; Z is not counted) or when ``/proc/PID`` is gone.
    """
    counts: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = procfs.status(pid).state
        except FileNotFoundError:
            break
        if state == "Z":
            break
        counts[state] = counts.get(state, 0) + 1
    else:
        raise TimeoutError(f"process {pid} was still running after {timeout:g} s")
    return counts
