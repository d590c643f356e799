"""Which machine a measurement was made on, and what it allows.

The fingerprint is stored beside every result. ``reserve_descriptors`` is the one descriptor budget:
every instrument asks it before it opens sockets or pipes by the thousand, and gets the same error,
``DescriptorLimit``, in the same words, when ``ulimit -n`` is too low.
"""

from __future__ import annotations

import functools
import os
import platform
import resource
from collections.abc import Callable
from pathlib import Path

from iolab.kit import platforms

# The packages whose versions can change a measurement.
PACKAGES = ("numpy", "pandas", "psutil", "trio", "uvloop", "h11", "httptools")
# Descriptors a process needs besides the ones an experiment counts: stdio, an event loop's epoll
# and wakeup pipes, a pipe to its parent, files its imports keep open, /proc reads. A few dozen at
# most; one number for every instrument, so that the same run is refused or allowed everywhere.
SPARE_DESCRIPTORS = 64


def _cpu_model() -> str:
    if platforms.missing("procfs") is None:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
        except OSError:
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _memory_bytes() -> int:
    if platforms.faked() or not hasattr(os, "sysconf"):  # Windows has no sysconf; psutil asks each system its way
        import psutil

        return int(psutil.virtual_memory().total)
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _version(package: str) -> str | None:
    import importlib.metadata  # here, not at the top: it takes 20 ms, and every kit program imports this module

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cores() -> int:
    """The CPUs this process may run on (what a server can use, not what the box has).

    Where there is no CPU affinity (macOS, Windows), every CPU the machine has.
    """
    if platforms.missing("affinity") is None:
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@functools.cache
def fingerprint() -> dict[str, object]:
    """CPU, cores, memory, kernel, Python and package versions, as a JSON-ready dict."""
    return {
        "cpu": _cpu_model(),
        "cores": cores(),
        "memory_gib": round(_memory_bytes() / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "packages": {name: v for name in PACKAGES if (v := _version(name))},
    }


def describe() -> str:
    """The fingerprint in one line, for captions and notebook headers."""
    fp = fingerprint()
    return f"{fp['cpu']} · {fp['cores']} cores · {fp['memory_gib']} GiB · {platforms.system_name()} {fp['kernel']} · Python {fp['python']}"


def sysctl(name: str, default: list[int] | None = None) -> list[int]:
    """The numbers of a kernel setting, e.g. ``sysctl("net.core.somaxconn")`` (read from /proc/sys).

    A setting this kernel does not have raises FileNotFoundError, or gives ``default`` if one is given
    (``tcp_syn_linear_timeouts`` exists only since Linux 6.5). Off Linux there is no /proc/sys:
    :class:`~iolab.kit.platforms.FacilityMissing`, whose message is the note a cell prints.
    """
    platforms.require("sysctl")
    path = Path("/proc/sys") / name.replace(".", "/")
    if default is not None and not path.exists():
        return default
    return [int(field) for field in path.read_text().split()]


class DescriptorLimit(RuntimeError):
    """An experiment would need more file descriptors than ``ulimit -n`` allows.

    The one error every instrument of the kit raises for it, before it starts (see
    :func:`reserve_descriptors`); its message says how many descriptors are needed, what the limit
    is, and what to raise or change.
    """


def open_files_limit() -> tuple[int, int]:
    """``ulimit -n``: the (soft, hard) limit on open descriptors, sockets included."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def raise_open_files_limit(needed: int | None = None) -> None:
    """Raise the soft ``ulimit -n`` to ``needed`` descriptors (None: to the hard limit), never past the hard one.

    No privilege is needed to go up to the hard limit; a shell's soft default (often 1,024) would
    otherwise fail an experiment with thousands of sockets for a reason that is not its subject.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if needed is None else (needed if hard == resource.RLIM_INFINITY else min(needed, hard))
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def descriptor_limit(needed: int, limit: int, *, what: str, fewer: str, hard: bool = True) -> DescriptorLimit:
    """The error for ``what`` needing ``needed`` descriptors where ``limit`` are allowed, in the kit's one wording.

    ``hard`` says which limit ``limit`` is: the hard one (a kit program raises its soft limit that
    far by itself), or the soft one a program inherits as it is.
    """
    which = "its hard limit (ulimit -Hn)" if hard else "its limit (ulimit -n)"
    return DescriptorLimit(
        f"{what} need {needed:,} descriptors in one process; {which} allows {limit:,}. Raise it with "
        f"`ulimit -n {needed}` (past the hard limit: as root, or in /etc/security/limits.conf) or {fewer}."
    )


def reserve_descriptors(
    needed: int,
    *,
    what: str,
    fewer: Callable[[int], str],
    here: bool = True,
    soft: bool = False,
) -> int:
    """Check that ``needed`` descriptors plus the spare ones fit in one process; the total, or DescriptorLimit.

    ``what`` names what needs them ("500 connections"); ``fewer(room)`` says what smaller run fits in
    ``room`` descriptors, the limit less the spare ("use at most 436 threads"). The hard limit counts,
    since raising the soft limit that far needs no privilege; with ``soft`` the soft one does, for a
    program that never raises it. With ``here`` the descriptors are opened by this process, whose
    soft limit is raised to the total now; say False when a child opens them and raises its own.
    """
    total = needed + SPARE_DESCRIPTORS
    limit = open_files_limit()[0 if soft else 1]
    if limit != resource.RLIM_INFINITY and total > limit:
        room = max(0, limit - SPARE_DESCRIPTORS)
        raise descriptor_limit(total, limit, what=what, fewer=fewer(room), hard=not soft)
    if here:
        raise_open_files_limit(total)
    return total
