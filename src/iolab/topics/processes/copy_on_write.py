"""Copy-on-write, measured: what fork() copies at once, and what it copies later.

The parent fills an array of a given size, forks, and reads the child's private memory from
``/proc`` twice: right after fork, and after the child has written to the array (all of it, or the
first ``write_fraction`` of it). How much each reading shows is the notebook's prediction.

Asking for huge pages is not getting them: with ``/sys/kernel/mm/transparent_hugepage/enabled`` at
``never``, or memory too fragmented for a free 2 MiB page, the kernel falls back to 4 KiB pages
silently. Each row therefore records how much of the array the kernel did put on huge pages
(``AnonHugePages`` in ``/proc/self/smaps_rollup``), so that a "huge" line can be checked.

Off Linux (macOS) there is no ``/proc``: the child reads its own private memory through psutil (its
unique set size; macOS lets a process read its own, not its child's), the parent's resident size comes
from psutil too, and what only ``/proc`` shows (page tables, huge pages) is NaN. Huge pages are Linux's
alone: asked for off Linux, :func:`fork_and_write` stops with the note.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from pathlib import Path

import numpy as np
import pandas as pd

from iolab.kit import platforms, procfs
from iolab.kit.procs import open_fork, read_exactly

MIB = 2**20


def _own_private_mb(measure: bool) -> float:
    """This process's private memory in MiB, psutil's unique set size; NaN unless ``measure`` (Linux reads /proc)."""
    if not measure:
        return math.nan
    import psutil  # here: on Linux the parent reads the child's /proc instead

    return float(psutil.Process().memory_full_info().uss) / MIB


def _child(array: np.ndarray | None, write_fraction: float, go: int, report: int, measure: bool) -> None:
    os.write(report, b"f" + struct.pack("=d", _own_private_mb(measure)))  # forked: measure me
    read_exactly(go, 1)
    if array is not None:
        written = array[: int(len(array) * write_fraction)]
        written += 1  # in place: touches every page of that part, and only those
    os.write(report, b"w" + struct.pack("=d", _own_private_mb(measure)))  # written: measure me again
    read_exactly(go, 1)


def _reported_mb(fd: int, timeout: float = 10.0) -> float:
    """The child's word that it reached a step, and the private MiB it read of itself there (NaN on Linux)."""
    return float(struct.unpack("=d", read_exactly(fd, 9, timeout)[1:])[0])


def filled_array(mb: int, huge_pages: bool) -> np.ndarray:
    """``mb`` MiB of float64 ones, resident, on 4 KiB pages or on 2 MiB transparent huge pages."""
    # MAP_PRIVATE: Python's default for anonymous memory is MAP_SHARED, which fork does not copy.
    memory = mmap.mmap(-1, mb * MIB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    # With THP in "madvise" mode (Debian's default) only memory that asks for huge pages gets
    # them; numpy asks for every large array, so the choice is made here explicitly, both ways.
    # macOS has no transparent huge pages, nor these two constants (fork_and_write asks for them only on Linux).
    advice = getattr(mmap, "MADV_HUGEPAGE" if huge_pages else "MADV_NOHUGEPAGE", None)
    if advice is not None:
        memory.madvise(advice)
    array = np.frombuffer(memory, dtype=np.float64)
    array.fill(1.0)  # written, so resident
    return array


def huge_pages_kb(pid: int | None = None) -> int:
    """The process's anonymous memory on transparent huge pages, in kB (``AnonHugePages``; 0 if not reported).

    Without ``/proc`` (macOS): :class:`~iolab.kit.platforms.FacilityMissing`, whose message is the cell's note, so
    that :func:`fork_and_write` asked for huge pages stops with the note before it allocates or forks.
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
    Off Linux the child's private sizes are its own reading (psutil), and page tables and huge pages are NaN.
    """
    on_linux = platforms.missing("procfs") is None
    if huge_pages:
        platforms.require("procfs")  # huge pages are Linux's: off it, the note before anything is allocated
    huge_before_kb = huge_pages_kb() if on_linux else 0
    array = filled_array(array_mb, huge_pages) if array_mb else None
    array_huge_mb = max(0, huge_pages_kb() - huge_before_kb) / 1024 if on_linux else math.nan
    go_read, go_write = os.pipe()
    report_read, report_write = os.pipe()
    try:
        parent_rss_kb, parent_pte_kb = _own_sizes_kb(on_linux)
        with open_fork(_child, array, write_fraction, go_read, report_write, not on_linux) as child:
            before = _reported_mb(report_read)
            if on_linux:
                before = procfs.memory_rollup(child.pid).private_kb / 1024
            os.write(go_write, b"g")
            after = _reported_mb(report_read, timeout=60)
            if on_linux:
                after = procfs.memory_rollup(child.pid).private_kb / 1024
            os.write(go_write, b"g")
            child.wait(timeout=10)
    finally:
        for fd in (go_read, go_write, report_read, report_write):
            os.close(fd)
    return {
        "pages": "2 MiB (huge)" if huge_pages else "4 KiB",
        "array_mb": array_mb,
        "array_huge_mb": array_huge_mb,
        "parent_rss_mb": parent_rss_kb / 1024,
        "parent_page_tables_kb": parent_pte_kb,  # what fork() must copy, page by page
        "fork_ms": child.fork_seconds * 1000,
        "child_private_before_mb": before,
        "child_private_after_mb": after,
    }


def _own_sizes_kb(on_linux: bool) -> tuple[float, float]:
    """This process's resident size and page tables in kB; off Linux psutil's resident size, and NaN page tables."""
    if on_linux:
        status = procfs.status(os.getpid())
        return status.vm_rss_kb, status.vm_pte_kb
    import psutil

    return psutil.Process().memory_info().rss / 1024, math.nan


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
