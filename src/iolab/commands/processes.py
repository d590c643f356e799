"""``python -m iolab costs|cow|julia``: chapter 1's instruments (creating processes, fork, CPU-bound work)."""

from __future__ import annotations

import argparse

from iolab.commands.table import Subparsers, print_table


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

        from iolab.kit import together
        from iolab.web import julia

        job = functools.partial(julia.julia, *julia.size_for_ms(args.ms))  # calibrated once, here
        df = together.scaling(args.processes, job)
        summary = df.groupby("processes").agg(job_s=("seconds", "median"), wall_s=("wall_s", "max")).reset_index()
        print_table(summary, args.json)
        return 0

    p.set_defaults(run=run)
