"""``python -m iolab completion reads|servers|sqpoll``: chapter 13's measurements from a terminal.

Each action runs one of :mod:`iolab.topics.completion.experiments`' comparisons with the durations
given as flags, prints the medians of its repeats as a table, and says on standard error what this
machine could not run (io_uring, fio, strace) and why. The experiments are imported only to run one,
so that ``--help`` loads neither pandas nor the io_uring binding.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from iolab.commands.argtypes import int_in, seconds_between
from iolab.commands.table import Subparsers, print_table
# The table itself: importing it loads no server (each module is imported only to run it).
from iolab.topics.completion.server_process import SERVERS

DEPTHS = [1, 2, 4, 8, 16, 32, 64]  # the chapter's depths at full scale (experiments.depths)
CONNECTIONS = [100, 1000]  # the chapter's connection counts (experiments.server_calls)


def add_completion(sub: Subparsers) -> None:
    """Register ``python -m iolab completion``."""
    p = sub.add_parser("completion", help="io_uring against threads and readiness: random file reads, three tiny "
                       "servers, SQPOLL's cost", description="Chapter 13's comparisons: random 4 KiB O_DIRECT reads "
                       "(one thread, a thread pool, io_uring from Python two ways, fio), and the epoll, uvloop and "
                       "io_uring servers under the same load, with their system calls counted (strace).")
    what = p.add_subparsers(dest="what", required=True)
    reads = what.add_parser("reads", help="random 4 KiB reads from one file: reads/s and latency at each queue depth")
    reads.add_argument("--depths", type=int_in(1, 1024), nargs="+", default=DEPTHS, metavar="N",
                       help="reads in flight (queue depth, threads); default 1 2 4 ... 64")
    reads.add_argument("--seconds", type=seconds_between(0.01, 60), default=0.5, help="each run's length (default 0.5)")
    reads.add_argument("--file-mib", type=int_in(1, 65_536), default=256,
                       help="the test file's size in MiB (default 256: random reads rarely hit a block twice)")
    reads.add_argument("--folder", type=Path, help="where to write the test file, on a disk (default: the kit's cache)")
    reads.add_argument("--cached", action="store_true",
                       help="read through the page cache (the file read once first) instead of O_DIRECT: memory, not the device")
    servers = what.add_parser("servers",
                              help="the tiny servers under the same load: requests/s and system calls per request")
    python_driven = [name for name, server in SERVERS.items() if not server.program]  # experiments.python_servers
    servers.add_argument("--servers", nargs="+", choices=list(SERVERS), default=python_driven, metavar="SERVER",
                         help=f"some of {', '.join(SERVERS)}, quoted where a name has a space (default:"
                              f" {', '.join(python_driven)}, those this machine can run)")
    servers.add_argument("--connections", type=int_in(1, 10_000), nargs="+", default=CONNECTIONS, metavar="N",
                         help="keep-alive clients, a run per count (default 100 1000)")
    servers.add_argument("--seconds", type=seconds_between(0.1, 600), default=1.0, help="each run's length (default 1)")
    servers.add_argument("--no-strace", action="store_true", help="leave out the traced run that counts every call")
    sqpoll = what.add_parser("sqpoll",
                             help="the io_uring server with and without a kernel thread polling its submissions")
    sqpoll.add_argument("--connections", type=int_in(1, 10_000), default=100, metavar="N",
                        help="clients (default 100)")
    sqpoll.add_argument("--seconds", type=seconds_between(0.1, 600), default=3.0, help="each run's length (default 3)")
    for action in (reads, servers, sqpoll):
        action.add_argument("--repeats", type=int_in(1, 20), default=3,
                            help="runs of each setting, in turns (default 3)")
        action.add_argument("--json", action="store_true", help="print a JSON list of rows")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    import pandas as pd

    from iolab.topics.completion import experiments

    order: dict[str, list[str]] = {}  # a column's order, a table's rather than the alphabet's
    if args.what == "reads":
        measured = experiments.read_runs(args.depths, args.seconds, 1 << 30, args.file_mib << 20,
                                         directory=args.folder, repeats=args.repeats, cached=args.cached)
        columns, by, order["way"] = ["iops", "p50_us", "p99_us", "held_us"], ["way", "depth"], list(experiments.WAYS)
    elif args.what == "servers":
        measured = experiments.server_runs(args.connections, args.seconds, args.seconds, servers=args.servers,
                                           traced=not args.no_strace, repeats=args.repeats)
        columns = ["rps", "p99_ms", "errors", "cpu_us_per_request", "own_calls_per_request", "syscalls_per_request"]
        by, order["server"] = ["connections", "traced", "server"], list(SERVERS)
    else:
        measured = experiments.sqpoll_runs(args.connections, args.seconds, repeats=args.repeats)
        columns, by = ["rps", "p99_ms", "errors", "server_cpu_s", "cpu_us_per_request"], ["server"]
    for reason in measured.missing:
        print("not measured here:", reason, file=sys.stderr)
    if measured.table.empty:
        return 1
    runs = measured.table
    for column, values in order.items():
        runs = runs.assign(**{column: pd.Categorical(runs[column], values)})
    present = [c for c in columns if c in runs]
    medians = runs.groupby(by, observed=True)[present].median().reset_index()  # the median of the repeats
    print_table(medians, args.json, digits=2)
    if "disk" in runs and not args.json:
        print("disk:", runs.disk.iloc[0], "· reads from:", runs.reads_from.iloc[0])
    return 0
