"""Run one runtime's sleepers in a child process, watched from outside, under limits the notebook survives.

:func:`run` starts the runtime's program through the ``launch`` launcher (first in line for the OOM
killer, no core dump), watches it through ``/proc`` (``sampler``), and ends it if it passes a memory
ceiling or a time limit. Without ``/proc`` (macOS) there is nothing to watch it through: the run is
skipped with the kit's note, as it is without the runtime's tool. Whatever happens to the program (it finishes, it cannot start one more
thread, it crashes, it is killed) the result is a :class:`ProgramRun` whose ``error`` names the limit met,
or None. :func:`shootout` runs several runtimes one after the other and returns tidy tables.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from iolab.kit import platforms
from iolab.kit.machine import reserve_descriptors
from iolab.kit.procs import ManagedProcess, ProcessFailed, ProcessTimeout, open_process
from iolab.topics.c10k import launch, limits, phases, protocol, sampler
from iolab.topics.c10k.runtimes import RUNTIMES

if TYPE_CHECKING:
    import pandas as pd

# How often the runner checks on its program.
POLL_S = 0.02
# How often it checks for the exit of a program that said DONE: the resolution of the measured wall
# time. The exit follows within tens of milliseconds; at POLL_S it was seen 10 ms late on average.
EXIT_POLL_S = 0.002
# Modes whose readers never finish: the runner holds them until their thread count settles, then stops them.
BLOCKED_MODES = ("pipe", "socket")
# What the "fed" mode's writer puts in the pipe, as `yes` does: lines of "y", a pipe's worth at a time.
FEED = b"y\n" * 32768
# A program may use this share of the memory available when it starts, then it is stopped: the
# notebook, and the other programs on the machine, keep the rest.
MEMORY_SHARE = 0.5
# How long the output of a program that ended may still be on its way to the reading thread.
DRAIN_S = 0.2
# Lines of a program's output kept from the start, besides the protocol's (see _Output).
FIRST_LINES = 20
# How long a program that started printing a crash report gets to finish it and exit.
CRASH_S = 15.0
# How long a program may take to start all its sleepers or readers and say READY, beyond the sleep.
START_S = 120.0


@dataclass(frozen=True)
class ProgramRun:
    """One program's run, as seen from outside (times in s, memory in MiB)."""

    runtime: str
    mode: str
    count: int
    seconds: float
    status: str  # completed | held (blocked readers, stopped as planned) | failed | skipped
    started: int | None = None  # sleepers the program started
    completed: int | None = None  # sleepers that finished
    wall_s: float | None = None  # start of the program to its exit (or to being stopped)
    ready_s: float | None = None  # start of the program to READY: all sleepers started
    peak_rss_mb: float | None = None
    peak_kernel_mb: float | None = None  # page tables + kernel stacks at their peak
    max_os_threads: int | None = None
    max_maps: int | None = None  # memory mappings
    exit_code: int | None = None
    error: str | None = None  # the limit met, in words; None if none
    gc: bool = True  # the Python programs: False if their cyclic garbage collector was switched off
    gc_s: float | None = None  # the Python programs: time spent in that collector, as they report it
    # The asyncio program's sleep mode: when it reached each step of its last sleeper's path, s after
    # the start, with its collector's seconds by then (see phases.breakdown).
    marks: dict[str, tuple[float, float]] | None = field(default=None, repr=False)
    samples: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        """The run as one JSON-ready dict, without its samples and marks (``phases.breakdown`` reads those)."""
        return {k: v for k, v in asdict(self).items() if k not in ("samples", "marks")}

    def samples_frame(self) -> "pd.DataFrame":
        """The samples, one row each, labelled with the runtime and mode."""
        import pandas as pd

        return pd.DataFrame(self.samples).assign(runtime=self.runtime, mode=self.mode, count=self.count)


def default_timeout(mode: str, count: int, seconds: float) -> float:
    """The time limit of a run: its sleep, thrice, plus time to start and end its sleepers."""
    return (3 * seconds if mode == "sleep" else 0) + START_S + count / 1000


def _check_descriptors(runtime: str, mode: str, count: int) -> None:
    # The programs (Go, Node, Ruby... as well as Python) never raise their soft limit: it is the one that counts.
    per = max(1, RUNTIMES[runtime].descriptors(mode, 1))
    reserve_descriptors(RUNTIMES[runtime].descriptors(mode, count), what=f"{count:,} {runtime} readers on {mode}s",
                        fewer=lambda room: f"use at most {room // per:,} readers", here=False, soft=True)


@contextlib.contextmanager
def _feeding(fifo: str) -> Iterator[None]:
    """A writer that keeps ``fifo`` full until the block ends, as ``yes |`` in front of a program would.

    The FIFO is opened read-write and non-blocking, so that neither the open nor a write can hang
    whether or not the program ever opens its end.
    """
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            try:
                os.write(fd, FEED)
            except BlockingIOError:  # full: wait until the reader has made room
                select.select([], [fd], [], POLL_S)

    writer = threading.Thread(target=feed, name="iolab-fifo-feeder", daemon=True)
    writer.start()
    try:
        yield
    finally:
        stop.set()
        writer.join()
        os.close(fd)


def _describe_exit(code: int) -> str:
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def _peak_reading(watch: sampler.Watch) -> dict[str, int] | None:
    """The sampler's peaks in the units of ``limits.readings``: the state just before a crash."""
    if not watch.samples:
        return None
    return {
        "threads": int(watch.peak("os_threads")),
        "maps": int(watch.peak("maps")),
        "vm_size_kb": int(watch.peak("vm_size_mb") * 1024),
        "vm_rss_kb": int(watch.peak("rss_mb") * 1024),
        "system_tasks": int(watch.peak("system_tasks")),
    }


def _stop_reason(watch: sampler.Watch, deadline: float, ceiling_mb: float) -> str | None:
    """Why the program must be stopped now (memory or time), or None."""
    latest = watch.latest
    if latest and latest["rss_mb"] > ceiling_mb:
        return (
            f"memory: {latest['rss_mb']:,.0f} MiB resident passed the runner's ceiling of {ceiling_mb:,.0f} MiB "
            f"({MEMORY_SHARE:.0%} of the memory available at the start); the program was stopped"
        )
    if time.perf_counter() > deadline:
        return f"time: still running after the runner's limit of {deadline - watch.start:,.0f} s; it was stopped"
    return None


class _Output:
    """What a program prints, read line by line as it comes: the protocol lines, and the first others.

    The first lines of a crash report say what crashed (Go: "runtime: program exceeds 10000-thread
    limit"); the report may run to 100,000 lines, of which ``proc.lines`` keeps only the last.
    """

    def __init__(self, proc: ManagedProcess, start: float) -> None:
        self.proc = proc
        self.start = start
        self.said: list[str] = []  # protocol lines and the first FIRST_LINES others
        self.marks: dict[str, float] = {}  # when READY, DONE or FAILED came, s after the start
        self._others = 0

    def read(self, timeout: float) -> str | None:
        """The next line, or None if none came within ``timeout``; ProcessFailed at the end of the output."""
        try:
            line = self.proc.wait_for_line(r"^", timeout=timeout).string
        except ProcessTimeout:
            return None
        if match := protocol.LINE.match(line):
            self.marks[match[1]] = time.perf_counter() - self.start
            self.said.append(line)
        elif self._others < FIRST_LINES:
            self.said.append(line)
            self._others += 1
        return line


def _wait_for_end(out: _Output, watch: sampler.Watch, deadline: float, ceiling_mb: float) -> str | None:
    """Wait for DONE or FAILED, then for the exit; a reason if it had to be stopped first (memory, time)."""
    while not {"DONE", "FAILED"} & out.marks.keys():
        try:
            line = out.read(POLL_S)
        except ProcessFailed:  # it ended without saying DONE: a crash (its last lines may be in flight)
            time.sleep(DRAIN_S)
            return None
        if line is None and (reason := _stop_reason(watch, deadline, ceiling_mb)):
            return reason
    while out.proc.poll() is None:  # it said DONE or FAILED: now it exits
        if reason := _stop_reason(watch, deadline, ceiling_mb):
            return reason
        time.sleep(EXIT_POLL_S)
    return None


def _hold_until_settled(out: _Output, watch: sampler.Watch, deadline: float, settle_s: float) -> str | None:
    """Wait for READY, then until the thread count has not changed for ``settle_s``; a reason if stopped early.

    Any line after READY is unexpected (the readers never finish): the start of a crash report. The
    program then gets CRASH_S to finish it and exit, and is judged by its exit and its first lines.
    """
    try:
        while not {"READY", "FAILED"} & out.marks.keys():
            if time.perf_counter() > deadline:
                return f"time: no READY within the runner's limit of {deadline - watch.start:,.0f} s; it was stopped"
            out.read(POLL_S)
        last_change, threads = time.perf_counter(), None
        while time.perf_counter() < deadline:
            if out.read(POLL_S) is not None:
                with contextlib.suppress(ProcessTimeout):
                    out.proc.wait(CRASH_S)
                return None
            now = watch.latest["os_threads"] if watch.latest else None
            if now != threads:
                last_change, threads = time.perf_counter(), now
            elif time.perf_counter() - last_change >= settle_s:
                return None
    except ProcessFailed:  # it ended by itself: judged from its output and exit code
        time.sleep(DRAIN_S)
    return None


def _judge(report: protocol.Report, exit_code: int | None, stopped_for: str | None, mode: str,
           machine: limits.MachineLimits, peaks: dict[str, int] | None, output: str) -> tuple[str, str | None]:
    """The run's status and error from what the program said and how it ended."""
    if stopped_for:
        return "failed", stopped_for
    if report.failed is not None:
        reading = report.failed if "threads" in report.failed else peaks
        named = limits.name_limit(reading, machine, output=output, started=report.started)
        return "failed", named or f"{report.failed.get('error')} (no limit of this machine matched its readings)"
    if mode in BLOCKED_MODES and report.started is not None and (exit_code is None or report.completed is not None):
        return "held", None  # blocked readers: stopped by the runner, or left when their time was up
    if exit_code != 0 or report.completed is None:
        named = limits.name_limit(peaks, machine, output=output, started=report.started)
        last_line = report.other[-1] if report.other else "no output"
        return "failed", named or f"{_describe_exit(exit_code or 0)}: {last_line}"
    return "completed", None


def _unrunnable(runtime: str, count: int, seconds: float, mode: str, gc: bool) -> str | None:
    """Why ``runtime`` cannot run here (no ``/proc`` to watch it through, or its tool is missing), or None;
    ``ValueError`` for a request that makes no sense anywhere (an unknown runtime or mode, a negative count)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; the runtimes are: {', '.join(RUNTIMES)}")
    RUNTIMES[runtime].check(mode, gc)
    if count < 0 or seconds < 0:
        raise ValueError("count and seconds must not be negative")
    return platforms.missing("procfs") or RUNTIMES[runtime].missing()


def run(
    runtime: str,
    count: int,
    seconds: float,
    *,
    mode: str = "sleep",
    timeout_s: float | None = None,
    memory_ceiling_mb: float | None = None,
    address_space_mb: float | None = None,
    interval_s: float = 0.1,
    settle_s: float = 1.0,
    env: dict[str, str] | None = None,
    gc: bool = True,
) -> ProgramRun:
    """Run ``count`` sleepers of ``runtime`` in a child process and watch it; never raises for the child's sake.

    ``mode`` "sleep": each sleeps ``seconds``; "pipe"/"socket": each blocks in a read, and the program is
    stopped once its thread count has been steady for ``settle_s``; "fed": each reads a pipe that a
    writer here keeps full (source 003's ``yes |``), and the program ends when every read has returned.
    ``address_space_mb`` caps the child's ``ulimit -v`` (to meet a limit on purpose);
    ``memory_ceiling_mb`` defaults to half the memory available. ``env`` adds environment variables
    (``GOMAXPROCS``, ``UV_THREADPOOL_SIZE``...).
    ``gc=False`` runs a Python program with its cyclic garbage collector switched off.
    """
    if reason := _unrunnable(runtime, count, seconds, mode, gc):
        return ProgramRun(runtime, mode, count, seconds, "skipped", error=reason)
    machine = limits.machine_limits()
    if address_space_mb is not None:  # the launcher sets it in the child: judge the child by it
        machine = dataclasses.replace(machine, address_space_mb=address_space_mb)
    _check_descriptors(runtime, mode, count)
    ceiling_mb = memory_ceiling_mb or machine.memory_mb * MEMORY_SHARE
    with tempfile.TemporaryDirectory(prefix="iolab-sleepers-") as tmp:
        fifo = os.path.join(tmp, "fed" if mode == "fed" else "never-written")
        os.mkfifo(fifo)
        argv = launch.launcher_argv(address_space_mb) + RUNTIMES[runtime].argv(mode, count, seconds, fifo, gc)
        with (_feeding(fifo) if mode == "fed" else contextlib.nullcontext(),
              open_process(argv, env=dict(RUNTIMES[runtime].env) | (env or {})) as proc,
              sampler.open_watch(proc.pid, interval_s) as watch):
            deadline = watch.start + (timeout_s or default_timeout(mode, count, seconds))
            out = _Output(proc, watch.start)
            if mode in BLOCKED_MODES:
                stopped_for = _hold_until_settled(out, watch, deadline, settle_s)
            else:
                stopped_for = _wait_for_end(out, watch, deadline, ceiling_mb)
            wall_s = time.perf_counter() - watch.start
            exit_code = proc.poll()
    lines = out.said + [line for line in proc.lines if line not in out.said]
    report = protocol.parse_output(lines)
    status, error = _judge(report, exit_code, stopped_for, mode, machine, _peak_reading(watch), "\n".join(lines))
    return ProgramRun(
        runtime, mode, count, seconds, status, started=report.started,
        completed=None if mode in BLOCKED_MODES else report.completed, wall_s=wall_s, ready_s=out.marks.get("READY"),
        peak_rss_mb=watch.peak("rss_mb"), peak_kernel_mb=watch.peak("kernel_mb"),
        max_os_threads=int(watch.peak("os_threads")), max_maps=int(watch.peak("maps")), exit_code=exit_code,
        error=error, gc=gc, gc_s=(report.done or {}).get("gc_s"), marks=phases.since(report.done, watch.start),
        samples=watch.samples,
    )


def run_each(
    runtimes: list[str], count: int, seconds: float, *, mode: str = "sleep", progress: bool = False, **options: Any
) -> list[ProgramRun]:
    """Run each runtime in turn (see :func:`run`); the runs, in order. ``progress`` shows a bar."""
    from tqdm.auto import tqdm

    return [run(name, count, seconds, mode=mode, **options)
            for name in tqdm(runtimes, desc=f"{count:,} sleepers", disable=not progress)]


def tables(runs: list[ProgramRun]) -> tuple["pd.DataFrame", "pd.DataFrame"]:
    """(one summary row per run, every sample with its runtime; no rows where every run was skipped)."""
    import pandas as pd

    summary = pd.DataFrame([r.summary() for r in runs])
    watched = [r.samples_frame() for r in runs if r.samples]
    samples = pd.concat(watched, ignore_index=True) if watched else pd.DataFrame(columns=["runtime", "mode", "count"])
    return summary, samples


def shootout(
    runtimes: list[str], count: int, seconds: float, *, mode: str = "sleep", progress: bool = False, **options: Any
) -> tuple["pd.DataFrame", "pd.DataFrame"]:
    """Run each runtime in turn; its two tables (:func:`tables`). To keep the runs themselves too (an
    asyncio run's marks for :func:`iolab.topics.c10k.phases.breakdown`), call :func:`run_each` and
    :func:`tables` instead."""
    return tables(run_each(runtimes, count, seconds, mode=mode, progress=progress, **options))
