"""``python -m iolab readiness|backlog``: the instruments of the chapters on blocking I/O and sockets.

Registered together by :func:`add_io_commands` (one entry in ``iolab.commands.COMMANDS``). Heavy
imports happen inside each command's ``run``, so listing the commands stays fast.
"""

from __future__ import annotations

import argparse

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"

READINESS_EPILOG = """\
Each point times select(0) from the selectors module while it watches N idle pipes and one ready
one. select() cannot watch a descriptor numbered 1024 (FD_SETSIZE) or more: its rows stop there.
With --waiting, a child instead waits for messages on a pipe four ways (spinning, polling every
1 ms, blocking in select, blocking in read) and the table shows the CPU each burned per second.
"""


def add_readiness(sub: Subparsers) -> None:
    p = sub.add_parser(
        "readiness",
        help="cost of one select/poll/epoll wait vs descriptors watched; or CPU of spinning vs blocking",
        epilog=READINESS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--watched", type=int, nargs="+", default=[1, 10, 100, 300, 1000, 3000], metavar="N",
                   help="numbers of pipes to watch (default 1 10 100 300 1000 3000)")
    p.add_argument("--selectors", nargs="+", default=None, metavar="NAME", help="select, poll, epoll (default: all there are)")
    p.add_argument("--repeats", type=int, default=3, help="timings per point (default 3)")
    p.add_argument("--waiting", type=float, metavar="SECONDS",
                   help="instead: CPU burned while waiting SECONDS for messages, per waiting strategy")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.blocking_io import readiness
        from iolab.commands import print_table

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
        except (ValueError, readiness.DescriptorLimit) as exc:
            p.error(str(exc))
        table = df.groupby(["selector", "watched"])["us_per_wait"].median().unstack("selector").reset_index()
        table.columns.name = None
        print_table(table, args.json)
        return 0

    p.set_defaults(run=run)


def add_backlog(sub: Subparsers) -> None:
    p = sub.add_parser("backlog", help="fill a listen backlog nobody accepts from; or time a client that met a full one")
    p.add_argument("--backlog", type=int, default=4, help="listen(backlog) of the listener (default 4)")
    p.add_argument("--clients", type=int, default=8, help="clients connecting one after another (default 8)")
    p.add_argument("--timeout", type=float, default=0.3, help="seconds a client waits to connect (default 0.3)")
    p.add_argument("--free-after", type=float, nargs="+", metavar="S",
                   help="instead: with the queue full, accept after S seconds; time the waiting client's connect()")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.sockets import tcpstates
        from iolab.commands import print_table

        if args.free_after:
            if not all(0 < s <= 10 for s in args.free_after):
                p.error("--free-after takes delays 0 < S <= 10 seconds")
            print_table(tcpstates.overflow_staircase(args.free_after, max(1, args.backlog)), args.json)
            return 0
        if args.backlog < 0 or not 1 <= args.clients <= 200 or not 0 < args.timeout <= 10:
            p.error("give --backlog >= 0, 1 <= --clients <= 200, 0 < --timeout <= 10")
        print_table(tcpstates.fill_backlog(args.backlog, args.clients, args.timeout), args.json)
        return 0

    p.set_defaults(run=run)


def add_io_commands(sub: Subparsers) -> None:
    """Register ``readiness`` and ``backlog``."""
    add_readiness(sub)
    add_backlog(sub)
