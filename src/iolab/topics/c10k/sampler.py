"""Watch a process from outside, through ``/proc``, while it runs: memory, the kernel's share, threads.

``with open_watch(pid) as w:`` starts a thread that reads ``/proc/PID/status`` every ``interval_s`` (and
``/proc/PID/maps``, which is slower, every few readings); ``w.samples`` holds one dict per reading
and ``w.latest`` the last one. Nothing is asked of the process itself, so the same numbers come out
for Python, Go, Node.js or Ruby.

The kernel's share is memory the process costs the kernel rather than its own pages: its page tables
(``VmPTE``) and one kernel stack per thread. Linux does not report the stacks per process; the
machine-wide ``KernelStack`` of ``/proc/meminfo`` divided by the tasks on the machine gives the size
of one (16 KiB on x86-64).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from iolab.kit import procfs
from iolab.topics.c10k import limits

# Reading /proc/PID/maps takes the process's memory-map lock and, at 60,000 mappings, ~25 ms: read it
# every few samples only, so the watch does not slow down the thread creation it is watching.
MAPS_EVERY = 4


class Watch:
    """The readings of one process over time (see :func:`open_watch`)."""

    def __init__(self, pid: int, interval_s: float, kernel_stack_kb: float) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.kernel_stack_kb = kernel_stack_kb
        self.samples: list[dict[str, Any]] = []
        self.start = time.perf_counter()
        self._stop = threading.Event()

    @property
    def latest(self) -> dict[str, Any] | None:
        """The last reading, or None before the first."""
        return self.samples[-1] if self.samples else None

    def sample(self) -> dict[str, Any] | None:
        """Read the process once and keep the reading; None if it has gone."""
        try:
            status = procfs.status(self.pid)
            maps = limits.map_count(self.pid) if len(self.samples) % MAPS_EVERY == 0 else None
        except (FileNotFoundError, ProcessLookupError, KeyError, ValueError):
            return None  # gone, or a zombie without its memory lines
        if status.state == "Z":
            return None
        kernel_kb = status.vm_pte_kb + status.threads * self.kernel_stack_kb
        reading = {
            "t_s": time.perf_counter() - self.start,
            "rss_mb": status.vm_rss_kb / 1024,
            "kernel_mb": kernel_kb / 1024,
            "page_tables_mb": status.vm_pte_kb / 1024,
            "vm_size_mb": status.vm_size_kb / 1024,
            "os_threads": status.threads,
            "maps": maps,  # None where not read
            "system_tasks": limits.tasks_on_machine(),
        }
        self.samples.append(reading)
        return reading

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def peak(self, key: str) -> float:
        """The largest reading of ``key`` (0 with no readings)."""
        return max((s[key] for s in self.samples if s[key] is not None), default=0)


@contextlib.contextmanager
def open_watch(pid: int, interval_s: float = 0.1) -> Iterator[Watch]:
    """Sample process ``pid`` every ``interval_s`` seconds in a thread until the block ends."""
    w = Watch(pid, interval_s, limits.machine_limits().kernel_stack_kb)
    w.sample()
    thread = threading.Thread(target=w._run, name=f"watch-{pid}", daemon=True)
    thread.start()
    try:
        yield w
    finally:
        w._stop.set()
        thread.join()
