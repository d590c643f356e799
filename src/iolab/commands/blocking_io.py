"""``python -m iolab readiness``: chapter 2's instrument (what a wait costs: select, poll, epoll, spinning).

Heavy imports happen inside ``run``, so listing the commands stays fast.
"""

from __future__ import annotations

import argparse

from iolab.commands.table import Subparsers, add_with_examples, print_table

READINESS_EPILOG = """\
Each point times select(0) from the selectors module while it watches N idle pipes and one ready
one. select() cannot watch a descriptor numbered 1024 (FD_SETSIZE) or more: its rows stop there.
With --waiting, a child instead waits for messages on a pipe four ways (spinning, polling every
1 ms, blocking in select, blocking in read) and the table shows the CPU each burned per second.
"""


def add_readiness(sub: Subparsers) -> None:
    p = add_with_examples(sub, "readiness", READINESS_EPILOG,
                          "cost of one select/poll/epoll wait vs descriptors watched; or CPU of spinning vs blocking")
    p.add_argument("--watched", type=int, nargs="+", default=[1, 10, 100, 300, 1000, 3000], metavar="N",
                   help="numbers of pipes to watch (default 1 10 100 300 1000 3000)")
    p.add_argument("--selectors", nargs="+", default=None, metavar="NAME", help="select, poll, epoll (default: all there are)")
    p.add_argument("--repeats", type=int, default=3, help="timings per point (default 3)")
    p.add_argument("--waiting", type=float, metavar="SECONDS",
                   help="instead: CPU burned while waiting SECONDS for messages, per waiting strategy")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.machine import DescriptorLimit
        from iolab.topics.blocking_io import readiness

        if args.waiting is not None:
            if not 0 < args.waiting <= 60:
                p.error("--waiting takes 0 < SECONDS <= 60")
            df = readiness.waiting_costs(seconds=args.waiting, wakeups=10)
            print_table(df.drop(columns="repeat"), args.json)
            return 0
        if min(args.watched) < 1:
            p.error("--watched: numbers of pipes must be at least 1")
        try:
            df = readiness.sweep(args.watched, args.selectors or tuple(readiness.SELECTORS), args.repeats)
        except (ValueError, DescriptorLimit) as exc:
            p.error(str(exc))
        table = df.groupby(["selector", "watched"])["us_per_wait"].median().unstack("selector").reset_index()
        table.columns.name = None
        print_table(table, args.json)
        return 0

    p.set_defaults(run=run)
