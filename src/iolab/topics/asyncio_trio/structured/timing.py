"""The run time of one fan-out (``gather_all``) as the number of concurrent jobs grows, per library.

Source 004 timed two versions of the same waiting client and compared run times (its "relative
performance"); this does the same for asyncio, uvloop and trio. Every job waits the same time, so
the ideal run time is that wait, and whatever is above it is what the library spent on its tasks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pandas as pd

from iolab.kit import runners
from iolab.topics.asyncio_trio.structured import asyncio as asyncio_version
from iolab.topics.asyncio_trio.structured import trio as trio_version
from iolab.topics.asyncio_trio.structured.shared import Job, Log

LIBRARIES = ("asyncio", "uvloop", "trio")


def fan_out_seconds(library: str, jobs: int, wait_s: float) -> float:
    """Seconds for ``gather_all`` over ``jobs`` jobs that each wait ``wait_s``, on ``library``."""
    work = [Job(f"job{i}", wait_s) for i in range(jobs)]
    start = time.perf_counter()
    if library == "trio":
        runners.run_trio(trio_version.gather_all, work, Log())
    elif library in ("asyncio", "uvloop"):
        runners.run_asyncio(asyncio_version.gather_all, work, Log(), loop=library)
    else:
        raise ValueError(f"unknown library {library!r}; the libraries are: {', '.join(LIBRARIES)}")
    seconds = time.perf_counter() - start
    return seconds


def fan_out(counts: Sequence[int], wait_s: float = 0.2, repeats: int = 3,
            libraries: Sequence[str] = LIBRARIES) -> pd.DataFrame:
    """One row per library, job count and repeat: seconds, and overhead_ms above the ideal ``wait_s``."""
    rows = []
    for repeat in range(repeats):
        for jobs in counts:
            for library in libraries:
                seconds = fan_out_seconds(library, jobs, wait_s)
                rows.append({"library": library, "jobs": jobs, "repeat": repeat, "seconds": seconds,
                             "overhead_ms": (seconds - wait_s) * 1000})
    return pd.DataFrame(rows)
