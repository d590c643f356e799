"""Chapter 13's experiments as tidy tables, one row per run, ready to plot.

- :func:`file_reads`: random 4 KiB reads from one file, five ways, at each queue depth, three times;
- :func:`server_calls`: the three tiny servers under the same load, rates untraced (three times) and calls traced;
- :func:`sqpoll_cost`: the io_uring server with and without a kernel thread polling its submissions.

Each leaves out what this machine cannot run (io_uring, fio, strace) and says so in the table's
``attrs["missing"]`` (a list of sentences), so the notebook can show the reference run instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from iolab.kit.scale import Scale
from iolab.topics.completion import files, server_load, support, syscall_counts
from iolab.topics.completion.server_process import SERVERS

# io_uring from Python twice: a system call per read as fio makes them, and one per batch of reads.
WAYS = ("one thread", "thread pool", "io_uring (Python, a call per read)", "io_uring (Python, batched)", "fio io_uring")


def depths(scale: Scale) -> list[int]:
    """The queue depths (reads in flight) the file experiment visits."""
    return scale.pick([1, 4, 16, 64], [1, 2, 4, 8, 16, 32, 64])


def file_reads(scale: Scale, directory: Path | None = None, progress: bool = True, repeats: int = 3) -> pd.DataFrame:
    """Random 4 KiB O_DIRECT reads of one file: one thread, a pool, io_uring two ways and fio at each depth.

    Every way and depth runs ``repeats`` times, in turns (all of them once, then again), so that a slow
    patch of a shared machine or of the host's disk lands on every way rather than on one; the runs are
    short, so three of them cost about what one long one did.
    """
    no_uring = support.unavailable("files")
    missing = [reason for reason in (no_uring, files.fio_missing()) if reason]
    seconds, count = scale.pick(0.2, 0.5), scale.pick(20_000, 200_000)
    rows = []
    with files.open_test_file(files.file_size(scale), directory) as path:
        ways = [("one thread", 1)] + [(way, d) for d in depths(scale) for way in WAYS[1:]]
        runs = [(repeat, way, depth) for repeat in range(repeats) for way, depth in ways]
        for repeat, way, depth in tqdm(runs, desc="read runs", disable=not progress, leave=False):
            if way == "one thread":
                result = files.read_blocking(path, count, seconds)
            elif way == "thread pool":
                result = files.read_threads(path, count, seconds, threads=depth)
            elif way.startswith("io_uring"):
                batch = way.endswith("batched)")
                result = None if no_uring else files.read_uring(path, count, seconds, depth, batch=batch)
            else:
                result = files.read_fio(path, count, seconds, depth)
            if result is not None:
                held = result.held_us if way.startswith("io_uring") else float("nan")  # only the ring's loop holds reads
                rows.append({"way": way, "depth": depth, "repeat": repeat, "iops": result.iops, "p50_us": result.p50_us,
                             "p99_us": result.p99_us, "held_us": held, "reads": result.reads, "seconds": result.seconds})
        disk = files.describe_disk(path.parent)  # the figure's note: what "the device" was
    table = pd.DataFrame(rows).assign(disk=disk) if rows else pd.DataFrame(rows)
    table.attrs["missing"] = missing
    return table


def available_servers() -> list[str]:
    """The servers this machine can run: the io_uring one only where io_uring serves sockets."""
    return [s for s in SERVERS if s != "uring" or support.unavailable("sockets") is None]


def server_calls(scale: Scale, connection_counts: Sequence[int] = (100, 1000),
                 progress: bool = True, repeats: int = 3) -> pd.DataFrame:
    """Each server at each connection count: ``repeats`` runs for the rates, and (with strace) a counted run.

    The untraced runs go in turns (every server once, then again) for the rates and their spread; the
    traced run only counts calls, so one is enough.
    """
    servers = available_servers()
    traced = syscall_counts.strace_missing() is None
    missing = [r for r in (support.unavailable("sockets"), syscall_counts.strace_missing()) if r]
    seconds, traced_seconds = scale.pick(0.6, 1.0), scale.pick(0.6, 2.0)
    runs = [(r, s, c, False) for r in range(repeats) for c in connection_counts for s in servers]
    runs += [(0, s, c, True) for c in connection_counts for s in servers] if traced else []
    rows = [server_load.measure(s, c, traced_seconds if t else seconds, traced=t) | {"repeat": r}
            for r, s, c, t in tqdm(runs, desc="server runs", disable=not progress, leave=False)]
    table = pd.DataFrame(rows)
    table.attrs["missing"] = missing
    return table


def sqpoll_cost(scale: Scale, connections: int = 100, progress: bool = True, repeats: int = 3) -> pd.DataFrame:
    """The io_uring server with and without SQPOLL, ``repeats`` times in turns: rate, latency, CPU per request.

    In turns (off, on, off, on...), so that a slow patch of a shared machine lands on both: two runs of
    one setting, taken minutes apart, differed by a quarter on the reference machine.
    """
    if (reason := support.unavailable("sockets")) is not None:
        table = pd.DataFrame()
        table.attrs["missing"] = [reason]
        return table
    seconds = scale.pick(0.6, 3.0)
    turns = [(repeat, s) for repeat in range(repeats) for s in (False, True)]
    rows = [server_load.measure("uring", connections, seconds, sqpoll=s) | {"repeat": repeat}
            for repeat, s in tqdm(turns, desc="SQPOLL runs", disable=not progress, leave=False)]
    table = pd.DataFrame(rows)
    table.attrs["missing"] = []
    return table
