"""Is io_uring there? :func:`unavailable` says why not, naming the case, or returns None.

io_uring is often switched off, and each way of switching it off looks different from Python:

- the binding (the PyPI package ``liburing``, which ``make env`` installs) is not importable;
- the kernel is too old: io_uring came in 5.1, the plain read operation this chapter uses in 5.6,
  multishot accept and provided-buffer rings in 5.19, multishot receive in 6.0;
- ``sysctl kernel.io_uring_disabled`` is 2 (off for everyone) or 1 (off for processes that are
  neither privileged nor in the group ``kernel.io_uring_group`` names);
- a seccomp filter refuses the system calls: Docker's default profile (since Docker 25) makes
  ``io_uring_setup`` fail with EPERM, podman's with ENOSYS (its ``defaultErrnoRet`` is 38), and
  containerd 2.0's drops them;
- the kernel lacks one of the operations we need (older kernels, or a restricted build);
- the binding itself crashes: PyPI's wheel uses AVX-512 instructions, and a processor without them kills
  the process that makes a ring with SIGILL, so the probe makes its ring in a child of its own.

Set ``IOLAB_NO_IO_URING=1`` to take the "not there" path on a machine where io_uring works: the
tests and the notebook's CI run do, so that the chapter is checked both ways.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from iolab.kit import channel, platforms
from iolab.kit.procs import ProcessFailed, ProcessTimeout

FORCE_ENV = "IOLAB_NO_IO_URING"
PROBE_SECONDS = 60.0  # a Python start and an import, on a busy machine
DISABLED_SYSCTL = Path("/proc/sys/kernel/io_uring_disabled")

# The oldest kernel that has what each use needs, and the operations it submits (for the probe).
NEEDS: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {
    "files": ((5, 6), ("IORING_OP_READ",)),
    "sockets": ((6, 0), ("IORING_OP_ACCEPT", "IORING_OP_RECV", "IORING_OP_SEND")),
}


def kernel_version(release: str | None = None) -> tuple[int, int]:
    """(major, minor) of the running kernel, from ``uname -r`` ("6.18.44-foo" -> (6, 18))."""
    major, minor, *_ = (release or os.uname().release).split(".", 2)
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def _sysctl_disabled() -> int:
    try:
        return int(DISABLED_SYSCTL.read_text())
    except (OSError, ValueError):  # kernels before 6.6 have no such switch: io_uring is on
        return 0


def _setup_refused(err: OSError) -> str:
    """Why io_uring_setup failed, in the reader's terms."""
    setting = _sysctl_disabled()
    if err.errno == errno.EPERM and setting == 2:
        return "io_uring is switched off for every process (sysctl kernel.io_uring_disabled = 2)"
    if err.errno == errno.EPERM and setting == 1:
        return ("io_uring is switched off for unprivileged processes (sysctl kernel.io_uring_disabled = 1)"
                " and this one is not in the group kernel.io_uring_group names")
    if err.errno == errno.EPERM:
        return ("io_uring_setup failed with EPERM: a seccomp filter refuses it"
                " (Docker's default profile does; run the container with io_uring allowed)")
    if err.errno == errno.ENOSYS:
        return ("io_uring_setup failed with ENOSYS: the kernel was built without io_uring,"
                " or a seccomp filter (podman's default) refuses it")
    return f"io_uring_setup failed: {err}"


@dataclass(frozen=True)
class Probe(channel.Spec):
    """The child that makes a ring and asks the kernel which operations it has (:func:`_probe`)."""

    ENTRY: ClassVar[str] = "iolab.topics.completion.support"


def _probe_here(_: Probe) -> dict[str, Any]:
    """In the child: ``{"operations": {name: supported}}``, or ``{"refused": why}`` if no ring could be made."""
    import liburing

    ring = liburing.Ring()
    try:
        liburing.io_uring_queue_init(2, ring)
    except OSError as exc:
        return {"refused": _setup_refused(exc)}
    try:
        return {"operations": {str(op): bool(ok) for op, ok in (liburing.probe() or {}).items()}}
    finally:
        liburing.io_uring_queue_exit(ring)


def _crashed(code: int) -> str:
    """Why the probe's child died with exit code ``code`` (negative: the signal), in words."""
    if code != -signal.SIGILL:
        return f"the io_uring probe ended with exit code {code} before it answered"
    # PyPI's liburing 2026.3.30 wheel holds AVX-512 code: on an AMD EPYC without it, its first ring killed
    # the process that made it, pytest and a notebook's kernel alike.
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    lacking = " (AVX-512)" if flags and "avx512f" not in flags else ""
    return ("the io_uring binding (pip package liburing) was killed by SIGILL: its wheel uses an instruction this "
            f"processor lacks{lacking}")


@functools.cache
def _probe() -> dict[str, bool] | str:
    """The operations the kernel supports, or why io_uring cannot be used (cached: it cannot change).

    The binding makes its ring in a child process: a binding that crashes (an instruction the processor
    lacks) then costs that child, not the kernel or test run that asked.
    """
    try:
        import liburing  # noqa: F401  importing it runs none of its code; making a ring does, in the child
    except ImportError as exc:
        return f"the io_uring binding is not installed (pip package liburing; `make env` installs it): {exc}"
    with channel.open_child(Probe()) as child:
        try:
            child.wait_progress(PROBE_SECONDS)
        except ProcessFailed:
            return _crashed(child.wait(PROBE_SECONDS))
        except ProcessTimeout:
            return f"the io_uring probe did not answer within {PROBE_SECONDS:g} s"
    answer = child.result or {}
    return str(answer["refused"]) if "refused" in answer else dict(answer.get("operations", {}))


def unavailable(use: str = "files") -> str | None:
    """Why io_uring cannot serve ``use`` ("files" or "sockets") here, or None if it can."""
    if os.environ.get(FORCE_ENV, "").strip() not in ("", "0"):
        return f"{FORCE_ENV} is set: the chapter takes the path of a machine without io_uring"
    if (elsewhere := platforms.missing("io_uring")) is not None:  # macOS, Windows, IOLAB_FAKE_PLATFORM
        return elsewhere
    oldest, operations = NEEDS[use]
    have = kernel_version()
    if have < oldest:
        return (f"kernel {have[0]}.{have[1]} is too old: io_uring for {use} needs"
                f" {oldest[0]}.{oldest[1]} or later")
    probed = _probe()
    if isinstance(probed, str):
        return probed
    missing = [op for op in operations if not probed.get(op)]
    if missing:
        return f"this kernel's io_uring lacks {', '.join(missing)}"
    return None


class Unavailable(RuntimeError):
    """io_uring cannot run here; the message names the case (see :func:`unavailable`)."""


def require(use: str = "files") -> None:
    """Raise :class:`Unavailable` with the reason if io_uring cannot serve ``use`` here."""
    if (reason := unavailable(use)) is not None:
        raise Unavailable(reason)


if __name__ == "__main__":
    channel.child_main(Probe, _probe_here)
