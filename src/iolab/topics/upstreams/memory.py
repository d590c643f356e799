"""What a thread costs in memory: virtual, resident, and the kernel's own share, read from /proc.

Source 001 counts ``pmap``'s total, the *virtual* size: about 2 MB per thread, the stack a Rust
thread reserves. A reservation is address space, not memory. What a thread really takes is:

- *resident* (RSS): the pages of its stack it has touched, and its interpreter state (a few KiB);
- the *kernel's share*, which no per-process figure shows in full: a kernel stack per thread
  (``KernelStack`` in /proc/meminfo, system-wide) and the page tables mapping what it touched
  (``VmPTE``), besides the scheduler's own record of the task.

Each reading starts a parked service (:func:`iolab.topics.upstreams.run.open_parked_service`): the real
sync pool with N threads waiting on its queue, or the real event loop with nothing to do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iolab.kit import procfs
from iolab.kit.procs import ONE_MALLOC_ARENA
from iolab.topics.upstreams.run import open_parked_service


def reading(model: str, threads: int = 1, stack_kb: int | None = None) -> dict[str, float | int | str]:
    """One parked service's memory: virtual, resident, private, page tables, kernel stacks."""
    before = procfs.meminfo_kb("KernelStack")
    # One malloc arena (see there): else the arenas of the threads swamp their stacks in the virtual total.
    with open_parked_service(model, threads, stack_kb=stack_kb, env=ONE_MALLOC_ARENA) as process:
        status = procfs.status(process.pid)
        during = procfs.meminfo_kb("KernelStack")
    after = procfs.meminfo_kb("KernelStack")
    # KernelStack is the whole machine's: other programs' threads come and go meanwhile. The rise
    # at start and the fall at stop are two estimates; noise mostly adds, so the smaller is kept.
    kernel_stacks = max(0, min(during - before, during - after))
    return {
        "service": f"sync, {threads} threads" if model == "sync" else "async",
        "model": model,
        "pool_threads": threads if model == "sync" else 0,
        "os_threads": status.threads,
        "vm_size_mb": status.vm_size_kb / 1024,
        "rss_mb": status.vm_rss_kb / 1024,
        "rss_anon_mb": status.rss_anon_kb / 1024,
        "page_tables_kb": status.vm_pte_kb,
        "kernel_stacks_kb": kernel_stacks,
    }


def thread_memory(counts: list[int], stack_kb: int | None = None) -> pd.DataFrame:
    """One row per reading: the async service, then the sync service with each count of threads."""
    rows = [reading("async")] + [reading("sync", n, stack_kb) for n in counts]
    return pd.DataFrame(rows)


def per_thread(table: pd.DataFrame) -> pd.Series:
    """What one more thread adds, in KiB: the slope of each measure over the sync rows."""
    sync = table[table.model == "sync"]
    x = sync.pool_threads.to_numpy(dtype=float)
    slope = lambda col, unit: float(np.polyfit(x, sync[col].to_numpy(dtype=float), 1)[0]) * unit  # noqa: E731
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
