"""``python -m iolab looplag``: how late an event loop wakes while CPU-bound jobs run beside it.

Light on purpose (the CLI imports it at start-up): the experiment, in ``offload``, is imported only to run.
"""

from __future__ import annotations

import argparse

# Listed here, not imported from offload: importing offload loads pandas and trio.
STRATEGIES = ("asyncio inline", "asyncio.to_thread", "process pool", "trio inline", "trio.to_thread")
from iolab.commands.table import Subparsers, print_table


def add_looplag(sub: Subparsers) -> None:
    """``python -m iolab looplag``: the loop's lag and jobs/s for each way of running CPU work."""
    p = sub.add_parser("looplag", help="event-loop lag while CPU-bound jobs run inline, in threads or in processes")
    p.add_argument("--strategy", nargs="+", choices=STRATEGIES, default=list(STRATEGIES), metavar="NAME",
                   help=f"one or more of: {', '.join(repr(s) for s in STRATEGIES)} (default: all)")
    p.add_argument("--job-ms", type=float, default=20.0, help="one Julia-set job's cost on one core, in ms (default 20)")
    p.add_argument("--jobs", type=int, default=40, help="jobs per strategy, started together (default 40)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.asyncio_trio.offload import compare

        if args.jobs < 1 or args.job_ms <= 0 or args.repeats < 1:
            p.error("--jobs and --repeats must be at least 1, --job-ms above 0")
        df, _ = compare(args.strategy, args.job_ms, args.jobs, args.repeats)
        columns = ["strategy", "jobs_per_s", "cores_used", "stalled_pct", "lag_p50_ms", "lag_p99_ms", "lag_max_ms"]
        table = df.groupby("strategy", sort=False)[columns[1:]].median().reset_index()

        print_table(table, args.json, digits=2)
        return 0

    p.set_defaults(run=run)
