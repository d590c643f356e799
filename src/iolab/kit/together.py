"""The same CPU-bound job in N processes at once, each timed from the inside.

All N children are forked first and wait at a starting line (a pipe they read until the parent
closes it), so they really run together; each then times its own job. With more processes than
cores, the scheduler shares the cores and every job takes longer: that is the measurement.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
from collections.abc import Callable

import pandas as pd

from iolab.kit.procs import open_fork, read_exactly

RESULT = struct.Struct("d")  # one double: the child's seconds


def _timed_child(job: Callable[[], object], start_line: int, starter: int, results: int) -> None:
    # read() sees end-of-file only once *every* copy of the write end is closed, this one included.
    os.close(starter)
    os.read(start_line, 1)  # returns b"" when the parent closes its end: the start signal
    start = time.perf_counter()
    job()
    os.write(results, RESULT.pack(time.perf_counter() - start))


def run_together(n: int, job: Callable[[], object], timeout: float = 120.0) -> pd.DataFrame:
    """Run ``job`` in ``n`` forked processes at once; one row per process: processes, worker, seconds, wall_s."""
    start_read, start_write = os.pipe()
    results_read, results_write = os.pipe()
    try:
        with contextlib.ExitStack() as children:
            forked = [
                children.enter_context(open_fork(_timed_child, job, start_read, start_write, results_write))
                for _ in range(n)
            ]
            began = time.perf_counter()
            os.close(start_write)
            start_write = -1
            raw = read_exactly(results_read, RESULT.size * n, timeout=timeout)
            wall = time.perf_counter() - began
            for child in forked:
                child.wait(timeout=10)
    finally:
        for fd in (start_read, start_write, results_read, results_write):
            if fd >= 0:
                os.close(fd)
    seconds = [s for (s,) in RESULT.iter_unpack(raw)]
    return pd.DataFrame({"processes": n, "worker": range(n), "seconds": seconds, "wall_s": wall})


def scaling(counts: list[int], job: Callable[[], object], repeats: int = 1) -> pd.DataFrame:
    """:func:`run_together` for each process count, ``repeats`` times; tidy rows with a repeat column.

    One unrecorded run comes first: the first timed run after a quiet spell is often off by tens of
    per cent (CPU clocks and caches warming up, on bare metal and in VMs alike).
    """
    run_together(1, job)
    frames = [run_together(n, job).assign(repeat=r) for r in range(repeats) for n in counts]
    return pd.concat(frames, ignore_index=True)
