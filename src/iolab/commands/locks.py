"""``python -m iolab locks``: ns per increment of a counter shared by threads (see :mod:`iolab.topics.locks.counters`).

Kept apart from :mod:`iolab.topics.locks.counters` so that building the command line imports neither pandas nor
the experiments.
"""

from __future__ import annotations

import argparse
import sys

from iolab.commands.table import Subparsers, print_table


def add_locks(sub: Subparsers) -> None:
    """Register ``python -m iolab locks``."""
    p = sub.add_parser(
        "locks",
        help="ns per increment of a shared counter: batched, lock, queue (Python threads; Go if installed)",
        description="Time a counter shared by threads, per increment, for each strategy and thread count.",
    )
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8], metavar="N",
                   help="thread counts (default 1 2 4 8)")
    p.add_argument("--ops", type=int, default=200_000, help="Python increments per run (default 200,000)")
    p.add_argument("--go-ops", type=int, default=10_000_000, help="Go increments per run (default 10,000,000)")
    p.add_argument("--repeats", type=int, default=3, help="runs per strategy and thread count (default 3)")
    p.add_argument("--no-go", action="store_true", help="skip the Go program even where Go is installed")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        import pandas as pd

        from iolab.topics.locks import counters, golocks

        if min(args.threads) < 1 or args.ops < max(args.threads):
            p.error("thread counts must be >= 1 and --ops at least the largest thread count")
        runs = [counters.counter_costs(args.threads, args.ops, args.repeats)]
        if not args.no_go:
            try:
                runs.append(golocks.counter_costs(args.threads, args.go_ops, args.repeats))
            except golocks.GoMissing as missing:
                print(missing, file=sys.stderr)
        medians = (pd.concat(runs).groupby(["runtime", "strategy", "threads"], sort=False)
                   .ns_per_op.median().reset_index())
        print_table(medians if args.json else counters.per_op_table(medians), args.json, digits=1, index=True)
        return 0

    p.set_defaults(run=run)
