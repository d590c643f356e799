"""``python -m iolab COMMAND``: every instrument of the lab kit, from a terminal.

Each ``add_*`` function below registers one command; other modules (servers, load generator...)
contribute theirs through ``COMMANDS``. A command prints a table by default and one JSON
document with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from iolab.commands.blocking_io import add_io_commands
from iolab.commands.databases import add_db
from iolab.commands.load import add_load
from iolab.commands.locks import add_locks
from iolab.commands.event_loops import add_looplag
from iolab.commands.prefork import add_balance
from iolab.commands.servers import add_serve
from iolab.commands.c10k import add_sleepers
from iolab.commands.upstreams import add_upstreams
from iolab.commands.wordfreq import add_wordfreq

if TYPE_CHECKING:
    import pandas as pd

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"


def print_table(df: "pd.DataFrame", as_json: bool, digits: int = 3) -> None:
    """Print ``df`` as a plain table (rounded to ``digits``), or as a JSON list of records."""
    if as_json:
        print(df.to_json(orient="records"))
    else:
        print(df.round(digits).to_string(index=False))


def add_guard(sub: Subparsers) -> None:
    p = sub.add_parser("guard", help="run a command; fail if it leaves processes behind")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the command, after --")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.guard import run_guarded

        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not argv:
            p.error("give the command to run after --")
        return run_guarded(argv)

    p.set_defaults(run=run)


def add_machine(sub: Subparsers) -> None:
    p = sub.add_parser("machine", help="print this machine's fingerprint (CPU, cores, kernel, versions)")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit import machine

        print(json.dumps(machine.fingerprint(), indent=2))
        return 0

    p.set_defaults(run=run)


def add_ps(sub: Subparsers) -> None:
    p = sub.add_parser("ps", help="state, threads and memory of processes, read from /proc")
    p.add_argument("pids", nargs="+", type=int, metavar="PID")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from dataclasses import asdict

        from iolab.kit import procfs

        import pandas as pd

        rows = [asdict(procfs.status(pid)) | {"cpu_s": procfs.cpu_seconds(pid)} for pid in args.pids]
        print_table(pd.DataFrame(rows), args.json)
        return 0

    p.set_defaults(run=run)


def add_costs(sub: Subparsers) -> None:
    p = sub.add_parser("costs", help="create-and-finish rates of processes, threads and asyncio tasks")
    p.add_argument("--forks", type=int, default=500, help="fork+exit+wait rounds (default 500)")
    p.add_argument("--threads", type=int, default=5000, help="thread start+join rounds (default 5000)")
    p.add_argument("--tasks", type=int, default=50000, help="task create+await rounds (default 50000)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.processes.creation_costs import creation_costs

        counts = {"process (fork)": args.forks, "thread": args.threads, "asyncio task": args.tasks}
        df = creation_costs(counts, args.repeats)
        print_table(df.groupby("kind", sort=False)[["per_s", "us_each"]].median().reset_index(), args.json)
        return 0

    p.set_defaults(run=run)


def add_cow(sub: Subparsers) -> None:
    p = sub.add_parser("cow", help="fork time and copy-on-write, for a parent holding SIZE MiB")
    p.add_argument("sizes", nargs="+", type=int, metavar="SIZE_MIB")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.processes.copy_on_write import fork_time_sweep

        df = fork_time_sweep(args.sizes, args.repeats).drop(columns="repeat")
        print_table(df.groupby(["pages", "array_mb"]).median().reset_index(), args.json)
        return 0

    p.set_defaults(run=run)


def add_julia(sub: Subparsers) -> None:
    p = sub.add_parser("julia", help="run a Julia-set job in 1..N processes at once and time each")
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4], metavar="N")
    p.add_argument("--ms", type=float, default=500, help="one job's cost on one core, in ms (default 500)")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        import functools

        from iolab.web import julia
        from iolab.kit import together

        job = functools.partial(julia.julia, *julia.size_for_ms(args.ms))  # calibrated once, here
        df = together.scaling(args.processes, job)
        summary = df.groupby("processes").agg(job_s=("seconds", "median"), wall_s=("wall_s", "max")).reset_index()
        print_table(summary, args.json)
        return 0

    p.set_defaults(run=run)


# Tools first, then each chapter's instruments in the order of the course.
COMMANDS: list[Callable[[Subparsers], None]] = [
    add_serve,
    add_load,
    add_guard,
    add_machine,
    add_ps,
    add_costs,  # 1 processes and fork
    add_cow,
    add_julia,
    add_io_commands,  # 2-3 blocking I/O, sockets: readiness, backlog
    add_balance,  # 4 pre-fork servers
    add_wordfreq,  # 5 an event loop from scratch
    add_looplag,  # 6 asyncio and trio
    add_upstreams,  # 7 upstreams
    add_locks,  # 8 locks
    add_db,  # 9 databases
    add_sleepers,  # 10 c10k
]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; its exit code."""
    parser = argparse.ArgumentParser(prog="python -m iolab", description="The lab kit of the I/O course.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
