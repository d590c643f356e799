"""The machine's limits on threads and memory, read from the machine, and which one a run hit.

An OS thread needs, besides its stack, a process id (``kernel.pid_max``, machine-wide), a task slot
(``kernel.threads-max``), a place in its user's quota (``ulimit -u``, which root is exempt from), a
place under its control group's task limit (``pids.max``, set by container runtimes and systemd), and
memory mappings in its process (``vm.max_map_count``: a stack and its guard page are two). Whichever
runs out first stops ``pthread_create`` with the same EAGAIN, so the error message never says which:
:func:`name_limit` compares the failing program's readings with each limit and names the one it met.

The launcher that applies limits to a program is ``launch.py``.
"""

from __future__ import annotations

import math
import os
import re
import resource
from dataclasses import dataclass
from pathlib import Path

from iolab import machine, procfs

# pid_max counts ids, not tasks: after wrapping, the kernel hands out ids from 300 up only.
RESERVED_PIDS = 300
# How close to a limit a reading must be to count as having met it: the failing thread's own
# mappings or id were never created, and other processes come and go meanwhile.
NEAR = 0.01
# Go refuses to run more OS threads than this unless told otherwise (runtime/debug.SetMaxThreads).
GO_THREAD_LIMIT = re.compile(r"exceeds (\d+)-thread limit")


def tasks_on_machine() -> int:
    """Threads of every process on the machine now (the last figure of ``/proc/loadavg``)."""
    return int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])


def map_count(pid: int) -> int:
    """Memory mappings of process ``pid`` (lines of ``/proc/PID/maps``)."""
    with open(f"/proc/{pid}/maps", "rb") as f:
        return f.read().count(b"\n")


def readings(pid: int) -> dict[str, int | None]:
    """What a failing thread start is judged by: the process's threads, mappings, memory; the machine's tasks."""
    status = procfs.status(pid)
    try:
        maps = map_count(pid)
    except MemoryError:  # out of address space, the process cannot even read its own map
        maps = None
    try:
        pids = cgroup_pids()
    except (OSError, ValueError):  # an unreadable group file must not cost the report
        pids = None
    return {
        "threads": status.threads,
        "maps": maps,
        "vm_size_kb": status.vm_size_kb,
        "vm_rss_kb": status.vm_rss_kb,
        "system_tasks": tasks_on_machine(),
        "cgroup_tasks": None if pids is None else pids.current,
    }


# Where the kernel mounts control groups; /proc/self/cgroup says which group this process is in.
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
# cgroup v1 writes "no memory limit" as a huge number rather than v2's "max".
NO_LIMIT = 2**60


def cgroup_files(controller: str, v2_name: str, v1_name: str, *, proc_cgroup: Path = PROC_CGROUP,
                 root: Path = CGROUP_ROOT) -> list[Path]:
    """The controller's file in this process's cgroup and in each ancestor, innermost first.

    A limit set on an ancestor binds the groups below it, so every level counts. ``/proc/self/cgroup``
    has one ``ID:CONTROLLERS:PATH`` line per hierarchy: v1 mounts a controller's hierarchy at
    ``ROOT/CONTROLLERS`` and names the file ``v1_name``; v2 has one hierarchy, ``0::PATH``, at ``ROOT``
    (or ``ROOT/unified`` beside v1 ones), with ``v2_name``. A root group has no limit files.
    """
    found = []
    for line in proc_cgroup.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers:
            if controller not in controllers.split(","):
                continue
            mounts, name = [root / controllers, root / controller], v1_name
        else:
            mounts, name = [root, root / "unified"], v2_name
        for mount in dict.fromkeys(mounts):
            folder = mount / path.strip("/")
            while folder.is_relative_to(mount):
                if (folder / name).is_file():
                    found.append(folder / name)
                if folder == mount:
                    break
                folder = folder.parent
    return found


def _limit(path: Path) -> int | None:
    """A cgroup limit file's number; None for "max" or v1's huge "no limit"."""
    text = path.read_text().strip()
    return None if text == "max" or int(text) >= NO_LIMIT else int(text)


@dataclass(frozen=True)
class CgroupPids:
    """The cgroup task limit with the least room left: ``pids.max`` and ``pids.current`` of one group."""

    max: int  # tasks (threads of every process) the group may hold
    current: int  # tasks in the group now
    path: str  # the pids.max file that sets it


def cgroup_pids(*, proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT) -> CgroupPids | None:
    """This process's tightest cgroup task limit (``pids.max``); None where no group sets one."""
    limited = []
    for path in cgroup_files("pids", "pids.max", "pids.max", proc_cgroup=proc_cgroup, root=root):
        if (most := _limit(path)) is not None:
            current = int((path.parent / "pids.current").read_text())
            limited.append(CgroupPids(most, current, str(path)))
    return min(limited, key=lambda p: p.max - p.current, default=None)


def cgroup_memory_limit_mb(*, proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT) -> float | None:
    """This process's cgroup memory limit (v2 or v1, its group's or an ancestor's) in MiB; None if there is none."""
    files = cgroup_files("memory", "memory.max", "memory.limit_in_bytes", proc_cgroup=proc_cgroup, root=root)
    limits = [_limit(path) for path in files]
    return min((n / 2**20 for n in limits if n is not None), default=None)


def _rlimit(kind: int) -> int | None:
    soft, _ = resource.getrlimit(kind)
    return None if soft == resource.RLIM_INFINITY else soft


@dataclass(frozen=True)
class MachineLimits:
    """Every limit that can stop a thread from starting, as this machine has them set now."""

    max_map_count: int  # /proc/sys/vm/max_map_count: mappings per process
    threads_max: int  # /proc/sys/kernel/threads-max: tasks on the machine
    pid_max: int  # /proc/sys/kernel/pid_max: process ids on the machine
    nproc: int | None  # ulimit -u: tasks of this user (None: unlimited)
    nproc_applies: bool  # False for root: the kernel exempts it from ulimit -u
    address_space_mb: float | None  # ulimit -v (None: unlimited)
    open_files: int  # ulimit -n, soft
    mem_available_mb: float  # MemAvailable of /proc/meminfo
    memory_limit_mb: float | None  # this cgroup's memory limit, if any
    cgroup_pids: CgroupPids | None  # this cgroup's task limit (pids.max), if any
    tasks_now: int  # threads on the whole machine at the time of reading
    kernel_stack_kb: float  # kernel stack per task: KernelStack / tasks on the machine

    @property
    def memory_mb(self) -> float:
        """The memory a program could get: MemAvailable, or the cgroup's limit if lower."""
        return min(self.mem_available_mb, self.memory_limit_mb or math.inf)


def machine_limits() -> MachineLimits:
    """Read every limit from ``/proc`` and ``getrlimit``, now."""
    tasks = tasks_on_machine()
    return MachineLimits(
        max_map_count=machine.sysctl("vm.max_map_count")[0],
        threads_max=machine.sysctl("kernel.threads-max")[0],
        pid_max=machine.sysctl("kernel.pid_max")[0],
        nproc=_rlimit(resource.RLIMIT_NPROC),
        nproc_applies=os.geteuid() != 0,
        address_space_mb=None if (a := _rlimit(resource.RLIMIT_AS)) is None else a / 2**20,
        open_files=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        mem_available_mb=procfs.meminfo_kb("MemAvailable") / 1024,
        memory_limit_mb=cgroup_memory_limit_mb(),
        cgroup_pids=cgroup_pids(),
        tasks_now=tasks,
        kernel_stack_kb=procfs.meminfo_kb("KernelStack") / max(1, tasks),
    )


@dataclass(frozen=True)
class ThreadCosts:
    """What each extra thread costs a process, fitted over a run's samples."""

    maps: float  # memory mappings per thread
    rss_kb: float  # resident memory per thread (stack pages touched, thread state)
    base_maps: float  # mappings of the process with no thread of its own


def fit_thread_costs(samples: list[dict]) -> ThreadCosts:
    """Mappings and resident memory per thread: least-squares slopes over a threads run's samples."""
    import numpy as np

    rows = [s for s in samples if s.get("maps")]
    if len({s["os_threads"] for s in rows}) < 2:
        raise ValueError("the samples need at least two different thread counts to fit a cost per thread")
    threads = np.array([s["os_threads"] for s in rows], dtype=float)
    maps_per_thread, base_maps = np.polyfit(threads, [s["maps"] for s in rows], 1)
    rss_mb_per_thread, _ = np.polyfit(threads, [s["rss_mb"] for s in rows], 1)
    return ThreadCosts(maps=float(maps_per_thread), rss_kb=float(rss_mb_per_thread * 1024), base_maps=float(base_maps))


def predict_thread_limits(limits: MachineLimits, costs: ThreadCosts) -> list[tuple[str, int, str]]:
    """Each limit as (name, threads it allows one more process, where it is set), fewest first."""
    kernel_kb = limits.kernel_stack_kb
    candidates = [
        ("vm.max_map_count", (limits.max_map_count - costs.base_maps) / costs.maps, "/proc/sys/vm/max_map_count"),
        ("kernel.pid_max", limits.pid_max - RESERVED_PIDS - limits.tasks_now, "/proc/sys/kernel/pid_max"),
        ("kernel.threads-max", limits.threads_max - limits.tasks_now, "/proc/sys/kernel/threads-max"),
        ("memory", limits.memory_mb * 1024 / (costs.rss_kb + kernel_kb), "MemAvailable / cgroup"),
    ]
    if limits.nproc is not None and limits.nproc_applies:
        candidates.append(("ulimit -u", limits.nproc - limits.tasks_now, "ulimit -u"))
    if (pids := limits.cgroup_pids) is not None:
        candidates.append(("cgroup pids.max", pids.max - pids.current, pids.path))
    return sorted(((name, int(n), where) for name, n, where in candidates), key=lambda c: c[1])


def _near(value: float, limit: float) -> bool:
    return value >= limit * (1 - NEAR)


def name_limit(
    reading: dict[str, int | None] | None,
    limits: MachineLimits,
    *,
    output: str = "",
    started: int | None = None,
) -> str | None:
    """Which limit a program met, in words with its figures and the fix; None if none fits.

    ``reading`` is the program's :func:`readings` when it failed (or the runner's last sample),
    ``output`` what it printed (Go and Node name their own limits there).
    """
    where = f" when sleeper {started + 1:,} would not start" if started is not None else ""
    if match := GO_THREAD_LIMIT.search(output):
        return (
            f"Go's own limit: {int(match[1]):,} OS threads per program (runtime/debug.SetMaxThreads){where}; "
            "each goroutine blocked in a system call holds one"
        )
    if "Too many open files" in output or "EMFILE" in output:
        return f"ulimit -n: {limits.open_files:,} open files per process{where}; raise it with `ulimit -n`"
    if "heap out of memory" in output:
        return "V8's heap limit (node --max-old-space-size)"
    if reading is None:
        return None
    if reading.get("maps") is not None and _near(reading["maps"], limits.max_map_count):
        per = f" ({reading['maps'] / reading['threads']:.1f} per thread)" if reading.get("threads") else ""
        return (
            f"vm.max_map_count: {reading['maps']:,} of {limits.max_map_count:,} memory mappings in use{per}"
            f"{where}; raise it with `sysctl -w vm.max_map_count=262144`"
        )
    if reading["system_tasks"] >= (limits.pid_max - RESERVED_PIDS) * (1 - NEAR):
        return (
            f"kernel.pid_max: {reading['system_tasks']:,} tasks on the machine, ids up to {limits.pid_max:,}{where}; "
            "raise it with `sysctl -w kernel.pid_max=4194304`"
        )
    if _near(reading["system_tasks"], limits.threads_max):
        return f"kernel.threads-max: {reading['system_tasks']:,} of {limits.threads_max:,} tasks on the machine{where}"
    if (pids := limits.cgroup_pids) is not None and _near(reading.get("cgroup_tasks") or 0, pids.max):
        return (
            f"cgroup pids.max: {reading['cgroup_tasks']:,} of {pids.max:,} tasks in this control group{where}; "
            f"raise it in {pids.path} (or the container's --pids-limit)"
        )
    if limits.nproc is not None and limits.nproc_applies and _near(reading["system_tasks"], limits.nproc):
        return f"ulimit -u: {limits.nproc:,} tasks for this user{where}; raise it with `ulimit -u`"
    if limits.address_space_mb is not None and _near(reading["vm_size_kb"] / 1024, limits.address_space_mb):
        return f"ulimit -v: {reading['vm_size_kb'] / 1024:,.0f} of {limits.address_space_mb:,.0f} MiB of address space{where}"
    if _near(reading["vm_rss_kb"] / 1024, limits.memory_mb):
        return f"memory: {reading['vm_rss_kb'] / 1024:,.0f} MiB resident, {limits.memory_mb:,.0f} MiB available{where}"
    return None
