"""What the kernel says about a process, read from ``/proc``.

Everything here is a plain read of the files that ``ps``, ``top`` and ``pmap`` read themselves, so
the reader can ``cat`` the same file and see the same number. Sizes are in KiB, as the kernel
prints them; times in seconds. Off Linux there is no ``/proc``: every reader raises
:class:`~iolab.kit.platforms.FacilityMissing`, whose message is the note a notebook's cell prints as it skips.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from iolab.kit import platforms

# The one-letter states of /proc/PID/stat and /proc/PID/status, as `man 5 proc` names them.
STATE_NAMES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk sleep",
    "T": "stopped",
    "t": "tracing stop",
    "Z": "zombie",
    "X": "dead",
    "I": "idle",
}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcStatus:
    """One reading of ``/proc/PID/status`` (sizes in KiB)."""

    pid: int
    name: str
    state: str  # one letter: R, S, D, Z, ...
    ppid: int
    threads: int
    vm_size_kb: int  # virtual: everything mapped, touched or not
    vm_rss_kb: int  # resident: pages in RAM now, shared ones included
    vm_hwm_kb: int  # the peak of vm_rss_kb so far ("high water mark")
    rss_anon_kb: int  # resident and private to this address space (heap, stacks)
    vm_pte_kb: int  # the kernel's page tables for this address space
    voluntary_switches: int  # the process gave up the CPU (it blocked)
    involuntary_switches: int  # the scheduler took the CPU away (its time slice ended)

    @property
    def state_name(self) -> str:
        """The state spelled out ("sleeping" for S)."""
        return STATE_NAMES.get(self.state, self.state)


def _read(path: str) -> str:
    """The text of a file under /proc; FacilityMissing (the skip's note) where there is no /proc."""
    platforms.require("procfs")
    return Path(path).read_text()


def _status_fields(pid: int) -> dict[str, str]:
    text = _read(f"/proc/{pid}/status")
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _kb(fields: dict[str, str], key: str) -> int:
    # A zombie has no address space: its memory lines are missing altogether.
    return int(fields.get(key, "0 kB").split()[0])


def status(pid: int) -> ProcStatus:
    """The process's state, thread count and memory, from ``/proc/PID/status``."""
    fields = _status_fields(pid)
    return ProcStatus(
        pid=pid,
        name=fields["Name"],
        state=fields["State"].split()[0],
        ppid=int(fields["PPid"]),
        threads=int(fields["Threads"]),
        vm_size_kb=_kb(fields, "VmSize"),
        vm_rss_kb=_kb(fields, "VmRSS"),
        vm_hwm_kb=_kb(fields, "VmHWM"),
        rss_anon_kb=_kb(fields, "RssAnon"),
        vm_pte_kb=_kb(fields, "VmPTE"),
        voluntary_switches=int(fields["voluntary_ctxt_switches"]),
        involuntary_switches=int(fields["nonvoluntary_ctxt_switches"]),
    )


def cpu_seconds(pid: int | None = None) -> float:
    """User plus system CPU time process ``pid`` has used so far, from ``/proc/PID/stat``.

    Without ``pid``, this process's own, from the kernel's per-process clock instead: ``/proc`` counts
    in clock ticks (10 ms), too coarse for a process timing itself over a short run.
    """
    if pid is None:
        return time.process_time()
    text = _read(f"/proc/{pid}/stat")
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text[text.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> float:
    """User plus system CPU used so far by process ``pid`` and all its descendants (workers, pools).

    A descendant that exits while it is being read is left out: its time is the parent's only once reaped.
    """
    import psutil  # here: the c10k programs import this module, and their start-up is part of their wall time

    total = 0.0
    parent = psutil.Process(pid)
    for proc in [parent, *parent.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


@dataclass(frozen=True)
class MemoryRollup:
    """One reading of ``/proc/PID/smaps_rollup`` (KiB): who owns the resident pages."""

    rss_kb: int
    pss_kb: int  # proportional: each shared page divided among the processes sharing it
    shared_kb: int  # resident pages other processes map too (after fork: not yet copied)
    private_kb: int  # resident pages only this process maps (copied, or new)


def memory_rollup(pid: int) -> MemoryRollup:
    """Resident memory split into shared and private pages, from ``/proc/PID/smaps_rollup``."""
    fields: dict[str, int] = {}
    for line in _read(f"/proc/{pid}/smaps_rollup").splitlines()[1:]:
        key, _, value = line.partition(":")
        fields[key] = int(value.split()[0])
    return MemoryRollup(
        rss_kb=fields["Rss"],
        pss_kb=fields["Pss"],
        shared_kb=fields["Shared_Clean"] + fields["Shared_Dirty"],
        private_kb=fields["Private_Clean"] + fields["Private_Dirty"],
    )


def exists(pid: int) -> bool:
    """True while ``/proc/PID`` exists (a zombie still does, until it is reaped); off Linux, psutil's answer."""
    if platforms.missing("procfs") is not None:
        import psutil

        return bool(psutil.pid_exists(pid))
    return Path(f"/proc/{pid}").exists()


def wait_for_state(pid: int, states: str, timeout: float = 5.0) -> ProcStatus:
    """Poll ``/proc/PID/status`` until the process is in one of ``states`` (e.g. "Z"); that reading."""
    deadline = time.monotonic() + timeout
    while True:
        reading = status(pid)
        if reading.state in states:
            return reading
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} stayed in state {reading.state}, not {states}, for {timeout:g} s")
        time.sleep(0.001)


def meminfo_kb(key: str) -> int:
    """One line of ``/proc/meminfo``, the whole machine's memory (``KernelStack``, ``MemAvailable``...), in KiB."""
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(f"{key} is not in /proc/meminfo on this kernel")
