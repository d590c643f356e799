"""Copy-on-write, measured: what fork() copies at once, and what it copies later.

The parent fills an array of a given size, forks, and reads the child's private memory from
``/proc`` twice: right after fork, and after the child has written to the array (all of it, or the
first ``write_fraction`` of it). How much each reading shows is the notebook's prediction.

Asking for huge pages is not getting them: with ``/sys/kernel/mm/transparent_hugepage/enabled`` at
``never``, or memory too fragmented for a free 2 MiB page, the kernel falls back to 4 KiB pages
silently. Each row therefore records how much of the array the kernel did put on huge pages
(``AnonHugePages`` in ``/proc/self/smaps_rollup``), so that a "huge" line can be checked.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import pandas as pd

from iolab.kit import platforms, procfs
from iolab.kit.procs import open_fork, read_exactly

MIB = 2**20


def _child(array: np.ndarray | None, write_fraction: float, go: int, report: int) -> None:
    os.write(report, b"f")  # forked: measure me
    read_exactly(go, 1)
    if array is not None:
        written = array[: int(len(array) * write_fraction)]
        written += 1  # in place: touches every page of that part, and only those
    os.write(report, b"w")  # written: measure me again
    read_exactly(go, 1)


def filled_array(mb: int, huge_pages: bool) -> np.ndarray:
    """``mb`` MiB of float64 ones, resident, on 4 KiB pages or on 2 MiB transparent huge pages."""
    # MAP_PRIVATE: Python's default for anonymous memory is MAP_SHARED, which fork does not copy.
    memory = mmap.mmap(-1, mb * MIB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    # With THP in "madvise" mode (Debian's default) only memory that asks for huge pages gets
    # them; numpy asks for every large array, so the choice is made here explicitly, both ways.
    memory.madvise(mmap.MADV_HUGEPAGE if huge_pages else mmap.MADV_NOHUGEPAGE)
    array = np.frombuffer(memory, dtype=np.float64)
    array.fill(1.0)  # written, so resident
    return array


def huge_pages_kb(pid: int | None = None) -> int:
    """The process's anonymous memory on transparent huge pages, in kB (``AnonHugePages``; 0 if not reported).

    Without ``/proc`` (macOS): :class:`~iolab.kit.platforms.FacilityMissing`, whose message is the cell's note, so
    that :func:`fork_and_write` (and the exercise that calls it) stops with the note before it allocates or forks.
    """
    platforms.require("procfs")
    for line in Path(f"/proc/{pid or os.getpid()}/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


def fork_and_write(array_mb: int, huge_pages: bool = False, write_fraction: float = 1.0) -> dict[str, float]:
    """Fork while holding ``array_mb`` MiB; fork time, parent RSS, child's private MiB before and after writing.

    The child writes to the first ``write_fraction`` of the array. ``array_huge_mb`` is how much of
    the array the kernel put on huge pages (the parent's ``AnonHugePages`` grew by that much).
    """
    huge_before_kb = huge_pages_kb()
    array = filled_array(array_mb, huge_pages) if array_mb else None
    array_huge_mb = max(0, huge_pages_kb() - huge_before_kb) / 1024
    go_read, go_write = os.pipe()
    report_read, report_write = os.pipe()
    try:
        parent = procfs.status(os.getpid())
        with open_fork(_child, array, write_fraction, go_read, report_write) as child:
            read_exactly(report_read, 1)
            before = procfs.memory_rollup(child.pid)
            os.write(go_write, b"g")
            read_exactly(report_read, 1, timeout=60)
            after = procfs.memory_rollup(child.pid)
            os.write(go_write, b"g")
            child.wait(timeout=10)
    finally:
        for fd in (go_read, go_write, report_read, report_write):
            os.close(fd)
    return {
        "pages": "2 MiB (huge)" if huge_pages else "4 KiB",
        "array_mb": array_mb,
        "array_huge_mb": array_huge_mb,
        "parent_rss_mb": parent.vm_rss_kb / 1024,
        "parent_page_tables_kb": parent.vm_pte_kb,  # what fork() must copy, page by page
        "fork_ms": child.fork_seconds * 1000,
        "child_private_before_mb": before.private_kb / 1024,
        "child_private_after_mb": after.private_kb / 1024,
    }


def fork_time_sweep(sizes_mb: list[int], repeats: int = 3) -> pd.DataFrame:
    """:func:`fork_and_write` for every size and both page sizes, ``repeats`` times; one row per fork."""
    return pd.DataFrame(
        [
            fork_and_write(mb, huge) | {"repeat": r}
            for r in range(repeats)
            for huge in (False, True)
            for mb in sizes_mb
        ]
    )
