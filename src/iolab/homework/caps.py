"""Caps on one submission: the processes and threads, memory, file size, scratch folder, /tmp and output it may use.

A hostile trial found none: one graded cell started 2,000 processes, touched 4 GiB, wrote 2 GiB to
the host's temporary folder and 1 GiB to its tmpfs, and printed 200 MB that the grader kept; a fork
bomb or a 30 GB allocation would take the grading machine, and an honest neighbour graded beside it.
Past a cap, the submission's kernel and everything it started are killed and the run stops with a
reason ("used more than 4 GiB of memory in cell 7"), which becomes its rows; the batch goes on.

Each cap is kept as hard as the machine allows:

- **a cgroup of the submission's own** (``cgroups``), where the grader may write the cgroup file
  system (root, as here and in CI): the kernel refuses the fork or thread past the cap on processes,
  and OOM-kills at the cap on memory. The kernel's command line starts with a tiny launcher
  (:func:`launcher`) that moves itself into the cgroup before it execs the sandbox. ``RLIMIT_NPROC``
  would not do: the sandbox's user is root on the host, whom the kernel exempts, and as user
  ``nobody`` it would count a neighbour's processes too;
- **resource limits**, inherited by every process and binding root too: ``RLIMIT_FSIZE`` (a write
  past the cap fails with EFBIG) and ``RLIMIT_CORE`` 0 (no core dumps to fill the folder);
- **bwrap's** ``--size`` on the sandbox's tmpfs mounts (``/tmp``, ``/dev/shm``, ``/run``): ENOSPC past the cap;
- **a watchdog** (:class:`Watchdog`), a thread of the grader, everywhere: it reads the cgroup's
  refusals, or where there is no cgroup (Gradescope's container, an instructor who is not root)
  counts the process tree's threads and memory itself, and it measures the scratch folder, which
  no limit of the kernel's covers. It samples every ``SAMPLE_SECONDS``, so without a cgroup a cap
  can be overrun for that long.

Output is capped where it is kept, in the grader (``execution.CappedClient``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shlex
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import psutil

from iolab.homework import cgroups
from iolab.homework.cgroups import Cgroup

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
# Five samples a second: a fork bomb or an allocation loop without a cgroup to stop it is killed
# within a fifth of a second of crossing its cap, and an honest run pays a few milliseconds a second.
SAMPLE_SECONDS = 0.2
ENV = {"processes": "IOLAB_GRADE_PROCESSES", "memory_bytes": "IOLAB_GRADE_MEMORY", "file_bytes": "IOLAB_GRADE_FILE",
       "scratch_bytes": "IOLAB_GRADE_SCRATCH", "tmp_bytes": "IOLAB_GRADE_TMP",
       "output_bytes_per_cell": "IOLAB_GRADE_OUTPUT"}


@dataclass(frozen=True)
class Caps:
    """What one submission may use; every field can be set by its variable in ``ENV`` (:meth:`from_env`).

    The defaults are three times or more the honest peaks measured by grading the instructor
    notebooks' own solutions at quick scale (each field says its peak): honest work never meets them.
    """

    # Processes and threads at once (the kernel counts each thread as a task). Honest peak 6,027:
    # ex-05-stack starts 5,900 threads with 256 KiB stacks in 1.5 GiB; every other exercise stays under
    # 520 (07's 200 threads). 2.7 times, not more: pid_max is 32,768 on many machines (on this one),
    # and a bomb held here beside an honest 6,000 must leave the machine room.
    processes: int = 16_384
    # Honest peak 523 MB as the cgroup counts (01-processes' forks; page cache and tmpfs included),
    # 271 MB for 09 with PostgreSQL, 487 MB graded whole. The watchdog counts PSS (tree_usage), which is less.
    memory_bytes: int = 2 * GiB
    # One file. Honest peak 36 KB; graded whole (--whole), chapter 13 writes a 256 MiB test file.
    file_bytes: int = 1 * GiB
    # The scratch folder (the kernel's working directory and HOME, the kit's cache). Honest peak
    # 131 KiB; graded whole, chapter 13's 256 MiB test file is there.
    scratch_bytes: int = 2 * GiB
    # Each of the sandbox's tmpfs mounts (/tmp, /dev/shm, /run), which are memory. Honest peak 40 MB:
    # 09's PostgreSQL cluster in /tmp (43 MB graded whole).
    tmp_bytes: int = 512 * MiB
    # What a cell's outputs keep in the grader. Honest peak 1.5 KB; a figure, graded whole, 100 KB.
    output_bytes_per_cell: int = 1 * MiB

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Caps:
        """The defaults, with each ``IOLAB_GRADE_*`` variable set in ``environ`` (os.environ) in place of its own."""
        environ = os.environ if environ is None else environ
        given = {name: parse_size(environ[var], var) for name, var in ENV.items() if environ.get(var, "").strip()}
        return cls(**given)

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) <= 0:
                raise ValueError(f"{ENV[f.name]}: a cap must be positive, not {getattr(self, f.name)}")

    def summary(self) -> str:
        """The caps in one line, for the grader's log."""
        return (f"{self.processes:,} processes and threads, {size_text(self.memory_bytes)} of memory, files of "
                f"{size_text(self.file_bytes)}, {size_text(self.scratch_bytes)} in its folder, "
                f"{size_text(self.tmp_bytes)} in /tmp, {size_text(self.output_bytes_per_cell)} of output per cell")

    def too_many_processes(self) -> str:
        return f"started more than {self.processes:,} processes and threads"

    def too_much_memory(self) -> str:
        return f"used more than {size_text(self.memory_bytes)} of memory"

    def too_much_scratch(self) -> str:
        return f"wrote more than {size_text(self.scratch_bytes)} to its folder"


SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str, name: str = "size") -> int:
    """``text`` ("2G", "512MiB", "1.5g", "100000") as a whole number; binary units. ValueError names ``name``."""
    match = SIZE.match(text)
    if match is None:
        raise ValueError(f"{name}={text!r}: a number, or a size with K, M, G or T (binary: 2G is 2 GiB)")
    return int(float(match[1]) * 1024 ** " kmgt".index(match[2].lower() or " "))


def size_text(n: int) -> str:
    """``n`` bytes in words a student reads: "2 GiB", "1.5 MiB", "900 bytes"."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"


def explain(error: str | None, caps: Caps) -> str | None:
    """A cell's error with the cap that caused it named, when one did (EFBIG, ENOSPC in /tmp); else as it was."""
    if error and f"[Errno {errno.EFBIG}]" in error:
        return f"{error} (a file may hold at most {size_text(caps.file_bytes)} when graded)"
    if error and f"[Errno {errno.ENOSPC}]" in error:
        return f"{error} (/tmp and /dev/shm hold at most {size_text(caps.tmp_bytes)} each when graded)"
    return error


def open_cgroup(caps: Caps) -> contextlib.AbstractContextManager[Cgroup | None]:
    """A cgroup held to ``caps`` for one submission while the block runs, None where the machine gives none
    (``cgroups.open_cgroup``)."""
    return cgroups.open_cgroup(caps.processes, caps.memory_bytes)


def enforcement() -> str:
    """How the caps on processes and memory are kept on this machine, in words for the grader's log."""
    cgroup, why = cgroups.make_cgroup(Caps().processes, Caps().memory_bytes)
    if cgroup is None:
        return f"by a watchdog every {SAMPLE_SECONDS:g} s: {why}"
    cgroup.remove()
    return f"by a cgroup per submission ({'v2' if cgroup.v2 else 'v1'}) and a watchdog"


def launcher(caps: Caps, cgroup: Cgroup | None) -> list[str]:
    """The start of a kernel's command line: a shell that sets the file limits, joins ``cgroup`` and execs the rest.

    The limits are set before bwrap starts, and inherited by everything below it; joining the cgroup
    by its own pid, before the exec, leaves no moment in which the submission runs outside it.
    """
    blocks = -(-caps.file_bytes // 512)  # ulimit -f counts 512-byte blocks (POSIX)
    steps = [f"ulimit -f {blocks}", "ulimit -c 0"]
    steps += [f"echo $$ > {shlex.quote(str(procs))}" for procs in (cgroup.procs_files() if cgroup else [])]
    return ["/bin/sh", "-c", " && ".join([*steps, 'exec "$@"']), "iolab-caps"]


def folder_bytes(folder: Path, stop_above: int | None = None) -> int:
    """The disk space the files below ``folder`` take (blocks allocated; a hard link once; no link followed).

    With ``stop_above``, the count stops as soon as it passes that many bytes.
    """
    total, seen, stack = 0, set(), [str(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if (st.st_dev, st.st_ino) not in seen:
                        seen.add((st.st_dev, st.st_ino))
                        total += st.st_blocks * 512  # what the disk gives it: a sparse file costs what it holds
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:  # gone, or a folder the submission made unreadable: what it holds is unseen
            continue
        if stop_above is not None and total > stop_above:
            break
    return total


def tree_usage(pid: int, memory_cap: int | None = None) -> tuple[int, int]:
    """(threads, bytes of memory) of process ``pid`` and every process below it.

    Memory is PSS: a page shared by k of the processes counts 1/k in each, so a forked child's pages
    shared with its parent count once (summed RSS counts them in each: grading 01-processes, it peaked
    at 810 MB against PSS's 520 MB), and a page shared with everyone counts too (USS would leave it out). PSS
    costs a walk of each process's page tables, so it is read only when summed RSS, its upper bound,
    passes ``memory_cap``; below that, RSS is returned.
    """
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    threads, rss = 0, {}
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            threads += proc.num_threads()
            rss[proc] = proc.memory_info().rss
    if memory_cap is None or sum(rss.values()) <= memory_cap:
        return threads, sum(rss.values())
    pss = 0
    for proc, resident in rss.items():
        try:
            pss += proc.memory_full_info().pss
        except psutil.AccessDenied:  # its page tables are not ours to read: its RSS, which is more
            pss += resident
        except psutil.Error:
            pass
    return threads, pss


class Watchdog:
    """A thread that samples one submission every ``SAMPLE_SECONDS`` and, past a cap, kills it and keeps why.

    ``pid`` is the kernel's process (the sandbox's, when it has one); ``kill`` ends it and everything
    below it. ``reason`` is None until a cap is passed. A context manager: the thread runs while the
    block does.
    """

    def __init__(self, pid: int, caps: Caps, kill: Callable[[], None], scratch: Path | None = None,
                 cgroup: Cgroup | None = None) -> None:
        self.pid, self.caps, self.scratch, self.cgroup, self._kill = pid, caps, scratch, cgroup, kill
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watchdog-{pid}", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def check(self) -> str | None:
        """One sample: the cap passed, or None."""
        if self.cgroup is not None:
            refused = self.cgroup.refused()
            if refused is not None:
                return self.caps.too_many_processes() if refused == "processes" else self.caps.too_much_memory()
        else:
            threads, memory = tree_usage(self.pid, self.caps.memory_bytes)
            if threads > self.caps.processes:
                return self.caps.too_many_processes()
            if memory > self.caps.memory_bytes:
                return self.caps.too_much_memory()
        if self.scratch is not None and folder_bytes(self.scratch, self.caps.scratch_bytes) > self.caps.scratch_bytes:
            return self.caps.too_much_scratch()
        return None

    def enforce(self) -> str | None:
        """Sample now; past a cap, kill the submission and keep why. The reason, or None."""
        if self.reason is None:
            reason = self.check()
            if reason is not None:
                self.reason = reason
                self._kill()
                if self.cgroup is not None:
                    self.cgroup.kill()
        return self.reason

    def _watch(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            if self.enforce() is not None:
                return
