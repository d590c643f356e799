"""The limits source 004 ran into, each with the error it gives and the fix it needs.

- descriptors: every connection is a file descriptor, and ``ulimit -n`` caps them per process
  (:func:`descriptor_limit`, :func:`raise_open_files`);
- threads' memory: every thread reserves a stack of address space (:func:`thread_capacity`);
- the listen backlog: the server's accept queue (``--backlog``; see ``counting.CONNECTING``).
"""

from __future__ import annotations

import _thread
import os
import resource
from dataclasses import dataclass
from typing import ClassVar, NoReturn

from iolab.kit import channel, machine, platforms, procfs, procs

# Address space a thread-counting child keeps free for reporting its result.
RESERVE_BYTES = 1 << 20
REPORT = "threads started: {started}\t{error}"
REPORT_PATTERN = r"^threads started: (\d+)\t(.*)$"


def descriptor_limit(connections: int, opened: int, cause: OSError) -> machine.DescriptorLimit:
    """The error to raise when ``socket()`` fails with EMFILE: what the limit is and what to raise it to.

    Not checked before the run, as the other instruments do: meeting this error is the experiment.
    """
    soft, _ = machine.open_files_limit()
    return machine.descriptor_limit(
        connections + machine.SPARE_DESCRIPTORS,
        soft,
        what=f"connection {opened + 1} of {connections:,} failed: {cause.strerror} (errno {cause.errno}). "
        f"{connections:,} connections, one descriptor each,",
        fewer="run fewer connections",
        hard=False,
    )


def raise_open_files(connections: int) -> None:
    """Raise this process's soft ``ulimit -n`` to fit ``connections`` (up to the hard limit)."""
    machine.raise_open_files_limit(connections + machine.SPARE_DESCRIPTORS)


@dataclass(frozen=True)
class ThreadCapacity(channel.Spec):
    """A thread-counting child: ``spare_mb`` more address space, each thread's stack (None: ulimit -s), at most ``limit`` threads."""

    ENTRY: ClassVar[str] = "iolab.topics.event_loop.limits"

    spare_mb: int
    stack_kib: int | None = None
    limit: int = 20_000


def _start_threads(spec: ThreadCapacity) -> NoReturn:
    """The child: start idle threads until one fails or ``spec.limit`` run; print REPORT and exit at once."""
    # Allow the address space the child uses already (the interpreter, its imports), plus spare_mb.
    in_use_kb = int(procfs.status(os.getpid()).vm_size_kb)
    resource.setrlimit(resource.RLIMIT_AS, (in_use_kb * 1024 + spec.spare_mb * 2**20,) * 2)
    _thread.stack_size((spec.stack_kib or 0) * 1024)
    # Address space held back so that the report can still be written once the limit is reached.
    reserve = bytearray(RESERVE_BYTES)
    release = _thread.allocate_lock()
    release.acquire()
    started, error = 0, "none"
    try:
        for _ in range(spec.limit):
            # Not threading.Thread: its start() waits for the new thread to say it runs, and near the limit
            # the new thread can fail to allocate before it says so, leaving start() waiting forever
            # (as iolab.topics.c10k.threads explains). A thread the kernel created counts, whether it runs or not.
            _thread.start_new_thread(release.acquire, ())
            started += 1
    except (RuntimeError, MemoryError) as exc:
        del reserve
        error = str(exc) or type(exc).__name__
    print(REPORT.format(started=started, error=error), flush=True)
    os._exit(0)  # at once: the threads wait on a lock that is never released


def thread_capacity(
    spare_mb: int, stack_kib: int | None = None, limit: int = 20_000, timeout: float = 120.0
) -> tuple[int, str]:
    """Start idle threads in a child allowed ``spare_mb`` more address space (ulimit -v) until one fails or
    ``limit`` run; how many started, and the error (``"none"``).

    The child is a fresh interpreter with one malloc arena (``procs.ONE_MALLOC_ARENA``), so that the
    count depends on the stack size and not on the number of cores: glibc's default arenas took 1 GiB
    of the 1.5 GiB on 2 cores, and would take more than that from 4 cores on.

    The child sizes its cap from ``/proc/self/status`` (and macOS does not enforce ``ulimit -v``): without
    ``/proc``, :class:`~iolab.kit.platforms.FacilityMissing`, whose message is the cell's note, before it starts.
    """
    platforms.require("procfs")
    spec = ThreadCapacity(spare_mb, stack_kib or None, limit)
    with channel.open_child(spec, env=procs.ONE_MALLOC_ARENA) as child:
        match = child.process.wait_for_line(REPORT_PATTERN, timeout=timeout)  # its last output if it never says
    return int(match[1]), match[2]


if __name__ == "__main__":
    channel.child_main(ThreadCapacity, _start_threads)
