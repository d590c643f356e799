"""Chapter 13's experiments as tidy tables, one row per run, ready to plot.

- :func:`file_reads`: random 4 KiB reads from one file, each of the :data:`WAYS`, at each queue depth, three times;
- :func:`cached_reads`: the same through the page cache (no O_DIRECT), at depth 1 and the deepest;
- :func:`server_calls`: the tiny servers (:data:`~iolab.topics.completion.server_process.SERVERS`) under the
  same load, rates untraced (three times) and calls traced;
- :func:`python_share`: the epoll and io_uring servers beside the same loops in C, for Python's share of their cost;
- :func:`sqpoll_cost`: the io_uring server with and without a kernel thread polling its submissions.

Each takes the scale and picks the durations; :func:`read_runs`, :func:`server_runs` and
:func:`sqpoll_runs` take them as numbers (what ``python -m iolab completion`` passes). Each leaves out
what this machine cannot run (io_uring, fio, strace) and says why in the :class:`Measured` it returns
(``missing``, a list of sentences), so the notebook can show the reference run instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from tqdm.auto import tqdm

from iolab.kit import platforms
from iolab.kit.scale import Scale
from iolab.topics.completion import c_programs, files, server_load, support, syscall_counts
from iolab.topics.completion.server_process import SERVERS

# io_uring from Python twice: a system call per read as fio makes them, and one per batch of reads.
PER_READ = "io_uring (Python, a call per read)"
BATCHED = "io_uring (Python, batched)"


@dataclass(frozen=True)
class Way:
    """A way to read the file: its label (the table's ``way``), how it reads, and what it needs."""

    label: str
    read: Callable[..., files.Reads | None]  # (path, count, seconds, depth, direct=); None: cannot run here
    queued: bool = True  # visits every queue depth; False: one read at a time, at depth 1 only
    ring: bool = False  # the chapter's own io_uring loop: needs io_uring for files, and holds reads (held_us)


WAYS: dict[str, Way] = {
    way.label: way
    for way in (
        Way("one thread", lambda path, count, seconds, depth, direct: files.read_blocking(path, count, seconds, direct=direct),
            queued=False),
        Way("thread pool", lambda path, count, seconds, depth, direct: files.read_threads(path, count, seconds, threads=depth,
                                                                                          direct=direct)),
        Way(PER_READ, functools.partial(files.read_uring, batch=False), ring=True),
        Way(BATCHED, functools.partial(files.read_uring, batch=True), ring=True),
        Way("fio io_uring", files.read_fio),
    )
}
# The ways that visit every depth: the figure's lines (one thread is its dotted level).
QUEUED = tuple(label for label, way in WAYS.items() if way.queued)


# The cached case's file: small enough to stay in any machine's page cache, big enough for random offsets.
CACHED_FILE = 64 << 20


class Measured(NamedTuple):
    """An experiment's table, and why some of it is not there (a sentence per reason; empty if all ran)."""

    table: pd.DataFrame
    missing: list[str]


def depths(scale: Scale) -> list[int]:
    """The queue depths (reads in flight) the file experiment visits."""
    return scale.pick([1, 4, 16, 64], [1, 2, 4, 8, 16, 32, 64])


def file_reads(scale: Scale, directory: Path | None = None, progress: bool = True, repeats: int = 3) -> Measured:
    """Random 4 KiB O_DIRECT reads of one file: one thread, a pool, io_uring two ways and fio at each depth."""
    return read_runs(depths(scale), scale.pick(0.2, 0.5), scale.pick(20_000, 200_000), files.file_size(scale),
                     directory=directory, progress=progress, repeats=repeats)


def cached_reads(scale: Scale, directory: Path | None = None, progress: bool = True, repeats: int = 3) -> Measured:
    """The same reads through the page cache, at depth 1 and the deepest: a 64 MiB file, read once first."""
    return read_runs([1, max(depths(scale))], scale.pick(0.2, 0.3), scale.pick(20_000, 200_000), CACHED_FILE,
                     directory=directory, progress=progress, repeats=repeats, cached=True)


def read_runs(depth_list: Sequence[int], seconds: float, count: int, size: int, *, directory: Path | None = None,
              progress: bool = True, repeats: int = 3, cached: bool = False) -> Measured:
    """Each of the :data:`WAYS` at each depth, ``repeats`` times, on a file of ``size`` bytes; a row per run.

    A run stops after ``count`` reads or ``seconds``. The runs go in turns (all of them once, then
    again), so that a slow patch of a shared machine or of the host's disk lands on every way rather
    than on one; the runs are short, so three of them cost about what one long one did. With
    ``cached``, the file is read once first and every way reads it through the page cache (no
    O_DIRECT): what most programs' file reads are, memory copies rather than the device.
    """
    no_uring = support.unavailable("files")
    missing = [reason for reason in (no_uring, files.fio_missing()) if reason]
    rows = []
    with files.open_test_file(size, directory) as path:
        if cached:
            files.warm(path)
        visits = [(way, 1) for way in WAYS.values() if not way.queued]
        visits += [(way, depth) for depth in depth_list for way in WAYS.values() if way.queued]
        runs = [(repeat, way, depth) for repeat in range(repeats) for way, depth in visits]
        for repeat, way, depth in tqdm(runs, desc="read runs", disable=not progress, leave=False):
            result = None if way.ring and no_uring else way.read(path, count, seconds, depth, direct=not cached)
            if result is not None:
                held = result.held_us if way.ring else float("nan")  # only the ring's loop holds reads
                rows.append({"way": way.label, "depth": depth, "repeat": repeat, "iops": result.iops,
                             "p50_us": result.p50_us, "p99_us": result.p99_us, "held_us": held,
                             "reads": result.reads, "seconds": result.seconds})
        disk = files.describe_disk(path.parent)  # the figure's note: what "the device" was
    fio = files.fio_version() or "no fio"  # what fio's engine does depends on it (files.fio_version)
    reads = "the page cache (the file read once first)" if cached else "O_DIRECT"
    return Measured(pd.DataFrame(rows).assign(disk=disk, fio=fio, reads_from=reads) if rows else pd.DataFrame(rows), missing)


def available_servers() -> list[str]:
    """The servers this machine can run: those that need io_uring only where it serves sockets, those that wait in
    epoll only where it is (Linux), those in C where a compiler is."""
    return [name for name, server in SERVERS.items()
            if (not server.uring or support.unavailable("sockets") is None)
            and (not server.epoll or platforms.missing("epoll") is None)
            and (not server.program or c_programs.missing() is None)]


def python_servers() -> list[str]:
    """The chapter's servers whose loop is Python's (uvloop's is libuv's, driven from Python): all but those in C."""
    return [name for name, server in SERVERS.items() if not server.program]


def server_calls(scale: Scale, connection_counts: Sequence[int] = (100, 1000),
                 progress: bool = True, repeats: int = 3) -> Measured:
    """Each server at each connection count: ``repeats`` runs for the rates, and (with strace) a counted run."""
    return server_runs(connection_counts, scale.pick(0.6, 1.0), scale.pick(0.6, 2.0),
                       progress=progress, repeats=repeats)


def server_runs(connection_counts: Sequence[int], seconds: float, traced_seconds: float, *,
                servers: Sequence[str] | None = None, traced: bool = True, progress: bool = True,
                repeats: int = 3) -> Measured:
    """``servers`` (default: :func:`python_servers`) at each connection count, ``repeats`` times, and once traced; a row per run.

    The untraced runs go in turns (every server once, then again) for the rates and their spread; the
    traced run (where strace is here, and ``traced``) only counts calls, so one is enough. A server
    this machine cannot run is left out, and ``missing`` says why.
    """
    runnable = available_servers()
    chosen = [s for s in (servers or python_servers()) if s in runnable]
    counted = traced and syscall_counts.strace_missing() is None
    asked_c = any(SERVERS[s].program for s in (servers or ()))
    missing = [r for r in (support.unavailable("sockets"), platforms.missing("epoll"), syscall_counts.strace_missing(),
                           c_programs.missing() if asked_c else None) if r]
    runs = [(r, s, c, False) for r in range(repeats) for c in connection_counts for s in chosen]
    runs += [(0, s, c, True) for c in connection_counts for s in chosen] if counted else []
    rows = [server_load.measure(s, c, traced_seconds if t else seconds, traced=t) | {"repeat": r}
            for r, s, c, t in tqdm(runs, desc="server runs", disable=not progress, leave=False)]
    return Measured(pd.DataFrame(rows), missing)


def python_share(scale: Scale, connections: int = 1000, progress: bool = True) -> Measured:
    """The epoll and io_uring servers in Python beside the same loops in C, untraced, in turns; a row per run.

    What separates the way of waiting from the Python around it: the C servers make the same calls per
    request (:mod:`~iolab.topics.completion.c_programs`), so the CPU time per request they do not spend is
    Python's. Rows for what this machine cannot run are left out, and ``missing`` says why.
    """
    pairs = [("epoll", "epoll (C)"), ("uring", "uring (C)")]
    runs = server_runs((connections,), scale.pick(0.5, 1.0), 0.0, servers=[s for pair in pairs for s in pair],
                       traced=False, progress=progress, repeats=scale.pick(2, 3))
    missing = [r for r in (c_programs.missing(), support.unavailable("sockets"), platforms.missing("epoll")) if r]
    return Measured(runs.table, missing)


def sqpoll_cost(scale: Scale, connections: int = 100, progress: bool = True, repeats: int = 3) -> Measured:
    """The io_uring server with and without SQPOLL, ``repeats`` times in turns: rate, latency, CPU per request."""
    return sqpoll_runs(connections, scale.pick(0.6, 3.0), progress=progress, repeats=repeats)


def sqpoll_runs(connections: int, seconds: float, *, progress: bool = True, repeats: int = 3) -> Measured:
    """The io_uring server without SQPOLL and with it, in turns; an empty table where it cannot run.

    In turns (off, on, off, on...), so that a slow patch of a shared machine lands on both: two runs of
    one setting, taken minutes apart, differed by a quarter on the reference machine.
    """
    if (reason := support.unavailable("sockets")) is not None:
        return Measured(pd.DataFrame(), [reason])
    turns = [(repeat, s) for repeat in range(repeats) for s in (False, True)]
    rows = [server_load.measure("uring", connections, seconds, sqpoll=s, placed=True) | {"repeat": repeat}
            for repeat, s in tqdm(turns, desc="SQPOLL runs", disable=not progress, leave=False)]
    return Measured(pd.DataFrame(rows), [])
