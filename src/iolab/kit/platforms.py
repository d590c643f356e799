"""Which of the kernel facilities the course measures this system has, and the note a cell prints without one.

Most of the course is Python's own: ``fork`` (not on Windows), sockets, pipes, ``select``/``poll``,
asyncio and trio run on macOS as they do on Linux. Some experiments read what only Linux shows or
offers: ``/proc``, epoll, network namespaces, io_uring... :data:`FACILITIES` is the one table of them,
each with the words its note uses; :func:`missing` gives that note, or None where the facility is here,
and a notebook's cell prints it and skips, as it does without Go or Node.js.

Set ``IOLAB_FAKE_PLATFORM=darwin`` (or ``win32``) to take macOS's (or Windows's) path on Linux: every
facility that system lacks is then missing, so that the skips are tested where the course runs.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FAKE_ENV = "IOLAB_FAKE_PLATFORM"
NAMES = {"linux": "Linux", "darwin": "macOS", "win32": "Windows"}
LINUX = frozenset({"linux"})
# Where to go for a Linux-only cell: the course's image runs on Docker Desktop or podman, and WSL2 is a Linux.
ELSEWHERE = "run the course's image (README, \"Which way should I run it?\"), or WSL2 on Windows, for it"


@dataclass(frozen=True)
class Facility:
    """A kernel facility an experiment needs: its name in a note, what it gives, where it exists."""

    needs: str  # the note's words: "Linux's /proc"
    gives: str  # what the experiment reads or uses from it
    present: Callable[[], bool]  # whether this machine has it (asked only on a system that can)
    systems: frozenset[str] = LINUX  # the sys.platform values that can have it


def _has(module: str, name: str) -> bool:
    """Whether ``module`` (which Windows may lack: fcntl) has ``name``."""
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


FACILITIES: dict[str, Facility] = {
    "procfs": Facility("Linux's /proc", "a process's state letter, CPU time and memory pages",
                       lambda: Path("/proc/self/status").exists()),
    "procnet": Facility("Linux's /proc/net", "the kernel's table of TCP sockets and its drop counters",
                        lambda: Path("/proc/net/tcp").exists()),
    "sysctl": Facility("Linux's /proc/sys", "the kernel's settings (net.core.somaxconn, vm.max_map_count...)",
                       lambda: Path("/proc/sys/kernel").exists()),
    "epoll": Facility("Linux's epoll", "a readiness wait whose cost does not grow with what it watches (macOS has kqueue)",
                      lambda: _has("select", "epoll")),
    "netns": Facility("Linux's network namespaces", "a network of two namespaces joined by an emulated link",
                      lambda: Path("/proc/self/ns/net").exists()),
    # Whether this Linux's io_uring works (kernel, sysctl, seccomp) is chapter 13's own check: topics.completion.support.
    "io_uring": Facility("Linux's io_uring", "completion-based I/O", lambda: True),
    "affinity": Facility("Linux's CPU affinity (sched_setaffinity)", "pinning a server and its load to separate cores",
                         lambda: _has("os", "sched_setaffinity")),
    "pipe-size": Facility("Linux's F_SETPIPE_SZ", "a pipe's capacity, read and changed",
                          lambda: _has("fcntl", "F_GETPIPE_SZ")),
    "fadvise": Facility("posix_fadvise (Linux)", "evicting a file from the page cache", lambda: _has("os", "posix_fadvise")),
    "subreaper": Facility("Linux's child subreaper (prctl)", "adopting orphans, so that the guard finds what a run left",
                          lambda: True),
    "pdeathsig": Facility("Linux's parent-death signal (prctl)", "a database server that stops when the notebook's kernel "
                          "is killed", lambda: True),
    "fork": Facility("fork()", "a copy of the running process", lambda: _has("os", "fork"),
                     frozenset({"linux", "darwin"})),
}


class FacilityMissing(RuntimeError):
    """A facility this system lacks was asked for; the message is the note a cell prints (see :func:`missing`)."""


def system() -> str:
    """``sys.platform``, or the one ``IOLAB_FAKE_PLATFORM`` names ("darwin", "win32")."""
    return os.environ.get(FAKE_ENV, "").strip() or sys.platform


def system_name() -> str:
    """This system's name for a reader: "Linux", "macOS", "Windows"."""
    return NAMES.get(system(), system())


def faked() -> bool:
    """True when ``IOLAB_FAKE_PLATFORM`` makes the kit take another system's path."""
    return system() != sys.platform


def missing(facility: str) -> str | None:
    """None if ``facility`` (a key of FACILITIES) is here; else the note a cell prints as it skips."""
    if facility not in FACILITIES:
        raise KeyError(f"no facility {facility!r}: the kit knows {', '.join(FACILITIES)}")
    wanted = FACILITIES[facility]
    if system() in wanted.systems and wanted.present():
        return None
    return f"needs {wanted.needs}, for {wanted.gives}: on {system_name()} this cell is skipped; {ELSEWHERE}"


def require(facility: str) -> None:
    """Raise :class:`FacilityMissing` with the note if ``facility`` is not here."""
    if (note := missing(facility)) is not None:
        raise FacilityMissing(note)


def table() -> list[dict[str, str]]:
    """Every facility with what it gives and whether it is here, one dict each (for a notebook or ``--help``)."""
    return [{"facility": name, "needs": f.needs, "gives": f.gives, "here": "yes" if missing(name) is None else "no"}
            for name, f in FACILITIES.items()]
