"""Waiting for readiness: what one wait costs with select, poll and epoll, and what spinning costs instead.

Two experiments of the blocking chapter live here.

- :func:`sweep` times one ``select()`` call of the ``selectors`` module while it watches N idle
  pipes and one ready one. ``select`` and ``poll`` hand the kernel the whole list at every call;
  ``epoll`` keeps the list in the kernel (``epoll_ctl`` once per descriptor) and hands back only the
  ready ones. How each one's cost grows with N is the notebook's prediction.
- :func:`waiting_costs` has a child wait for messages on a pipe in four ways (spinning on a
  non-blocking read, polling with a 1 ms sleep, blocking in select, blocking in read) and reads
  from ``/proc`` how much CPU each burned per second of waiting, and how late each woke up.
  The waiter and the sender are placed on cores of their own (:mod:`iolab.kit.placement`): left to
  the scheduler, a woken pipe reader is often put on its writer's core, and a spinner shares a
  core with whatever else runs, so where each ran, not how it waited, decided which woke first
  (on the course's 2-core machine, each way in some runs and the other way in others).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import resource
import selectors
import statistics
import struct
import time
from collections.abc import Callable, Iterator, Sequence

import pandas as pd

from iolab.kit import machine, placement, platforms, procfs, procs

# select() describes the watched descriptors as a bitmap of FD_SETSIZE bits (glibc: 1024), so it
# cannot watch a descriptor numbered 1024 or more, however few it watches; CPython refuses with
# "filedescriptor out of range in select()". poll and epoll take a list and have no such limit.
FD_SETSIZE = 1024
SELECTORS: dict[str, type[selectors.BaseSelector]] = {
    name: cls
    for name, cls in (
        ("select", getattr(selectors, "SelectSelector", None)),
        ("poll", getattr(selectors, "PollSelector", None)),
        ("epoll", getattr(selectors, "EpollSelector", None)),
        ("kqueue", getattr(selectors, "KqueueSelector", None)),  # macOS's epoll (absent on Linux)
    )
    if cls is not None
}
# How long each timing in the sweep runs; the number of calls is chosen to fill it.
BUDGET_S = 0.1
MAX_CALLS = 200_000


@contextlib.contextmanager
def open_idle_pipes(n: int) -> Iterator[tuple[list[int], list[int]]]:
    """``n`` pipes nobody writes to: (read ends, write ends); all closed when the block ends.

    The write ends are moved to descriptor numbers of FD_SETSIZE and above, so the read ends take
    the low numbers and select() can watch as many of them as its bitmap allows. The soft limit
    on open descriptors is raised for the block if it is too low, up to the hard limit.
    """
    soft, hard = machine.open_files_limit()
    # The write ends are numbered from FD_SETSIZE up: the limit must reach past them, whatever the
    # notebook's kernel holds below (its own sockets and files number far fewer than FD_SETSIZE).
    need = machine.reserve_descriptors(
        2 * n + FD_SETSIZE,
        what=f"{n:,} idle pipes (two ends each, the write ends numbered from {FD_SETSIZE})",
        fewer=lambda room: f"watch at most {max(0, room - FD_SETSIZE) // 2:,} pipes (raise it before starting Jupyter)",
    )
    reads: list[int] = []
    writes: list[int] = []
    try:
        for _ in range(n):
            r, w = os.pipe()
            reads.append(r)
            try:
                writes.append(fcntl.fcntl(w, fcntl.F_DUPFD_CLOEXEC, FD_SETSIZE))
            finally:
                os.close(w)
        yield reads, writes
    finally:
        for fd in reads + writes:
            os.close(fd)
        if need > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def affordable(counts: Sequence[int]) -> list[int]:
    """The numbers of pipes in ``counts`` that this process's hard limit on descriptors allows."""
    _, hard = machine.open_files_limit()
    if hard == resource.RLIM_INFINITY:
        return list(counts)
    return [n for n in counts if 2 * n + FD_SETSIZE + machine.SPARE_DESCRIPTORS <= hard]


def _time_selects(sel: selectors.BaseSelector, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        sel.select(0)
    return time.perf_counter() - start


def wait_cost(selector: str, reads: Sequence[int], ready_write: int, repeats: int = 3, budget_s: float = BUDGET_S) -> list[float]:
    """Microseconds per ``select(0)`` call watching ``reads``, of which the last is made ready; one per repeat.

    ``ready_write`` is the write end of the last pipe in ``reads``. Raises ValueError for
    ``select`` when a descriptor is numbered FD_SETSIZE or more.
    """
    if selector == "select" and max(reads) >= FD_SETSIZE:
        raise ValueError(f"select() cannot watch descriptor {max(reads)}: its bitmap stops at FD_SETSIZE = {FD_SETSIZE}")
    os.write(ready_write, b"!")
    try:
        with SELECTORS[selector]() as sel:
            for fd in reads:
                sel.register(fd, selectors.EVENT_READ)
            ready = sel.select(0)
            if [key.fd for key, _ in ready] != [reads[-1]]:
                raise RuntimeError(f"{selector}: expected only fd {reads[-1]} ready, got {[k.fd for k, _ in ready]}")
            probe = max(1e-7, _time_selects(sel, 10) / 10)
            calls = int(min(MAX_CALLS, max(10, budget_s / probe)))
            return [_time_selects(sel, calls) / calls * 1e6 for _ in range(repeats)]
    finally:
        os.read(reads[-1], 1)


def measurable() -> list[str]:
    """The selectors a sweep measures here: SELECTORS, less epoll where iolab.kit.platforms says it is missing."""
    return [name for name in SELECTORS if name != "epoll" or platforms.missing("epoll") is None]


def sweep(counts: Sequence[int], selectors_: Sequence[str] | None = None, repeats: int = 3,
          budget_s: float = BUDGET_S, progress: bool = False) -> pd.DataFrame:
    """Cost of one wait against the number of watched pipes; one row per (selector, watched, repeat).

    Columns: ``selector``, ``watched``, ``repeat``, ``us_per_wait``. ``select`` is skipped where
    a watched descriptor would be numbered FD_SETSIZE or more. By default the selectors are
    :func:`measurable`'s.
    """
    selectors_ = measurable() if selectors_ is None else selectors_
    unknown = set(selectors_) - set(SELECTORS)
    if unknown:
        raise ValueError(f"unknown selector(s) {sorted(unknown)}; this platform has: {', '.join(SELECTORS)}")
    steps = [(s, n) for n in sorted(counts) for s in selectors_]
    if progress:
        from tqdm.auto import tqdm

        steps = tqdm(steps, desc="selector sweep", unit="point")
    rows = []
    with open_idle_pipes(max(counts)) as (reads, writes):
        for selector, n in steps:
            try:
                costs = wait_cost(selector, reads[:n], writes[n - 1], repeats, budget_s)
            except ValueError:
                continue
            rows += [{"selector": selector, "watched": n, "repeat": i, "us_per_wait": c} for i, c in enumerate(costs)]
    return pd.DataFrame(rows, columns=["selector", "watched", "repeat", "us_per_wait"])


def select_capacity() -> int:
    """How many pipes select() could watch in this process now: read ends numbered below FD_SETSIZE."""
    with open_idle_pipes(1) as (reads, _):
        return FD_SETSIZE - reads[0]


# --- spinning versus blocking ---------------------------------------------------------------------

MESSAGE = struct.Struct("=q")  # the sender's time.monotonic_ns(), so the receiver can time its wake-up
# A waiting child gives up after this long without a message: it must end even if its parent dies.
CHILD_PATIENCE_S = 30.0


def _poll_read(fd: int, deadline: float, pause_s: float = 0.0) -> tuple[bytes, int]:
    # Try a non-blocking read until a message comes; after each EAGAIN sleep pause_s (0: spin).
    os.set_blocking(fd, False)
    calls = 0
    while time.monotonic() < deadline:
        calls += 1
        try:
            return os.read(fd, MESSAGE.size), calls
        except BlockingIOError:
            if pause_s:
                time.sleep(pause_s)
    raise TimeoutError("no message")


def _block_in_select(fd: int, deadline: float) -> tuple[bytes, int]:
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        if not sel.select(max(0.0, deadline - time.monotonic())):
            raise TimeoutError("no message")
    return os.read(fd, MESSAGE.size), 2


def _block_in_read(fd: int, deadline: float) -> tuple[bytes, int]:
    return os.read(fd, MESSAGE.size), 1  # bounded by the parent: open_fork kills a child left waiting


STRATEGIES: dict[str, Callable[[int, float], tuple[bytes, int]]] = {
    "spin on non-blocking read()": _poll_read,
    "poll every 1 ms (sleep)": functools.partial(_poll_read, pause_s=0.001),
    "block in select()": _block_in_select,
    "block in read()": _block_in_read,
}


def _receive(strategy: str, fd: int, out: int, wakeups: int) -> None:
    wait = STRATEGIES[strategy]
    report = []
    for _ in range(wakeups):
        message, calls = wait(fd, time.monotonic() + CHILD_PATIENCE_S)
        report += [time.monotonic_ns() - MESSAGE.unpack(message)[0], calls]
    os.write(out, struct.pack(f"={2 * wakeups}q", *report))


def cpu_while_waiting(strategy: str, seconds: float = 1.0, wakeups: int = 10, placed: bool = True) -> dict[str, float | str | int]:
    """Have a child wait for ``wakeups`` messages spread over ``seconds`` the ``strategy`` way; what it cost.

    Returns the child's CPU seconds per second of waiting (from ``/proc``), its median and
    largest wake-up delay (message sent to message read), the system calls it made per second, and
    the CPUs the waiter and the sender were allowed (``placed``: one half of the cores each; empty
    where the scheduler chose, with ``placed=False`` or on one CPU or without affinity, as on macOS).
    """
    return _wait_for_messages(strategy, seconds, wakeups, placed)[0]


def _cpu_seconds(pid: int) -> float:
    # From /proc on Linux; elsewhere (macOS) from psutil, which asks the kernel its own way.
    return procfs.cpu_seconds(pid) if platforms.missing("procfs") is None else procfs.tree_cpu_seconds(pid)


def _wait_for_messages(strategy: str, seconds: float, wakeups: int, placed: bool = True) -> tuple[dict[str, float | str | int], list[float]]:
    # One run: the row cpu_while_waiting returns, and every message's wake-up delay in µs.
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {list(STRATEGIES)}")
    halves = placement.halves() if placed else None
    r, w = os.pipe()
    result_r, result_w = os.pipe()
    try:
        with contextlib.ExitStack() as stack:
            with placement.on_cpus(halves.server if halves else None):  # the child inherits these
                child = stack.enter_context(procs.open_fork(_receive, strategy, r, result_w, wakeups))
            stack.enter_context(placement.on_cpus(halves.load if halves else None))  # and the sender runs here
            cpu0, t0 = _cpu_seconds(child.pid), time.monotonic()
            for i in range(1, wakeups + 1):
                time.sleep(max(0.0, t0 + i * seconds / wakeups - time.monotonic()))
                os.write(w, MESSAGE.pack(time.monotonic_ns()))
            raw = procs.read_exactly(result_r, 16 * wakeups, timeout=CHILD_PATIENCE_S)
            cpu1, t1 = _cpu_seconds(child.pid), time.monotonic()
            child.wait(timeout=5)
    finally:
        for fd in (r, w, result_r, result_w):
            os.close(fd)
    report = struct.unpack(f"={2 * wakeups}q", raw)
    delays_us = [ns / 1000 for ns in report[0::2]]
    row: dict[str, float | str | int] = {
        "strategy": strategy,
        "wall_s": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cpu_s_per_s": (cpu1 - cpu0) / (t1 - t0),
        "wake_p50_us": statistics.median(delays_us),
        "wake_max_us": max(delays_us),
        "calls_per_s": sum(report[1::2]) / (t1 - t0),
        "waiter_cpus": placement.listed(halves.server) if halves else "",
        "sender_cpus": placement.listed(halves.load) if halves else "",
    }
    return row, delays_us


def waiting_costs(strategies: Sequence[str] = tuple(STRATEGIES), seconds: float = 1.0, wakeups: int = 10,
                  repeats: int = 1, per_wakeup: bool = False, placed: bool = True) -> pd.DataFrame:
    """:func:`cpu_while_waiting` for each strategy, ``repeats`` times; one row per run.

    With ``per_wakeup``, one row per message received instead: its run's columns, ``wakeup`` (its
    number in the run) and ``wake_us`` (sent to read), so that wake-ups can be compared message by
    message rather than by a few runs' medians.
    """
    rows = []
    for repeat in range(repeats):
        for strategy in strategies:
            row, delays_us = _wait_for_messages(strategy, seconds, wakeups, placed)
            if per_wakeup:
                rows += [{"repeat": repeat} | row | {"wakeup": i, "wake_us": us} for i, us in enumerate(delays_us)]
            else:
                rows.append({"repeat": repeat} | row)
    return pd.DataFrame(rows)
