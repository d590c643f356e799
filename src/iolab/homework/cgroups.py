"""A cgroup of its own for each submission: the kernel's hard limits on its processes and its memory.

Where the grader may write the cgroup file system (root, with ``/sys/fs/cgroup`` writable, as here
and in CI), each submission gets a cgroup below the grader's own: ``pids.max`` refuses the fork or
the thread past the cap (the kernel counts threads as tasks), and the memory limit makes the kernel's
OOM killer end the submission at its cap, page cache and tmpfs counted. Its processes are listed and
killed from it, a double-forked daemon included. ``caps.launcher`` moves the kernel's process in
before it execs the sandbox, so nothing the submission starts is ever outside it.

cgroup v1 (a hierarchy per controller) and v2 (one hierarchy) both work; v2 only where the grader's
own cgroup may hand ``pids`` and ``memory`` to children (a delegated cgroup, not a container's root,
which holds processes). Elsewhere :func:`make_cgroup` says why there is none, and the watchdog in
``caps`` keeps the caps alone.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# How long the killing of a submission's processes, and the removal of its cgroup, may take before
# the grader goes on without them (a task in uninterruptible sleep cannot be hurried).
KILL_SECONDS = 10.0
PREFIX = "iolab-grade"  # then the grading process's pid: what sweep() looks for
ENV = "IOLAB_GRADE_CGROUP"  # 0: make no cgroup, the watchdog alone keeps the caps (as where there is none)


@dataclass(frozen=True)
class Cgroup:
    """A submission's cgroup: one folder per controller in cgroup v1 (``pids``, ``memory``), one folder in v2."""

    pids: Path
    memory: Path

    @property
    def v2(self) -> bool:
        return self.pids == self.memory

    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` files a process writes its pid to, to join."""
        return sorted({self.pids / "cgroup.procs", self.memory / "cgroup.procs"})

    def refused(self) -> str | None:
        """Which limit the kernel enforced, if it did: "processes" (a fork refused), "memory" (an OOM kill); else None."""
        if _counter(self.pids / "pids.events", "max") > 0:
            return "processes"
        if _counter(self.memory / ("memory.events" if self.v2 else "memory.oom_control"), "oom_kill") > 0:
            return "memory"
        return None

    def pids_inside(self) -> list[int]:
        """The processes in the cgroup."""
        with contextlib.suppress(OSError, ValueError):
            return [int(line) for line in (self.pids / "cgroup.procs").read_text().split()]
        return []

    def kill(self) -> bool:
        """Kill every process in the cgroup; True once it is empty (within ``KILL_SECONDS``)."""
        kill_file = self.pids / "cgroup.kill"  # v2, Linux 5.14: one write, no race with forks
        deadline = time.monotonic() + KILL_SECONDS
        while pids := self.pids_inside():
            if kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
            else:
                # Round after round: a process not yet killed may fork, and its child shows in the next
                # reading. A pid read here could in principle be reused before the kill; the cap on
                # processes keeps the rounds few and short.
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def remove(self) -> None:
        """Kill what is left in it and remove its folders (left in place if that takes over ``KILL_SECONDS``)."""
        self.kill()
        deadline = time.monotonic() + KILL_SECONDS
        for folder in {self.pids, self.memory}:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while its last tasks exit
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)


def _counter(path: Path, key: str) -> int:
    """The value of ``key`` in a cgroup file of ``key value`` lines (0 if either is missing)."""
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


def _hierarchies() -> tuple[dict[str, Path], Path | None]:
    """Where this process's own cgroups are: {v1 controller: folder}, and its v2 folder (None if none)."""
    mounts: dict[str, Path] = {}
    unified = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype, _, options = right.split(" ")[:3]
        point = Path(left.split(" ")[4])
        if fstype == "cgroup":
            for option in options.split(","):
                if option in ("pids", "memory"):
                    mounts[option] = point
        elif fstype == "cgroup2":
            unified = point
    v1: dict[str, Path] = {}
    v2 = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller in mounts:
                v1[controller] = mounts[controller] / path.lstrip("/")
        if controllers == "" and unified is not None:
            v2 = unified / path.lstrip("/")
    return v1, v2


_names = itertools.count()


def _make_v1(where: dict[str, Path], name: str, processes: int, memory_bytes: int) -> Cgroup:
    cgroup = Cgroup(where["pids"] / name, where["memory"] / name)
    cgroup.pids.mkdir()
    try:
        cgroup.memory.mkdir()
        (cgroup.pids / "pids.max").write_text(str(processes))
        (cgroup.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # with swap accounting: no swapping past the cap either
            (cgroup.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
    except OSError:
        cgroup.remove()
        raise
    return cgroup


def _make_v2(parent: Path, name: str, processes: int, memory_bytes: int) -> Cgroup:
    # A v2 parent hands a controller to its children only if its subtree_control names it, which it
    # refuses while processes live in the parent itself (EBUSY).
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    missing = [f"+{c}" for c in ("pids", "memory") if c not in enabled]
    if missing:
        (parent / "cgroup.subtree_control").write_text(" ".join(missing))
    cgroup = Cgroup(parent / name, parent / name)
    cgroup.pids.mkdir()
    try:
        (cgroup.pids / "pids.max").write_text(str(processes))
        (cgroup.pids / "memory.max").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):
            (cgroup.pids / "memory.swap.max").write_text("0")
    except OSError:
        cgroup.remove()
        raise
    return cgroup


def make_cgroup(processes: int, memory_bytes: int) -> tuple[Cgroup | None, str]:
    """A new cgroup below this process's own, limited to ``processes`` tasks and ``memory_bytes``; or None and why
    the machine gives none."""
    if os.environ.get(ENV, "").strip() in ("0", "no", "off"):
        return None, f"turned off ({ENV}=0)"
    name = f"{PREFIX}-{os.getpid()}-{next(_names)}"
    try:
        v1, v2 = _hierarchies()
        if "pids" in v1 and "memory" in v1:
            return _make_v1(v1, name, processes, memory_bytes), ""
        if v2 is not None:
            return _make_v2(v2, name, processes, memory_bytes), ""
        return None, "no cgroup file system with the pids and memory controllers"
    except OSError as exc:  # not root, a read-only /sys/fs/cgroup (docker's default), no delegation
        return None, f"cannot make a cgroup: {exc.strerror or exc}"


@contextlib.contextmanager
def open_cgroup(processes: int, memory_bytes: int) -> Iterator[Cgroup | None]:
    """A cgroup of its own for one submission while the block runs (None where the machine gives none); then it
    is emptied and removed."""
    cgroup, _ = make_cgroup(processes, memory_bytes)
    try:
        yield cgroup
    finally:
        if cgroup is not None:
            cgroup.remove()


def sweep(pid: int) -> None:
    """Kill and remove the cgroups a grading process ``pid`` made and left (it was killed before it could)."""
    with contextlib.suppress(OSError):
        v1, v2 = _hierarchies()
        if "pids" in v1 and "memory" in v1:
            for folder in v1["pids"].glob(f"{PREFIX}-{pid}-*"):
                Cgroup(folder, v1["memory"] / folder.name).remove()
        elif v2 is not None:
            for folder in v2.glob(f"{PREFIX}-{pid}-*"):
                Cgroup(folder, folder).remove()
