"""What a thread costs in memory: virtual, resident, and the kernel's own share, read from /proc.

Source 001 counts ``pmap``'s total, the *virtual* size: about 2 MB per thread, the stack a Rust
thread reserves. A reservation is address space, not memory. What a thread really takes is:

- *resident* (RSS): the pages of its stack it has touched, and its interpreter state (a few KiB);
- the *kernel's share*, which no per-process figure shows in full: a kernel stack per thread
  (``KernelStack`` in /proc/meminfo, system-wide) and the page tables mapping what it touched
  (``VmPTE``), besides the scheduler's own record of the task.

Off Linux (macOS) there is no /proc: psutil reads the virtual and resident sizes and the threads from
the kernel its own way, and the kernel's share and the private resident pages are NaN (not measured).

Each reading starts a parked service (:func:`iolab.topics.upstreams.run.open_parked_service`): the real
sync pool with N threads waiting on its queue, or the real event loop with nothing to do.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from iolab.kit import platforms, procfs
from iolab.kit.procs import ONE_MALLOC_ARENA
from iolab.topics.upstreams.run import open_parked_service


def reading(model: str, threads: int = 1, stack_kb: int | None = None) -> dict[str, float | int | str]:
    """One parked service's memory: virtual, resident, private, page tables, kernel stacks."""
    if platforms.missing("procfs") is not None:
        return _reading_elsewhere(model, threads, stack_kb)
    before = procfs.meminfo_kb("KernelStack")
    # One malloc arena (see there): else the arenas of the threads swamp their stacks in the virtual total.
    with open_parked_service(model, threads, stack_kb=stack_kb, env=ONE_MALLOC_ARENA) as process:
        status = procfs.status(process.pid)
        during = procfs.meminfo_kb("KernelStack")
    after = procfs.meminfo_kb("KernelStack")
    # KernelStack is the whole machine's: other programs' threads come and go meanwhile. The rise
    # at start and the fall at stop are two estimates; noise mostly adds, so the smaller is kept.
    kernel_stacks = max(0, min(during - before, during - after))
    return _row(model, threads, status.threads, status.vm_size_kb, status.vm_rss_kb, status.rss_anon_kb,
                status.vm_pte_kb, kernel_stacks)


def _reading_elsewhere(model: str, threads: int, stack_kb: int | None) -> dict[str, float | int | str]:
    """:func:`reading` without /proc: psutil's sizes; what only Linux shows is NaN."""
    import psutil  # here: on Linux the readings do without it

    with open_parked_service(model, threads, stack_kb=stack_kb, env=ONE_MALLOC_ARENA) as process:
        parked = psutil.Process(process.pid)
        with parked.oneshot():
            sizes, os_threads = parked.memory_info(), parked.num_threads()
    return _row(model, threads, os_threads, sizes.vms / 1024, sizes.rss / 1024, math.nan, math.nan, math.nan)


def _row(model: str, threads: int, os_threads: int, vm_size_kb: float, vm_rss_kb: float, rss_anon_kb: float,
         page_tables_kb: float, kernel_stacks_kb: float) -> dict[str, float | int | str]:
    return {
        "service": f"sync, {threads} threads" if model == "sync" else "async",
        "model": model,
        "pool_threads": threads if model == "sync" else 0,
        "os_threads": os_threads,
        "vm_size_mb": vm_size_kb / 1024,
        "rss_mb": vm_rss_kb / 1024,
        "rss_anon_mb": rss_anon_kb / 1024,
        "page_tables_kb": page_tables_kb,
        "kernel_stacks_kb": kernel_stacks_kb,
    }


def thread_memory(counts: list[int], stack_kb: int | None = None) -> pd.DataFrame:
    """One row per reading: the async service, then the sync service with each count of threads."""
    rows = [reading("async")] + [reading("sync", n, stack_kb) for n in counts]
    return pd.DataFrame(rows)


def per_thread(table: pd.DataFrame) -> pd.Series:
    """What one more thread adds, in KiB: the slope of each measure over the sync rows."""
    sync = table[table.model == "sync"]
    x = sync.pool_threads.to_numpy(dtype=float)

    def slope(col: str, unit: float) -> float:
        y = sync[col].to_numpy(dtype=float)
        if np.isnan(y).any():  # off Linux: a measure psutil cannot read
            return math.nan
        return float(np.polyfit(x, y, 1)[0]) * unit

    return pd.Series(
        {
            "virtual": slope("vm_size_mb", 1024),
            "resident": slope("rss_mb", 1024),
            "resident private": slope("rss_anon_mb", 1024),
            "page tables": slope("page_tables_kb", 1),
            "kernel stack": slope("kernel_stacks_kb", 1),
        },
        name="KiB per thread",
    )
